"""docs/tools.md, generated from the catalog (`mnemo docs`); a test keeps it current."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, Tool
from mnemo.tools.schema import input_schema, output_schema


def _type(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "enum" in schema:
        return " \\| ".join(json.dumps(value) for value in schema["enum"])
    if "anyOf" in schema:
        return " \\| ".join(_type(option, defs) for option in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"{_type(schema.get('items', {}), defs)}[]"
    if kind == "string" and schema.get("format"):
        return f"string ({schema['format']})"
    return str(kind)


def _fields(schema: Mapping[str, Any]) -> list[str]:
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    lines = ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        default = json.dumps(prop["default"]) if "default" in prop else ""
        description = prop.get("description", "").replace("|", "\\|")
        lines.append(
            f"| `{name}` | {_type(prop, defs)} | {'yes' if name in required else 'no'} | {default} | {description} |"
        )
    return lines


def render_tools_markdown(tools: Mapping[str, Tool]) -> str:
    out = [
        "# Tool reference",
        "",
        "Generated from the catalog by `make docs` (`mnemo generate`); do not edit by hand.",
        "Every tool is `POST /v1/tools/{name}` with a JSON body; errors use the envelope",
        "`{success: false, errorCode, message, details, retryable}` (see README).",
        "",
    ]
    for family in dict.fromkeys(tool.family for tool in tools.values()):
        out += [f"## {family}", ""]
        if family in EXPERIMENTAL_FAMILIES:
            out += [
                "Experimental: served only with `MNEMO_EXPERIMENTAL=1` (`mnemo serve --experimental`, the",
                "template's `ExperimentalTools=true`); otherwise absent from the catalog and every front door.",
                "",
            ]
        for tool in (t for t in tools.values() if t.family == family):
            out += [f"### `{tool.name}`", "", inspect.cleandoc(tool.spec), ""]
            out += ["**Input**", "", *_fields(input_schema(tool)), ""]
            out += ["**Output**", "", *_fields(output_schema(tool)), ""]
    return "\n".join(out).rstrip() + "\n"

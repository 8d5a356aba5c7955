"""mnemo/client/tools.py, generated from the catalog (`make docs`); a test keeps it current, so the client's
methods cannot drift from the tools the service serves."""

from __future__ import annotations

import json
import keyword
import textwrap
from collections.abc import Mapping
from typing import Any

from mnemo.tools.registry import Tool
from mnemo.tools.schema import input_schema, tool_listing

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def _annotation(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        options = [_annotation(option) for option in schema["anyOf"]]
        return " | ".join(dict.fromkeys(options))
    kind = schema.get("type")
    if kind == "null":
        return "None"
    if kind == "array":
        return f"list[{_annotation(schema.get('items', {}))}]"
    if kind == "object" or "$ref" in schema:
        return "dict[str, Any]"
    if "enum" in schema:
        return "str"
    return _SCALARS.get(str(kind), "Any")


def _parameters(tool: Tool) -> list[tuple[str, str, str, bool]]:
    """(python name, wire name, annotation, required) for each request field, required ones first."""
    schema = input_schema(tool)
    required = set(schema.get("required", []))
    by_alias = {(field.alias or name): name for name, field in tool.request.model_fields.items()}
    found = []
    for wire, prop in schema.get("properties", {}).items():
        name = by_alias.get(wire, wire)
        name = f"{name}_" if keyword.iskeyword(name) else name
        found.append((name, wire, _annotation(prop), wire in required))
    return sorted(found, key=lambda item: not item[3])


def _wire_keyword(name: str, wire: str) -> bool:
    """Whether a field's wire name is offered as a keyword of its own beside the snake_case one."""
    return wire != name and wire.isidentifier() and not keyword.iskeyword(wire)


def _optional(annotation: str) -> str:
    return annotation if annotation.endswith("| None") else f"{annotation} | None"


def _method(tool: Tool, asynchronous: bool) -> list[str]:
    """One method, laid out as ruff formats it (exploded, with trailing commas), so the file needs no
    formatter to stay current.

    Each field is a snake_case keyword and, where its wire name differs, a camelCase keyword too (what HTTP,
    MCP and the docs spell), both optional; ``_given`` refuses a field given both ways and one that is
    required and given neither way, as a TypeError like Python's own."""
    params = _parameters(tool)
    prefix = "async def" if asynchronous else "def"
    call = "await self.call" if asynchronous else "self.call"
    summary = tool.summary.replace('"""', "'''").replace("\\", "\\\\")
    doc = textwrap.wrap(f"{summary}.", width=108)
    lines = [f"    {prefix} {tool.name}(self) -> dict[str, Any]:"] if not params else [f"    {prefix} {tool.name}("]
    wired = [
        (name, wire, annotation, required) for name, wire, annotation, required in params if _wire_keyword(name, wire)
    ]
    if params:
        lines += ["        self,", "        *,"]
        for name, wire, annotation, required in params:
            if required and not _wire_keyword(name, wire):
                lines.append(f"        {name}: {annotation},")
            else:
                lines.append(f"        {name}: {_optional(annotation)} = None,")
        lines += [f"        {wire}: {_optional(annotation)} = None," for _, wire, annotation, _ in wired]
        lines.append("    ) -> dict[str, Any]:")
    if len(doc) == 1:
        lines.append(f'        """{doc[0]}"""')
    else:
        lines += [f'        """{doc[0]}', *(f"        {line}" for line in doc[1:]), '        """']
    if not params:
        return [*lines, f'        return {call}("{tool.name}", _given({{}}))', ""]
    lines += [f"        return {call}(", f'            "{tool.name}",', "            _given(", "                {"]
    lines += [f'                    "{wire}": {name},' for name, wire, _, _ in params]
    lines.append("                },")
    if wired:
        lines.append("                {")
        lines += [f'                    "{wire}": {wire},' for _, wire, _, _ in wired]
        lines.append("                },")
        needed_wires = [wire for _, wire, _, needed in wired if needed]
        if needed_wires:
            names = ", ".join(f'"{wire}"' for wire in needed_wires)
            lines.append(f"                required=({names},),")
    else:
        lines[-1] = "                }"
    lines += ["            ),", "        )", ""]
    return lines


def _repeatable(tools: Mapping[str, Tool]) -> list[str]:
    """REPEATABLE: the tools the catalog marks safe to send again after an unknown outcome (mnemo.client.repeat)."""
    names = sorted(name for name, tool in tools.items() if tool.repeatable)
    return [
        "#: Tools whose call may be sent again when the first one's outcome is unknown: they write nothing",
        "#: the caller keeps (the catalog's ``repeatable``; mnemo.client.repeat).",
        "REPEATABLE = frozenset(",
        "    {",
        *(f'        "{name}",' for name in names),
        "    }",
        ")",
    ]


def render_client_module(tools: Mapping[str, Tool]) -> str:
    lines = [
        '"""Typed methods for every tool of the catalog (generated by `make docs` from mnemo.tools; do not edit).',
        "",
        "Each method sends only the arguments given; the service applies the defaults and validates, and its",
        "error envelope comes back raised as a mnemo.client.errors class. Every field takes its snake_case keyword",
        '(memory_id) or its wire name (memoryId), as HTTP, MCP and the docs spell it, but not both."""',
        "",
        "from __future__ import annotations",
        "",
        "from abc import ABC, abstractmethod",
        "from typing import Any",
        "",
        "",
        "def _given(",
        "    fields: dict[str, Any], wire: dict[str, Any] | None = None, required: tuple[str, ...] = ()",
        ") -> dict[str, Any]:",
        '    """The body: the arguments given, by wire name, from the snake_case keywords (``fields``) and the',
        "    camelCase ones (``wire``); a field given both ways, or a required one given neither way, is a TypeError.",
        '    """',
        "    body = {name: value for name, value in fields.items() if value is not None}",
        "    for name, value in (wire or {}).items():",
        "        if value is None:",
        "            continue",
        "        if name in body:",
        '            raise TypeError(f"{name} given twice: as its snake_case keyword and as {name}=")',
        "        body[name] = value",
        "    missing = [name for name in required if name not in body]",
        "    if missing:",
        '        raise TypeError(f"missing required keyword argument: {missing[0]} (or its snake_case spelling)")',
        "    return body",
        "",
        "",
        *_repeatable(tools),
        "",
        "",
        "class SyncTools(ABC):",
        "    @abstractmethod",
        "    def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:",
        '        """One tool call: MnemoClient sends it over HTTP."""',
        "",
    ]
    for tool in tools.values():
        lines += _method(tool, asynchronous=False)
    lines += [
        "",
        "class AsyncTools(ABC):",
        "    @abstractmethod",
        "    async def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:",
        '        """One tool call: AsyncMnemoClient sends it over HTTP."""',
        "",
    ]
    for tool in tools.values():
        lines += _method(tool, asynchronous=True)
    lines += ["", "TOOL_NAMES = (", *(f'    "{name}",' for name in tools), ")"]
    return "\n".join(lines) + "\n"


def render_client_catalog(tools: Mapping[str, Tool]) -> str:
    """mnemo/client/catalog.json: each tool's name, family, description and input schema, which the
    agent-framework adapters turn into their tool objects without asking the service."""
    entries = [
        {key: entry[key] for key in ("name", "family", "description", "inputSchema")} for entry in tool_listing(tools)
    ]
    return json.dumps(entries, indent=1, sort_keys=False) + "\n"

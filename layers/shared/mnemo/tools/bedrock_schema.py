"""Bedrock Agents action-group definitions, generated from the catalog.

One action group per tool family (split when a family outgrows a group), in
the two forms Bedrock accepts:

- an OpenAPI 3.0 document (``<group>.openapi.json``): one ``POST /<tool name>``
  operation per tool, ``operationId`` = the tool name;
- function details (``<group>.functions.json``): the ``functionSchema`` object,
  ``{"functions": [{name, description, parameters: {name: {type, description,
  required}}}]}``, as ``aws bedrock-agent create-agent-action-group
  --function-schema`` and CloudFormation's ``AWS::Bedrock::Agent`` take it.

What Bedrock constrains (Amazon Bedrock user guide, agents-api-schema and
agents-lambda; API reference, Function and ParameterDetail):

- ``openapi`` must be ``"3.0.0"``; every operation needs a description and an
  operationId of letters, digits, ``_`` and ``-``; ``enum`` is not supported, so
  allowed values move into the description;
- an action group holds at most 11 API operations; groups are cut at 10, which
  also keeps under the 10 functions per group that accounts report as the
  default quota for function details;
- function details: a function description is at most 1200 characters, a
  parameter description at most 500, and a parameter type is one of string,
  number, integer, boolean or array (no object);
- ``$ref`` is not listed as supported, so every schema is inlined;
- at most 5 parameters per function (the default "Parameters per function"
  quota, Amazon Bedrock endpoints and quotas): a tool with more fields keeps four
  and sends the rest in ``moreArguments`` (``bedrock_parameters``).

Bedrock hands each top-level field to the Lambda as a ``{name, type, value}``
string, so nested objects have no faithful encoding: a field that takes an
object or an array of objects is declared as a string holding JSON, with an
example in its description, and ``field_kinds`` tells the front door
(entry/bedrock.py) to decode it back before the tool's own model validates.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mnemo import __version__
from mnemo.errors import HTTP_STATUS
from mnemo.tools.registry import Tool
from mnemo.tools.schema import ERROR_ENVELOPE_SCHEMA, input_schema, output_schema, to_openapi30

OPENAPI_VERSION = "3.0.0"
#: Documented: 11 API operations per action group. Reported default quota for function details: 10.
MAX_OPERATIONS_PER_GROUP = 10
MAX_FUNCTION_DESCRIPTION = 1200
MAX_PARAMETER_DESCRIPTION = 500
FUNCTION_PARAMETER_TYPES = ("string", "number", "integer", "boolean", "array")
#: Bedrock Agents' default quota "Parameters per function" (Amazon Bedrock endpoints and quotas), which
#: CreateAgentActionGroup enforces ("Validation failed for quota parameters-per-function").
MAX_PARAMETERS_PER_FUNCTION = 5
#: The parameter that carries, as one JSON object, the fields of a tool that has more than the quota.
OPTIONS = "moreArguments"
#: Fields kept out of ``moreArguments`` first after the required ones: where the next page starts.
_PAGING = ("cursor", "offset")
_NAME = re.compile(r"^([0-9a-zA-Z][_-]?){1,100}$")
_ERROR_STATUS = sorted(set(HTTP_STATUS.values()))
_ALLOWED = "_allowed"


@dataclass(frozen=True)
class Field:
    """One top-level request field, as Bedrock will see it."""

    name: str
    kind: str  # the JSON kind the tool's model expects: string, integer, number, boolean, array, object
    schema: dict[str, Any]  # inlined OpenAPI 3.0, no enum; object fields declared as JSON strings
    description: str
    required: bool
    example: Any = None  # a value the tool accepts, as its model wants it (JSON kinds, not strings)


# ------------------------------------------------------------------ helpers ---
def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, at a sentence end when there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > limit // 2 else cut.rstrip() + "…"


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _values(values: Iterable[Any]) -> str:
    return ", ".join(json.dumps(value) if not isinstance(value, str) else value for value in values)


def _resolve(node: Any, definitions: Mapping[str, Any], within: tuple[str, ...] = ()) -> Any:
    """Inline every ``$ref`` (and one-element ``allOf``); drop titles; allowed values leave ``enum``.

    An ``enum`` becomes the private key ``_allowed``, which ``_describe`` turns into words. A
    schema that contains itself (a tree of outline nodes) is inlined once; deeper down it is
    an object of the same shape, said in words.
    """
    if isinstance(node, list):
        return [_resolve(item, definitions, within) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    if "$ref" in node:
        name = node.pop("$ref").rsplit("/", 1)[-1]
        if name in within:
            return {"type": "object", "description": f"A {name}, of the same shape as its parent."}
        within = (*within, name)
        node = {**copy.deepcopy(definitions[name]), **node}
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        (inner,) = node.pop("allOf")
        node = {**_resolve(inner, definitions, within), **node}
    node.pop("title", None)
    resolved = {key: _resolve(value, definitions, within) for key, value in node.items()}
    if "enum" in resolved:
        resolved[_ALLOWED] = resolved.pop("enum")
    return resolved


def _allowed_note(allowed: list[Any], *, items: bool = False) -> str:
    if items:
        return f"Each item is one of: {_values(allowed)}."
    return f"Always {_values(allowed)}." if len(allowed) == 1 else f"One of: {_values(allowed)}."


def _describe(node: Any) -> Any:
    """Turn every ``_allowed`` list into a sentence of the description (Bedrock has no enum)."""
    if isinstance(node, list):
        return [_describe(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    notes = []
    if _ALLOWED in node:
        notes.append(_allowed_note(node.pop(_ALLOWED)))
    items = node.get("items")
    if isinstance(items, dict) and _ALLOWED in items:
        node["items"] = {key: value for key, value in items.items() if key != _ALLOWED}
        notes.append(_allowed_note(items[_ALLOWED], items=True))
    node = {key: _describe(value) for key, value in node.items()}
    if notes:
        node["description"] = " ".join(part for part in (_sentence(node.get("description", "")), *notes) if part)
    return node


def _bounds(schema: Mapping[str, Any]) -> list[str]:
    """Numeric and length limits in words, for function details (which have no place for them)."""
    notes = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        notes.append(f"Between {_values([low])} and {_values([high])}.")
    elif low is not None:
        notes.append(f"At least {_values([low])}.")
    elif high is not None:
        notes.append(f"At most {_values([high])}.")
    if schema.get("maxLength") is not None:
        notes.append(f"At most {schema['maxLength']} characters.")
    if schema.get("maxItems") is not None:
        notes.append(f"At most {schema['maxItems']} items.")
    return notes


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    return "string"


def example(schema: Mapping[str, Any], name: str = "value") -> Any:
    """A value that satisfies ``schema`` (inlined, enum as ``_allowed``), to show a model what to send.

    Objects get their required keys (or their first key when none is required); strings the
    first allowed value, a date-time, or the field's name.
    """
    if schema.get(_ALLOWED):
        return schema[_ALLOWED][0]
    if "default" in schema and schema["default"] is not None and not isinstance(schema["default"], (dict, list)):
        return schema["default"]
    kind = _kind(schema)
    if kind == "object":
        properties = schema.get("properties") or {}
        keys = list(schema.get("required") or []) or list(properties)[:1]
        if not properties:
            return {"key": "value"}
        return {key: example(properties[key], key) for key in keys if key in properties}
    if kind == "array":
        return [example(schema.get("items") or {}, name)]
    if kind == "integer":
        return int(schema.get("minimum", 1) or 1)
    if kind == "number":
        return schema.get("minimum", 0.5) or 0.5
    if kind == "boolean":
        return True
    if schema.get("format") == "date-time":
        return "2026-01-07T10:00:00Z"
    return name


def _object_items(schema: Mapping[str, Any]) -> bool:
    items = schema.get("items")
    return isinstance(items, Mapping) and _kind(items) == "object"


def request_fields(tool: Tool) -> list[Field]:
    """The tool's top-level request fields, typed the way Bedrock can carry them."""
    definitions: dict[str, Any] = {}
    schema = to_openapi30(input_schema(tool), definitions)
    required = set(schema.get("required", []))
    fields = []
    for name, raw in schema.get("properties", {}).items():
        if not _NAME.match(name):
            raise ValueError(f"{tool.name}.{name}: Bedrock parameter names use letters, digits, _ and -")
        if not str(raw.get("description", "")).strip():
            raise ValueError(f"{tool.name}.{name} has no description: describe it in the request model")
        resolved = _resolve(raw, definitions)
        prop = _describe(resolved)
        prop.pop("nullable", None)  # Bedrock sends a value or leaves the field out
        if prop.get("default") is None:
            prop.pop("default", None)
        kind = _kind(prop)
        nested = kind == "object" or (kind == "array" and _object_items(prop))
        hints: list[str] = _bounds(prop)
        shown = example(resolved, name)
        sample = _serialize(shown)
        if kind == "array" and nested:
            keys = ", ".join(prop["items"].get("properties") or {})
            hints.append(f"Send a JSON array of objects (keys {keys}) written as a string, e.g. {sample}.")
        elif kind == "array":
            hints.append('Send a JSON array, e.g. ["a", "b"].')
        if kind == "object":
            names = ", ".join(prop.get("properties") or {})
            if names:
                hints.append(f"Send a JSON object written as a string, with the keys {names}, e.g. {sample}.")
            else:
                hints.append('Send a JSON object written as a string, e.g. {"key": "value"}.')
        if prop.get("format") == "date-time":
            hints.append("ISO 8601 date-time, e.g. 2026-01-07T10:00:00Z.")
        if "default" in prop:
            hints.append(f"Default: {_values([prop['default']])}.")
        description = _clip(" ".join([_sentence(prop["description"]), *hints]), MAX_PARAMETER_DESCRIPTION)
        declared: dict[str, Any]
        if nested:  # Bedrock carries no objects: the model writes them as JSON text
            declared = {"type": "string"}
        else:
            declared = {key: value for key, value in prop.items() if key != "description"}
            if kind == "array":
                items = {key: value for key, value in dict(prop.get("items") or {}).items() if key != "description"}
                declared["items"] = (
                    items if _kind(items) in ("string", "integer", "number", "boolean") else {"type": "string"}
                )
        declared["description"] = description
        fields.append(
            Field(
                name=name,
                kind=kind,
                schema=declared,
                description=description,
                required=name in required,
                example=shown,
            )
        )
    return fields


def _serialize(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type_name(field: Field) -> str:
    return f"JSON {field.kind}" if field.schema.get("type") == "string" and field.kind != "string" else field.kind


@functools.cache
def bedrock_parameters(tool: Tool) -> tuple[Field, ...]:
    """The tool's parameters as Bedrock declares them: at most ``MAX_PARAMETERS_PER_FUNCTION``.

    A tool with more fields keeps its required fields, then its paging fields, then the others
    in order, up to one short of the quota; the rest travel together in ``moreArguments``, one JSON
    object written as a string, whose description names each key and its type.
    """
    fields = request_fields(tool)
    if len(fields) <= MAX_PARAMETERS_PER_FUNCTION:
        return tuple(fields)
    if any(field.name == OPTIONS for field in fields):
        raise ValueError(f"{tool.name} has a field named {OPTIONS!r} and more than {MAX_PARAMETERS_PER_FUNCTION}")
    ranked = sorted(fields, key=lambda f: (not f.required, f.name not in _PAGING, fields.index(f)))
    kept = {field.name for field in ranked[: MAX_PARAMETERS_PER_FUNCTION - 1]}
    grouped = [field for field in fields if field.name not in kept]
    sample = {field.name: field.example for field in grouped if field.required} or {grouped[0].name: grouped[0].example}
    head = f"More arguments, as one JSON object written as a string, e.g. {_serialize(sample)}. Keys: "
    for note in (48, 32, 20, 0):  # every key is named; their notes shrink until all fit
        keys = "; ".join(
            f"{field.name} ({_type_name(field)}{', required' if field.required else ''})"
            + (f": {_clip(field.description.split('. ')[0], note).rstrip('.')}" if note else "")
            for field in grouped
        )
        if len(head) + len(keys) + 1 <= MAX_PARAMETER_DESCRIPTION:
            break
    description = _clip(f"{head}{keys}.", MAX_PARAMETER_DESCRIPTION)
    options = Field(
        name=OPTIONS,
        kind="object",
        schema={"type": "string", "description": description},
        description=description,
        required=any(field.required for field in grouped),
    )
    return (*(field for field in fields if field.name in kept), options)


@functools.cache
def grouped_fields(tool: Tool) -> Mapping[str, str]:
    """The fields that travel inside ``moreArguments`` -> their JSON kind (empty when the tool has none;
    computed once per tool, since the Bedrock door asks on every call)."""
    declared = {field.name for field in bedrock_parameters(tool)}
    return MappingProxyType({f.name: f.kind for f in request_fields(tool) if f.name not in declared})


@functools.cache
def field_kinds(tool: Tool) -> Mapping[str, str]:
    """Parameter name (wire alias) -> the JSON kind it is decoded to (computed once per tool).

    Every field of the tool's request model is listed (a ``moreArguments`` key may also be sent on
    its own), and ``moreArguments`` as an object when the tool has one.
    """
    kinds = {field.name: field.kind for field in request_fields(tool)}
    kinds.update({field.name: field.kind for field in bedrock_parameters(tool)})
    return MappingProxyType(kinds)


def operation_description(tool: Tool) -> str:
    return _clip(tool.description, MAX_FUNCTION_DESCRIPTION)


# --------------------------------------------------------------- grouping ---
def action_groups(tools: Iterable[Tool]) -> dict[str, list[Tool]]:
    """Group key -> its tools: one group per family, ``family-2`` and on when a family outgrows one."""
    families: dict[str, list[Tool]] = {}
    for tool in tools:
        families.setdefault(tool.family, []).append(tool)
    groups: dict[str, list[Tool]] = {}
    for family, members in families.items():
        for start in range(0, len(members), MAX_OPERATIONS_PER_GROUP):
            key = family if start == 0 else f"{family}-{start // MAX_OPERATIONS_PER_GROUP + 1}"
            groups[key] = members[start : start + MAX_OPERATIONS_PER_GROUP]
    return groups


def action_group_name(group: str) -> str:
    """The action group's name in Bedrock (what the Lambda sees as ``actionGroup``)."""
    return f"mnemo-{group}"


def api_path(tool: Tool) -> str:
    return f"/{tool.name}"


# ---------------------------------------------------------------- OpenAPI ---
def _response_schema(tool: Tool) -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    schema = to_openapi30(output_schema(tool), definitions)
    resolved: dict[str, Any] = _describe(_resolve(schema, definitions))
    resolved.setdefault("description", f"What {tool.name} answers.")
    return resolved


def _envelope_schema() -> dict[str, Any]:
    """The error envelope, kept short: it is repeated under every error status (no ``$ref``)."""
    return {
        "type": "object",
        "description": "The error envelope.",
        "required": list(ERROR_ENVELOPE_SCHEMA["required"]),
        "properties": {
            "success": {"type": "boolean", "description": "Always false."},
            "errorCode": {
                "type": "string",
                "description": (
                    "INVALID_INPUT (fix details.field and call again), UNAUTHORIZED, NOT_FOUND, CONFLICT, "
                    "RATE_LIMITED, PROVIDER_ERROR or TIMEOUT."
                ),
            },
            "message": {"type": "string", "description": "What happened."},
            "details": {"type": "object", "description": "Context; field names the input at fault."},
            "retryable": {"type": "boolean", "description": "True when the same call may succeed later."},
        },
    }


def bedrock_openapi(group: str, tools: Iterable[Tool]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one action group: inlined schemas, no enum, everything described."""
    envelope = _envelope_schema()
    paths: dict[str, Any] = {}
    for tool in tools:
        fields = bedrock_parameters(tool)
        body: dict[str, Any] = {
            "type": "object",
            "properties": {field.name: field.schema for field in fields},
        }
        required = [field.name for field in fields if field.required]
        if required:
            body["required"] = required
        responses: dict[str, Any] = {
            "200": {
                "description": f"{tool.name} succeeded.",
                "content": {"application/json": {"schema": _response_schema(tool)}},
            }
        }
        for status in _ERROR_STATUS:
            codes = [code for code, value in HTTP_STATUS.items() if value == status]
            responses[str(status)] = {
                "description": f"{' or '.join(codes)}: the error envelope; details.field names the input at fault.",
                "content": {"application/json": {"schema": copy.deepcopy(envelope)}},
            }
        paths[api_path(tool)] = {
            "post": {
                "operationId": tool.name,
                "summary": _clip(tool.summary, 200),
                "description": operation_description(tool),
                "requestBody": {
                    "required": True,
                    "description": f"The {tool.name} arguments.",
                    "content": {"application/json": {"schema": body}},
                },
                "responses": responses,
            }
        }
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": f"Mnemo {group} tools",
            "version": __version__,
            "description": (
                "Long-term memory for AI agents. Who is calling comes from the session attributes, "
                "never from these arguments."
            ),
        },
        "paths": paths,
    }


# ------------------------------------------------------- function details ---
def bedrock_functions(tools: Iterable[Tool]) -> dict[str, Any]:
    """The ``functionSchema`` of one action group: ``{"functions": [...]}``."""
    functions = []
    for tool in tools:
        parameters = {}
        for field in bedrock_parameters(tool):
            declared = field.schema.get("type")
            kind = declared if declared in FUNCTION_PARAMETER_TYPES else "string"
            parameters[field.name] = {"type": kind, "description": field.description, "required": field.required}
        functions.append({"name": tool.name, "description": operation_description(tool), "parameters": parameters})
    return {"functions": functions}


def cloudformation_function_schema(function_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The same function schema with CloudFormation's property names (``Functions``, ``Name``...)."""
    return {
        "Functions": [
            {
                "Name": function["name"],
                "Description": function["description"],
                "Parameters": {
                    name: {"Type": p["type"], "Description": p["description"], "Required": p["required"]}
                    for name, p in function["parameters"].items()
                },
            }
            for function in function_schema["functions"]
        ]
    }


def write_definitions(tools: Mapping[str, Tool], out_dir: Path) -> list[Path]:
    """Write ``<group>.openapi.json`` and ``<group>.functions.json`` for every action group."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for group, members in action_groups(tools.values()).items():
        for suffix, document in (
            ("openapi", bedrock_openapi(group, members)),
            ("functions", bedrock_functions(members)),
        ):
            path = out_dir / f"{group}.{suffix}.json"
            path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
            written.append(path)
    return written

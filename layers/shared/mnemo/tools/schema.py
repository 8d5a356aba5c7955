"""Everything generated from the catalog: JSON Schema per tool, OpenAPI 3.0, the tool list.

Pydantic emits JSON Schema 2020-12. OpenAPI 3.0 (what API Gateway and Bedrock
action groups accept) is a dialect of draft 4/5, so ``to_openapi30`` rewrites
the few constructs that differ: ``$defs`` move to ``components/schemas``,
``anyOf [X, null]`` becomes ``nullable``, ``const`` becomes a one-value
``enum``, ``examples`` becomes ``example``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from mnemo import __version__
from mnemo.errors import HTTP_STATUS
from mnemo.tools.registry import Tool

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

ERROR_ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ErrorEnvelope",
    "description": "Every error, from every front door.",
    "required": ["success", "errorCode", "message", "details", "retryable"],
    "properties": {
        "success": {"type": "boolean", "const": False},
        "errorCode": {"type": "string", "enum": sorted(HTTP_STATUS)},
        "message": {"type": "string"},
        "details": {"type": "object", "description": "Context; 'field' names the offending input field."},
        "retryable": {"type": "boolean"},
    },
}


def model_schema(model: type[BaseModel], mode: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def input_schema(tool: Tool) -> dict[str, Any]:
    return model_schema(tool.request, "validation")


def output_schema(tool: Tool) -> dict[str, Any]:
    return model_schema(tool.response, "serialization")


def tool_listing(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    """What `mnemo tools --json` and GET /v1/tools answer (MCP's tools/list shape, plus family)."""
    return [
        {
            "name": tool.name,
            "family": tool.family,
            "description": tool.description,
            "inputSchema": input_schema(tool),
            "outputSchema": output_schema(tool),
        }
        for tool in tools.values()
    ]


# ------------------------------------------------------------ OpenAPI 3.0 ---
def _convert(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_convert(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    node.pop("$schema", None)
    for name, definition in node.pop("$defs", {}).items():
        definitions[name] = _convert(definition, definitions)
    if "$ref" in node:
        return {"$ref": node["$ref"].replace("#/$defs/", "#/components/schemas/")}
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "examples" in node and isinstance(node["examples"], list):
        examples = node.pop("examples")
        if examples:
            node["example"] = examples[0]
    for bound, flag in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), int | float) and not isinstance(node.get(bound), bool):
            node[flag] = node.pop(bound)
            node[bound] = True
    for combinator in ("anyOf", "oneOf"):
        options = node.get(combinator)
        if isinstance(options, list) and any(option == {"type": "null"} for option in options):
            rest = [option for option in options if option != {"type": "null"}]
            node.pop(combinator)
            node["nullable"] = True
            if len(rest) == 1:
                inner = _convert(rest[0], definitions)
                if "$ref" in inner:
                    node["allOf"] = [inner]
                else:
                    node.update(inner)
            else:
                node[combinator] = rest
    return {key: _convert(value, definitions) for key, value in node.items()}


def to_openapi30(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Convert one 2020-12 schema; its ``$defs`` are added to ``definitions``."""
    converted: dict[str, Any] = _convert(copy.deepcopy(schema), definitions)
    return converted


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
    }


#: The local server's identity headers, as OpenAPI security scheme name -> header name.
LOCAL_IDENTITY_HEADERS: dict[str, str] = {
    name: f"X-Mnemo-{name.title()}"
    for name in ("tenant", "user", "agent", "session", "project", "team", "org", "roles")
}


def local_identity_security() -> tuple[dict[str, Any], list[dict[str, list[str]]]]:
    """``mnemo serve``'s ``X-Mnemo-*`` headers as apiKey-in-header security schemes, all optional.

    Security schemes rather than per-operation header parameters: Swagger UI's Authorize dialog sets them once
    and sends them on every "Try it out" request, where parameters would be typed again on every tool. The
    requirement lists all of them in one object (Swagger UI sends every scheme that was authorised) and an
    empty requirement beside it, since each header has a default (tenant and user ``local``).
    """
    schemes = {
        f"mnemo{name.title()}": {
            "type": "apiKey",
            "in": "header",
            "name": header,
            "description": f"{header}: the caller's {name} on the local server"
            + (" (comma-separated)" if name == "roles" else "")
            + ("; default local" if name in ("tenant", "user") else ""),
        }
        for name, header in LOCAL_IDENTITY_HEADERS.items()
    }
    return schemes, [{scheme: [] for scheme in schemes}, {}]


def openapi_document(
    tools: Mapping[str, Tool], *, server_url: str | None = None, identity_headers: bool = False
) -> dict[str, Any]:
    """OpenAPI 3.0 for the tools API.

    ``identity_headers`` declares the local server's ``X-Mnemo-*`` headers (``local_identity_security``); only
    ``mnemo serve`` asks for it. The deployed API's document leaves them out: there the API Gateway
    authorizer (IAM, API key or Cognito) is the auth, and the headers count only from a trusted delegate.
    """
    components: dict[str, Any] = {"ErrorEnvelope": to_openapi30(ERROR_ENVELOPE_SCHEMA, {})}
    paths: dict[str, Any] = {}
    for tool in tools.values():
        request_name, response_name = tool.request.__name__, tool.response.__name__
        components[request_name] = to_openapi30(input_schema(tool), components)
        components[response_name] = to_openapi30(output_schema(tool), components)
        examples = dict(tool.examples())
        request_media: dict[str, Any] = {"schema": {"$ref": f"#/components/schemas/{request_name}"}}
        response_media: dict[str, Any] = {"schema": {"$ref": f"#/components/schemas/{response_name}"}}
        if "Usage" in examples:
            request_media["example"] = examples["Usage"]
        if "Returns" in examples:
            response_media["example"] = examples["Returns"]
        paths[f"/v1/tools/{tool.name}"] = {
            "post": {
                "operationId": tool.name,
                "summary": tool.summary,
                "description": tool.description,
                "tags": [tool.family],
                "requestBody": {"required": True, "content": {"application/json": request_media}},
                "responses": {
                    "200": {"description": "Success", "content": {"application/json": response_media}},
                    "400": _error_response("INVALID_INPUT: the field at fault is named in details.field"),
                    "403": _error_response("UNAUTHORIZED"),
                    "404": _error_response("NOT_FOUND"),
                    "409": _error_response("CONFLICT"),
                    "429": _error_response("RATE_LIMITED"),
                    "502": _error_response("PROVIDER_ERROR"),
                    "504": _error_response("TIMEOUT"),
                },
            }
        }
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "Mnemo tools",
            "version": __version__,
            "description": "Long-term memory and organisational knowledge for AI agents. One POST per tool.",
        },
        "paths": paths,
        "components": {"schemas": components},
    }
    if server_url:
        document["servers"] = [{"url": server_url}]
    if identity_headers:
        schemes, requirement = local_identity_security()
        document["components"]["securitySchemes"] = schemes
        document["security"] = requirement
    return document

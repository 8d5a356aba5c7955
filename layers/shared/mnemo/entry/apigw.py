"""The API Gateway (REST, proxy integration) front door, on Powertools' resolver.

Each tool gets ``POST /v1/tools/{name}`` with its request model as the
validated body. Every failure leaves as the error envelope; an unexpected
exception is logged with its stack and answered as PROVIDER_ERROR, never as a
bare 500 or a trace.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body

from mnemo import observability
from mnemo.entry.identity import IDENTITY_CLAIMS, context_from_event, strip_identity_claims
from mnemo.entry.tool_http import RESPONSE_BUDGET_BYTES, json_kind
from mnemo.errors import MnemoError, NotFound, ProviderError, from_validation_errors, invalid_field
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.registry import Tool, experimental_enabled, get_tool, load_catalog, parse_json_body

#: Powertools keeps the request being resolved in shared state (``BaseRouter.current_event`` is a class
#: attribute, the matched route a dict on the resolver), so a process resolves one request at a time: a
#: Lambda does anyway. ``mnemo serve`` does not resolve here: it calls tools through ``tool_http``.
_RESOLVING = threading.Lock()


def error_response(error: MnemoError) -> Response[str]:
    observability.failed(error.code)
    return Response(status_code=error.status, content_type="application/json", body=json.dumps(error.envelope()))


def _route(resolver: APIGatewayRestResolver, tool: Tool) -> Callable[..., dict[str, Any]]:
    def call_tool(body: Any) -> dict[str, Any]:
        context = context_from_event(resolver.current_event.raw_event).model_copy(
            update={"response_budget": RESPONSE_BUDGET_BYTES}
        )
        response = tool.run(get_services(), context, body)
        answer = response.model_dump(mode="json", by_alias=True)
        observability.answered(answer)
        return answer

    # The body's type is the tool's own request model: Powertools validates it.
    call_tool.__annotations__ = {"body": Annotated[tool.request, Body()], "return": dict[str, Any]}
    call_tool.__name__ = tool.name
    return call_tool


def build_resolver(tools: Iterable[Tool]) -> APIGatewayRestResolver:
    resolver = APIGatewayRestResolver(enable_validation=True)
    for tool in tools:
        resolver.post(f"/v1/tools/{tool.name}")(_route(resolver, tool))

    @resolver.exception_handler(RequestValidationError)
    def _invalid(error: RequestValidationError) -> Response[str]:
        return error_response(from_validation_errors(error.errors(), drop_prefix="body"))

    @resolver.exception_handler(MnemoError)
    def _known(error: MnemoError) -> Response[str]:
        if isinstance(error, ProviderError):
            logger.warning("provider error", extra={"errorMessage": error.message})
        return error_response(error)

    @resolver.not_found
    def _unknown(_: Exception) -> Response[str]:
        path = resolver.current_event.path
        name = path.rsplit("/", 1)[-1]
        if path.startswith("/v1/tools/"):
            try:
                get_tool(name)
            except NotFound as error:
                return error_response(error)
        return error_response(NotFound(f"No route for {resolver.current_event.http_method} {path}", {"path": path}))

    @resolver.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[str]:
        logger.exception("unexpected error")
        return error_response(ProviderError("Internal error; it has been logged", {"type": type(error).__name__}))

    return resolver


def resolve(resolver: APIGatewayRestResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve a proxy event as one measured tool call (``observability.tool_call``)."""
    path = event.get("path")
    name = path.rsplit("/", 1)[-1] if isinstance(path, str) and path.startswith("/v1/tools/") else None
    with observability.tool_call(name):
        return _resolve(resolver, event, context)


def _resolve(resolver: APIGatewayRestResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve a proxy event, reading every tool body as JSON whatever Content-Type claims.

    Tool bodies are always JSON; a client that omits the header (``curl -d``
    sends form encoding) must still be understood rather than mis-parsed.
    """
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = "application/json"
    multi["Content-Type"] = ["application/json"]
    try:
        event = _as_text(event)
        body = _screened_body(event)
    except MnemoError as error:
        response = error_response(error)
        return {
            "statusCode": response.status_code,
            "body": response.body,
            "isBase64Encoded": False,
            "multiValueHeaders": {"Content-Type": ["application/json"]},
        }
    with _RESOLVING:
        return resolver.resolve({**event, "headers": headers, "multiValueHeaders": multi, "body": body}, context)


def _as_text(event: dict[str, Any]) -> dict[str, Any]:
    """The event with a base64 body (binary media types) decoded to the text it carries."""
    raw = event.get("body")
    if not event.get("isBase64Encoded") or not isinstance(raw, str):
        return event
    try:
        text = base64.b64decode(raw, validate=True).decode("utf-8")
    except ValueError:
        raise invalid_field("body", "not base64 of UTF-8 text") from None
    return {**event, "body": text, "isBase64Encoded": False}


def _screened_body(event: dict[str, Any]) -> Any:
    """The body, parsed strictly (``parse_json_body``), with identity claims checked and removed (identity.py).

    A tool's arguments are one JSON object: anything else is refused here, as
    the resolver would otherwise take the first item of an array for the body.
    Whatever passes here the resolver parses again to the same value; an empty
    body is left to the resolver, which reports it missing.
    """
    raw = event.get("body")
    if not isinstance(raw, str) or not raw.strip():
        return raw
    payload = parse_json_body(raw)
    if not isinstance(payload, dict):
        raise invalid_field("body", f"must be a JSON object of the tool's arguments, not {json_kind(payload)}")
    if not any(key in IDENTITY_CLAIMS for key in payload):
        return raw
    return json.dumps(strip_identity_claims(payload, context_from_event(event)))


def tool_handler(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for one tool's function: its resolver knows only that tool."""
    resolver = build_resolver([get_tool(name)])

    @observability.door(observability.API_GATEWAY)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return resolve(resolver, event, context)

    return handler


_all_tools: dict[bool, APIGatewayRestResolver] = {}


def all_tools_resolver() -> APIGatewayRestResolver:
    """One resolver for every tool in the catalog (the local server's API Gateway), experimental ones
    included exactly when the setting is on."""
    experimental = experimental_enabled()
    if experimental not in _all_tools:
        _all_tools[experimental] = build_resolver(load_catalog(experimental).values())
    return _all_tools[experimental]

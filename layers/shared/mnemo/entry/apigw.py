"""The API Gateway (REST, proxy integration) front door, on Powertools' resolver.

Each tool gets ``POST /v1/tools/{name}`` with its request model as the
validated body. Every failure leaves as the error envelope; an unexpected
exception is logged with its stack and answered as PROVIDER_ERROR, never as a
bare 500 or a trace.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Body

from mnemo.entry.identity import IDENTITY_CLAIMS, context_from_event, strip_identity_claims
from mnemo.errors import MnemoError, NotFound, ProviderError, from_validation_errors
from mnemo.runtime import get_services
from mnemo.tools.registry import Tool, get_tool, load_catalog

logger = Logger(service="mnemo")
#: A Lambda proxy response may carry 6 MB; leave room for the proxy envelope around the body.
RESPONSE_BUDGET_BYTES = 5_500_000


def error_response(error: MnemoError) -> Response[str]:
    return Response(status_code=error.status, content_type="application/json", body=json.dumps(error.envelope()))


def _route(resolver: APIGatewayRestResolver, tool: Tool) -> Callable[..., dict[str, Any]]:
    def call_tool(body: Any) -> dict[str, Any]:
        context = context_from_event(resolver.current_event.raw_event).model_copy(
            update={"response_budget": RESPONSE_BUDGET_BYTES}
        )
        response = tool.run(get_services(), context, body)
        return response.model_dump(mode="json", by_alias=True)

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
    """Resolve a proxy event, reading every tool body as JSON whatever Content-Type claims.

    Tool bodies are always JSON; a client that omits the header (``curl -d``
    sends form encoding) must still be understood rather than mis-parsed.
    """
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
    headers["Content-Type"] = "application/json"
    multi["Content-Type"] = ["application/json"]
    try:
        body = _without_identity_claims(event)
    except MnemoError as error:
        response = error_response(error)
        return {
            "statusCode": response.status_code,
            "body": response.body,
            "isBase64Encoded": False,
            "multiValueHeaders": {"Content-Type": ["application/json"]},
        }
    return resolver.resolve({**event, "headers": headers, "multiValueHeaders": multi, "body": body}, context)


def _without_identity_claims(event: dict[str, Any]) -> Any:
    """The body with identity claims checked against the authorizer and removed (see identity.py)."""
    raw = event.get("body")
    if not isinstance(raw, str):
        return raw
    try:
        payload = json.loads(raw)
    except ValueError:
        return raw  # the resolver reports malformed JSON with the envelope
    if not isinstance(payload, dict) or not any(key in IDENTITY_CLAIMS for key in payload):
        return raw
    return json.dumps(strip_identity_claims(payload, context_from_event(event)))


def tool_handler(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for one tool's function: its resolver knows only that tool."""
    resolver = build_resolver([get_tool(name)])

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return resolve(resolver, event, context)

    return handler


_all_tools: APIGatewayRestResolver | None = None


def all_tools_resolver() -> APIGatewayRestResolver:
    """One resolver for every tool in the catalog (the local server's API Gateway)."""
    global _all_tools
    if _all_tools is None:
        _all_tools = build_resolver(load_catalog().values())
    return _all_tools

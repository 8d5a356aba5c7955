"""The API Gateway front door (Lambda proxy integration), on Powertools' resolvers.

Each tool gets ``POST /v1/tools/{name}`` with its request model as the
validated body. A REST API sends payload format 1.0 events; an HTTP API (the
JWT mode) sends payload format 2.0 (``"version": "2.0"``: ``rawPath``,
``requestContext.http.method``, lower-case ``headers`` and no
``multiValueHeaders``). Both are answered alike, each in the response format
its API expects. Every failure leaves as the error envelope; an unexpected
exception is logged with its stack and answered as PROVIDER_ERROR, never as a
bare 500 or a trace.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response

from mnemo import observability
from mnemo.entry import snapstart
from mnemo.entry.identity import context_from_event
from mnemo.entry.tool_http import RESPONSE_BUDGET_BYTES, json_kind, parse_body
from mnemo.errors import MnemoError, NotFound, ProviderError, invalid_field
from mnemo.identity_claims import IDENTITY_CLAIMS, strip_identity_claims
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.registry import Tool, experimental_enabled, get_tool, load_catalog, parse_json_body

# During INIT, as SnapStart needs: the runtime then calls the hook after each restore (a no-op outside Lambda).
snapstart.register()

#: Powertools keeps the request being resolved in shared state (``BaseRouter.current_event`` is a class
#: attribute, the matched route a dict on the resolver), so a process resolves one request at a time: a
#: Lambda does anyway. ``mnemo serve`` does not resolve here: it calls tools through ``tool_http``.
_RESOLVING = threading.Lock()

#: Either resolver: REST (payload format 1.0) or HTTP API (payload format 2.0).
Resolver = APIGatewayRestResolver | APIGatewayHttpResolver


def is_http_api(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` is an HTTP API event in payload format 2.0 (REST events carry no ``version``)."""
    return event.get("version") == "2.0"


def request_path(event: Mapping[str, Any]) -> str:
    """The request's path as routed, in either payload format: a 2.0 event's ``rawPath`` begins with its
    stage unless that stage is ``$default`` (as Powertools reads it)."""
    if not is_http_api(event):
        path = event.get("path")
        return path if isinstance(path, str) else ""
    raw = event.get("rawPath")
    path = raw if isinstance(raw, str) else ""
    stage = (event.get("requestContext") or {}).get("stage")
    if isinstance(stage, str) and stage != "$default" and path.startswith(f"/{stage}/"):
        return path[len(stage) + 1 :]
    return path


def error_response(error: MnemoError) -> Response[str]:
    observability.failed(error.code)
    return Response(status_code=error.status, content_type="application/json", body=json.dumps(error.envelope()))


def _route(resolver: Resolver, tool: Tool) -> Callable[[], dict[str, Any]]:
    def call_tool() -> dict[str, Any]:
        event = resolver.current_event
        # The body is validated first, as the tool's own request model (tool_http.parse_body, in the words
        # Powertools' validation used), then the caller is read; identity claims are gone (_screened_body).
        request = parse_body(tool, event.body, None)
        context = context_from_event(event.raw_event).model_copy(update={"response_budget": RESPONSE_BUDGET_BYTES})
        response = tool.run(get_services(), context, request)
        answer = response.model_dump(mode="json", by_alias=True)
        observability.answered(answer)
        return answer

    call_tool.__name__ = tool.name
    return call_tool


def build_resolver(tools: Iterable[Tool], *, http_api: bool = False) -> Resolver:
    """A resolver for ``tools``: REST events (payload format 1.0), or HTTP API events (2.0) with ``http_api``.

    Powertools routes and answers; it does not validate (``enable_validation`` off): each route validates its
    body with the tool's own model, as the local server does, so a cold start loads neither Powertools'
    OpenAPI machinery nor a second schema of every request model.
    """
    resolver: Resolver = APIGatewayHttpResolver() if http_api else APIGatewayRestResolver()
    for tool in tools:
        resolver.post(f"/v1/tools/{tool.name}")(_route(resolver, tool))

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


def resolve(resolver: Resolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve a proxy event as one measured tool call (``observability.tool_call``).

    ``resolver`` must be of the event's payload format (``ToolDoor`` picks it).
    """
    path = request_path(event)
    name = path.rsplit("/", 1)[-1] if path.startswith("/v1/tools/") else None
    with observability.tool_call(name):
        return _resolve(resolver, event, context)


def _resolve(resolver: Resolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Resolve a proxy event, reading every tool body as JSON whatever Content-Type claims.

    Tool bodies are always JSON; a client that omits the header (``curl -d``
    sends form encoding) must still be understood rather than mis-parsed.
    """
    http_api = is_http_api(event)
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    try:
        event = _as_text(event)
        body = _screened_body(event)
    except MnemoError as error:
        return _refusal(error, http_api=http_api)
    if http_api:
        # Payload 2.0 has one header map, its names in lower case.
        headers["content-type"] = "application/json"
        resolved = {**event, "headers": headers, "body": body}
    else:
        multi = {k: v for k, v in (event.get("multiValueHeaders") or {}).items() if k.lower() != "content-type"}
        headers["Content-Type"] = "application/json"
        multi["Content-Type"] = ["application/json"]
        resolved = {**event, "headers": headers, "multiValueHeaders": multi, "body": body}
    with _RESOLVING:
        return resolver.resolve(resolved, context)


def _refusal(error: MnemoError, *, http_api: bool) -> dict[str, Any]:
    """The envelope for a body refused before routing, in the response format of the event's API."""
    response = error_response(error)
    answer: dict[str, Any] = {"statusCode": response.status_code, "body": response.body, "isBase64Encoded": False}
    if http_api:
        answer["headers"] = {"Content-Type": "application/json"}
    else:
        answer["multiValueHeaders"] = {"Content-Type": ["application/json"]}
    return answer


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


class ToolDoor:
    """The resolvers of a set of tools, each built on the first event of its payload format.

    A deployment serves one kind of API (REST, or an HTTP API), so a function
    builds the other resolver only if it is ever asked to.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = list(tools)
        self._rest: Resolver | None = None
        self._http: Resolver | None = None

    @property
    def rest(self) -> Resolver:
        """The REST resolver (payload format 1.0)."""
        if self._rest is None:
            self._rest = build_resolver(self._tools)
        return self._rest

    def resolver_for(self, event: Mapping[str, Any]) -> Resolver:
        if not is_http_api(event):
            return self.rest
        if self._http is None:
            self._http = build_resolver(self._tools, http_api=True)
        return self._http

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return resolve(self.resolver_for(event), event, context)


def tool_handler(name: str, family: str | None = None) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for one tool's function: its resolvers know only that tool. ``family`` (the generated
    entry names the tool's) is the only family its cold start imports (``get_tool``)."""
    door = ToolDoor([get_tool(name, family)])

    @observability.door(observability.API_GATEWAY)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return door(event, context)

    return handler


_all_tools: dict[bool, ToolDoor] = {}


def all_tools_door() -> ToolDoor:
    """Every tool in the catalog behind one door (either payload format), experimental ones included
    exactly when the setting is on."""
    experimental = experimental_enabled()
    if experimental not in _all_tools:
        _all_tools[experimental] = ToolDoor(load_catalog(experimental).values())
    return _all_tools[experimental]


def all_tools_resolver() -> Resolver:
    """The REST resolver of ``all_tools_door``."""
    return all_tools_door().rest

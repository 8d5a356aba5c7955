"""MCP, the seeds' own transport, on the official ``mcp`` SDK.

Tools are listed from the catalog with their JSON Schemas and descriptions.
A tool's answer comes back as JSON text plus ``structuredContent``, which
validates against the tool's listed ``outputSchema``.

A failed call is a tool execution error: ``isError: true`` with the Mnemo error
envelope (``success``, ``errorCode``, ``message``, ``details``, ``retryable``) as
JSON in its one text content block, and no ``structuredContent``, so an agent
reads the same errorCode and field it would get over HTTP. Why not also send the
envelope as ``structuredContent``: the specification (revision 2025-06-18,
server/tools, "Output Schema") says a server MUST return structured results that
conform to the ``outputSchema`` and clients SHOULD validate them, and the
TypeScript SDK's ``Client.callTool`` (1.x) validates ``structuredContent``
whenever it is present, ``isError`` or not, so an envelope there throws
``-32602 Structured content does not match the tool's output schema``. Both SDKs
accept an error result without it (the TypeScript client requires it only when
``isError`` is false; the Python ``ClientSession.call_tool`` and the TypeScript
SDK 2.x ``@modelcontextprotocol/client`` validate only results that are not
errors). Widening every ``outputSchema`` to a ``oneOf`` with the envelope would
also pass both, but would make every answer's schema a union that clients and
code generators must take apart (``tools.schema.output_schema`` also feeds the
HTTP OpenAPI, the Bedrock schemas and docs/tools.md), for a payload the text
block already carries.

An unknown tool name is a protocol error, JSON-RPC ``-32602`` (Invalid params) as
the specification's tools error-handling section lists it, with the known names
in its ``data``; it never reaches a tool.

Resources (the caller's profile, pinned context, pinned blocks and knowledge items, with their templates
and paged listing) are ``mcp_resources``; the ``recall`` prompt is ``mcp_prompts``. Both read through the
tools with the identity a tool call gets and answer a failure as a JSON-RPC error carrying the envelope in
``data.error``. resources/subscribe is served over stdio only (``build_server(subscriptions=True)``): the
Streamable HTTP doors are stateless, so no connection is left to send ``notifications/resources/updated``
on.

Identity: over stdio it is the process environment (``MEMORY_USER_ID`` or
``MNEMO_USER`` and the other ``MNEMO_*`` identity variables); over HTTP it is
what the transport vouched for (the local server's headers, the API Gateway
authorizer), placed in the ASGI scope by the bridge, never taken from a tool's
arguments.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mnemo import __version__, observability
from mnemo.context import RequestContext
from mnemo.entry import mcp_prompts, mcp_resources
from mnemo.entry.identity import context_from_environment
from mnemo.errors import MnemoError, ProviderError, Unauthorized
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.registry import get_tool, load_catalog
from mnemo.tools.schema import input_schema, output_schema

#: MCP sets no size limit of its own; clients keep whole results in the model's context,
#: so pages stop at 1 MiB of JSON and say hasMore.
RESPONSE_BUDGET_BYTES = 1 << 20
SCOPE_KEY = "mnemo.context"
INSTRUCTIONS = (
    "Long-term memory for agents: memory_add to remember, memory_search to recall. Resources: mnemo://profile "
    "(what extraction learned about you), mnemo://pinned (your pinned blocks, ready for a system prompt), each "
    "pinned block by its file path (mnemo:///blocks/...) and knowledge items (knowledge://<id>)."
)


def _tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=input_schema(tool),
            output_schema=output_schema(tool),
        )
        for tool in load_catalog().values()
    ]


def _result(payload: dict[str, Any], *, is_error: bool) -> types.CallToolResult:
    """An answer as text and ``structuredContent``; an error envelope as text only (see the module docstring)."""
    text = [types.TextContent(type="text", text=json.dumps(payload))]
    if is_error:
        return types.CallToolResult(content=text, is_error=True)
    return types.CallToolResult(content=text, structured_content=payload, is_error=False)


def _known_tool(name: str) -> None:
    """An unknown tool is a protocol error (JSON-RPC -32602), not a tool result."""
    catalog = load_catalog()
    if name not in catalog:
        known = {"tool": name, "available": sorted(catalog)}
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}", data=known)


def call_tool(name: str, arguments: dict[str, Any] | None, context: RequestContext) -> types.CallToolResult:
    """Run one tool call synchronously (measured: ``observability.tool_call``); every failure is an
    isError result with the envelope."""
    with observability.tool_call(name) as call:
        try:
            tool = get_tool(name)
            budgeted = context.model_copy(update={"response_budget": RESPONSE_BUDGET_BYTES})
            answer = tool.invoke(get_services(), budgeted, arguments or {})
        except MnemoError as error:
            call.failed(error.code)
            return _result(error.envelope(), is_error=True)
        except Exception:
            logger.exception("MCP tool %s failed", name)
            failure = ProviderError("Internal error; it has been logged")
            call.failed(failure.code)
            return _result(failure.envelope(), is_error=True)
        call.answered(answer)
        return _result(answer, is_error=False)


def build_server(
    default_context: Callable[[], RequestContext] | None = None, *, subscriptions: bool = False
) -> Server[Any]:
    """The MCP server: the catalog's tools, resources (``mcp_resources``) and prompts (``mcp_prompts``).

    Identity comes from the HTTP bridge's scope, else from ``default_context``. ``subscriptions`` serves
    resources/subscribe (and advertises it): only for a transport whose connection outlives a request
    (stdio), since updates go out on the connection after a tool call.
    """

    def caller(ctx: Any) -> RequestContext | None:
        request = getattr(ctx, "request", None)
        context = request.scope.get(SCOPE_KEY) if request is not None else None
        if context is None and default_context is not None:
            context = default_context()
        return context if isinstance(context, RequestContext) else None

    def required_caller(ctx: Any) -> RequestContext:
        """The caller, or a protocol error: resources and prompts have no isError result to carry it."""
        context = caller(ctx)
        if context is None:
            raise mcp_resources.protocol_error(Unauthorized("The MCP request carries no caller identity"))
        return context

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools())

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        _known_tool(params.name)
        context = caller(ctx)
        if context is None:
            return _result(Unauthorized("The MCP request carries no caller identity").envelope(), is_error=True)
        result = await anyio.to_thread.run_sync(call_tool, params.name, params.arguments, context)
        if subscriptions:  # before the result, so the client knows what changed when the call returns
            try:
                await mcp_resources.notify_changes(ctx, context)
            except Exception:  # an update is advisory: the tool's result must still reach the client
                logger.exception("MCP resource updates after %s failed", params.name)
        return result

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        context, cursor = required_caller(ctx), params.cursor if params else None
        return await anyio.to_thread.run_sync(mcp_resources.list_page, context, cursor)

    async def list_templates(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        _no_cursor(params)
        return types.ListResourceTemplatesResult(resource_templates=mcp_resources.TEMPLATES)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        context = required_caller(ctx)
        return await anyio.to_thread.run_sync(mcp_resources.read, context, params.uri)

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        await mcp_resources.subscriptions_of(ctx).subscribe(required_caller(ctx), params.uri)
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        mcp_resources.subscriptions_of(ctx).unsubscribe(params.uri)
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        _no_cursor(params)
        return types.ListPromptsResult(prompts=mcp_prompts.prompts())

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        context = required_caller(ctx)
        return await anyio.to_thread.run_sync(mcp_prompts.get, context, params.name, params.arguments)

    return Server(
        "mnemo",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe if subscriptions else None,
        on_unsubscribe_resource=unsubscribe if subscriptions else None,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _no_cursor(params: types.PaginatedRequestParams | None) -> None:
    """Templates and prompts fit one page: no cursor was ever given out for them."""
    if params is not None and params.cursor is not None:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor", data={"cursor": params.cursor[:200]})


async def serve_stdio() -> None:
    """`mnemo mcp`: one caller, identified by the environment it was started with."""
    from mcp.server.stdio import stdio_server

    identity = context_from_environment(os.environ)
    server = build_server(lambda: identity, subscriptions=True)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class HttpBridge:
    """Streamable HTTP (stateless, JSON responses) for a door that is not ASGI: the MCP Lambda function.

    The SDK's session manager runs on an event loop in a daemon thread; each
    HTTP request is handed to it as one ASGI call, with the caller's identity in
    the scope. Stateless mode keeps no session between requests, so any
    container can serve any request. The SDK's DNS-rebinding check is off:
    API Gateway's authorizer guards this door (`mnemo serve` mounts the SDK's
    handler directly, behind its own Host and Origin checks: ``mcp_asgi``).
    """

    def __init__(self) -> None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self._manager = StreamableHTTPSessionManager(
            app=build_server(), stateless=True, json_response=True, security_settings=security
        )
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, name="mcp-http", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=10)

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        async with self._manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # until the process ends

    def handle(
        self, method: str, headers: dict[str, str], body: bytes, context: RequestContext
    ) -> tuple[int, dict[str, str], bytes]:
        future = asyncio.run_coroutine_threadsafe(self._call(method, headers, body, context), self._loop)
        return future.result(timeout=120)

    async def _call(
        self, method: str, headers: dict[str, str], body: bytes, context: RequestContext
    ) -> tuple[int, dict[str, str], bytes]:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 80),
            SCOPE_KEY: context,
        }
        delivered = False
        status = 500
        response_headers: dict[str, str] = {}
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for key, value in message.get("headers", []):
                    response_headers[key.decode("latin-1")] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self._manager.handle_request(scope, receive, send)  # type: ignore[arg-type]
        return status, response_headers, b"".join(chunks)


_bridge: HttpBridge | None = None
_bridge_lock = threading.Lock()


def http_bridge() -> HttpBridge:
    """One bridge per process, started on first use."""
    global _bridge
    with _bridge_lock:
        if _bridge is None:
            _bridge = HttpBridge()
        return _bridge

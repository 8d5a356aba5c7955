"""``/mcp`` on `mnemo serve`: the MCP SDK's Streamable HTTP handler, mounted as ASGI.

Stateless, with JSON responses: each POST is one JSON-RPC exchange, and no
session or server-sent event stream outlives it. The specification
(Streamable HTTP, "Listening for Messages from the Server") lets a server
without such a stream answer ``GET`` with 405 Method Not Allowed, which is
what a GET (a browser, or a client probing for the stream) gets here at once,
as does DELETE (there is no session to end).

Identity comes from the ``X-Mnemo-*`` headers (``identity.local``) and travels
to the tool call in the ASGI scope; Host and Origin were checked by
``BrowserGuard`` in front of every route, so the SDK's own DNS-rebinding check
is off rather than a second list to keep in step.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mnemo.entry.http_body import BodyError, read_body
from mnemo.entry.http_guard import send_envelope
from mnemo.errors import MnemoError


def _method_not_allowed(method: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32000, "message": f"Method Not Allowed: {method}; this server is stateless, use POST"},
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"allow", b"POST"),
        (b"content-length", str(len(body)).encode()),
    ]
    return headers, body


class McpEndpoint:
    """The ASGI app at /mcp; ``running()`` must be entered (the app's lifespan) before it serves."""

    def __init__(self) -> None:
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        from mnemo.entry.mcp_server import build_server

        self._manager = StreamableHTTPSessionManager(
            app=build_server(),
            stateless=True,
            json_response=True,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self._manager.run():
            yield

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        from starlette.requests import ClientDisconnect, Request

        from mnemo.entry.identity.local import context_from_headers
        from mnemo.entry.mcp_server import SCOPE_KEY
        from mnemo.runtime import get_services

        method = scope["method"]
        if method != "POST":
            headers, body = _method_not_allowed(method)
            await send({"type": "http.response.start", "status": 405, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        request = Request(scope, receive)
        try:
            context = context_from_headers(request.headers, get_services().settings.default_local_roles)
            body = await read_body(request)
        except BodyError as error:
            await send_envelope(send, error.error, close=error.close)
            return
        except MnemoError as error:
            await send_envelope(send, error)
            return
        except ClientDisconnect:
            return
        delivered = False

        async def replay() -> dict[str, Any]:
            # The body once, then the connection's own events (a disconnect), as the SDK expects.
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            message: dict[str, Any] = await receive()
            return message

        await self._manager.handle_request({**scope, SCOPE_KEY: context}, replay, send)

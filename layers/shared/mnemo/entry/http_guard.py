"""What keeps web pages out of `mnemo serve`: Host and Origin checks on every route.

A local server is reachable by any page the user's browser opens. Two attacks
follow, and both are refused here, before any route runs:

- **DNS rebinding.** A page on ``evil.example`` rebinds that name to
  127.0.0.1; its requests then reach this server with ``Host: evil.example``.
  Only loopback names (``localhost``, ``127.0.0.1``, ``[::1]``, any port) and the
  names given with ``--allow-host`` are served.
- **Cross-site requests.** A page may POST to any address without a CORS
  preflight when the Content-Type is a "simple" one (``text/plain``). Such a
  request carries the page's ``Origin``; only the server's own origin (the
  scheme and Host the request came in on) and those given with
  ``--allow-origin`` are served. Tool calls must also be ``application/json``
  (``http_app``), which a page cannot send cross-site without a preflight.

Both refusals are UNAUTHORIZED envelopes naming the header. ``*`` in either list
allows any value. A request with both Transfer-Encoding and Content-Length is
refused and its connection closed (RFC 9112 §6.3: such a message may be an
attempt at request smuggling), as is a request line in an HTTP version other
than 1.x (505), which h11 parses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mnemo.errors import InvalidInput, MnemoError, Unauthorized, invalid_field

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

Scope = dict[str, Any]


def host_name(host: str) -> str:
    """The name part of a Host header value, lowercased: ``[::1]:8765`` -> ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class VersionNotSupported(InvalidInput):
    """A request in an HTTP version other than 1.x (RFC 9110 §15.6.6: 505)."""

    @property
    def status(self) -> int:
        return 505


class BrowserGuard:
    """ASGI middleware: Host and Origin checks (see the module docstring) around every HTTP request."""

    def __init__(self, app: Any, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.any_host = "*" in allowed_hosts
        self.hosts = LOOPBACK_NAMES | {host_name(host) for host in allowed_hosts}
        self.any_origin = "*" in allowed_origins
        self.origins = {origin.rstrip("/").lower() for origin in allowed_origins}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key, value)
        refusal = self.refusal(headers, scope.get("scheme", "http"), scope.get("http_version", "1.1"))
        if refusal is None:
            await self.app(scope, receive, send)
            return
        error, close = refusal
        await send_envelope(send, error, close=close)

    def refusal(self, headers: dict[bytes, bytes], scheme: str, version: str) -> tuple[MnemoError, bool] | None:
        """The error to answer instead of serving, and whether the connection must close; None to serve."""
        if version not in ("1.0", "1.1"):  # h11 reads any HTTP/d.d request line
            return VersionNotSupported(
                f"request: HTTP/{version} is not served; use HTTP/1.1", {"field": "request"}
            ), True
        if b"transfer-encoding" in headers and b"content-length" in headers:
            return invalid_field("Content-Length", "not allowed with Transfer-Encoding"), True
        host = headers.get(b"host", b"").decode("latin-1")
        # A request with no Host (HTTP/1.0) did not come from a browser, which always sends one.
        if host and not self.any_host and host_name(host) not in self.hosts:
            message = f"Host {host!r} is not served here; start the server with --allow-host to serve it"
            return Unauthorized(message, {"field": "Host"}), False
        origin = headers.get(b"origin")
        if origin is not None and not self.any_origin:
            claimed = origin.decode("latin-1").rstrip("/").lower()
            if claimed != f"{scheme}://{host}".lower() and claimed not in self.origins:
                message = f"Origin {claimed!r} may not call this server; start it with --allow-origin to allow it"
                return Unauthorized(message, {"field": "Origin"}), False
        return None


async def send_envelope(
    send: Any, error: MnemoError, *, close: bool = False, extra: dict[str, str] | None = None
) -> None:
    """Answer ``error`` as the envelope, with its status; ``close`` ends the connection after it."""
    body = json.dumps(error.envelope()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    for key, value in (extra or {}).items():
        headers.append((key.lower().encode("latin-1"), value.encode("latin-1")))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

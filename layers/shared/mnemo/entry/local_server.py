"""`mnemo serve`: the local stand-in for API Gateway.

It turns each HTTP request into the REST proxy event API Gateway would send,
with identity from the ``X-Mnemo-*`` headers placed where a Lambda authorizer
would put it, and hands it to the same resolver the tool Lambdas run. Headers
are trusted here only because this server is the authorizer; the Lambda
front door never reads them.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from mnemo import __version__
from mnemo.entry.apigw import all_tools_resolver, logger, resolve
from mnemo.entry.identity import IDENTITY_KEYS
from mnemo.errors import InvalidInput, MnemoError, NotFound, ProviderError, invalid_field
from mnemo.runtime import get_services
from mnemo.tools.registry import load_catalog
from mnemo.tools.schema import openapi_document, tool_listing

MAX_BODY_BYTES = 1 << 20
#: A body over MAX_BODY_BYTES is read and dropped up to this size so that the client gets to read the
#: answer; past it the connection is closed instead.
MAX_DRAINED_BYTES = 16 << 20
HEADER_PREFIX = "x-mnemo-"
_LENGTH = re.compile(r"\s*[0-9]{1,18}\s*")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,8}")


def authorizer_from_headers(headers: Mapping[str, str], default_roles: tuple[str, ...]) -> dict[str, str]:
    """What a Lambda authorizer would return for these headers (tenant and user default to local)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    context = {"tenant": "local", "user": "local"}
    for key in IDENTITY_KEYS:
        value = lowered.get(f"{HEADER_PREFIX}{key}")
        if value is not None:
            context[key] = value.strip()
    roles = lowered.get(f"{HEADER_PREFIX}roles")
    context["roles"] = roles if roles is not None else ",".join(default_roles)
    return context


def proxy_event(
    method: str, target: str, headers: Mapping[str, str], body: str | None, authorizer: dict[str, str]
) -> dict[str, Any]:
    split = urlsplit(target)
    query = dict(parse_qsl(split.query))
    path = split.path
    path_parameters = {"name": path.rsplit("/", 1)[-1]} if path.startswith("/v1/tools/") else None
    return {
        "resource": "/v1/tools/{name}" if path_parameters else path,
        "path": path,
        "httpMethod": method,
        "headers": dict(headers),
        "multiValueHeaders": {key: [value] for key, value in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} or None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/v1/tools/{name}" if path_parameters else path,
            "httpMethod": method,
            "path": f"/local{path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent")},
            "authorizer": authorizer,
        },
        "body": body,
        "isBase64Encoded": False,
    }


class _Handler(BaseHTTPRequestHandler):
    server_version = f"mnemo/{__version__}"
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, the body waits
    # for the client's delayed ACK (~40 ms) on every keep-alive request.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet unless asked
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode())

    def _error(self, error: MnemoError) -> None:
        self._json(error.status, error.envelope())

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a line or header too long, a malformed request, an unknown method) as the
        envelope rather than its HTML page; the connection closes after them, as http.server does."""
        path = urlsplit(getattr(self, "path", "") or "").path
        error: MnemoError
        if code == HTTPStatus.NOT_IMPLEMENTED:  # a method no do_* answers (HEAD, OPTIONS, anything)
            error = NotFound(f"No route for {self.command} {path}", {"path": path})
        elif code == HTTPStatus.REQUEST_URI_TOO_LONG:
            error = invalid_field("path", "the request line is longer than 65536 bytes")
        elif code == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
            error = invalid_field("headers", f"{message or 'too large'} (at most 100 headers of 65536 bytes each)")
        else:
            error = invalid_field("request", message or HTTPStatus(code).phrase)
        self.close_connection = True
        body = json.dumps(error.envelope()).encode()
        self.send_response(error.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, error: MnemoError) -> None:
        """Answer an error on a request whose body could not be delimited: the connection cannot be reused."""
        self.close_connection = True
        self._error(error)

    def _read_body(self) -> bytes | None:
        """The request body; None when it could not be read and the error has been answered."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        lengths = set(self.headers.get_all("Content-Length") or [])
        if len(lengths) > 1:
            self._refuse(invalid_field("Content-Length", "given more than once with different values"))
            return None
        declared = lengths.pop() if lengths else ""
        if declared.strip() and not _LENGTH.fullmatch(declared):
            self._refuse(invalid_field("Content-Length", "must be a whole number of bytes"))
            return None
        length = int(declared) if declared.strip() else 0
        if length > MAX_BODY_BYTES:
            self._drain(length)
            self._error(InvalidInput(f"body: larger than {MAX_BODY_BYTES} bytes", {"field": "body"}))
            return None
        return self.rfile.read(length) if length else b""

    def _drain(self, length: int) -> None:
        left = min(length, MAX_DRAINED_BYTES)
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            left -= len(chunk)
        if length > MAX_DRAINED_BYTES:
            self.close_connection = True

    def _read_chunked(self) -> bytes | None:
        """A Transfer-Encoding: chunked body, held to MAX_BODY_BYTES like any other."""
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.fullmatch(size_line):
                self._refuse(invalid_field("body", "malformed chunked transfer encoding"))
                return None
            size = int(size_line, 16)
            if size == 0:
                while self.rfile.readline(1 << 16) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            if len(body) + size > MAX_BODY_BYTES:
                self._refuse(InvalidInput(f"body: larger than {MAX_BODY_BYTES} bytes", {"field": "body"}))
                return None
            body += self.rfile.read(size)
            self.rfile.readline(3)

    def do_GET(self) -> None:
        try:
            self._get()
        except Exception:  # the routes answer their own errors; this is the last line
            logger.exception("local server failure")
            self._error(ProviderError("Internal error; it has been logged"))

    def _get(self) -> None:
        path = urlsplit(self.path).path
        if path == "/health":
            self._json(200, {"status": "ok", "version": __version__, "tools": len(load_catalog())})
        elif path == "/v1/tools":
            self._json(200, {"tools": tool_listing(load_catalog())})
        elif path == "/v1/openapi.json":
            host = self.headers.get("Host", "127.0.0.1")
            self._json(200, openapi_document(load_catalog(), server_url=f"http://{host}", identity_headers=True))
        elif path in ("/docs", "/docs/"):
            self._send(200, _docs_page().encode(), "text/html; charset=utf-8")
        elif path in ("/docs/swagger-ui-bundle.min.js", "/docs/swagger-ui.min.css"):
            asset = _swagger_dir() / path.rsplit("/", 1)[-1]
            kind = "text/javascript" if asset.suffix == ".js" else "text/css"
            self._send(200, asset.read_bytes(), kind)
        elif path == "/mcp":
            self._method_not_allowed()
        else:
            self._error(NotFound(f"No route for GET {path}", {"path": path}))

    def do_POST(self) -> None:
        try:
            self._post()
        except Exception:  # the resolver answers its own errors; this is the last line
            logger.exception("local server failure")
            self._error(ProviderError("Internal error; it has been logged"))

    def _mcp(self, body: bytes) -> None:
        """Streamable HTTP MCP at /mcp; identity from the same headers the tools API reads."""
        from mnemo.entry.identity import context_from_event
        from mnemo.entry.mcp_server import http_bridge

        headers = {key: value for key, value in self.headers.items()}
        authorizer = authorizer_from_headers(headers, get_services().settings.default_local_roles)
        try:
            context = context_from_event({"requestContext": {"authorizer": authorizer}})
        except MnemoError as error:
            self._error(error)
            return
        status, response_headers, payload = http_bridge(local_only=True).handle(self.command, headers, body, context)
        self.send_response(status)
        for key, value in response_headers.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _post(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._error(InvalidInput("body: not UTF-8", {"field": "body"}))
            return
        if urlsplit(self.path).path == "/mcp":
            self._mcp(raw)
            return
        headers = {key: value for key, value in self.headers.items()}
        authorizer = authorizer_from_headers(headers, get_services().settings.default_local_roles)
        event = proxy_event("POST", self.path, headers, body or None, authorizer)
        result = resolve(all_tools_resolver(), event, None)
        content_type = "application/json"
        for key, values in (result.get("multiValueHeaders") or {}).items():
            if key.lower() == "content-type" and values:
                content_type = values[0]
        self._send(int(result["statusCode"]), (result.get("body") or "").encode(), content_type)

    def _method_not_allowed(self) -> None:
        if urlsplit(self.path).path == "/mcp":  # the SDK answers GET/DELETE in stateless mode
            self._mcp(b"")
            return
        self._error(NotFound(f"No route for {self.command} {urlsplit(self.path).path}", {"path": self.path}))

    do_PUT = do_DELETE = do_PATCH = _method_not_allowed


def _swagger_dir() -> Path:
    from aws_lambda_powertools.event_handler.openapi import swagger_ui

    return Path(swagger_ui.__file__).parent


def _docs_page() -> str:
    from aws_lambda_powertools.event_handler.openapi.swagger_ui.html import generate_swagger_html

    spec = json.dumps(openapi_document(load_catalog(), identity_headers=True))
    # persist_authorization keeps the identity set in the Authorize dialog across reloads of /docs.
    return generate_swagger_html(
        spec, "/docs/swagger-ui-bundle.min.js", "/docs/swagger-ui.min.css", "/docs", None, persist_authorization=True
    )


def make_server(host: str = "127.0.0.1", port: int = 8765, verbose: bool = False) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    return server


def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    server = make_server(host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread

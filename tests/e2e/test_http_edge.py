"""The HTTP edge of `mnemo serve`, over real sockets against the real command.

What the local server promises at its edge:
- Closed to web pages on every route: a Host other than the loopback names (or an ``--allow-host``) is 403
  UNAUTHORIZED naming ``Host``; a foreign Origin (neither same-origin nor an ``--allow-origin``) is 403 naming
  ``Origin``; a tool call is read only as ``application/json`` (415 INVALID_INPUT naming ``Content-Type``
  otherwise), so a browser's cross-site ``text/plain`` POST stores nothing.
- Connections: idle and slow clients are timed out and cannot starve others; clients that open a connection per
  request are not reset; a client hang-up is not an error; SIGTERM lets an in-flight request finish, then exits 0.
- ``GET``/``DELETE /mcp`` are 405 with ``Allow: POST`` at once; ``POST /mcp`` speaks MCP.
- HTTP parsing: a malformed request line gets a status line; a transfer coding other than ``chunked`` is refused;
  a request with both Transfer-Encoding and Content-Length is answered and then the connection is closed.
- Identity headers are used exactly as sent: a stray byte is refused, not trimmed; an empty one is refused.
- A busy port is one line on stderr and exit status 1; ``--workers 2`` share the data and keep tenants apart.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import http_session
from pydantic import ValidationError
from raw_http import Answer, Wire, chunked, exchange, request

from helpers import http_call, serve_process
from mnemo.context import RequestContext

EVIL = "http://evil.example"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@dataclass
class Server:
    """A running `mnemo serve` and everything it has printed so far (stdout and stderr)."""

    process: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> int:
        """SIGTERM, then the exit status once the process is gone."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()

    @property
    def output(self) -> str:
        return "".join(self.lines)


@contextmanager
def running(data_dir: Path, args: Sequence[str] = ()) -> Iterator[Server]:
    """`mnemo serve [args]` (hashing embedder) until the block ends; its output is read as it comes, so a
    chatty server never blocks on a full pipe."""
    process, url = serve_process(data_dir, {"MNEMO_EMBEDDER": "hashing"}, args)
    server = Server(process, url)
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: server.lines.extend(iter(stdout.readline, "")), daemon=True)
    reader.start()
    try:
        yield server
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        reader.join(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the cases that do not stop it."""
    with running(tmp_path_factory.mktemp("edge")) as started:
        yield started


def tool_request(port: int, tool: str, body: Any, headers: dict[str, str], host: str | None = None) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return request("POST", f"/v1/tools/{tool}", port, headers, data, host=host)


def stored(url: str, marker: str, **identity: str) -> list[str]:
    """The contents of the caller's memories that mention ``marker``."""
    status, found = http_call(url, "memory_search", {"query": marker, "threshold": 0, "limit": 100}, **identity)
    assert status == 200, found
    return [hit["content"] for hit in found["results"] if marker in hit["content"]]


def assert_refused(answer: Answer, status: int, code: str, field_names: set[str]) -> None:
    """``answer`` is the error envelope with this status and code, naming one of ``field_names``."""
    assert answer.status == status, (answer.status, answer.text)
    assert answer.headers.get("content-type", "").startswith("application/json"), answer.headers
    envelope = answer.json()
    assert envelope["success"] is False, envelope
    assert envelope["errorCode"] == code, envelope
    assert envelope["details"]["field"].lower() in field_names, envelope


# ------------------------------------------------------------------ web pages ---
def test_a_cross_site_text_plain_post_is_refused_and_stores_nothing(server: Server) -> None:
    """What a page on another site can send without a preflight: no custom header, a "simple" content type."""
    marker = "crosssitetextplain"
    page = {"Origin": EVIL, "Content-Type": "text/plain;charset=UTF-8"}
    answer = exchange(server.port, tool_request(server.port, "memory_add", {"content": f"{marker} x"}, page))
    assert_refused(answer, 403, "UNAUTHORIZED", {"origin"})
    assert stored(server.url, marker) == []


@pytest.mark.parametrize(
    ("marker", "headers"),
    [
        ("sameoriginplain", {"Origin": "ORIGIN", "Content-Type": "text/plain"}),
        ("curlform", {"Content-Type": "application/x-www-form-urlencoded"}),
        ("nocontenttype", {}),
    ],
)
def test_a_tool_call_that_is_not_json_is_415_and_stores_nothing(
    server: Server, marker: str, headers: dict[str, str]
) -> None:
    sent = {key: value.replace("ORIGIN", f"http://127.0.0.1:{server.port}") for key, value in headers.items()}
    answer = exchange(server.port, tool_request(server.port, "memory_add", {"content": f"{marker} x"}, sent))
    assert_refused(answer, 415, "INVALID_INPUT", {"content-type"})
    assert stored(server.url, marker) == []


@pytest.mark.parametrize(
    ("marker", "content_type"),
    [("sameoriginjson", "application/json"), ("sameorigincharset", "application/json; charset=utf-8")],
)
def test_a_same_origin_json_post_works(server: Server, marker: str, content_type: str) -> None:
    headers = {"Origin": f"http://127.0.0.1:{server.port}", "Content-Type": content_type, "X-Mnemo-User": "edge-so"}
    answer = exchange(server.port, tool_request(server.port, "memory_add", {"content": f"{marker} x"}, headers))
    assert answer.status == 200, answer.text
    assert answer.json()["success"], answer.text
    assert stored(server.url, marker, user="edge-so") == [f"{marker} x"]


ROUTES = [
    ("GET", "/health", None),
    ("GET", "/v1/tools", None),
    ("GET", "/v1/openapi.json", None),
    ("GET", "/docs", None),
    ("POST", "/v1/tools/memory_search", {"query": "anything", "threshold": 0}),
    (
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "edge", "version": "1"},
            },
        },
    ),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[path for _, path, _ in ROUTES])
def test_a_foreign_host_is_refused_on_every_route(server: Server, method: str, path: str, body: Any) -> None:
    """DNS rebinding: the page's own name in Host, the loopback address underneath."""
    headers = {"X-Mnemo-User": "edge-rebind", "Accept": "application/json, text/event-stream"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    data = None if body is None else json.dumps(body).encode()
    sent = request(method, path, server.port, headers, data, host=f"evil.example:{server.port}")
    assert_refused(exchange(server.port, sent), 403, "UNAUTHORIZED", {"host"})


def test_allowed_hosts_and_origins_are_served(tmp_path: Path) -> None:
    with running(tmp_path, ["--allow-host", "evil.example", "--allow-origin", EVIL]) as allowed:
        port, host = allowed.port, f"evil.example:{allowed.port}"
        for path in ("/health", "/v1/tools", "/v1/openapi.json", "/docs"):
            answer = exchange(port, request("GET", path, port, host=host))
            assert answer.status == 200, (path, answer.status, answer.text)

        json_post = {"Origin": EVIL, "Content-Type": "application/json", "X-Mnemo-User": "edge-allowed"}
        added = exchange(port, tool_request(port, "memory_add", {"content": "allowedorigin x"}, json_post, host))
        assert added.status == 200, added.text
        assert added.json()["success"], added.text
        assert stored(allowed.url, "allowedorigin", user="edge-allowed") == ["allowedorigin x"]

        text_post = {**json_post, "Content-Type": "text/plain"}
        refused = exchange(port, tool_request(port, "memory_add", {"content": "allowedplain x"}, text_post, host))
        assert_refused(refused, 415, "INVALID_INPUT", {"content-type"})

        other_host = exchange(port, request("GET", "/health", port, host=f"other.example:{port}"))
        assert_refused(other_host, 403, "UNAUTHORIZED", {"host"})
        other_origin = {**json_post, "Origin": "http://other.example"}
        refused = exchange(port, tool_request(port, "memory_add", {"content": "otherorigin x"}, other_origin))
        assert_refused(refused, 403, "UNAUTHORIZED", {"origin"})


# ---------------------------------------------------------------- connections ---
def test_idle_connections_do_not_stop_health_and_are_closed(server: Server) -> None:
    """1,000 clients that send half a request line and wait: /health still answers, and the idle ones are
    dropped by the server in time."""
    wanted = 1_100  # the idle sockets, and room for this process's own files
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"this machine allows {hard} open files per process; the test needs about {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    try:
        with ExitStack() as idle:
            sockets = []
            for _ in range(1_000):
                sock = idle.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=60))
                sock.sendall(b"GET /hea")
                sockets.append(sock)
            with urllib.request.urlopen(f"{server.url}/health", timeout=15) as response:
                assert response.status == 200
            for sock in sockets[:3]:
                sent_back = b""
                try:
                    while chunk := sock.recv(65536):
                        sent_back += chunk
                except ConnectionResetError:
                    pass
                except TimeoutError:
                    pytest.fail("an idle half-sent request was still open after 60 s")
                assert sent_back == b"" or sent_back.startswith((b"HTTP/1.1 4", b"HTTP/1.0 4")), sent_back
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_clients_opening_a_connection_per_request_see_no_reset(server: Server) -> None:
    """32 clients, 20 tool calls each (a write, then a search, in turn), every call on a new connection."""

    def twenty(client: int) -> list[Any]:
        seen: list[Any] = []
        headers = {"Content-Type": "application/json", "X-Mnemo-User": f"edge-c{client}"}
        for n in range(20):
            tool, body = ("memory_add", {"content": f"burst {n}"}) if n % 2 else ("memory_search", {"query": "burst"})
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            try:
                connection.request("POST", f"/v1/tools/{tool}", json.dumps(body), headers)
                response = connection.getresponse()
                response.read()
                seen.append(response.status)
            except OSError as error:
                seen.append(repr(error))
            finally:
                connection.close()
        return seen

    with ThreadPoolExecutor(32) as pool:
        outcomes = [outcome for batch in pool.map(twenty, range(32)) for outcome in batch]
    assert len(outcomes) == 640
    assert [outcome for outcome in outcomes if outcome != 200] == []


def test_a_client_hang_up_is_not_an_error(tmp_path: Path) -> None:
    with running(tmp_path) as hung:
        port = hung.port
        body = json.dumps({"content": "hangup never completes"}).encode()
        headers = {"Content-Type": "application/json", "X-Mnemo-User": "edge-hangup"}
        whole = tool_request(port, "memory_add", body, headers)
        head_end = whole.index(b"\r\n\r\n") + 4
        for partial in (whole[: head_end + len(body) // 2], whole[:head_end], b"POST /v1/tools/mem"):
            with Wire(port) as wire:
                wire.send(partial)
        assert exchange(port, request("GET", "/health", port)).status == 200
        status, added = http_call(hung.url, "memory_add", {"content": "hangup after x"}, user="edge-hangup")
        assert status == 200, added
        assert stored(hung.url, "hangup", user="edge-hangup") == ["hangup after x"]
        assert hung.stop() == 0
    assert "Traceback" not in hung.output, hung.output
    assert "ERROR" not in hung.output, hung.output


def test_sigterm_lets_an_in_flight_request_finish(tmp_path: Path) -> None:
    with running(tmp_path) as stopping:
        port = stopping.port
        body = json.dumps({"content": "sigterm in flight"}).encode()
        headers = {"Content-Type": "application/json", "X-Mnemo-User": "edge-term"}
        whole = tool_request(port, "memory_add", body, headers)
        split = whole.index(b"\r\n\r\n") + 4 + len(body) // 2
        with Wire(port, timeout=30) as wire:
            wire.send(whole[:split])
            time.sleep(0.5)  # let the server read the head before it is told to stop
            stopping.process.send_signal(signal.SIGTERM)
            time.sleep(0.5)  # ... and let it take the signal before the rest arrives
            wire.send(whole[split:])
            answer = wire.answer()
        assert answer is not None, f"no answer to the in-flight request: {stopping.output}"
        assert answer.status == 200, answer.text
        assert answer.json()["success"], answer.text
        assert stopping.stop() == 0, stopping.output
    assert "Traceback" not in stopping.output, stopping.output


def test_a_busy_port_is_one_line_and_status_1(server: Server, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mnemo.cli", "serve", "--port", str(server.port), "--data-dir", str(tmp_path)]
    second = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env={**os.environ, "MNEMO_EMBEDDER": "hashing"}
    )
    assert second.returncode == 1, (second.returncode, second.stdout, second.stderr)
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert str(server.port) in lines[0], second.stderr


# ------------------------------------------------------------------------ MCP ---
@pytest.mark.parametrize(
    ("method", "accept"),
    [("GET", "text/event-stream"), ("GET", BROWSER_ACCEPT), ("DELETE", "application/json, text/event-stream")],
    ids=["mcp-client-stream", "browser", "delete"],
)
def test_mcp_other_methods_are_405_at_once(server: Server, method: str, accept: str) -> None:
    answer = exchange(server.port, request(method, "/mcp", server.port, {"Accept": accept}), timeout=10)
    assert answer.status == 405, (answer.status, answer.text)
    assert "POST" in answer.headers.get("allow", ""), answer.headers


def test_mcp_post_still_speaks_mcp(server: Server) -> None:
    async def session() -> set[str]:
        async with http_session(server.url, {"user": "edge-mcp"}) as opened:
            return {tool.name for tool in (await opened.list_tools()).tools}

    assert "memory_add" in anyio.run(session)


# ------------------------------------------------------------------- parsing ---
@pytest.mark.parametrize("line", [b"GET /health HTTP/9.9", b"GET /health http/1.1"], ids=["version", "lowercase"])
def test_a_malformed_request_line_gets_a_status_line(server: Server, line: bytes) -> None:
    data = line + b"\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port
    answer = exchange(server.port, data)  # fails on a first line that is not a status line
    assert 400 <= answer.status < 600, (answer.status, answer.text)


@pytest.mark.parametrize("coding", ["xchunked", "gzip, chunked"])
def test_an_unknown_transfer_coding_is_refused(server: Server, coding: str) -> None:
    """The body is valid JSON in the chunked coding: a server that decodes it as chunked would answer 200."""
    headers = {"Content-Type": "application/json", "X-Mnemo-User": "edge-te", "Transfer-Encoding": coding}
    body = chunked(json.dumps({"query": "transfer coding", "threshold": 0}).encode())
    answer = exchange(server.port, request("POST", "/v1/tools/memory_search", server.port, headers) + body)
    assert 400 <= answer.status < 500 or answer.status == 501, (answer.status, answer.text)


def test_transfer_encoding_with_content_length_closes_after_the_answer(server: Server) -> None:
    """RFC 9112 §6.3: such a request may be smuggling; answer it, then close, so what follows is never served."""
    framed = chunked(json.dumps({"query": "smuggled", "threshold": 0}).encode())
    headers = {
        "Content-Type": "application/json",
        "X-Mnemo-User": "edge-te",
        "Transfer-Encoding": "chunked",
        "Content-Length": str(len(framed)),
    }
    first = request("POST", "/v1/tools/memory_search", server.port, headers) + framed
    with Wire(server.port, timeout=30) as wire:
        wire.send(first + request("GET", "/health", server.port))
        try:
            answers = wire.answers_until_close()
        except TimeoutError:
            pytest.fail("the connection was left open after a request with Transfer-Encoding and Content-Length")
    assert len(answers) == 1, [(answer.status, answer.text[:200]) for answer in answers]


# ------------------------------------------------------------------ identity ---
def test_an_identity_with_a_stray_byte_is_refused_not_trimmed(server: Server) -> None:
    status, added = http_call(server.url, "memory_add", {"content": "nbspowner x"}, user="edge-u1")
    assert status == 200, added
    port = server.port
    stray = {"Content-Type": "application/json", "X-Mnemo-User": "edge-u1\xa0"}

    search = exchange(port, tool_request(port, "memory_search", {"query": "nbspowner", "threshold": 0}, stray))
    assert_refused(search, 403, "UNAUTHORIZED", {"user", "x-mnemo-user"})
    add = exchange(port, tool_request(port, "memory_add", {"content": "nbspintruder x"}, stray))
    assert_refused(add, 403, "UNAUTHORIZED", {"user", "x-mnemo-user"})
    assert stored(server.url, "nbsp", user="edge-u1") == ["nbspowner x"]


@pytest.mark.parametrize("name", ["tenant", "user"])
def test_an_empty_identity_header_is_refused(server: Server, name: str) -> None:
    headers = {"Content-Type": "application/json", f"X-Mnemo-{name.title()}": ""}
    answer = exchange(server.port, tool_request(server.port, "memory_search", {"query": "x"}, headers))
    assert_refused(answer, 403, "UNAUTHORIZED", {name, f"x-mnemo-{name}"})


@pytest.mark.parametrize("name", ["tenant", "user", "agent", "session", "project", "team", "org"])
def test_an_id_ending_in_a_newline_is_refused(name: str) -> None:
    """``$`` would match before a final newline; the id pattern must match the whole value."""
    with pytest.raises(ValidationError):
        RequestContext.model_validate({name: "u1\n"})


# ------------------------------------------------------------------- workers ---
def test_workers_share_writes_and_keep_tenants_apart(tmp_path: Path) -> None:
    with running(tmp_path, ["--workers", "2"]) as pair:
        status, added = http_call(pair.url, "memory_add", {"content": "workershared x"}, user="w", tenant="edge-a")
        assert status == 200, added
        for _ in range(12):  # each on a fresh connection, so either worker may answer
            assert stored(pair.url, "workershared", user="w", tenant="edge-a") == ["workershared x"]
            assert stored(pair.url, "workershared", user="w", tenant="edge-b") == []
        assert pair.stop() == 0, pair.output

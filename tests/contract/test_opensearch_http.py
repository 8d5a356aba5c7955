"""mnemo.adapters.aws.opensearch.http, the OpenSearch REST client, against a real local HTTP server.

The server (the standard library's, in a thread) answers as a script says: a status and a JSON body, a
dropped connection, or an answer slower than the client's timeout. Shown: bodies are sent as JSON or NDJSON
with the paths opensearch-py uses; statuses become TransportError subclasses carrying the error type; a
dropped connection is sent again (up to ``max_retries``), a timeout never; ``request_timeout`` is this
request's timeout and not a query parameter. Signing is checked in test_opensearch_requests.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.opensearch.errors import translated
from mnemo.adapters.aws.opensearch.http import (
    AuthorizationException,
    ConnectionError,
    ConnectionTimeout,
    NotFoundError,
    OpenSearchClient,
)
from mnemo.errors import ProviderError, RateLimited, Timeout


class Scripted(ThreadingHTTPServer):
    """Answers each request with the next step of ``script``: (status, body), "drop" or ("slow", seconds)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: list[Any] = []
        self.seen: list[tuple[str, str, bytes, dict[str, str]]] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a dropped connection's handler fails to flush: that is the point

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Scripted

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append((self.command, self.path, body, dict(self.headers.items())))
        step = self.server.script.pop(0) if self.server.script else (200, {})
        if step == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(step, tuple) and step[0] == "slow":
            time.sleep(step[1])
            step = (200, {})
        status, answer = step
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer


@pytest.fixture
def server() -> Iterator[Scripted]:
    scripted = Scripted()
    thread = threading.Thread(target=scripted.serve_forever, daemon=True)
    thread.start()
    yield scripted
    scripted.shutdown()
    scripted.server_close()


def client_of(server: Scripted, timeout: float = 5.0) -> OpenSearchClient:
    return make_client(server.url, None, "es", endpoint_is_local=True, timeout=timeout)


def test_bodies_and_paths_are_opensearchs(server: Scripted) -> None:
    client = client_of(server)
    server.script = [(200, {"responses": []}), (200, {"items": []}), (200, {"hits": {}}), (200, {"count": 3})]

    client.msearch(body=[{"index": "mnemo-a"}, {"size": 1}], params={"request_timeout": 2})
    client.bulk(body="\n".join([json.dumps({"delete": {"_index": "mnemo-a", "_id": "x"}})]) + "\n")
    client.search(index="mnemo-a", body={"query": {"match_all": {}}})
    assert client.count(index="mnemo-a") == {"count": 3}

    (m_method, m_path, m_body, m_headers), (b_method, b_path, *_), (s_method, s_path, s_body, _), count = server.seen
    assert (m_method, m_path) == ("POST", "/_msearch")  # request_timeout is the client's, not a query parameter
    assert [json.loads(line) for line in m_body.decode().splitlines()] == [{"index": "mnemo-a"}, {"size": 1}]
    assert m_body.endswith(b"\n") and m_headers["Content-Type"] == "application/json"
    assert (b_method, b_path) == ("POST", "/_bulk")
    assert (s_method, s_path, json.loads(s_body)) == ("POST", "/mnemo-a/_search", {"query": {"match_all": {}}})
    assert count[:2] == ("POST", "/mnemo-a/_count")


def test_an_index_name_stays_one_path_segment(server: Scripted) -> None:
    client = client_of(server)
    client.indices.delete(index="a/../b?c")
    assert server.seen[-1][:2] == ("DELETE", "/a%2F..%2Fb%3Fc")


def test_statuses_become_transport_errors_with_the_answers_error_type(server: Scripted) -> None:
    client = client_of(server)
    server.script = [
        (404, {"error": {"type": "index_not_found_exception"}, "status": 404}),
        (403, {"message": "denied"}),
        (429, {"error": {"type": "too_many_requests"}}),
    ]
    with pytest.raises(NotFoundError) as missing:
        client.indices.get_mapping(index="mnemo-gone")
    assert (missing.value.status_code, missing.value.error) == (404, "index_not_found_exception")
    with pytest.raises(AuthorizationException) as denied:
        client.count(index="mnemo-a")
    assert (denied.value.status_code, denied.value.error, denied.value.info) == (403, "403", {"message": "denied"})
    with pytest.raises(RateLimited), translated():  # the adapter's envelope: RATE_LIMITED, retryable
        client.search(index="mnemo-a", body={})
    assert len(server.seen) == 3  # an answered request is never sent again


def test_exists_is_a_head_request(server: Scripted) -> None:
    client = client_of(server)
    server.script = [(200, {}), (404, {})]
    assert client.indices.exists(index="mnemo-a") is True
    assert client.indices.exists(index="mnemo-b") is False
    assert [seen[0] for seen in server.seen] == ["HEAD", "HEAD"]


def test_a_dropped_connection_is_sent_again_and_then_given_up(server: Scripted) -> None:
    client = client_of(server)
    server.script = ["drop", (200, {"count": 1})]
    assert client.count(index="mnemo-a") == {"count": 1}
    assert len(server.seen) == 2

    server.seen.clear()
    server.script = ["drop", "drop", "drop", "drop"]
    with pytest.raises(ConnectionError) as broken:
        client.count(index="mnemo-a")
    assert not isinstance(broken.value, ConnectionTimeout)
    assert len(server.seen) == 3  # the first try and MAX_RETRIES (2) more
    server.script = ["drop", "drop", "drop"]
    with pytest.raises(ProviderError), translated():
        client.count(index="mnemo-a")


def test_a_timeout_is_never_sent_again_and_reads_as_a_wake(server: Scripted) -> None:
    client = client_of(server, timeout=5.0)
    server.script = [("slow", 1.0)]
    with pytest.raises(ConnectionTimeout):
        client.search(index="mnemo-a", body={}, params={"request_timeout": 0.2})  # this request's own timeout
    assert len(server.seen) == 1
    server.script = [("slow", 1.0)]
    with pytest.raises(Timeout) as waking, translated(0.2):
        client.search(index="mnemo-a", body={}, params={"request_timeout": 0.2})
    assert waking.value.details["waitedSeconds"] == 0.2


def test_a_refused_connection_is_a_connection_error() -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as closed:
        url = f"http://127.0.0.1:{closed.server_address[1]}"
    client = make_client(url, None, "es", endpoint_is_local=True, timeout=2.0)
    with pytest.raises(ConnectionError):
        client.count(index="mnemo-a")

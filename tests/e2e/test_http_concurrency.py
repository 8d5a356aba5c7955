"""`mnemo serve` runs tool calls side by side, and its deadlines end slow clients.

The server runs in this process (``helpers.local_server``) so that a test can
hold one tool call inside the embedder on an event, and shorten the deadlines
(module settings read at call time). Nothing here measures time: a held call
either lets others through or it does not, and a deadline either closes the
connection or the read waits for the socket's own 15 s timeout and fails.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from raw_http import Wire, request

from helpers import local_server, make_services

HELD = "hold this search"


class HoldingEmbedder:
    """The hashing embedder, except that a text equal to HELD waits until ``release`` is set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if HELD in texts:
            self.entered.set()
            assert self.release.wait(60), "the held call was never released"
        return list(self.inner.embed(texts))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[int, HoldingEmbedder]]:
    services = make_services(tmp_path)
    embedder = HoldingEmbedder(services.embedder)
    services.embedder = embedder  # type: ignore[misc]
    with local_server(services) as url:
        yield int(url.rsplit(":", 1)[1]), embedder
    embedder.release.set()


def _search(port: int, query: str, user: str) -> bytes:
    body = json.dumps({"query": query}).encode()
    headers = {"Content-Type": "application/json", "X-Mnemo-User": user}
    return request("POST", "/v1/tools/memory_search", port, headers, body)


def test_a_held_tool_call_does_not_hold_the_others(served: tuple[int, HoldingEmbedder]) -> None:
    port, embedder = served
    with Wire(port) as held, Wire(port) as other:
        held.send(_search(port, HELD, "alice"))
        assert embedder.entered.wait(15), "the held call never reached the embedder"
        # While alice's call sits inside a tool, bob's runs to the end: no lock spans a tool call.
        for query in ("first", "second", "third"):
            other.send(_search(port, query, "bob"))
            answer = other.answer()
            assert answer is not None
            assert answer.status == 200
            assert answer.json()["success"]
        embedder.release.set()
        answer = held.answer()
        assert answer is not None
        assert answer.status == 200
        assert answer.json()["success"]


def test_a_body_too_slow_gets_408_and_the_connection_closes(
    served: tuple[int, HoldingEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = served
    monkeypatch.setattr("mnemo.entry.http_body.BODY_TIMEOUT_SECONDS", 0.5)
    head = request("POST", "/v1/tools/memory_add", port, {"Content-Type": "application/json", "Content-Length": "40"})
    with Wire(port) as wire:
        wire.send(head + b'{"content": ')  # and never the rest
        answer = wire.answer()
        assert answer is not None
        assert answer.status == 408
        envelope = answer.json()
        assert envelope["errorCode"] == "INVALID_INPUT"
        assert envelope["details"]["field"] == "body"
        assert envelope["retryable"] is True
        assert wire.at_eof()


def test_a_request_head_that_never_ends_is_closed(
    served: tuple[int, HoldingEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = served
    monkeypatch.setattr("mnemo.entry.http_protocol.HEAD_TIMEOUT_SECONDS", 0.5)
    with Wire(port) as wire:
        wire.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert wire.at_eof()


def test_the_head_deadline_starts_again_after_each_answer(
    served: tuple[int, HoldingEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = served
    monkeypatch.setattr("mnemo.entry.http_protocol.HEAD_TIMEOUT_SECONDS", 0.5)
    with Wire(port) as wire:
        wire.send(request("GET", "/health", port))
        answer = wire.answer()
        assert answer is not None
        assert answer.status == 200
        wire.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a second head, left unfinished
        assert wire.at_eof()

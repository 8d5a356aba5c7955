"""An OpenSearch Serverless collection scaled to zero answers its first request after 10-30 s.

A proxy in front of osmem-server holds every request for ``delay`` seconds, as a waking collection
would (the timeouts are scaled down: the search's to 1 s, memory_add's own index write to 0.3 s). A
search that outwaits its timeout answers a retryable TIMEOUT naming the wait, once (no client retry
waits again, and no keyword search follows the timed-out k-NN); memory_add stores the memory after its
short wait and queues it for the stream indexer, which indexes it once the collection is awake.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from helpers import ctx, make_services
from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.errors import MnemoError
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemorySearchInput
from mnemo.memory.service import MemoryService
from mnemo.outbox import OUTBOX_PREFIX, QUEUED, STREAM_LABEL, IndexOutbox
from mnemo.ports import IndexDoc, Put

ALICE = ctx()
SEARCH_TIMEOUT = 1.0
WRITE_TIMEOUT = 0.3


class WakingProxy:
    """Forwards every request to ``upstream`` after ``delay`` seconds; counts the requests it got."""

    def __init__(self, upstream: str) -> None:
        self.delay = 0.0
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                proxy.requests += 1
                time.sleep(proxy.delay)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.path.split("?")[0].endswith("/_msearch") and body and b'"knn"' in body:
                    self._answer_knn(body)  # osmem has no k-NN: the near-duplicate check finds nothing
                    return
                request = urllib.request.Request(upstream + self.path, data=body, method=self.command)
                for name in ("Content-Type",):
                    if self.headers.get(name):
                        request.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, payload, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
                except urllib.error.HTTPError as error:
                    status, payload, kind = error.code, error.read(), error.headers.get("Content-Type")
                self._send(status, payload, kind)

            def _answer_knn(self, body: bytes) -> None:
                searches = [line for line in body.splitlines() if line.strip()][1::2]
                empty = {"took": 1, "timed_out": False, "hits": {"total": {"value": 0}, "hits": []}}
                self._send(200, json.dumps({"took": 1, "responses": [empty for _ in searches]}).encode(), None)

            def _send(self, status: int, payload: bytes, kind: str | None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind or "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def waking(osmem_clone: Any, tmp_path: Path) -> Iterator[tuple[MemoryService, IndexOutbox, WakingProxy, Any]]:
    proxy = WakingProxy(osmem_clone.url.rstrip("/"))
    client = make_client(proxy.url, None, "aoss", endpoint_is_local=True, timeout=SEARCH_TIMEOUT)
    index = OpenSearchVectorIndex(
        lambda: client,
        index_prefix="mnemo-wake-",
        serverless=True,
        timeout=SEARCH_TIMEOUT,
        write_timeout=WRITE_TIMEOUT,
    )
    # The index exists before the tests' adds, as infra/bootstrap_opensearch.py makes it in a stack.
    vector = HashingEmbedder(256).embed(["bootstrap"])[0]
    direct = make_client(osmem_clone.url, None, "aoss", endpoint_is_local=True)
    bootstrap = OpenSearchVectorIndex(lambda: direct, index_prefix="mnemo-wake-", serverless=True)
    bootstrap.upsert(NAMESPACE, [IndexDoc("bootstrap", vector, "bootstrap", {"scope": ["elsewhere"]})])
    records = make_services(tmp_path).records
    families: dict[str, Any] = {}
    outbox = IndexOutbox(records, lambda: families, index)
    service = MemoryService(records, index, HashingEmbedder(256), outbox)
    families[service.family] = service
    try:
        yield service, outbox, proxy, index
    finally:
        proxy.close()


def test_a_search_that_outwaits_the_wake_answers_a_retryable_timeout_naming_it(waking: Any) -> None:
    service, outbox, proxy, _ = waking
    service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))  # awake: the index exists
    assert outbox.pending() == []  # indexed inline: no marker
    proxy.delay, before = 3 * SEARCH_TIMEOUT, proxy.requests
    started = time.monotonic()
    with pytest.raises(MnemoError) as raised:
        service.search(ALICE, MemorySearchInput(query="zebra gateway", threshold=0.0))
    waited = time.monotonic() - started
    envelope = raised.value.envelope()
    assert envelope["errorCode"] == "TIMEOUT"
    assert raised.value.status == 504  # an envelope with its status, never a bare gateway answer
    assert envelope["retryable"] is True
    assert "waking from idle" in envelope["message"] and "10-30 s" in envelope["message"]
    assert envelope["details"]["waitedSeconds"] == SEARCH_TIMEOUT
    # One request, one wait: no retry by the client, no keyword search after the timed-out k-NN.
    assert proxy.requests - before == 1
    assert SEARCH_TIMEOUT <= waited < 2 * SEARCH_TIMEOUT


def test_memory_add_waits_briefly_then_queues_the_memory_for_the_stream_indexer(waking: Any) -> None:
    service, outbox, proxy, index = waking
    service.add(ALICE, MemoryAddInput(content="Invoices are archived for ten years"))  # awake: the index exists
    assert outbox.pending() == []
    written: list[Any] = []
    records = service._records  # the records the service writes
    real_write = records.write

    def spy(operations: Any) -> None:
        written.extend(operations)
        real_write(operations)

    records.write = spy
    proxy.delay = 3 * SEARCH_TIMEOUT
    started = time.monotonic()
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    waited = time.monotonic() - started
    records.write = real_write

    assert added.success and not added.deduplicated
    assert waited < 2 * WRITE_TIMEOUT + 0.5  # the near-duplicate check's short wait, and no index write after it
    [marker] = [op.item for op in written if isinstance(op, Put) and op.item.pk.startswith(OUTBOX_PREFIX)]
    assert (marker.data["state"], marker.stream) == (QUEUED, STREAM_LABEL)

    proxy.delay = 0.0  # awake: the stream indexer (no API time limit) indexes it from the record
    assert outbox.on_marker(marker.pk, marker.sk) == "indexed"
    assert added.memory_id in {
        hit.id for hit in index.lexical(NAMESPACE, "zebra gateway Dublin", {"scope": [ALICE.scope_key("user")]}, 10)
    }


def test_memory_add_whose_index_write_times_out_is_stored_and_queued(waking: Any, monkeypatch: Any) -> None:
    """The near-duplicate check answered (a warm moment); the index write itself outwaits its short timeout."""
    service, outbox, proxy, _ = waking
    service.add(ALICE, MemoryAddInput(content="Invoices are archived for ten years"))
    monkeypatch.setattr(type(service._writes), "repeat_candidates", lambda *args, **kwargs: [])
    proxy.delay = 3 * SEARCH_TIMEOUT
    started = time.monotonic()
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    assert time.monotonic() - started < 2 * WRITE_TIMEOUT + 0.5
    assert [m["ref"]["sk"] for m in outbox.pending()] == [f"MEM#{added.memory_id}"]
    assert [m["state"] for m in outbox.pending()] == [QUEUED]

"""Each record version is indexed once, and deletes and replacements hold inside OpenSearch
Serverless's refresh window.

The stream indexer leaves a version alone when the writing request indexed it (or is indexing
it). On Serverless, searches (and so the ``doc_id`` lookups that deletes and replacements rely
on) do not see a write until the collection refreshes, 10 to 60 s later; ``RefreshWindow`` models
that on osmem-server by hiding every document from searches until the test's clock has moved
past the window after its write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from aws_events import FakeLambdaContext
from helpers import ctx, make_services
from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.entry import indexer
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemoryDeleteInput
from mnemo.memory.service import MemoryService
from mnemo.outbox import IndexOutbox
from mnemo.ports import Delete, IndexDoc, RecordStore
from mnemo.runtime import Services, set_services

ALICE = ctx()
PARTITION = f"MEM|{ALICE.scope_key('user')}"
WINDOW = 60.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(256)
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return super().embed(texts)


class CountingIndex(LocalVectorIndex):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.writes = 0

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        self.writes += 1
        super().upsert(namespace, docs)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        self.writes += 1
        super().delete(namespace, ids)


class RefreshWindow:
    """osmem-server as OpenSearch Serverless shows it: a document is hidden from searches until
    ``WINDOW`` seconds of the clock have passed since it was written. k-NN (which osmem lacks)
    finds nothing."""

    def __init__(self, client: Any, clock: Clock) -> None:
        self._perform = client.transport.perform_request
        self._clock = clock
        self.written: dict[str, float] = {}
        client.transport.perform_request = self._request

    def _hidden(self, hit: dict[str, Any]) -> bool:
        return self._clock() < self.written.get(hit["_id"], float("-inf")) + WINDOW

    def _request(self, method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        if isinstance(body, dict) and "knn" in (body.get("query") or {}):
            return {"took": 1, "timed_out": False, "hits": {"total": {"value": 0}, "hits": []}}
        if url.endswith("/_msearch") and isinstance(body, (str, bytes)) and b'"knn"' in _bytes(body):
            searches = [line for line in _bytes(body).splitlines() if line.strip()][1::2]
            empty = {"took": 1, "timed_out": False, "hits": {"total": {"value": 0}, "hits": []}}
            return {"took": 1, "responses": [empty for _ in searches]}
        response = self._perform(method, url, params=params, body=body, **kwargs)
        if url.endswith("/_bulk"):
            for item in response.get("items", []):
                if "index" in item:
                    self.written[item["index"]["_id"]] = self._clock()
        elif url.endswith("/_search"):
            self._filter(response)
        elif url.endswith("/_msearch"):
            for part in response["responses"]:
                self._filter(part)
        return response

    def _filter(self, response: dict[str, Any]) -> None:
        hits = response.get("hits")
        if hits:
            hits["hits"] = [hit for hit in hits["hits"] if not self._hidden(hit)]


def _bytes(body: str | bytes) -> bytes:
    return body.encode() if isinstance(body, str) else body


def _stream_event(*keys: tuple[str, str], event_name: str = "INSERT") -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventID": str(n),
                "eventName": event_name,
                "eventSource": "aws:dynamodb",
                "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/records/stream/2026",
                "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": sk}}, "SequenceNumber": str(n)},
            }
            for n, (pk, sk) in enumerate(keys, start=1)
        ]
    }


def _memory_service(records: RecordStore, index: Any, embedder: Any, clock: Clock) -> tuple[MemoryService, IndexOutbox]:
    families: dict[str, Any] = {}
    outbox = IndexOutbox(records, lambda: families, index, clock=clock)
    service = MemoryService(records, index, embedder, outbox)
    families[service.family] = service
    return service, outbox


def _run_indexer(tmp_path: Path, service: MemoryService, event: dict[str, Any]) -> dict[str, Any]:
    services = Services(make_services(tmp_path).settings)
    services.__dict__["memory"] = service
    set_services(services)
    try:
        return dict(indexer.handler(event, FakeLambdaContext()))
    finally:
        set_services(None)


# ------------------------------------------------------------ stream indexer ---
def test_the_indexer_skips_a_memory_its_request_indexed(tmp_path: Path) -> None:
    records = make_services(tmp_path).records
    embedder, index = CountingEmbedder(), CountingIndex(tmp_path / "index.sqlite3")
    service, _ = _memory_service(records, index, embedder, Clock())
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    embeds, writes = embedder.calls, index.writes

    answer = _run_indexer(tmp_path, service, _stream_event((PARTITION, f"MEM#{added.memory_id}")))

    assert answer == {"batchItemFailures": []}
    assert (embedder.calls, index.writes) == (embeds, writes)
    assert index.count(NAMESPACE) == 1


def test_a_stream_record_that_comes_before_the_request_settles_is_left_to_it(tmp_path: Path) -> None:
    """The stream can deliver a removal while memory_delete is still taking it out of the index.

    (memory_add indexes before it writes its record, so its record never reaches the stream first.)
    """
    records = make_services(tmp_path).records
    embedder, index = CountingEmbedder(), CountingIndex(tmp_path / "index.sqlite3")
    service, outbox = _memory_service(records, index, embedder, Clock())
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    assert (index.writes, outbox.pending()) == (1, [])  # the add: one index write, no marker left
    seen: list[tuple[int, int]] = []
    settle = outbox.settle

    def settle_after_the_stream(marker: Any, family: Any, first: Any = None, **kwargs: Any) -> bool:
        before = (embedder.calls, index.writes)
        ref = (marker.item.data["ref"]["pk"], marker.item.data["ref"]["sk"])
        _run_indexer(tmp_path, service, _stream_event(ref, event_name="REMOVE"))
        seen.append((embedder.calls - before[0], index.writes - before[1]))
        return settle(marker, family, first, **kwargs)

    outbox.settle = settle_after_the_stream  # type: ignore[method-assign]
    service.delete(ALICE, MemoryDeleteInput(memory_id=added.memory_id))

    assert seen == [(0, 0)]  # the indexer neither embedded nor wrote
    assert index.count(NAMESPACE) == 0
    assert index.writes == 2
    assert outbox.pending() == []


def test_the_indexer_drains_a_marker_queued_for_it(tmp_path: Path) -> None:
    """The stream's filter passes a marker written with ``STREAM_LABEL``: the indexer drains that marker."""
    from mnemo.outbox import OUTBOX_PREFIX, STREAM_LABEL

    records = make_services(tmp_path).records
    embedder, index = CountingEmbedder(), CountingIndex(tmp_path / "index.sqlite3")
    service, outbox = _memory_service(records, index, embedder, Clock())
    written: list[Any] = []
    real_write, real_upsert = records.write, index.upsert
    records.write = lambda operations: (written.extend(operations), real_write(operations))[1]  # type: ignore[method-assign]
    index.upsert = lambda namespace, docs: (_ for _ in ()).throw(ConnectionError("waking"))  # type: ignore[method-assign]
    service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    index.upsert = real_upsert  # type: ignore[method-assign]
    [marker] = [op.item for op in written if op.item.pk.startswith(OUTBOX_PREFIX)]
    assert marker.stream == STREAM_LABEL

    answer = _run_indexer(tmp_path, service, _stream_event((marker.pk, marker.sk)))

    assert answer == {"batchItemFailures": []}
    assert index.count(NAMESPACE) == 1
    assert outbox.pending() == []


def test_the_indexer_indexes_at_once_what_its_request_could_not(tmp_path: Path) -> None:
    records = make_services(tmp_path).records
    embedder, index = CountingEmbedder(), CountingIndex(tmp_path / "index.sqlite3")
    service, outbox = _memory_service(records, index, embedder, Clock())
    real_upsert = index.upsert
    index.upsert = lambda namespace, docs: (_ for _ in ()).throw(ConnectionError("down"))  # type: ignore[method-assign]
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    index.upsert = real_upsert  # type: ignore[method-assign]
    assert index.count(NAMESPACE) == 0

    _run_indexer(tmp_path, service, _stream_event((PARTITION, f"MEM#{added.memory_id}")))

    assert index.count(NAMESPACE) == 1
    assert outbox.pending() == []


def test_a_removal_no_marker_covers_takes_the_memory_out_of_the_index(tmp_path: Path) -> None:
    """An item deleted outside Mnemo (the console, a script) leaves no orphan for searches to find."""
    records = make_services(tmp_path).records
    embedder, index = CountingEmbedder(), CountingIndex(tmp_path / "index.sqlite3")
    service, _ = _memory_service(records, index, embedder, Clock())
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    kept = service.add(ALICE, MemoryAddInput(content="Invoices are archived for ten years"))
    records.write([Delete(PARTITION, f"MEM#{added.memory_id}")])
    embeds = embedder.calls

    answer = _run_indexer(tmp_path, service, _stream_event((PARTITION, f"MEM#{added.memory_id}"), event_name="REMOVE"))

    assert answer == {"batchItemFailures": []}
    assert embedder.calls == embeds  # a removal embeds nothing
    assert index.count(NAMESPACE) == 1
    assert kept.memory_id != added.memory_id


# ----------------------------------------------- Serverless refresh window ---
@pytest.fixture
def serverless(osmem_clone: Any, tmp_path: Path) -> tuple[MemoryService, IndexOutbox, OpenSearchVectorIndex, Clock]:
    clock = Clock()
    client = make_client(osmem_clone.url, None, "aoss", endpoint_is_local=True)
    RefreshWindow(client, clock)
    index = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-once-", serverless=True, refresh_window=WINDOW)
    service, outbox = _memory_service(make_services(tmp_path).records, index, HashingEmbedder(256), clock)
    return service, outbox, index, clock


def _documents(index: OpenSearchVectorIndex) -> list[dict[str, Any]]:
    response = index.client.search(index=index.index_name(NAMESPACE), body={"size": 100, "query": {"match_all": {}}})
    return [hit["_source"] for hit in response["hits"]["hits"]]


def _after_the_window(outbox: IndexOutbox, clock: Clock) -> None:
    clock.now += WINDOW + 1
    outbox.drain()


def test_serverless_add_then_delete_inside_the_refresh_window_leaves_no_document(serverless: Any) -> None:
    service, outbox, index, clock = serverless
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    assert outbox.pending() == []  # indexed before its record was written: no marker
    service.delete(ALICE, MemoryDeleteInput(memory_id=added.memory_id))  # the lookup cannot see the copy yet

    _after_the_window(outbox, clock)

    assert _documents(index) == []
    assert outbox.pending() == []


def test_serverless_add_then_replace_inside_the_refresh_window_leaves_one_document(serverless: Any) -> None:
    service, outbox, index, clock = serverless
    pointer = {"sourceType": "knowledge", "sourceId": "adr-1", "contentHash": "h1", "syncedAt": "2026-01-01T00:00:00Z"}
    scope = ALICE.scope_key("user")
    service.put_pointer(scope, "user", "mem_adr1", "Use PostgreSQL for orders", [], pointer, "sync")
    service.put_pointer(
        scope, "user", "mem_adr1", "Use DynamoDB for orders", [], {**pointer, "contentHash": "h2"}, "sync"
    )

    _after_the_window(outbox, clock)

    documents = _documents(index)
    assert [doc["text"] for doc in documents] == ["Use DynamoDB for orders"]
    assert outbox.pending() == []


def test_serverless_add_and_its_stream_record_leave_one_document_and_one_embedding(
    serverless: Any, tmp_path: Path
) -> None:
    service, outbox, index, clock = serverless
    added = service.add(ALICE, MemoryAddInput(content="The zebra gateway runs in Dublin"))
    _run_indexer(tmp_path, service, _stream_event((PARTITION, f"MEM#{added.memory_id}")))

    _after_the_window(outbox, clock)

    assert [doc["doc_id"] for doc in _documents(index)] == [added.memory_id]
    assert json.dumps(outbox.pending()) == "[]"

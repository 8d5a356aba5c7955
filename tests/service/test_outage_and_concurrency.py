"""No data lost: DynamoDB (a serial moto server) stays the truth while the vector index or embedder fails."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, shared_moto_server

from helpers import ctx, drained, with_outbox
from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.entry import indexer
from mnemo.errors import ProviderError
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemorySearchInput
from mnemo.memory.service import MemoryService
from mnemo.outbox import OUTBOX_PREFIX, SHARDS
from mnemo.ports import ConditionFailed, Filter, Hit, IndexDoc, Item, Match, Put
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

_tables = itertools.count()


class FlakyIndex:
    """The local index, but writes fail at random while ``failing`` (as an OpenSearch outage would)."""

    def __init__(self, inner: LocalVectorIndex, rate: float, seed: int = 42) -> None:
        self.inner = inner
        self.rate = rate
        self.failing = True
        self.failures = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def _maybe_fail(self) -> None:
        with self._lock:
            if self.failing and self._random.random() < self.rate:
                self.failures += 1
                raise ConnectionError("vector index unavailable")

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        self._maybe_fail()
        self.inner.upsert(namespace, docs)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        self._maybe_fail()
        self.inner.delete(namespace, ids)

    def knn(
        self, namespace: str, vector: Sequence[float], flt: Filter, k: int, *, where: Match | None = None
    ) -> list[Hit]:
        return self.inner.knn(namespace, vector, flt, k, where=where)

    def lexical(self, namespace: str, text: str, flt: Filter, k: int, *, where: Match | None = None) -> list[Hit]:
        return self.inner.lexical(namespace, text, flt, k, where=where)

    def count(self, namespace: str) -> int:
        return self.inner.count(namespace)

    def clear(self, namespace: str) -> None:
        self.inner.clear(namespace)


@pytest.fixture
def dynamodb_store() -> Iterator[Callable[..., DynamoDbRecordStore]]:
    """Makes DynamoDB record stores on the shared moto server; their tables go when the test ends."""
    server = shared_moto_server()
    client = server.client("dynamodb")
    made: list[str] = []

    def make(*, stream: bool = True) -> DynamoDbRecordStore:
        name = f"outage-{next(_tables)}"
        create_records_table(client, name, stream=stream)
        made.append(name)
        return DynamoDbRecordStore(name, lambda: client)

    yield make
    for name in made:
        client.delete_table(TableName=name)


def _found(service: MemoryService, context: Any, content: str, memory_id: str) -> bool:
    results = service.search(context, MemorySearchInput(query=content, threshold=0.0, limit=5)).results
    return memory_id in {r.memory_id for r in results}


def test_a_thousand_adds_while_the_index_fails_lose_nothing(tmp_path: Path, dynamodb_store: Any) -> None:
    records = dynamodb_store(stream=False)
    index = FlakyIndex(LocalVectorIndex(tmp_path / "index.sqlite3"), rate=0.3)
    service, outbox = with_outbox(records, lambda box: MemoryService(records, index, HashingEmbedder(256), box))
    alice = ctx()
    stored: dict[str, str] = {}
    for i in range(1000):
        content = f"Fact {i}: service s{i % 37} runs on node n{i % 101} in zone z{i % 7} since build {i * 13}"
        out = service.add(alice, MemoryAddInput(content=content))
        assert out.success
        assert not out.deduplicated
        stored[out.memory_id] = content

    assert index.failures > 200, "the fault injection must actually have hit"
    partition = f"MEM|{alice.scope_key('user')}"
    for memory_id in stored:  # every add that answered success is in DynamoDB
        assert records.get(partition, f"MEM#{memory_id}") is not None
    assert index.count(NAMESPACE) == 1000 - index.failures

    index.failing = False  # recovery
    done, still_pending = drained(outbox)
    assert (done, still_pending) == (index.failures, 0)
    assert [records.query(f"{OUTBOX_PREFIX}{shard:02d}") for shard in range(SHARDS)] == [[]] * SHARDS
    assert index.count(NAMESPACE) == 1000
    missing = [m for m, content in stored.items() if not _found(service, alice, content, m)]
    assert missing == []


def test_the_stream_indexer_recovers_adds_the_index_missed(tmp_path: Path, dynamodb_store: Any) -> None:
    """Replays the table's DynamoDB Stream through the indexer Lambda, as AWS would after an outage."""
    server = shared_moto_server()
    records = dynamodb_store()
    index = FlakyIndex(LocalVectorIndex(tmp_path / "index.sqlite3"), rate=1.0)  # the index is down throughout
    service, _outbox = with_outbox(records, lambda box: MemoryService(records, index, HashingEmbedder(256), box))
    alice = ctx()
    ids = {
        service.add(alice, MemoryAddInput(content=f"Runbook step {i}: restart worker {i}")).memory_id for i in range(40)
    }
    assert index.inner.count(NAMESPACE) == 0

    streams = server.client("dynamodbstreams")
    arn = server.client("dynamodb").describe_table(TableName=records._table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    stream_records = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    for record in stream_records:
        record["eventSourceARN"] = arn
        record["dynamodb"]["SequenceNumber"] = str(record["dynamodb"]["SequenceNumber"])

    index.failing = False
    services = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    services.__dict__["memory"] = service  # the indexer runs the same service on the same stores
    set_services(services)
    try:
        from aws_events import FakeLambdaContext

        answer = indexer.handler({"Records": stream_records}, FakeLambdaContext())
    finally:
        set_services(None)
    assert answer == {"batchItemFailures": []}
    assert index.count(NAMESPACE) == 40
    assert {h.id for h in index.knn(NAMESPACE, HashingEmbedder(256).embed(["restart worker"])[0], {}, 100)} == ids


def test_the_indexer_reports_only_the_records_that_failed(tmp_path: Path, services: Services) -> None:
    from aws_events import FakeLambdaContext

    alice = ctx()
    kept = services.memory.add(alice, MemoryAddInput(content="kept memory"))
    partition = f"MEM|{alice.scope_key('user')}"

    def record(sequence: str, sk: str) -> dict[str, Any]:
        return {
            "eventID": sequence,
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/records/stream/2026",
            "dynamodb": {"Keys": {"pk": {"S": partition}, "sk": {"S": sk}}, "SequenceNumber": sequence},
        }

    services.index.clear(NAMESPACE)
    # As left by a memory_add whose index write failed: queued for the indexer.
    services.records.write(
        [services.outbox.marker(NAMESPACE, {"pk": partition, "sk": f"MEM#{kept.memory_id}"}, queued=True)]
    )
    broken_calls = {"n": 0}
    original = services.memory.sync_index

    def sometimes_broken(pk: str, sk: str, *, removed: bool = False) -> str:
        if sk.endswith("boom"):
            broken_calls["n"] += 1
            raise ProviderError("index down")
        return original(pk, sk, removed=removed)

    services.memory.sync_index = sometimes_broken  # type: ignore[method-assign]
    event = {"Records": [record("1", f"MEM#{kept.memory_id}"), record("2", "MEM#boom"), record("3", "HIST#x")]}
    answer = indexer.handler(event, FakeLambdaContext())
    assert answer == {"batchItemFailures": [{"itemIdentifier": "2"}]}
    assert services.index.count(NAMESPACE) == 1
    assert broken_calls["n"] == 1


def test_an_embedder_outage_stores_the_memory_and_indexes_it_later(tmp_path: Path, dynamodb_store: Any) -> None:
    records = dynamodb_store()
    embedder = HashingEmbedder(256)
    service, outbox = with_outbox(
        records, lambda box: MemoryService(records, LocalVectorIndex(tmp_path / "i.sqlite3"), embedder, box)
    )
    alice = ctx()
    real_embed = embedder.embed

    def down(_: Sequence[str]) -> list[list[float]]:
        raise ProviderError("Bedrock unavailable")

    embedder.embed = down  # type: ignore[method-assign]
    out = service.add(alice, MemoryAddInput(content="The VPN certificate expires in June"))
    assert out.success
    searched = service.search(alice, MemorySearchInput(query="VPN certificate", threshold=0.0))
    assert searched.retrieval == "lexical"
    assert searched.results == []  # stored, not yet indexed

    embedder.embed = real_embed  # type: ignore[method-assign]
    assert drained(outbox) == (1, 0)
    assert _found(service, alice, "VPN certificate expires", out.memory_id)


def test_concurrent_retries_with_one_idempotency_key_store_once(dynamodb_store: Any) -> None:
    records = dynamodb_store()
    service, _outbox = with_outbox(
        records, lambda box: MemoryService(records, LocalVectorIndex(":memory:"), HashingEmbedder(256), box)
    )
    alice = ctx()
    answers: list[str] = []
    errors: list[Exception] = []

    def retry() -> None:
        try:
            out = service.add(alice, MemoryAddInput(content="Pay the invoice by Friday", idempotency_key="inv-7"))
            answers.append(out.memory_id)
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=retry) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = records.query(f"MEM|{alice.scope_key('user')}", "MEM#")
    assert len(stored) == 1
    assert set(answers) == {stored[0].data["memoryId"]}
    assert all(getattr(e, "code", None) == "CONFLICT" for e in errors)  # a loser may be told to retry, never lost
    assert len(answers) + len(errors) == 8


def test_concurrent_updates_conflict_and_never_lose_one(dynamodb_store: Any) -> None:
    """Read-modify-write from 8 threads on one DynamoDB item: every win is counted, every loss is a conflict."""
    records = dynamodb_store()
    records.write([Put(Item("COUNTER", "c", {"value": 0}), expect="absent")])
    wins: list[int] = []
    conflicts: list[int] = []
    lock = threading.Lock()

    def bump(worker: int) -> None:
        for _ in range(10):
            current = records.get("COUNTER", "c")
            assert current is not None
            updated = Item("COUNTER", "c", {"value": current.data["value"] + 1}, version=current.version + 1)
            try:
                records.write([Put(updated, expect=current.version)])
                with lock:
                    wins.append(worker)
            except ConditionFailed:
                with lock:
                    conflicts.append(worker)

    threads = [threading.Thread(target=bump, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = records.get("COUNTER", "c")
    assert final is not None
    assert final.data["value"] == len(wins) == final.version - 1
    assert conflicts, "eight writers on one item must collide at least once"
    assert len(wins) + len(conflicts) == 80


@pytest.mark.parametrize("rate", [1.0])
def test_delete_while_the_index_is_down_never_shows_the_memory_again(
    tmp_path: Path, rate: float, dynamodb_store: Any
) -> None:
    records = dynamodb_store()
    index = FlakyIndex(LocalVectorIndex(tmp_path / "index.sqlite3"), rate=rate)
    index.failing = False
    service, outbox = with_outbox(records, lambda box: MemoryService(records, index, HashingEmbedder(256), box))
    alice = ctx()
    out = service.add(alice, MemoryAddInput(content="Temporary door code 1234"))
    index.failing = True
    from mnemo.memory.models import MemoryDeleteInput

    service.delete(alice, MemoryDeleteInput(memory_id=out.memory_id))
    assert index.count(NAMESPACE) == 1  # the index still holds it...
    assert not _found(service, alice, "door code", out.memory_id)  # ...but search never shows it
    index.failing = False
    assert drained(outbox) == (1, 0)
    assert index.count(NAMESPACE) == 0


def test_the_scheduled_indexer_run_drains_the_outbox(services: Services) -> None:
    from aws_events import FakeLambdaContext

    alice = ctx()
    flaky = FlakyIndex(services.index, rate=1.0)  # type: ignore[arg-type]
    services.__dict__["memory"] = MemoryService(services.records, flaky, services.embedder, services.outbox)
    stored = services.memory.add(alice, MemoryAddInput(content="Queued while the index was down"))
    flaky.failing = False
    scheduled = {
        "version": "0",
        "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-22T03:00:00Z",
        "region": "eu-west-1",
        "resources": ["arn:aws:events:eu-west-1:123456789012:rule/mnemo-dev-PendingDrain"],
        "detail": {},
    }
    assert indexer.handler(scheduled, FakeLambdaContext()) == {
        "indexed": 1,
        "stillPending": 0,
        "deadLettered": 0,
        "deadLetters": 0,
        "indexedByFamily": {"memory": 1},
    }
    assert _found(services.memory, alice, "queued index down", stored.memory_id)

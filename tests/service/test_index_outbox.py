"""The one index outbox: no window where a crash leaves a record unindexed, no marker that blocks it,
and no older version left in the index by writers that finish out of order.

A "crash" here is a process dying right after the record's write returned: ``IndexOutbox.settle``
raises an exception that no handler catches, so nothing after the write runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from helpers import ctx, drained
from mnemo import cli
from mnemo.context import RequestContext
from mnemo.errors import Conflict, ProviderError
from mnemo.outbox import MAX_ATTEMPTS, IndexOutbox
from mnemo.ports import IndexDoc
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from mnemo.topics.models import RefineMemoryInput
from mnemo.topics.service import NAMESPACE as TOPICS
from mnemo.topics.service import TopicService

ALICE = ctx()
WRITER = ctx(project="p1", roles=("writer",))


class ProcessDied(BaseException):
    """What the process would do at that instant: stop, with nothing after it run."""


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def _memory_found(services: Services, text: str) -> bool:
    return bool(call(services, ALICE, "memory_search", {"query": text, "threshold": 0})["results"])


def _conversation_found(services: Services, text: str) -> bool:
    payload = {"query": text, "explanation": "x", "retrieval_strategy": "keyword"}
    return bool(call(services, ALICE, "retrieve_conversation", payload)["data"]["conversations"])


def _execution_found(services: Services, text: str) -> bool:
    payload = {"query": text, "explanation": "x", "retrieval_strategy": "keyword"}
    return bool(call(services, ALICE, "retrieve_execution", payload)["data"]["executions"])


def _topic_found(services: Services, text: str) -> bool:
    return bool(call(services, WRITER, "search_memories", {"query": text, "threshold": 0})["topics"])


def _memorize(services: Services) -> None:
    call(
        services,
        WRITER,
        "memorize_new_topic",
        {"topic": "runbook", "tags": [], "summary": "s", "content": "Restart the zebra gateway"},
    )


WRITES: dict[str, tuple[Callable[[Services], Any], Callable[[Services, str], bool]]] = {
    "memory": (
        lambda s: call(s, ALICE, "memory_add", {"content": "The zebra gateway runs in Dublin"}),
        _memory_found,
    ),
    "conversations": (
        lambda s: call(
            s,
            ALICE,
            "add_conversation",
            {"message_id": "m1", "explanation": "x", "user_input": "Where is zebra?", "agent_response": "Dublin."},
        ),
        _conversation_found,
    ),
    "executions": (
        lambda s: call(
            s,
            ALICE,
            "add_execution",
            {
                "message_id": "m1",
                "explanation": "x",
                "execution_summary": "Looked up the zebra gateway",
                "tools_used": ["inventory"],
                "errors": [],
                "observations": "one call",
                "success": True,
            },
        ),
        _execution_found,
    ),
    "topics": (_memorize, _topic_found),
}


# memory_add indexes before it writes its record (mnemo.memory.writes): its crashes are the tests below.
@pytest.mark.parametrize("family", sorted(set(WRITES) - {"memory"}))
def test_a_crash_right_after_the_write_leaves_the_record_queued_for_the_index(
    family: str, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    write, found = WRITES[family]

    def die(*args: Any, **kwargs: Any) -> bool:
        raise ProcessDied

    with monkeypatch.context() as patch:
        patch.setattr(IndexOutbox, "settle", die)
        with pytest.raises(ProcessDied):
            write(services)
    # The marker went in with the record, all or nothing: the record waits for the index.
    assert [marker["family"] for marker in services.outbox.pending()] == [family]
    assert not found(services, "zebra")
    assert drained(services.outbox) == (1, 0)
    assert found(services, "zebra")
    assert services.outbox.pending() == []


def test_memory_add_killed_between_its_index_write_and_its_record_write_leaves_a_harmless_document(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    write, found = WRITES["memory"]
    records_write = type(services.records).write

    def die_on_the_record(self: Any, operations: Sequence[Any]) -> None:
        if any(getattr(op, "item", None) is not None and op.item.sk.startswith("MEM#") for op in operations):
            raise ProcessDied
        records_write(self, operations)

    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", die_on_the_record)
        with pytest.raises(ProcessDied):
            write(services)
    # The index holds a document for an id no record holds: search hydrates from the records and drops it,
    # and nothing was acknowledged, so nothing is lost.
    assert services.index.count("memory") == 1
    assert not found(services, "zebra")
    assert services.outbox.pending() == []
    # A retry stores it; its search answers the stored memory once; a reindex drops the stray document.
    write(services)
    results = call(services, ALICE, "memory_search", {"query": "zebra", "threshold": 0})["results"]
    assert len(results) == 1
    assert services.index.count("memory") == 2
    assert services.memory.reindex() == 1
    assert services.index.count("memory") == 1


def test_memory_add_killed_after_its_record_write_is_indexed_and_leaves_no_marker(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    write, found = WRITES["memory"]
    records_write = type(services.records).write

    def die_after_the_record(self: Any, operations: Sequence[Any]) -> None:
        records_write(self, operations)
        raise ProcessDied

    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", die_after_the_record)
        with pytest.raises(ProcessDied):
            write(services)
    assert services.outbox.pending() == []
    assert found(services, "zebra")


def test_memory_add_whose_record_write_fails_its_condition_queues_the_removal_of_its_document(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime

    from mnemo.memory.models import MemoryAddInput
    from mnemo.ports import ConditionFailed

    records_write = type(services.records).write
    lost: list[str] = []

    def lose_the_first_race(self: Any, operations: Sequence[Any]) -> None:
        records = [op.item.sk for op in operations if getattr(op, "item", None) and op.item.sk.startswith("MEM#")]
        if records and not lost:  # as if an item had appeared at the record's key meanwhile
            lost.append(records[0])
            raise ConditionFailed("the record's key is taken")
        records_write(self, operations)

    request = MemoryAddInput(content="The zebra gateway runs in Dublin", occurred_at=datetime(2026, 5, 1, tzinfo=UTC))
    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", lose_the_first_race)
        with pytest.raises(Conflict):  # the caller is told to retry: nothing of the attempt is stored
            services.memory.add(ALICE, request)
    added = services.memory.add(ALICE, request)  # the retry
    assert lost and lost[0] != f"MEM#{added.memory_id}"
    # The first attempt's document names an id no record holds: searches drop it, and its removal is queued.
    assert services.index.count("memory") == 2
    assert [marker["ref"]["sk"] for marker in services.outbox.pending()] == lost
    results = call(services, ALICE, "memory_search", {"query": "zebra", "threshold": 0})["results"]
    assert [result["memoryId"] for result in results] == [added.memory_id]
    assert drained(services.outbox) == (1, 0)
    assert services.index.count("memory") == 1


def test_memory_add_whose_applied_write_is_retried_into_its_own_condition_answers_stored(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK re-sends a lone PutItem whose answer was lost; the retry fails "absent" on its own record."""
    from mnemo.ports import ConditionFailed

    records_write = type(services.records).write
    retried: list[bool] = []

    def applied_then_lost(self: Any, operations: Sequence[Any]) -> None:
        records_write(self, operations)
        if not retried and any(getattr(op, "item", None) and op.item.sk.startswith("MEM#") for op in operations):
            retried.append(True)
            raise ConditionFailed("the retry found the record its first attempt wrote")

    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", applied_then_lost)
        added = call(services, ALICE, "memory_add", {"content": "The zebra gateway runs in Dublin"})
    assert retried and added["success"] and not added["deduplicated"]
    # Stored once, indexed once, nothing queued against its document.
    assert services.outbox.pending() == []
    assert services.index.count("memory") == 1
    results = call(services, ALICE, "memory_search", {"query": "zebra", "threshold": 0})["results"]
    assert [result["memoryId"] for result in results] == [added["memoryId"]]


def test_memory_add_whose_record_write_fails_queues_the_removal_of_its_document(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Throttled or down after the index write: the error reaches the caller, and no stray document stays."""
    records_write = type(services.records).write

    def throttled(self: Any, operations: Sequence[Any]) -> None:
        if any(getattr(op, "item", None) and op.item.sk.startswith("MEM#") for op in operations):
            raise ProviderError("DynamoDB throttled the write")
        records_write(self, operations)

    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", throttled)
        with pytest.raises(ProviderError):
            call(services, ALICE, "memory_add", {"content": "The zebra gateway runs in Dublin"})
    assert services.index.count("memory") == 1
    assert len(services.outbox.pending()) == 1
    assert drained(services.outbox) == (1, 0)
    assert services.index.count("memory") == 0


def test_memory_add_whose_index_write_fails_queues_a_marker_for_the_stream_indexer(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.outbox import QUEUED, STREAM_LABEL

    write, found = WRITES["memory"]
    written: list[Any] = []
    records_write = type(services.records).write

    def spy(self: Any, operations: Sequence[Any]) -> None:
        written.append(list(operations))
        records_write(self, operations)

    def down(*args: Any, **kwargs: Any) -> None:
        raise ProviderError("OpenSearch timed out")

    with monkeypatch.context() as patch:
        patch.setattr(type(services.records), "write", spy)
        patch.setattr(type(services.index), "upsert", down)
        write(services)
    # One all-or-nothing write: the record and its queued marker, labelled for the stream's filter.
    assert len(written) == 1
    [marker] = [op.item for op in written[0] if op.item.pk.startswith("INDEX-OUTBOX#")]
    assert marker.data["state"] == QUEUED
    assert marker.stream == STREAM_LABEL
    assert not found(services, "zebra")
    assert services.outbox.on_marker(marker.pk, marker.sk) == "indexed"
    assert found(services, "zebra")
    assert services.outbox.pending() == []


@pytest.mark.parametrize("family", sorted(WRITES))
def test_a_write_that_indexes_leaves_no_marker(family: str, services: Services) -> None:
    write, found = WRITES[family]
    write(services)
    assert services.outbox.pending() == []
    assert found(services, "zebra")


def test_a_marker_that_always_fails_becomes_a_dead_letter_and_never_holds_up_the_rest(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_embed = services.embedder.embed

    def poisoned(texts: Sequence[str]) -> list[list[float]]:
        if any("poison" in text for text in texts):
            raise ProviderError("this text always breaks the embedder")
        return real_embed(texts)

    monkeypatch.setattr(services.embedder, "embed", poisoned)
    for n in range(30):
        call(services, ALICE, "memory_add", {"content": f"poison pill number {n}"})
    with monkeypatch.context() as patch:
        patch.setattr(services.index, "upsert", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("down")))
        for n in range(5):
            call(services, ALICE, "memory_add", {"content": f"healthy fact {n} about the zebra gateway"})
    assert len(services.outbox.pending()) == 35

    first = services.outbox.drain()
    assert (first.indexed, first.failed, first.dead_lettered) == (5, 30, 0)  # the healthy ones go through at once
    assert _memory_found(services, "zebra gateway")
    for _ in range(MAX_ATTEMPTS - 1):
        services.outbox.drain()
    assert services.outbox.pending() == []
    dead = services.outbox.dead_letters()
    assert len(dead) == 30
    assert {letter["attempts"] for letter in dead} == {MAX_ATTEMPTS}
    assert all("always breaks the embedder" in letter["lastError"] for letter in dead)
    assert services.outbox.drain().indexed == 0  # nothing left to retry by itself


def test_reindex_pending_reports_dead_letters_and_retries_them_when_asked(
    services: Services, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_embed = services.embedder.embed

    def gone(texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError("model gone")

    monkeypatch.setattr(services.embedder, "embed", gone)
    memory_id = call(services, ALICE, "memory_add", {"content": "The zebra gateway runs in Dublin"})["memoryId"]
    for _ in range(MAX_ATTEMPTS):
        services.outbox.drain()

    assert cli.main(["reindex", "--pending"]) == 1
    printed = capsys.readouterr().out
    assert "dead letter: memory" in printed
    assert memory_id in printed
    assert "model gone" in printed
    assert "1 dead letters" in printed

    monkeypatch.setattr(services.embedder, "embed", real_embed)  # the cause is fixed
    assert cli.main(["reindex", "--pending", "--retry-dead"]) == 0
    printed = capsys.readouterr().out
    assert "queued 1 dead letters again" in printed
    assert "indexed 1 memory" in printed
    assert services.outbox.dead_letters() == []
    assert _memory_found(services, "zebra gateway")


class LateFirstWrite:
    """The index, but the first topic upsert is held back until ``meanwhile`` has run in full."""

    def __init__(self, inner: Any, meanwhile: Callable[[], None]) -> None:
        self.inner = inner
        self.meanwhile: Callable[[], None] | None = meanwhile

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        if self.meanwhile is not None and namespace == TOPICS:
            run, self.meanwhile = self.meanwhile, None
            run()  # the other refine writes, indexes and settles before this write lands
        self.inner.upsert(namespace, docs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_refines_whose_index_writes_land_out_of_order_leave_the_newest_version_indexed(
    services: Services,
) -> None:
    call(services, WRITER, "memorize_new_topic", {"topic": "db", "tags": [], "summary": "s", "content": "Postgres"})

    def second_refine() -> None:
        call(services, WRITER, "refine_memory", {"topic": "db", "newContent": "Orders moved to Cassandra"})

    slow = TopicService(
        services.records, LateFirstWrite(services.index, second_refine), services.embedder, services.outbox
    )
    slow.refine(WRITER, RefineMemoryInput(topic="db", new_content="Orders moved to DynamoDB"))
    doc = TopicService.doc_id(TopicService.scope(WRITER).key, "db")
    # The first refine's write (version 2) reached the index after the second's (version 3)...
    assert call(services, WRITER, "recall_memory", {"topic": "db"})["version"] == 3
    # ...yet the index holds version 3: the late writer saw the records had moved and indexed again.
    assert [hit.id for hit in services.index.lexical(TOPICS, "cassandra", {}, 10)] == [doc]
    assert services.index.lexical(TOPICS, "dynamodb", {}, 10) == []
    assert services.outbox.pending() == []


def test_the_scheduled_drain_logs_the_dead_letters_for_the_alarm(
    services: Services, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from aws_events import FakeLambdaContext
    from mnemo.entry import indexer

    def gone(texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError("model gone")

    monkeypatch.setattr(services.embedder, "embed", gone)
    call(services, ALICE, "memory_add", {"content": "The zebra gateway runs in Dublin"})
    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    answers = [indexer.handler(scheduled, FakeLambdaContext()) for _ in range(MAX_ATTEMPTS)]
    assert [answer["deadLetters"] for answer in answers] == [0] * (MAX_ATTEMPTS - 1) + [1]
    # Powertools writes a record's extra keys as top-level JSON keys; the alarm itself reads the drain's
    # EMF metric (tests/entry/test_observability.py).
    logged = [getattr(record, "deadLetters", None) for record in caplog.records if record.name == "mnemo"]
    assert logged == [0] * (MAX_ATTEMPTS - 1) + [1]
    assert caplog.records[-1].levelname == "WARNING"
    assert "reindex --pending" in caplog.records[-1].getMessage()

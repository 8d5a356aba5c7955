"""The batch tools, memory_add_batch and memory_delete_batch, through the catalog (validation included).

The core rules run on the embedded default and on the AWS records adapter (DynamoDB on the serial moto
server, the local vector index, the hashing embedder): results in item order with per-item failures, a
resent keyed batch storing nothing twice, a failed item leaving nothing of itself, the whole request
refused when its shape is wrong, and deletes per id. The embedded stack alone shows the one embedder call,
an in-batch repeat caught before the index shows the first, and a batch stored while the embedder is down.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, drained, make_services
from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, ProviderError
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.records import digest
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", agent="bot", project="atlas")
WRITER = ctx("alice", agent="bot", project="atlas", roles=("writer",))
BOB = ctx("bob")
_tables = itertools.count()


@pytest.fixture(params=["embedded", "dynamodb"])
def stack(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    """The embedded default, or the records on DynamoDB (moto) beside the local index."""
    if request.param == "embedded":
        yield make_services(tmp_path)
        return
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = f"batch-records-{next(_tables)}"
    dynamodb = server.client("dynamodb")
    create_records_table(dynamodb, table, stream=False)
    try:
        yield Services(dynamodb_settings(server, table, tmp_path))
    finally:
        dynamodb.delete_table(TableName=table)


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def add_batch(services: Services, context: RequestContext, *items: str | dict[str, Any]) -> dict[str, Any]:
    bodies = [item if isinstance(item, dict) else {"content": item} for item in items]
    return call(services, context, "memory_add_batch", {"items": bodies})


def stored(services: Services) -> dict[tuple[str, str], dict[str, Any]]:
    """Every item of the records table (memories, history, idempotency records, pointers), by key."""
    return {(item.pk, item.sk): item.data for item in services.records.scan("")}


def contents(services: Services) -> set[str]:
    return {data["content"] for (_, sk), data in stored(services).items() if sk.startswith("MEM#")}


def mentions(services: Services, text: str) -> list[tuple[str, str]]:
    """Keys of the items that hold ``text`` or its content hash anywhere."""
    marks = (text, digest(text))
    return [key for key, data in stored(services).items() if any(m in json.dumps(data, default=str) for m in marks)]


def events(services: Services, context: RequestContext, memory_id: str) -> list[str]:
    answer = call(services, context, "memory_history", {"memoryId": memory_id})
    return [change["event"] for change in answer["changes"]]


def outcome(result: dict[str, Any]) -> tuple[int, bool, str | None]:
    return result["index"], result["success"], result.get("errorCode")


# ------------------------------------------------------------------ add
def test_each_item_gets_its_result_in_order_and_a_failed_one_does_not_stop_the_others(stack: Services) -> None:
    answer = add_batch(
        stack,
        ALICE,
        {"content": "Alice drinks green tea", "tags": ["drinks"]},
        {"content": "The atlas project ships in May", "layer": "project"},  # shared layer, no writer role
        "Alice drinks green tea",  # repeats item 0
        {"content": "Notes of the standup", "layer": "session"},  # no session id in the context
        {"content": "Bob reviews every migration", "layer": "agent"},
    )
    results = answer["results"]
    assert [outcome(r) for r in results] == [
        (0, True, None),
        (1, False, "UNAUTHORIZED"),
        (2, True, None),
        (3, False, "INVALID_INPUT"),
        (4, True, None),
    ]
    assert (answer["added"], answer["deduplicated"], answer["failed"]) == (2, 1, 2)
    assert results[2]["memoryId"] == results[0]["memoryId"] and results[2]["deduplicated"] is True
    assert [results[n]["layer"] for n in (0, 2, 4)] == ["user", "user", "agent"]
    assert results[1]["retryable"] is False and results[1]["details"]["field"] == "layer"
    assert results[3]["details"]["missingIds"] == ["session"]
    assert results[1]["memoryId"] is None and results[3]["memoryId"] is None
    assert contents(stack) == {"Alice drinks green tea", "Bob reviews every migration"}
    assert mentions(stack, "The atlas project ships in May") == []
    assert mentions(stack, "Notes of the standup") == []
    assert events(stack, ALICE, results[0]["memoryId"]) == ["ADD", "DEDUPE"]
    found = call(stack, ALICE, "memory_search", {"query": "green tea", "threshold": 0.0, "layers": ["user"]})
    assert [r["memoryId"] for r in found["results"]] == [results[0]["memoryId"]]


def test_a_resent_keyed_batch_answers_the_same_ids_and_stores_nothing_twice(stack: Services) -> None:
    items = (
        {"content": "The staging DB is Postgres 16", "idempotencyKey": "k-db"},
        {"content": "Standups are on Mondays", "occurredAt": "2024-03-01T09:00:00Z", "idempotencyKey": "k-standup"},
        {"content": "Atlas deploys on Fridays", "layer": "project", "idempotencyKey": "k-deploy"},
    )
    first = add_batch(stack, WRITER, *items)
    assert (first["added"], first["deduplicated"], first["failed"]) == (3, 0, 0)
    before = stored(stack)
    again = add_batch(stack, WRITER, *items)
    assert [r["memoryId"] for r in again["results"]] == [r["memoryId"] for r in first["results"]]
    assert again["results"] == first["results"]
    assert stored(stack) == before  # no record, history item or idempotency record written again
    assert stack.index.count(NAMESPACE) == 3


def test_a_key_reused_for_other_content_fails_that_item_alone_and_writes_nothing_of_it(stack: Services) -> None:
    first = add_batch(stack, ALICE, {"content": "The cache is Redis", "idempotencyKey": "k1"})
    kept = first["results"][0]["memoryId"]
    before = set(stored(stack))
    answer = add_batch(
        stack,
        ALICE,
        {"content": "Queues run on SQS", "idempotencyKey": "k2"},
        {"content": "The cache is Memcached", "idempotencyKey": "k1"},  # k1 was another request's
        {"content": "Logs go to CloudWatch"},
    )
    assert [outcome(r) for r in answer["results"]] == [(0, True, None), (1, False, "CONFLICT"), (2, True, None)]
    assert answer["results"][1]["retryable"] is False
    assert mentions(stack, "The cache is Memcached") == []
    written = set(stored(stack)) - before
    ids = {answer["results"][0]["memoryId"], answer["results"][2]["memoryId"]}
    assert {sk.split("#", 1)[1] for _, sk in written if sk.startswith("MEM#")} == ids
    assert contents(stack) == {"The cache is Redis", "Queues run on SQS", "Logs go to CloudWatch"}
    assert events(stack, ALICE, kept) == ["ADD"]


def test_more_than_100_items_are_refused_whole_naming_the_field(stack: Services) -> None:
    with pytest.raises(InvalidInput) as refused:
        add_batch(stack, ALICE, *[f"Fact number {n}" for n in range(101)])
    assert refused.value.details["field"] == "items"
    with pytest.raises(InvalidInput) as empty:
        add_batch(stack, ALICE)
    assert empty.value.details["field"] == "items"
    assert stored(stack) == {}


def test_an_item_memory_add_would_refuse_as_invalid_refuses_the_whole_batch(stack: Services) -> None:
    with pytest.raises(InvalidInput) as refused:
        add_batch(stack, ALICE, "First fact", "Second fact", "Third fact", {"content": "   "})
    assert refused.value.details["field"] == "items.3.content"
    with pytest.raises(InvalidInput) as unknown:
        add_batch(stack, ALICE, "First fact", {"content": "Second fact", "colour": "red"})
    assert unknown.value.details["field"] == "items.1.colour"
    assert stored(stack) == {}


# --------------------------------------------------------------- delete
def test_each_id_is_deleted_as_memory_delete_would_with_its_result_in_order(stack: Services) -> None:
    mine = add_batch(stack, WRITER, "Alice likes hiking", {"content": "Atlas uses Kafka", "layer": "project"})
    own, shared = (r["memoryId"] for r in mine["results"])
    bobs = add_batch(stack, BOB, "Bob likes chess")["results"][0]["memoryId"]
    stack.memory.put_pointer(
        ALICE.scope_key("user"), "user", "mem_pointer1", "Use tabs", [], {"sourceId": "style-guide"}, "sync"
    )
    answer = call(
        stack, ALICE, "memory_delete_batch", {"memoryIds": [own, "mem_nope", own, shared, bobs, "mem_pointer1"]}
    )
    assert [outcome(r) for r in answer["results"]] == [
        (0, True, None),
        (1, False, "NOT_FOUND"),
        (2, False, "NOT_FOUND"),  # given twice: already deleted
        (3, False, "UNAUTHORIZED"),  # a shared layer without the writer role
        (4, False, "NOT_FOUND"),  # another user's memory
        (5, False, "INVALID_INPUT"),  # a knowledge pointer
    ]
    assert [r["memoryId"] for r in answer["results"]] == [own, "mem_nope", own, shared, bobs, "mem_pointer1"]
    assert (answer["deleted"], answer["failed"]) == (1, 5)
    assert answer["results"][1]["details"]["field"] == "memoryId"
    assert contents(stack) == {"Atlas uses Kafka", "Bob likes chess", "Use tabs"}
    assert events(stack, ALICE, own) == ["ADD", "DELETE"]
    found = call(stack, ALICE, "memory_search", {"query": "hiking", "threshold": 0.0, "layers": ["user"]})
    assert own not in {r["memoryId"] for r in found["results"]}


def test_a_delete_batch_over_100_ids_is_refused_whole(stack: Services) -> None:
    own = add_batch(stack, ALICE, "Keep me")["results"][0]["memoryId"]
    with pytest.raises(InvalidInput) as refused:
        call(stack, ALICE, "memory_delete_batch", {"memoryIds": [own] + [f"mem_{n}" for n in range(100)]})
    assert refused.value.details["field"] == "memoryIds"
    with pytest.raises(InvalidInput) as blank:
        call(stack, ALICE, "memory_delete_batch", {"memoryIds": [own, ""]})
    assert blank.value.details["field"] == "memoryIds.1"
    assert contents(stack) == {"Keep me"}


# ------------------------------------------------- the embedded stack only
def test_every_content_of_a_batch_is_embedded_in_one_call(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real = services.embedder.embed

    def counted(texts: Any) -> Any:
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(services.embedder, "embed", counted)
    texts = [f"Distinct fact about topic {word}" for word in ("apples", "rivers", "engines", "poems")]
    answer = add_batch(services, ALICE, *texts)
    assert answer["added"] == 4
    assert calls == [texts]


def test_an_item_repeating_an_earlier_one_is_deduplicated_before_the_index_shows_it(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on OpenSearch within its refresh interval: the index finds nothing written a moment ago."""
    index = services.memory.index
    monkeypatch.setattr(index, "knn", lambda *args, **kwargs: [])
    monkeypatch.setattr(index, "knn_many", lambda namespace, queries: [[] for _ in queries], raising=False)
    answer = add_batch(services, ALICE, "Alice owns a red bicycle", "Alice owns a red bicycle")
    first, second = answer["results"]
    assert second["deduplicated"] is True and second["memoryId"] == first["memoryId"]
    assert contents(services) == {"Alice owns a red bicycle"}
    assert events(services, ALICE, first["memoryId"]) == ["ADD", "DEDUPE"]


def test_with_the_embedder_down_a_batch_is_stored_and_left_for_the_drain(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = services.embedder.embed

    def down(_: Any) -> Any:
        raise ProviderError("embedding service down")

    monkeypatch.setattr(services.embedder, "embed", down)
    answer = add_batch(services, ALICE, "Queued fact one", "Queued fact two", "Queued fact one")
    assert [(r["success"], r["deduplicated"]) for r in answer["results"]] == [(True, False)] * 2 + [(True, True)]
    assert services.index.count(NAMESPACE) == 0
    monkeypatch.setattr(services.embedder, "embed", real)
    assert drained(services.outbox) == (2, 0)
    found = call(services, ALICE, "memory_search", {"query": "queued fact two", "threshold": 0.0})
    assert found["results"][0]["memoryId"] == answer["results"][1]["memoryId"]


def test_items_not_started_by_the_request_deadline_answer_a_retryable_timeout_and_store_nothing(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch's clock is scripted (no real time is measured): one tick per item, the deadline at tick 2."""
    from types import SimpleNamespace

    from mnemo.memory import batch_items
    from mnemo.memory.batch_models import MemoryAddBatchInput, MemoryDeleteBatchInput
    from mnemo.memory.models import MemoryAddInput

    ticks = itertools.count()
    monkeypatch.setattr(batch_items, "time", SimpleNamespace(monotonic=lambda: float(next(ticks))))
    items = [
        MemoryAddInput(content=text) for text in ("Copper kettles boil fast", "Brass doors creak", "Tin roofs drum")
    ]

    answer = services.memory.add_batch(ctx(), MemoryAddBatchInput(items=items), deadline=2.0)

    assert [result.success for result in answer.results] == [True, True, False]
    late = answer.results[2]
    assert (late.error_code, late.retryable) == ("TIMEOUT", True)
    assert (answer.added, answer.failed) == (2, 1)
    assert contents(services) == {"Copper kettles boil fast", "Brass doors creak"}

    ticks = itertools.count()
    memory_ids = [result.memory_id or "" for result in answer.results[:2]]
    request = MemoryDeleteBatchInput(memory_ids=[*memory_ids, "mem_unknown"])
    deleted = services.memory.delete_batch(ctx(), request, deadline=2.0)
    assert [result.error_code for result in deleted.results] == [None, None, "TIMEOUT"]
    assert contents(services) == set()

"""A keyed memory_add is one conditional put of its own record; a repeat still stores once and answers the same.

The memory of a keyed add takes an id derived from its scope and key and keeps its request's hash, so a repeat
of the call writes the same record key and finds the first (``mnemo.memory.keys``). Every rule of the
idempotency key holds as before, shown on the embedded record store and on DynamoDB (the serial moto server)
beside the local index: a repeat answers the first answer and writes nothing, the key with another request is
CONFLICT and leaves the first memory and its index document as they were, concurrent first calls store one
memory, a key answered as a near-duplicate keeps that answer (even while the embedder is down), a key binds for a
day and is free again afterwards, a memory that expired is never replaced under its key, and memory_add and the
batch path (``mnemo import``) find each other's keys. Over HTTP, the client's repeat gets the same answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, local_server, make_services, race
from mnemo.client import ConflictError, LocalIdentity, MnemoClient
from mnemo.context import RequestContext
from mnemo.errors import Conflict, ProviderError
from mnemo.memory.batch import add_many_outcomes
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput
from mnemo.memory.records import (
    IDEMPOTENCY,
    RECORD,
    idempotency_sk,
    iso,
    keyed_memory_id,
    partition_of,
    record_sk,
    request_hash,
)
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", agent="bot", project="atlas")
PARTITION = partition_of(ALICE.scope_key("user"))
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
    table = f"keyed-add-{next(_tables)}"
    dynamodb = server.client("dynamodb")
    create_records_table(dynamodb, table, stream=False)
    try:
        yield Services(dynamodb_settings(server, table, tmp_path))
    finally:
        dynamodb.delete_table(TableName=table)


def add(services: Services, body: dict[str, Any], context: RequestContext = ALICE) -> dict[str, Any]:
    return get_tool("memory_add").invoke(services, context, body)


def stored(services: Services) -> dict[tuple[str, str], tuple[int, dict[str, Any]]]:
    """Every live item of the table (memories, history, idempotency records, outbox markers): version and body."""
    return {(item.pk, item.sk): (item.version, item.data) for item in services.records.scan("")}


def memories(services: Services) -> dict[str, str]:
    """memory id -> content, of every live memory record."""
    return {
        data["memoryId"]: data["content"] for (_, sk), (_, data) in stored(services).items() if sk.startswith(RECORD)
    }


def index_cosine(services: Services, memory_id: str, text: str) -> float:
    """The cosine between ``text``'s vector and what the index holds for ``memory_id``."""
    vector = services.embedder.embed([text])[0]
    hits = services.index.knn(NAMESPACE, vector, {"scope": [ALICE.scope_key("user")]}, 50)
    return next(hit.score for hit in hits if hit.id == memory_id)


def rewrite(services: Services, memory_id: str, **changes: Any) -> None:
    """Rewrite a memory's record as time would have left it: ``createdAt`` (an ISO time) and/or ``expires_at``."""
    item = services.records.get(PARTITION, record_sk(memory_id), expired=True)
    assert item is not None
    data = {**item.data, **({"createdAt": changes["createdAt"]} if "createdAt" in changes else {})}
    expires_at = changes.get("expires_at", item.expires_at)
    # Unconditional: a conditional put would not see an expired item (it reads as absent everywhere).
    services.records.write([Put(Item(item.pk, item.sk, data, item.version + 1, expires_at))])


def days_ago(days: int) -> str:
    return iso(datetime.now(UTC) - timedelta(days=days))


# ---------------------------------------------------------------- the first call and its repeats
@pytest.mark.parametrize("dedupe", [True, False])
def test_a_keyed_add_writes_its_memory_alone_under_the_keys_id(stack: Services, dedupe: bool) -> None:
    body = {"content": "The staging database is Postgres 16", "idempotencyKey": "k-db", "dedupe": dedupe}
    answer = add(stack, body)
    memory_id = keyed_memory_id(PARTITION, "k-db")
    assert (answer["memoryId"], answer["deduplicated"], answer["message"]) == (
        memory_id,
        False,
        "Memory stored successfully",
    )
    items = stored(stack)
    assert list(items) == [(PARTITION, record_sk(memory_id))]  # no idempotency record, no outbox marker
    assert items[(PARTITION, record_sk(memory_id))][1]["requestHash"] == request_hash(MemoryAddInput(**body))
    found = get_tool("memory_search").invoke(stack, ALICE, {"query": "staging database", "threshold": 0.0})
    assert [hit["memoryId"] for hit in found["results"]] == [memory_id]


@pytest.mark.parametrize("dedupe", [True, False])
def test_a_repeat_answers_as_the_first_call_did_and_leaves_every_record_as_it_was(
    stack: Services, dedupe: bool
) -> None:
    """``dedupe`` true: the repeat's near-duplicate check names the key's memory; false: its put fails on it."""
    body = {"content": "Alice prefers dark mode in every editor", "idempotencyKey": "pref", "dedupe": dedupe}
    first = add(stack, body)
    before = stored(stack)
    repeats = [add(stack, body) for _ in range(3)]
    assert repeats == [first] * 3
    assert stored(stack) == before  # the memory's record unchanged, nothing written beside it
    assert stack.index.count(NAMESPACE) == 1
    assert index_cosine(stack, first["memoryId"], body["content"]) > 0.999


@pytest.mark.parametrize("dedupe", [True, False])
def test_the_key_with_another_request_is_a_conflict_that_leaves_the_first_memory_and_its_document(
    stack: Services, dedupe: bool
) -> None:
    first = add(stack, {"content": "The cache is Redis 7", "idempotencyKey": "k-cache", "dedupe": dedupe})
    before = stored(stack)
    for other in (
        {"content": "The cache is Memcached behind the gateway", "idempotencyKey": "k-cache", "dedupe": dedupe},
        {"content": "The cache is Redis 7", "tags": ["infra"], "idempotencyKey": "k-cache", "dedupe": dedupe},
    ):
        with pytest.raises(Conflict) as refused:
            add(stack, other)
        assert (refused.value.details["field"], refused.value.retryable) == ("idempotencyKey", False)
    assert stored(stack) == before  # the conflicting content stored nowhere, the outbox empty again
    # The conflicting call indexed its content under the key's id before its put failed; the index holds the
    # first memory's content again before the CONFLICT is answered.
    assert index_cosine(stack, first["memoryId"], "The cache is Redis 7") > 0.999


def test_concurrent_first_calls_with_one_key_store_one_memory(stack: Services) -> None:
    body = {"content": "Pay the invoice by Friday", "idempotencyKey": "inv-7", "dedupe": False}
    answers = race(*[lambda: add(stack, body) for _ in range(6)])
    ids = {answer["memoryId"] for answer in answers if isinstance(answer, dict)}
    assert ids == {keyed_memory_id(PARTITION, "inv-7")}
    assert memories(stack) == {keyed_memory_id(PARTITION, "inv-7"): "Pay the invoice by Friday"}
    assert stack.outbox.pending() == []
    assert stack.index.count(NAMESPACE) == 1


# ---------------------------------------------------------------- answers kept in an idempotency record
def test_a_key_answered_as_a_near_duplicate_keeps_that_answer_even_while_the_embedder_is_down(
    stack: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = add(stack, {"content": "Alice drinks green tea"})["memoryId"]
    body = {"content": "Alice drinks green tea", "idempotencyKey": "k-tea"}
    first = add(stack, body)
    assert (first["memoryId"], first["deduplicated"]) == (kept, True)
    assert (PARTITION, idempotency_sk("k-tea")) in stored(stack)
    before = stored(stack)
    assert add(stack, body) == first
    assert stored(stack) == before

    def down(_: Any) -> Any:
        raise ProviderError("embedding service down")

    monkeypatch.setattr(stack.embedder, "embed", down)
    # No near-duplicate check can run: the key's idempotency record is read before anything is stored.
    assert add(stack, body) == first
    assert stored(stack) == before
    with pytest.raises(Conflict):
        add(stack, {"content": "Alice drinks coffee", "idempotencyKey": "k-tea"})
    assert memories(stack) == {kept: "Alice drinks green tea"}


def test_a_key_binds_its_memory_for_a_day_and_is_free_again_afterwards(stack: Services) -> None:
    first = add(stack, {"content": "Standups are on Mondays", "idempotencyKey": "k-standup"})
    rewrite(stack, first["memoryId"], createdAt=days_ago(2))  # the first call was two days ago

    second = add(stack, {"content": "Standups moved to Tuesdays", "idempotencyKey": "k-standup"})

    assert second["memoryId"] not in (first["memoryId"], None) and not second["deduplicated"]
    assert memories(stack) == {
        first["memoryId"]: "Standups are on Mondays",
        second["memoryId"]: "Standups moved to Tuesdays",
    }
    idempotency = [sk for (_, sk) in stored(stack) if sk.startswith(IDEMPOTENCY)]
    assert idempotency == [idempotency_sk("k-standup")]  # the key's answer for its new day
    before = stored(stack)
    assert add(stack, {"content": "Standups moved to Tuesdays", "idempotencyKey": "k-standup"}) == second
    assert stored(stack) == before
    for other in ("Standups are on Mondays", "Standups are on Wednesdays"):  # the key is the second request's
        with pytest.raises(Conflict):
            add(stack, {"content": other, "idempotencyKey": "k-standup"})
    assert stored(stack) == before


def test_a_memory_that_expired_keeps_its_key_and_is_never_replaced_under_it(stack: Services) -> None:
    soon = iso(datetime.now(UTC) + timedelta(days=30))
    first = add(stack, {"content": "The door code is 4412", "idempotencyKey": "k-door", "expiresAt": soon})
    memory_id = first["memoryId"]
    past = int((datetime.now(UTC) - timedelta(hours=1)).timestamp())
    rewrite(stack, memory_id, expires_at=past)  # expired an hour ago; storage has not removed it yet
    assert stack.records.get(PARTITION, record_sk(memory_id)) is None  # read as absent everywhere

    with pytest.raises(Conflict):  # within its day the key still answers for the first request
        add(stack, {"content": "The door code is 9901", "idempotencyKey": "k-door"})
    rewrite(stack, memory_id, createdAt=days_ago(2))
    second = add(stack, {"content": "The door code is 9901", "idempotencyKey": "k-door"})

    assert second["memoryId"] != memory_id
    held = stack.records.get(PARTITION, record_sk(memory_id), expired=True)
    assert held is not None and held.data["content"] == "The door code is 4412"  # not replaced
    assert memories(stack) == {second["memoryId"]: "The door code is 9901"}


# ---------------------------------------------------------------- the paths that share keys
def test_memory_add_and_the_batch_path_find_each_others_keys(stack: Services) -> None:
    batch = MemoryAddInput(content="Deploys go out from main", idempotency_key="k-batch", dedupe=False)
    [outcome] = add_many_outcomes(stack.memory, ALICE, [batch])
    assert outcome.output.memory_id == keyed_memory_id(PARTITION, "k-batch")
    single = {"content": "Deploys go out from main", "idempotencyKey": "k-batch", "dedupe": False}
    assert add(stack, single)["memoryId"] == outcome.output.memory_id
    with pytest.raises(Conflict):
        add(stack, {**single, "content": "Deploys go out from release branches"})

    first = add(stack, {"content": "Releases are tagged vX.Y", "idempotencyKey": "k-single", "dedupe": False})
    request = MemoryAddInput(content="Releases are tagged vX.Y", idempotency_key="k-single", dedupe=False)
    [again] = add_many_outcomes(stack.memory, ALICE, [request])
    assert (again.output.memory_id, again.replayed) == (first["memoryId"], True)
    assert len(memories(stack)) == 2
    assert not [sk for (_, sk) in stored(stack) if sk.startswith(IDEMPOTENCY)]


def test_a_resent_memory_add_batch_stores_nothing_twice(stack: Services) -> None:
    items = [
        {"content": "The staging DB is Postgres 16", "idempotencyKey": "b-1", "dedupe": False},
        {"content": "Standups are on Mondays", "occurredAt": "2024-03-01T09:00:00Z", "idempotencyKey": "b-2"},
    ]
    first = get_tool("memory_add_batch").invoke(stack, ALICE, {"items": items})
    assert [r["memoryId"] for r in first["results"]] == [keyed_memory_id(PARTITION, k) for k in ("b-1", "b-2")]
    before = stored(stack)
    again = get_tool("memory_add_batch").invoke(stack, ALICE, {"items": items})
    assert again["results"] == first["results"]
    assert stored(stack) == before


def test_a_repeat_after_its_memory_was_deleted_stores_it_again_under_the_same_id(stack: Services) -> None:
    """The edge where the answer differs from an idempotency record's (``mnemo.memory.keys``): nothing at the
    key's id any more, so the repeat's put stores the content again, under the id the first call answered."""
    body = {"content": "The VPN certificate expires in June", "idempotencyKey": "k-vpn"}
    first = add(stack, body)
    get_tool("memory_delete").invoke(stack, ALICE, {"memoryId": first["memoryId"]})
    assert add(stack, body) == first
    assert memories(stack) == {first["memoryId"]: body["content"]}


# ---------------------------------------------------------------- over HTTP
def test_the_clients_repeat_over_http_gets_the_first_answer(stack: Services) -> None:
    alice = LocalIdentity(tenant="acme", user="alice", agent="bot", project="atlas")
    with local_server(stack) as url:
        client = MnemoClient(url, auth=alice)
        first = client.memory_add(content="Atlas deploys on Fridays", idempotency_key="http-1")
        again = client.memory_add(content="Atlas deploys on Fridays", idempotency_key="http-1")
        with pytest.raises(ConflictError):
            client.memory_add(content="Atlas deploys on Mondays", idempotency_key="http-1")
    assert again == first
    assert first["memoryId"] == keyed_memory_id(PARTITION, "http-1")
    assert memories(stack) == {first["memoryId"]: "Atlas deploys on Fridays"}

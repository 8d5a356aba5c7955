"""The batch path (mnemo.memory.batch) on the embedded stack: add's rules, in batches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import ctx, drained, make_services
from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, ProviderError, Unauthorized
from mnemo.memory.batch import add_many, add_many_outcomes
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemoryAddOutput, MemorySearchInput
from mnemo.runtime import Services


def requests(*bodies: str | dict[str, Any]) -> list[MemoryAddInput]:
    return [MemoryAddInput.model_validate(body if isinstance(body, dict) else {"content": body}) for body in bodies]


def memories(services: Services) -> list[dict[str, Any]]:
    return [item.data for item in services.records.scan("MEM|") if item.sk.startswith("MEM#")]


def history(services: Services, event: str) -> list[dict[str, Any]]:
    """History entries of ``event``: the items, and the ADD entries folded into records (mnemo.memory.records)."""
    from mnemo.memory.records import folded

    stored = list(services.records.scan("MEM|"))
    entries = [item for item in stored if item.sk.startswith("HIST#")]
    entries += [entry for item in stored if item.sk.startswith("MEM#") and (entry := folded(item)) is not None]
    return [item.data for item in entries if event in item.sk]


def shape(outputs: list[MemoryAddOutput]) -> list[tuple[int, bool, str, str]]:
    """Each answer as (index of the first answer naming the same memory, deduplicated, layer, message)."""
    first: dict[str, int] = {}
    return [(first.setdefault(o.memory_id, n), o.deduplicated, o.layer, o.message) for n, o in enumerate(outputs)]


MIXED = (
    {"content": "The deploy runs at noon", "tags": ["ops"], "metadata": {"team": "core"}},
    "Alice prefers tea over coffee",
    "The deploy runs at noon.",  # near-identical to the first (same words): deduplicated
    {"content": "Standups are on Mondays", "occurredAt": "2024-03-01T09:00:00+01:00"},
    "Alice prefers tea over coffee",  # an exact repeat
    {"content": "Session notes: the cache was cold", "layer": "session"},
    {"content": "Bob reviews every migration", "layer": "agent", "tags": ["db", "review"]},
    "Standups are on Mondays!",
    {"content": "Project Atlas ships in May", "layer": "project"},
    # Dated the same day: each is linked to the one before it (embedded with it), across batches too.
    {"content": "Caroline went to the support group", "occurredAt": "2023-05-08T13:56:00Z"},
    {"content": "Yes, twice last summer", "occurredAt": "2023-05-08T14:01:00Z"},
    {"content": "Melanie painted a sunrise", "occurredAt": "2023-05-08T14:05:00Z"},
    {"content": "A new day, a new plan", "occurredAt": "2023-05-09T08:00:00Z"},
)


def _context() -> RequestContext:
    return ctx(agent="coder", session="s1", project="atlas", roles=("writer",))


def test_a_batch_answers_and_stores_what_one_by_one_adds_would(tmp_path: Path) -> None:
    one, many = make_services(tmp_path / "one"), make_services(tmp_path / "many")
    context = _context()
    singly = [one.memory.add(context, request) for request in requests(*MIXED)]
    batched = add_many(many.memory, context, requests(*MIXED), batch=4)
    assert shape(batched) == shape(singly)
    assert [o.deduplicated for o in batched] == [False] * 2 + [True, False, True, False, False, True] + [False] * 5

    def stored(services: Services) -> list[dict[str, Any]]:
        keep = ("content", "layer", "scope", "tags", "metadata", "occurredAt", "contentHash", "embeddingModel")
        found = memories(services)
        content = {m["memoryId"]: m["content"] for m in found}
        return sorted(
            ({**{k: m[k] for k in keep}, "after": content.get(m.get("after", ""))} for m in found),
            key=lambda m: m["content"],
        )

    assert stored(many) == stored(one)
    linked = {m["content"]: m["after"] for m in stored(many) if m["after"]}
    assert linked == {
        "Yes, twice last summer": "Caroline went to the support group",
        "Melanie painted a sunrise": "Yes, twice last summer",
    }
    for services in (one, many):
        assert len(history(services, "#ADD#")) == 10
        assert len(history(services, "#DEDUPE#")) == 3
        assert services.index.count(NAMESPACE) == 10
        assert services.outbox.pending() == []
        (last,) = [item.data for item in services.records.scan("MEM|") if item.sk == "LAST"]
        assert {m["memoryId"]: m["content"] for m in memories(services)}[last["memoryId"]] == "A new day, a new plan"
    # The index holds what add indexes (a linked memory's pair): every memory scores the same (ties go by id).
    for text in ("twice last summer support group", "deploy noon tea standups"):
        query = MemorySearchInput(query=text, threshold=0.0, limit=100)
        results = [sorted((r.score, r.content) for r in s.memory.search(context, query).results) for s in (one, many)]
        assert results[0] == results[1]
        assert len(results[0]) == 10


def test_duplicates_within_the_batch_and_against_the_store_are_not_stored(services: Services) -> None:
    alice = ctx()
    kept = services.memory.add(alice, requests("The nightly build runs on the big runner")[0])
    outputs = add_many(
        services.memory,
        alice,
        requests(
            "The nightly build runs on the big runner",  # exact repeat of a stored memory
            "The nightly build runs on the big runner.",  # near-identical to it
            "Invoices are sent on the first of the month",
            "Invoices are sent on the first of the month",  # exact repeat in the batch
            "Invoices are sent on the first of the month!",  # near-identical, in the batch
            "Passwords rotate every ninety days",
        ),
        batch=2,  # the repeats fall in later batches than what they repeat
    )
    assert [o.memory_id for o in outputs[:2]] == [kept.memory_id, kept.memory_id]
    assert outputs[3].memory_id == outputs[4].memory_id == outputs[2].memory_id
    assert [o.deduplicated for o in outputs] == [True, True, False, True, True, False]
    assert sorted(m["content"] for m in memories(services)) == [
        "Invoices are sent on the first of the month",
        "Passwords rotate every ninety days",
        "The nightly build runs on the big runner",
    ]
    dedupes = history(services, "#DEDUPE#")
    assert sorted(d["memoryId"] for d in dedupes) == sorted(o.memory_id for o in outputs if o.deduplicated)


def test_running_the_same_batch_again_stores_nothing_new(services: Services) -> None:
    alice = ctx()
    batch = requests(*(f"Fact {n}: the service {n * 13} listens on port {8000 + n}" for n in range(30)))
    first = add_many(services.memory, alice, batch, batch=7)
    again = add_many(services.memory, alice, batch, batch=7)
    assert not any(o.deduplicated for o in first)
    assert all(o.deduplicated for o in again)
    assert [o.memory_id for o in again] == [o.memory_id for o in first]
    assert len(memories(services)) == 30


def test_idempotency_keys_replay_within_and_across_calls(services: Services) -> None:
    alice = ctx()
    earlier = services.memory.add(alice, requests({"content": "Key one", "idempotencyKey": "k1"})[0])
    outcomes = add_many_outcomes(
        services.memory,
        alice,
        requests(
            {"content": "Key one", "idempotencyKey": "k1"},  # stored by add: replayed
            {"content": "Key two", "idempotencyKey": "k2"},
            {"content": "Key two", "idempotencyKey": "k2"},  # the same request again in the batch
            {"content": "No key"},
        ),
    )
    assert [o.replayed for o in outcomes] == [True, False, True, False]
    assert outcomes[0].output == earlier
    assert outcomes[2].output == outcomes[1].output
    assert len(memories(services)) == 3
    replayed = add_many_outcomes(services.memory, alice, requests({"content": "Key two", "idempotencyKey": "k2"}))
    assert replayed[0].replayed
    assert replayed[0].output == outcomes[1].output
    # add honours the key the batch stored
    assert services.memory.add(alice, requests({"content": "Key two", "idempotencyKey": "k2"})[0]) == outcomes[1].output


@pytest.mark.parametrize(
    "batch",
    [
        [{"content": "Fresh", "idempotencyKey": "k9"}, {"content": "Changed", "idempotencyKey": "k1"}],
        [{"content": "A", "idempotencyKey": "k5"}, {"content": "B", "idempotencyKey": "k5"}],
    ],
    ids=["stored key", "key repeated in the batch"],
)
def test_a_key_reused_for_another_request_is_a_conflict_and_nothing_is_written(
    services: Services, batch: list[dict[str, Any]]
) -> None:
    alice = ctx()
    services.memory.add(alice, requests({"content": "Key one", "idempotencyKey": "k1"})[0])
    before = list(services.records.scan(""))
    with pytest.raises(Conflict) as raised:
        add_many(services.memory, alice, requests(*batch))
    assert raised.value.details == {"field": "idempotencyKey", "index": 1}
    assert list(services.records.scan("")) == before


def test_more_than_a_write_holds_is_written_in_chunks(services: Services) -> None:
    """150 memories with keys are 600 operations; the store refuses any write of more than 100."""
    alice = ctx()
    bodies = [{"content": f"Chunked fact {n} about shard {n * 31 % 97}", "idempotencyKey": f"c{n}"} for n in range(150)]
    outputs = add_many(services.memory, alice, requests(*bodies), batch=1000)
    assert len({o.memory_id for o in outputs}) == 150
    assert not any(o.deduplicated for o in outputs)
    assert len(memories(services)) == 150
    assert len(history(services, "#ADD#")) == 150
    assert services.index.count(NAMESPACE) == 150
    assert services.outbox.pending() == []
    found = services.memory.search(alice, MemorySearchInput(query="chunked fact shard 31", threshold=0.0))
    assert outputs[1].memory_id in {r.memory_id for r in found.results}


def test_with_the_embedder_down_memories_are_stored_and_left_for_the_drain(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = ctx()
    real_embed = services.embedder.embed

    def down(_: Any) -> Any:
        raise ProviderError("embedding service down")

    monkeypatch.setattr(services.embedder, "embed", down)
    outputs = add_many(
        services.memory,
        alice,
        requests("Queued fact one", "Queued fact two", "Queued fact one", "Queued fact three"),
        batch=2,
    )
    assert [o.deduplicated for o in outputs] == [False, False, True, False]  # exact repeats need no vector
    assert len(memories(services)) == 3
    assert services.index.count(NAMESPACE) == 0
    assert sorted(m["ref"]["sk"] for m in services.outbox.pending()) == sorted(
        f"MEM#{o.memory_id}" for o in outputs if not o.deduplicated
    )
    monkeypatch.setattr(services.embedder, "embed", real_embed)
    assert drained(services.outbox) == (3, 0)
    assert services.index.count(NAMESPACE) == 3
    found = services.memory.search(alice, MemorySearchInput(query="queued fact three", threshold=0.0))
    assert found.results[0].memory_id == outputs[3].memory_id


@pytest.mark.parametrize(
    ("context", "error", "field"),
    [
        (ctx(project="atlas"), Unauthorized, "layer"),  # a shared layer without the writer role
        (ctx(roles=("writer",)), InvalidInput, "layer"),  # no project id in the context
    ],
    ids=["no writer role", "no project id"],
)
def test_a_layer_the_caller_cannot_write_refuses_the_batch_before_anything_is_written(
    services: Services, context: RequestContext, error: type[Exception], field: str
) -> None:
    batch = requests("Allowed in the user layer", "Also fine", {"content": "Shared fact", "layer": "project"})
    with pytest.raises(error) as raised:
        add_many(services.memory, context, batch)
    assert raised.value.details["field"] == field
    assert raised.value.details["index"] == 2  # type: ignore[attr-defined]
    assert list(services.records.scan("")) == []
    assert services.index.count(NAMESPACE) == 0


def test_vectors_the_caller_already_has_replace_the_embedder(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = ctx()
    texts = ["Vectors from elsewhere one", "Vectors from elsewhere two", "Vectors from elsewhere one."]
    vectors = services.embedder.embed(texts)

    def unused(_: Any) -> Any:
        raise AssertionError("the embedder is not called when vectors are given")

    monkeypatch.setattr(services.embedder, "embed", unused)
    outputs = add_many(services.memory, alice, requests(*texts), vectors=vectors)
    assert [o.deduplicated for o in outputs] == [False, False, True]
    assert services.index.count(NAMESPACE) == 2
    assert services.outbox.pending() == []
    with pytest.raises(InvalidInput) as raised:
        add_many(services.memory, alice, requests("Short vector"), vectors=[[1.0, 0.0]])
    assert raised.value.details == {"field": "vectors", "index": 0}


@pytest.mark.model
def test_bge_answers_in_the_callers_order_whatever_the_lengths(bge_services: Services) -> None:
    """The embedder batches texts by length; each vector must still answer its own text."""
    texts = [
        "A long memory " + "about the quarterly billing migration and its many moving parts " * 6,
        "Tea",
        "The deploy runs at noon on weekdays",
        "Coffee",
    ]
    together = bge_services.embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        (alone,) = bge_services.embedder.embed([text])
        assert sum(a * b for a, b in zip(alone, vector, strict=True)) > 0.98  # int8: batch-mates shift a little
    assert sum(a * b for a, b in zip(together[1], together[3], strict=True)) < 0.98


def test_the_bounded_in_call_check_answers_what_the_plain_product_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above PRUNE_FROM kept memories the in-call check bounds similarities in a few dimensions first; it must
    find the very memory (or an identical copy of it) that comparing every kept memory finds, whenever it
    reaches the threshold."""
    np = pytest.importorskip("numpy")
    from mnemo.memory import batch_similarity as module

    rng = np.random.default_rng(7)

    def unit(rows: Any) -> Any:
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)

    topics = rng.normal(size=(6, 64))
    kept = unit(rng.normal(size=(400, 6)) @ topics + 0.4 * rng.normal(size=(400, 64)))
    kept[250] = kept[5]  # a tie: the first of the two is the answer
    near = unit(kept[:120] + 0.03 * rng.normal(size=(120, 64)))  # at least 0.95 from their source
    queries = np.vstack([near, unit(rng.normal(size=(40, 6)) @ topics + 0.4 * rng.normal(size=(40, 64))), kept[5:6]])

    def answers() -> list[tuple[float, str] | None]:
        similar = module.InCallMemories(10**6, 0.95)
        for n, vector in enumerate(kept):
            similar.add("scope", f"m{n}", vector)
        found = similar.best("scope", queries)
        return [hit if hit is not None and hit[0] >= 0.95 else None for hit in found]

    plain = answers()
    monkeypatch.setattr(module, "PRUNE_FROM", 100)
    monkeypatch.setattr(module, "PRUNE_DIMENSIONS", 8)
    bounded = answers()

    # Two copies of one vector (m5 and m250) may score a float32 rounding apart: BLAS kernels sum rows in
    # different orders on different CPUs. Either copy is then the right answer.
    def same_memory(one: str, other: str) -> bool:
        return one == other or bool(np.array_equal(kept[int(one[1:])], kept[int(other[1:])]))

    assert [hit is None for hit in bounded] == [hit is None for hit in plain]
    for got, expected in zip(bounded, plain, strict=True):
        if got is not None and expected is not None:
            assert same_memory(got[1], expected[1]), (got, expected)
            assert abs(got[0] - expected[0]) < 1e-5, (got, expected)
    assert sum(hit is not None for hit in plain) >= 120
    assert plain[-1] is not None
    assert same_memory(plain[-1][1], "m5")
    assert any(hit is None for hit in plain)


def test_a_large_import_deduplicates_as_a_small_one_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same requests through the plain and the bounded in-call check: the same answers and records."""
    from mnemo.memory import batch_similarity as module

    words = ["deploy", "invoice", "cache", "migration", "standup", "checklist", "rotation", "roadmap", "ranking"]
    bodies: list[str] = []
    repeats: list[int] = []
    for n in range(160):
        text = f"{words[n % 9]} {words[n * 7 % 9]} note {n} about {words[n * 5 % 9]} and item {n * 37 % 1000}"
        bodies.append(text)
        if n % 10 == 3:
            repeats.append(len(bodies))
            bodies.append(bodies[n * 3 // 4].upper() + "!")  # a near repeat (the same words) of an earlier one
    alice = ctx()
    plain = add_many(make_services(tmp_path / "plain").memory, alice, requests(*bodies), batch=25)
    monkeypatch.setattr(module, "PRUNE_FROM", 20)
    monkeypatch.setattr(module, "PRUNE_DIMENSIONS", 8)
    bounded_services = make_services(tmp_path / "bounded")
    bounded = add_many(bounded_services.memory, alice, requests(*bodies), batch=25)
    assert shape(bounded) == shape(plain)
    assert all(plain[n].deduplicated for n in repeats)
    assert not plain[0].deduplicated
    assert len(memories(bounded_services)) == len(bodies) - sum(o.deduplicated for o in plain) < len(bodies) - 16

"""Memories added close in time: each dated memory is embedded with the one added before it in its scope on
the same day, linked to it, and grouped by day; memory_search ranks with those context signals."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ctx
from mnemo.errors import ProviderError
from mnemo.memory.filters import ATTRS, attr_terms
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemoryDeleteInput, MemorySearchInput
from mnemo.memory.records import LAST, partition_of
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT
from mnemo.runtime import Services

DAY = "2023-05-08T13:56:00Z"
NEXT_DAY = "2023-05-09T09:00:00Z"


def add(services: Services, context: Any, content: str, **fields: Any) -> str:
    return services.memory.add(context, MemoryAddInput.model_validate({"content": content, **fields})).memory_id


def search(services: Services, context: Any, query: str) -> list[str]:
    found = services.memory.search(context, MemorySearchInput.model_validate({"query": query, "threshold": 0.0}))
    return [result.memory_id for result in found.results]


def record(services: Services, context: Any, memory_id: str) -> dict[str, Any]:
    item = services.records.get(partition_of(context.scope_key("user")), f"MEM#{memory_id}")
    assert item is not None
    return item.data


def closest(services: Services, context: Any, text: str) -> tuple[str, float]:
    """The indexed memory whose vector is nearest to that of ``text``, and its cosine."""
    vector = services.embedder.embed([text])[0]
    hit = services.index.knn(NAMESPACE, vector, {"scope": [context.scope_key("user")]}, 1)[0]
    return hit.id, hit.score


def keywords(services: Services, context: Any, memory_id: str) -> dict[str, list[str]]:
    vector = services.embedder.embed(["anything"])[0]
    hits = services.index.knn(NAMESPACE, vector, {"scope": [context.scope_key("user")]}, 100)
    return next(hit.keywords for hit in hits if hit.id == memory_id)


def test_a_dated_memory_links_to_the_one_added_before_it_that_day_and_is_embedded_with_it(
    services: Services,
) -> None:
    alice = ctx()
    first = add(services, alice, "Caroline: I went to the LGBTQ support group yesterday", occurredAt=DAY)
    second = add(services, alice, "Melanie: That sounds powerful, how did it feel?", occurredAt=DAY)

    assert "after" not in record(services, alice, first)
    assert record(services, alice, second)["after"] == first
    found, cosine = closest(
        services,
        alice,
        "Melanie: That sounds powerful, how did it feel?\nCaroline: I went to the LGBTQ support group yesterday",
    )
    assert found == second
    assert cosine == pytest.approx(1.0, abs=1e-5)
    assert keywords(services, alice, second) == {
        "scope": [alice.scope_key("user")],
        "layer": ["user"],
        "tags": [],
        "meta.source": ['"manual"'],
        "contentHash": [record(services, alice, second)["contentHash"]],
        AFTER: [first],
        EPISODE: ["2023-05-08"],
        SUBJECT: ["melanie"],
        ATTRS: attr_terms(record(services, alice, second)),  # the typed terms of operator filters
    }


def test_no_link_across_days_scopes_or_without_a_date(services: Services) -> None:
    alice, bob = ctx(), ctx(user="bob")
    add(services, alice, "Caroline: I painted a sunrise", occurredAt=DAY)
    next_day = add(services, alice, "Melanie: Lovely colours", occurredAt=NEXT_DAY)
    other_scope = add(services, bob, "Bob: my first memory", occurredAt=NEXT_DAY)
    undated = add(services, alice, "the build uses Python 3.12")
    undated_after = add(services, alice, "the tests run on pytest")

    assert "after" not in record(services, alice, next_day)
    assert "after" not in record(services, bob, other_scope)
    assert "after" not in record(services, alice, undated)
    assert "after" not in record(services, alice, undated_after)
    assert closest(services, alice, "the tests run on pytest") == (undated_after, pytest.approx(1.0, abs=1e-5))
    assert EPISODE not in keywords(services, alice, undated)
    assert SUBJECT not in keywords(services, alice, undated)  # "the" is not capitalised


def test_a_deleted_memory_leaves_the_vector_of_the_one_after_it(services: Services) -> None:
    alice = ctx()
    first = add(services, alice, "Caroline: adoption agencies called me back", occurredAt=DAY)
    second = add(services, alice, "Melanie: wonderful news", occurredAt=DAY)

    services.memory.delete(alice, MemoryDeleteInput.model_validate({"memoryId": first}))

    assert closest(services, alice, "Melanie: wonderful news") == (second, pytest.approx(1.0, abs=1e-5))
    # and a new memory that day does not link to the deleted one
    third = add(services, alice, "Caroline: thanks", occurredAt=DAY)
    assert record(services, alice, third)["after"] == second
    assert services.records.get(partition_of(alice.scope_key("user")), LAST) is not None


def test_reindex_embeds_each_memory_with_its_predecessor_again(services: Services) -> None:
    alice = ctx()
    add(services, alice, "Caroline: I joined a pottery class", occurredAt=DAY)
    second = add(services, alice, "Melanie: what did you make?", occurredAt=DAY)

    assert services.memory.reindex() == 2

    found = closest(services, alice, "Melanie: what did you make?\nCaroline: I joined a pottery class")
    assert found == (second, pytest.approx(1.0, abs=1e-5))


def test_search_finds_an_answer_through_the_question_before_it(services: Services) -> None:
    alice = ctx()
    add(services, alice, "Melanie: the weather was grey all week", occurredAt=NEXT_DAY)
    add(services, alice, "Melanie: did you go camping with the kids in the mountains?", occurredAt=DAY)
    answer = add(services, alice, "Caroline: yes, twice, it was lovely", occurredAt=DAY)

    ranked = search(services, alice, "camping with the kids in the mountains")

    assert ranked.index(answer) == 1  # right after the question it answers, above the unrelated memory


def test_the_near_duplicate_check_compares_content_not_content_in_context(services: Services) -> None:
    alice = ctx()
    long_turn = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful to hear the stories"
    first = services.memory.add(alice, MemoryAddInput.model_validate({"content": long_turn, "occurredAt": DAY}))
    reply = services.memory.add(alice, MemoryAddInput.model_validate({"content": "Melanie: wow", "occurredAt": DAY}))
    again = services.memory.add(alice, MemoryAddInput.model_validate({"content": long_turn, "occurredAt": DAY}))

    assert not reply.deduplicated  # its vector holds the long turn, but the check looks at "Melanie: wow"
    assert again.deduplicated
    assert again.memory_id == first.memory_id


TURNS = [
    "Caroline: I went to the support group yesterday",
    "Melanie: how did it feel?",
    "Caroline: powerful, I want to work in counseling",
    "Melanie: you would be great at it",
]


def test_repeating_a_days_linked_memories_stores_nothing_new(services: Services) -> None:
    alice = ctx()
    first = [add(services, alice, turn, occurredAt=DAY) for turn in TURNS]
    again = [
        services.memory.add(alice, MemoryAddInput.model_validate({"content": t, "occurredAt": DAY})) for t in TURNS
    ]

    assert [out.memory_id for out in again] == first  # each found by its content, though stored in context
    assert all(out.deduplicated for out in again)
    assert services.index.count(NAMESPACE) == len(TURNS)


def test_a_batch_repeating_linked_memories_added_one_by_one_stores_nothing_new(services: Services) -> None:
    from mnemo.memory.batch import add_many

    alice = ctx()
    first = [add(services, alice, turn, occurredAt=DAY) for turn in TURNS]
    requests = [MemoryAddInput.model_validate({"content": turn, "occurredAt": DAY}) for turn in TURNS]

    again = add_many(services.memory, alice, requests)

    assert [out.memory_id for out in again] == first
    assert all(out.deduplicated for out in again)
    assert services.index.count(NAMESPACE) == len(TURNS)


class WriteHook:
    """Runs ``before`` once, just before the first write that moves the scope's LAST pointer."""

    def __init__(self, services: Services, before: Any) -> None:
        self.write, self.before, self.fired = services.records.write, before, False
        services.records.write = self  # type: ignore[method-assign]

    def __call__(self, operations: Any) -> None:
        moves_last = any(getattr(getattr(op, "item", None), "sk", None) == LAST for op in operations)
        if moves_last and not self.fired:
            self.fired = True
            self.before()
        self.write(operations)


def test_an_add_racing_the_delete_of_its_predecessor_does_not_link_to_it(services: Services) -> None:
    alice = ctx()
    first = add(services, alice, "Caroline: my door code is 4412", occurredAt=DAY)
    hook = WriteHook(services, lambda: services.memory.delete(alice, MemoryDeleteInput(memoryId=first)))

    second = add(services, alice, "Melanie: noted", occurredAt=DAY)

    assert hook.fired
    assert "after" not in record(services, alice, second)
    # its vector holds its own content only: nothing of the deleted memory
    assert closest(services, alice, "Melanie: noted") == (second, pytest.approx(1.0, abs=1e-5))


def test_two_dated_adds_racing_on_one_scope_each_follow_the_memory_they_read(services: Services) -> None:
    alice = ctx()
    first = add(services, alice, "Caroline: I painted a sunrise", occurredAt=DAY)
    racer: list[str] = []
    hook = WriteHook(services, lambda: racer.append(add(services, alice, "Melanie: show me!", occurredAt=DAY)))

    last = add(services, alice, "Caroline: here it is", occurredAt=DAY)

    assert hook.fired
    # Both read the pointer to the first: both follow it (the chain forks), neither is lost nor unlinked.
    assert record(services, alice, racer[0])["after"] == first
    assert record(services, alice, last)["after"] == first
    pointer = services.records.get(partition_of(alice.scope_key("user")), LAST)
    assert pointer is not None
    assert pointer.data["memoryId"] == racer[0]  # the racer moved it first: the next add follows the racer
    following = add(services, alice, "Melanie: lovely colours", occurredAt=DAY)
    assert record(services, alice, following)["after"] == racer[0]
    assert services.index.count(NAMESPACE) == 4  # every one indexed
    assert services.outbox.pending() == []  # nothing left to re-index: no link was dropped


def test_a_dated_add_whose_pointer_write_fails_is_stored_and_the_next_follows_the_one_before(
    services: Services,
) -> None:
    """The pointer is written after the record, on its own: when that write fails (throttled, the store
    down), the memory is stored and indexed all the same; the next dated add follows the memory before it."""
    alice = ctx()
    first = add(services, alice, "Caroline: the gallery opens on Friday", occurredAt=DAY)

    def throttled() -> None:
        raise ProviderError("DynamoDB throttled the request", {"provider": "dynamodb"})

    real_write = services.records.write

    def fail_pointer(operations: Any) -> None:
        if any(getattr(getattr(op, "item", None), "sk", None) == LAST for op in operations):
            throttled()
        real_write(operations)

    services.records.write = fail_pointer  # type: ignore[method-assign]
    second = add(services, alice, "Melanie: I will be there", occurredAt=DAY)
    services.records.write = real_write  # type: ignore[method-assign]

    assert record(services, alice, second)["after"] == first
    pointer = services.records.get(partition_of(alice.scope_key("user")), LAST)
    assert pointer is not None and pointer.data["memoryId"] == first
    third = add(services, alice, "Caroline: see you there", occurredAt=DAY)
    assert record(services, alice, third)["after"] == first
    assert services.index.count(NAMESPACE) == 3

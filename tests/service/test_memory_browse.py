"""Reading memories without a query (memory_list, memory_history) and the parts of a search score."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ctx
from mnemo.errors import InvalidInput, NotFound
from mnemo.memory.models import (
    MemoryAddInput,
    MemoryDeleteInput,
    MemoryHistoryInput,
    MemoryListInput,
    MemorySearchInput,
)
from mnemo.runtime import Services


def add(services: Services, context: Any, content: str, **fields: Any) -> str:
    return services.memory.add(context, MemoryAddInput.model_validate({"content": content, **fields})).memory_id


def listing(services: Services, context: Any, **fields: Any) -> Any:
    return services.memory.list_layer(context, MemoryListInput.model_validate(fields))


def history(services: Services, context: Any, memory_id: str, **fields: Any) -> Any:
    return services.memory.history_page(context, MemoryHistoryInput.model_validate({"memoryId": memory_id, **fields}))


def test_list_pages_a_layer_newest_first(services: Services) -> None:
    alice = ctx()
    ids = [add(services, alice, f"Fact number {n} about the {word} service") for n, word in enumerate("abcde")]
    first = listing(services, alice, limit=2)
    assert [m.memory_id for m in first.memories] == ids[::-1][:2]
    assert first.has_more
    assert first.layer == "user"
    second = listing(services, alice, limit=2, cursor=first.next_cursor)
    third = listing(services, alice, limit=2, cursor=second.next_cursor)
    assert [m.memory_id for m in second.memories + third.memories] == ids[::-1][2:]
    assert not third.has_more
    assert third.next_cursor is None
    assert third.memories[-1].content == "Fact number 0 about the a service"


def test_list_shows_only_the_callers_layer(services: Services) -> None:
    alice, bob = ctx(), ctx("bob")
    add(services, alice, "Alice keeps her notes in markdown")
    assert listing(services, bob).memories == []
    assert listing(services, ctx(tenant="other")).memories == []
    with pytest.raises(InvalidInput) as refused:
        listing(services, alice, layer="project")  # no project id in the context
    assert refused.value.details["field"] == "layer"


def test_a_cursor_of_another_listing_is_refused(services: Services) -> None:
    alice = ctx(project="p1", roles=("writer",))
    for fact in ("The release train leaves on Tuesdays", "Hotfixes need two reviewers", "Staging mirrors prod data"):
        add(services, alice, fact, layer="project")
    page = listing(services, alice, layer="project", limit=1)
    assert page.next_cursor
    with pytest.raises(InvalidInput) as refused:
        listing(services, ctx("bob", project="p2"), layer="project", cursor=page.next_cursor)
    assert refused.value.details["field"] == "cursor"


def test_history_shows_add_dedupe_and_delete_even_after_the_delete(services: Services) -> None:
    alice = ctx()
    memory_id = add(services, alice, "The staging database is rebuilt every Monday")
    add(services, alice, "The staging database is rebuilt every Monday")
    services.memory.delete(alice, MemoryDeleteInput(memory_id=memory_id))
    answer = history(services, alice, memory_id)
    assert [c.event for c in answer.changes] == ["ADD", "DEDUPE", "DELETE"]
    assert answer.layer == "user"
    assert {c.actor for c in answer.changes} == {"alice"}
    assert answer.changes[0].content_hash
    assert not answer.has_more


def test_history_pages_oldest_first(services: Services) -> None:
    alice = ctx()
    memory_id = add(services, alice, "Builds run on the self-hosted runners")
    for _ in range(3):
        add(services, alice, "Builds run on the self-hosted runners")
    first = history(services, alice, memory_id, limit=3)
    assert [c.event for c in first.changes] == ["ADD", "DEDUPE", "DEDUPE"]
    assert first.has_more
    rest = history(services, alice, memory_id, limit=3, cursor=first.next_cursor)
    assert [c.event for c in rest.changes] == ["DEDUPE"]
    assert not rest.has_more


def test_history_of_a_memory_the_caller_cannot_read_is_not_found(services: Services) -> None:
    alice = ctx()
    memory_id = add(services, alice, "Alice's private reminder about the dentist")
    for outsider in (ctx("bob"), ctx(tenant="other"), ctx(None, project="p1")):
        with pytest.raises(NotFound) as missing:
            history(services, outsider, memory_id)
        with pytest.raises(NotFound) as unknown:
            history(services, outsider, "mem_000000000000000000000000")
        assert missing.value.message.replace(memory_id, "X") == unknown.value.message.replace(
            "mem_000000000000000000000000", "X"
        )


def test_search_results_say_what_their_score_came_from(services: Services) -> None:
    alice = ctx()
    add(services, alice, "The invoice service retries failed payments three times")
    add(services, alice, "Holiday schedule for the support rota")
    found = services.memory.search(
        alice, MemorySearchInput.model_validate({"query": "invoice payments retries", "threshold": 0})
    )
    top = found.results[0]
    assert top.content.startswith("The invoice service")
    assert top.vector_score is not None
    assert 0 < top.vector_score <= 1
    assert top.lexical_score is not None
    assert 0 < top.lexical_score <= 1
    for result in found.results:  # only a search that found it gives a part
        assert result.vector_score is not None or result.lexical_score is not None
    dumped = found.model_dump(mode="json", by_alias=True)["results"][0]
    assert {"vectorScore", "lexicalScore", "score"} <= set(dumped)

"""MemoryService rules on the embedded stack: layers, scope, dedupe, idempotency, ranking, history."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ctx
from mnemo.errors import Conflict, InvalidInput, NotFound, ProviderError, Unauthorized
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput, MemoryDeleteInput, MemorySearchInput
from mnemo.runtime import Services


def add(services: Services, context: Any, content: str, **fields: Any) -> Any:
    return services.memory.add(context, MemoryAddInput.model_validate({"content": content, **fields}))


def search(services: Services, context: Any, query: str, **fields: Any) -> Any:
    return services.memory.search(context, MemorySearchInput.model_validate({"query": query, **fields}))


def test_add_then_search_returns_the_memory_with_its_fields(services: Services) -> None:
    alice = ctx()
    stored = add(
        services,
        alice,
        "Alice deploys the billing service on Fridays",
        tags=["deploy"],
        metadata={"ticket": "OPS-1"},
        occurredAt="2024-05-03T10:00:00+02:00",
    )
    assert stored.memory_id.startswith("mem_")
    assert not stored.deduplicated
    found = search(services, alice, "billing service deploys", threshold=0.0)
    top = found.results[0]
    assert top.memory_id == stored.memory_id
    assert top.content == "Alice deploys the billing service on Fridays"
    assert top.tags == ["deploy"]
    assert top.metadata == {"source": "manual", "ticket": "OPS-1"}
    assert top.occurred_at is not None
    assert top.occurred_at.isoformat() == "2024-05-03T08:00:00+00:00"
    assert top.created_at is not None
    assert found.searched_layers == ["user", "company"]
    assert found.total_count == len(found.results)


def test_near_duplicate_in_same_scope_returns_existing_id(services: Services) -> None:
    alice = ctx()
    first = add(services, alice, "The staging database is PostgreSQL 16")
    again = add(services, alice, "The staging database is PostgreSQL 16")
    assert again.deduplicated
    assert again.memory_id == first.memory_id
    assert services.index.count(NAMESPACE) == 1
    # The same content in another scope is a different memory.
    other = add(services, ctx(user="bob"), "The staging database is PostgreSQL 16")
    assert not other.deduplicated
    assert other.memory_id != first.memory_id


def test_idempotency_key_stores_once_and_replays_the_answer(services: Services) -> None:
    alice = ctx()
    first = add(services, alice, "Remember the retro on Monday", idempotencyKey="req-1")
    retry = add(services, alice, "Remember the retro on Monday", idempotencyKey="req-1")
    assert retry == first
    assert services.index.count(NAMESPACE) == 1
    with pytest.raises(Conflict) as raised:
        add(services, alice, "Something else entirely", idempotencyKey="req-1")
    assert raised.value.details["field"] == "idempotencyKey"


def test_layer_without_its_ids_is_invalid_and_names_the_missing_id(services: Services) -> None:
    with pytest.raises(InvalidInput) as raised:
        add(services, ctx(roles=("writer",)), "x", layer="project")
    assert raised.value.details["field"] == "layer"
    assert raised.value.details["missingIds"] == ["project"]
    with pytest.raises(InvalidInput) as raised:
        add(services, ctx(), "x", layer="session")
    assert raised.value.details["missingIds"] == ["session"]


def test_shared_layers_need_the_writer_role(services: Services) -> None:
    with pytest.raises(Unauthorized):
        add(services, ctx(project="p1"), "Use trunk-based development", layer="project")
    stored = add(services, ctx(project="p1", roles=("writer",)), "Use trunk-based development", layer="project")
    assert stored.layer == "project"
    with pytest.raises(Unauthorized):
        services.memory.delete(ctx(project="p1"), MemoryDeleteInput(memory_id=stored.memory_id))


def test_users_and_tenants_are_isolated(services: Services) -> None:
    alice = ctx(project="p1", roles=("writer",))
    mine = add(services, alice, "My favourite editor is Helix")
    shared = add(services, alice, "The project favours Helix as editor", layer="project")
    company = add(services, alice, "The company favours Helix too", layer="company")

    bob = ctx(user="bob")
    assert search(services, bob, "favourite editor Helix", threshold=0.0).results == [
        r for r in search(services, bob, "favourite editor Helix", threshold=0.0).results if r.layer == "company"
    ]
    assert {r.memory_id for r in search(services, bob, "Helix", threshold=0.0).results} == {company.memory_id}
    bob_on_project = ctx(user="bob", project="p1")
    seen = {r.memory_id for r in search(services, bob_on_project, "Helix", threshold=0.0).results}
    assert seen == {shared.memory_id, company.memory_id}

    outsider = ctx(user="alice", tenant="other-co", project="p1")
    assert search(services, outsider, "Helix", threshold=0.0).results == []
    for memory_id in (mine.memory_id, shared.memory_id, company.memory_id):
        with pytest.raises(NotFound) as raised:
            services.memory.delete(outsider, MemoryDeleteInput(memory_id=memory_id))
        assert "other" not in raised.value.message.lower()


def test_delete_of_another_users_memory_is_not_found_and_keeps_it(services: Services) -> None:
    alice, bob = ctx(), ctx(user="bob")
    stored = add(services, alice, "Alice's locker code is 4512")
    with pytest.raises(NotFound):
        services.memory.delete(bob, MemoryDeleteInput(memory_id=stored.memory_id))
    assert search(services, alice, "locker code", threshold=0.0).results[0].memory_id == stored.memory_id


def test_delete_removes_from_search_and_records_history(services: Services) -> None:
    alice = ctx()
    stored = add(services, alice, "Temporary fact about the sprint goal")
    add(services, alice, "Temporary fact about the sprint goal")  # dedupe event
    deleted = services.memory.delete(alice, MemoryDeleteInput(memory_id=stored.memory_id))
    assert deleted.memory_id == stored.memory_id
    assert search(services, alice, "sprint goal", threshold=0.0).results == []
    assert [event["event"] for event in services.memory.history(alice, stored.memory_id)] == ["ADD", "DEDUPE", "DELETE"]
    with pytest.raises(NotFound):
        services.memory.delete(alice, MemoryDeleteInput(memory_id=stored.memory_id))


def test_the_add_entry_folded_into_the_record_reads_as_before_and_outlives_the_record(services: Services) -> None:
    from mnemo.memory.models import MemoryHistoryInput

    alice = ctx()
    stored = add(services, alice, "The deploy freeze starts on Friday")
    partition = f"MEM|{alice.scope_key('user')}"
    # One item: the record holds its ADD entry (no HIST# item is written by the add).
    assert [item.sk for item in services.records.query(partition, f"HIST#{stored.memory_id}#")] == []
    [entry] = services.memory.history(alice, stored.memory_id)
    record = services.records.get(partition, f"MEM#{stored.memory_id}")
    assert record is not None
    assert entry == {
        "memoryId": stored.memory_id,
        "event": "ADD",
        "at": record.data["createdAt"],
        "actor": alice.user,
        "contentHash": record.data["contentHash"],
    }
    page = services.memory.history_page(alice, MemoryHistoryInput(memory_id=stored.memory_id))
    assert [change.event for change in page.changes] == ["ADD"]

    add(services, alice, "The deploy freeze starts on Friday")  # a DEDUPE: an item of its own
    services.memory.delete(alice, MemoryDeleteInput(memory_id=stored.memory_id))
    history = services.memory.history(alice, stored.memory_id)
    assert [event["event"] for event in history] == ["ADD", "DEDUPE", "DELETE"]
    assert history[0] == entry  # written out by the delete, as it read before
    one = services.memory.history_page(alice, MemoryHistoryInput(memory_id=stored.memory_id, limit=1))
    assert [change.event for change in one.changes] == ["ADD"] and one.next_cursor
    rest = services.memory.history_page(
        alice, MemoryHistoryInput(memory_id=stored.memory_id, limit=5, cursor=one.next_cursor)
    )
    assert [change.event for change in rest.changes] == ["DEDUPE", "DELETE"]


def test_results_follow_layer_precedence_then_score(services: Services) -> None:
    alice = ctx(project="p1", agent="coder", roles=("writer",))
    project = add(services, alice, "coffee coffee coffee is the team drink", layer="project")
    user = add(services, alice, "I sometimes drink coffee", layer="user")
    agent = add(services, alice, "coffee tastes bitter", layer="agent")
    found = search(services, alice, "coffee", threshold=0.0)
    assert [r.memory_id for r in found.results] == [agent.memory_id, user.memory_id, project.memory_id]
    assert found.searched_layers == ["agent", "user", "project", "company"]


def test_same_content_in_two_layers_is_returned_once_from_the_most_specific(services: Services) -> None:
    alice = ctx(project="p1", roles=("writer",))
    add(services, alice, "Releases are cut on Tuesdays", layer="project")
    mine = add(services, alice, "Releases are cut on Tuesdays", layer="user")
    found = search(services, alice, "when are releases cut", threshold=0.0)
    assert [r.memory_id for r in found.results] == [mine.memory_id]


def test_tag_and_metadata_filters(services: Services) -> None:
    alice = ctx()
    ops = add(services, alice, "Rotate the API keys monthly", tags=["Security"], metadata={"team": "ops", "n": 1})
    add(services, alice, "Rotate the coffee filters monthly", tags=["kitchen"], metadata={"team": "facilities"})
    assert [r.memory_id for r in search(services, alice, "rotate monthly", tags=["security"], threshold=0).results] == [
        ops.memory_id
    ]
    by_meta = search(services, alice, "rotate monthly", metadata={"team": "ops"}, threshold=0)
    assert [r.memory_id for r in by_meta.results] == [ops.memory_id]
    nested = search(services, alice, "rotate monthly", filter={"metadata": {"n": 1}}, threshold=0)
    assert [r.memory_id for r in nested.results] == [ops.memory_id]
    assert search(services, alice, "rotate monthly", metadata={"team": "nobody"}, threshold=0).results == []


def test_limit_threshold_and_total_count(services: Services) -> None:
    alice = ctx()
    for i in range(6):
        add(services, alice, f"Note {i}: the nightly build {'failed' if i % 2 else 'passed'} on runner {i}")
    found = search(services, alice, "nightly build runner", limit=2, threshold=0.0)
    assert len(found.results) == 2
    assert found.total_count == 6
    assert all(r.score >= 0 for r in found.results)
    strict = search(services, alice, "nightly build runner", threshold=1.0)
    assert all(r.score >= 1.0 for r in strict.results)
    assert strict.total_count == len(strict.results)


def test_explicit_layers_without_ids_are_not_searched(services: Services) -> None:
    found = search(services, ctx(), "anything", layers=["project", "user"])
    assert found.searched_layers == ["user"]


def test_search_degrades_to_lexical_when_embeddings_fail(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = ctx()
    stored = add(services, alice, "The on-call rotation changes every Wednesday")

    def broken(_: Any) -> Any:
        raise ProviderError("embedding service down")

    monkeypatch.setattr(services.embedder, "embed", broken)
    found = search(services, alice, "on-call rotation Wednesday", threshold=0.0)
    assert found.retrieval == "lexical"
    assert [r.memory_id for r in found.results] == [stored.memory_id]


def test_index_entries_without_a_record_never_leak(services: Services) -> None:
    alice = ctx()
    stored = add(services, alice, "Rebuildable fact about the cache TTL")
    # The record goes, but the index keeps a stale entry (as after a failed index delete).
    item = services.records.get(f"MEM|{alice.scope_key('user')}", f"MEM#{stored.memory_id}")
    assert item is not None
    from mnemo.ports import Delete

    services.records.write([Delete(item.pk, item.sk)])
    assert services.index.count(NAMESPACE) == 1
    assert search(services, alice, "cache TTL", threshold=0.0).results == []


def test_reindex_rebuilds_the_vector_index_from_records(services: Services) -> None:
    alice = ctx()
    ids = {add(services, alice, f"Fact number {i} about subsystem {i * 7}").memory_id for i in range(5)}
    services.index.clear(NAMESPACE)
    assert search(services, alice, "subsystem", threshold=0.0).results == []
    assert services.memory.reindex() == 5
    assert {r.memory_id for r in search(services, alice, "subsystem fact", threshold=0.0).results} == ids


def test_pages_follow_each_other_with_a_cursor(services: Services) -> None:
    alice = ctx()
    ids = {add(services, alice, f"Deploy note {i}: shard {i} moved to rack {i * 3}").memory_id for i in range(7)}
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = search(services, alice, "deploy note shard rack", limit=3, threshold=0.0, cursor=cursor)
        seen += [r.memory_id for r in page.results]
        assert page.total_count == 7
        if not page.has_more:
            assert page.next_cursor is None
            break
        cursor = page.next_cursor
    assert len(seen) == 7
    assert set(seen) == ids


def test_a_cursor_from_another_query_is_refused(services: Services) -> None:
    alice = ctx()
    for i in range(3):
        add(services, alice, f"Cursor fact {i} about caching layer {i}")
    first = search(services, alice, "caching layer", limit=1, threshold=0.0)
    assert first.has_more
    assert first.next_cursor
    with pytest.raises(InvalidInput) as raised:
        search(services, alice, "something else", limit=1, threshold=0.0, cursor=first.next_cursor)
    assert raised.value.details["field"] == "cursor"
    with pytest.raises(InvalidInput):
        search(services, alice, "caching layer", cursor="not-a-cursor")
    with pytest.raises(InvalidInput):  # another user cannot reuse it either
        search(services, ctx(user="bob"), "caching layer", limit=1, threshold=0.0, cursor=first.next_cursor)


def test_a_response_budget_trims_the_page_and_keeps_the_rest_reachable(services: Services) -> None:
    big = ctx().model_copy(update={"response_budget": 4000})
    topics = ["kafka", "postgres", "redis", "nginx", "terraform", "grafana"]
    for i, topic in enumerate(topics):  # distinct enough not to be merged as near-duplicates
        add(services, big, f"Long memory {i} on {topic}: " + " ".join(f"{topic}{n}" for n in range(150)))
    seen: list[str] = []
    cursor = None
    while True:
        page = search(services, big, "long memory", limit=10, threshold=0.0, cursor=cursor)
        assert len(page.model_dump_json(by_alias=True)) <= 4000
        assert page.results, "a page always carries at least one result when one fits"
        seen += [r.memory_id for r in page.results]
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert len(set(seen)) == 6


@pytest.mark.parametrize(
    "metadata",
    [
        {"source": "knowledge_sync"},
        {"source": "admin"},
        {"knowledgePointer": {"sourceId": "adr-042-database-selection"}},
        {"source": "manual", "knowledgePointer": {}},
    ],
)
def test_only_sync_marks_a_memory_as_knowledge(services: Services, metadata: dict[str, Any]) -> None:
    from mnemo.tools.registry import get_tool

    with pytest.raises(InvalidInput) as raised:
        get_tool("memory_add").invoke(services, ctx(), {"content": "New services use MySQL", "metadata": metadata})
    assert raised.value.details["field"] == "metadata"
    stored = get_tool("memory_add").invoke(
        services, ctx(), {"content": "Imported note", "metadata": {"source": "import", "ticket": "OPS-2"}}
    )
    assert stored["success"]

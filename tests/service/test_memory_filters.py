"""Operator filters through the tools (memory_search, memory_list) on the embedded stack: what they find, that the
records decide over a stale index document, documents indexed before operators, paging, and refusals."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ctx
from mnemo.errors import InvalidInput
from mnemo.memory.indexing import NAMESPACE, index_doc
from mnemo.memory.records import partition_of
from mnemo.ports import Put
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx()


def call(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, ALICE, payload)


def found(services: Services, flt: dict[str, Any] | None = None, **fields: Any) -> list[str]:
    answer = call(services, "memory_search", {"query": "release checklist", "threshold": 0, "filter": flt, **fields})
    return sorted(result["content"] for result in answer["results"])


def listed(services: Services, flt: dict[str, Any] | None = None, **fields: Any) -> list[str]:
    answer = call(services, "memory_list", {"filter": flt, **fields})
    return [memory["content"] for memory in answer["memories"]]


@pytest.fixture
def stocked(services: Services) -> Services:
    for content, fields in [
        ("release checklist one", {"tags": ["Release"], "metadata": {"priority": 1, "team": "ops"}}),
        (
            "release checklist two",
            {
                "tags": ["release", "urgent"],
                "metadata": {"priority": 5, "team": "dev"},
                "occurredAt": "2026-02-01T09:00:00Z",
            },
        ),
        (
            "release checklist three",
            {"tags": ["docs"], "metadata": {"priority": 3.5, "owners": ["ann", "bob"], "source": "import"}},
        ),
        ("release checklist four", {"metadata": {"priority": "high", "due": "2026-03-01T00:00:00+02:00"}}),
    ]:
        call(services, "memory_add", {"content": content, **fields})
    return services


@pytest.mark.parametrize(
    ("flt", "want"),
    [
        ({"metadata.priority": {"gte": 3}}, ["release checklist three", "release checklist two"]),
        ({"metadata.priority": {"gt": 1, "lt": 5}}, ["release checklist three"]),
        ({"tags": {"all": ["RELEASE", "urgent"]}}, ["release checklist two"]),
        ({"tags": ["docs", "urgent"]}, ["release checklist three", "release checklist two"]),
        ({"tags": {"exists": False}}, ["release checklist four"]),
        ({"source": "import"}, ["release checklist three"]),
        ({"source": {"ne": "manual"}}, ["release checklist three"]),
        ({"metadata.owners": "bob"}, ["release checklist three"]),  # any element of a list
        ({"metadata.team": {"nin": ["ops", "dev"]}}, ["release checklist four", "release checklist three"]),
        ({"metadata.priority": {"contains": "ig"}}, ["release checklist four"]),
        ({"metadata.due": {"lt": "2026-02-28T23:00:00Z"}}, ["release checklist four"]),  # 22:00Z the day before
        ({"occurredAt": {"gte": "2026-02-01T10:00:00+01:00"}}, ["release checklist two"]),
        ({"occurredAt": {"exists": True}}, ["release checklist two"]),
        (
            {"or": [{"metadata.team": "ops"}, {"and": [{"tags": "docs"}, {"not": {"metadata.priority": {"lt": 3}}}]}]},
            ["release checklist one", "release checklist three"],
        ),
        ({"createdAt": {"lt": "2000-01-01T00:00:00Z"}}, []),
        ({"createdAt": {"gte": "2000-01-01T00:00:00Z"}, "metadata.team": "ops"}, ["release checklist one"]),
    ],
)
def test_operator_filters_on_search_and_list(stocked: Services, flt: dict[str, Any], want: list[str]) -> None:
    assert found(stocked, flt) == want
    assert sorted(listed(stocked, flt)) == want


def test_the_shape_from_before_operators_keeps_its_meaning(stocked: Services) -> None:
    # tags: any of, case-insensitive; metadata: each key equal; filter.tags join the top-level tags.
    assert found(stocked, {"tags": ["URGENT"]}) == ["release checklist two"]
    assert found(stocked, {"tags": ["docs"]}, tags=["urgent"]) == ["release checklist three", "release checklist two"]
    assert found(stocked, {"metadata": {"team": "ops", "priority": 1}}) == ["release checklist one"]
    assert found(stocked, None, metadata={"team": "dev"}) == ["release checklist two"]
    assert found(stocked, {"metadata": {"team": "dev"}}, metadata={"team": "ops"}) == ["release checklist two"]


def test_search_checks_the_record_not_only_the_index_document(stocked: Services) -> None:
    partition = partition_of(ALICE.scope_key("user"))
    item = next(
        item for item in stocked.records.query(partition, "MEM#") if item.data["content"] == "release checklist one"
    )
    # The record moves on (priority 9) while its index document still says priority 1.
    changed = {**item.data, "metadata": {**item.data["metadata"], "priority": 9}}
    stocked.records.write([Put(type(item)(item.pk, item.sk, changed, item.version + 1), expect=item.version)])
    assert found(stocked, {"metadata.priority": 1}) == []
    assert found(stocked, {"metadata.priority": {"gte": 9}}) == []  # the index does not know it yet
    assert listed(stocked, {"metadata.priority": 9}) == ["release checklist one"]  # list reads the records


def test_documents_indexed_before_operators_answer_equality_until_a_reindex(stocked: Services) -> None:
    partition = partition_of(ALICE.scope_key("user"))
    for item in stocked.records.query(partition, "MEM#"):
        doc = index_doc(item.data, [1.0] + [0.0] * (stocked.embedder.dimensions - 1))
        del doc.keywords["attrs"]  # as written before operator filters
        stocked.index.upsert(NAMESPACE, [doc])
    assert found(stocked, {"tags": ["urgent"]}) == ["release checklist two"]
    assert found(stocked, {"metadata": {"team": "ops"}}) == ["release checklist one"]
    assert found(stocked, {"metadata.priority": {"gte": 3}}) == []  # needs the attrs terms: mnemo reindex
    for item in stocked.records.query(partition, "MEM#"):
        stocked.index.upsert(NAMESPACE, [index_doc(item.data, [1.0] + [0.0] * (stocked.embedder.dimensions - 1))])
    assert found(stocked, {"metadata.priority": {"gte": 3}}) == ["release checklist three", "release checklist two"]


def test_a_filtered_listing_pages_on_with_its_cursor(services: Services) -> None:
    for n in range(7):
        call(services, "memory_add", {"content": f"note {n} on the rota", "metadata": {"n": n}})
    flt = {"metadata.n": {"in": [0, 2, 3, 5, 6]}}
    first = call(services, "memory_list", {"filter": flt, "limit": 2})
    assert [m["content"] for m in first["memories"]] == ["note 6 on the rota", "note 5 on the rota"]
    assert first["hasMore"]
    second = call(services, "memory_list", {"filter": flt, "limit": 2, "cursor": first["nextCursor"]})
    assert [m["content"] for m in second["memories"]] == ["note 3 on the rota", "note 2 on the rota"]
    third = call(services, "memory_list", {"filter": flt, "limit": 2, "cursor": second["nextCursor"]})
    assert [m["content"] for m in third["memories"]] == ["note 0 on the rota"]
    assert not third["hasMore"] and third["nextCursor"] is None
    with pytest.raises(InvalidInput) as raised:  # the cursor belongs to this filter's listing
        call(services, "memory_list", {"filter": {"metadata.n": 1}, "limit": 2, "cursor": first["nextCursor"]})
    assert raised.value.details["field"] == "cursor"


@pytest.mark.parametrize("tool", ["memory_search", "memory_list"])
def test_a_malformed_filter_is_invalid_input_naming_its_path(services: Services, tool: str) -> None:
    payload = {"query": "x"} if tool == "memory_search" else {}
    with pytest.raises(InvalidInput) as raised:
        call(services, tool, {**payload, "filter": {"or": [{"tags": "a"}, {"metadata.p": {"gte": "soon"}}]}})
    assert raised.value.details == {"field": "filter.or[1].metadata.p.gte"}

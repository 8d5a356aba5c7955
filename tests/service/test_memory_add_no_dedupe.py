"""memory_add's ``dedupe: false`` on the embedded stack, through the catalog (validation included): the memory is
stored beside an identical or near-identical one of its scope (no DEDUPE history entry, ``deduplicated: false``),
on memory_add, on memory_add_batch (against the scope and against the batch's other items) and on the import's
batch path; the default still keeps one; an idempotency key still makes a retried call store once.
"""

from __future__ import annotations

from typing import Any

import pytest

from helpers import ctx
from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput
from mnemo.memory.batch import add_many
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryAddInput
from mnemo.memory.records import digest, request_hash
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice")
FACT = "The staging database is PostgreSQL 16"


def call(services: Services, tool: str, payload: dict[str, Any], context: RequestContext = ALICE) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def add(services: Services, content: str, **fields: Any) -> dict[str, Any]:
    return call(services, "memory_add", {"content": content, **fields})


def listed(services: Services) -> list[str]:
    """The ids of the user layer's memories, as memory_list shows them."""
    return [memory["memoryId"] for memory in call(services, "memory_list", {"limit": 100})["memories"]]


def events(services: Services, memory_id: str) -> list[str]:
    answer = call(services, "memory_history", {"memoryId": memory_id})
    return [change["event"] for change in answer["changes"]]


def test_identical_content_twice_with_dedupe_false_is_two_memories(services: Services) -> None:
    first = add(services, FACT, dedupe=False)
    second = add(services, FACT, dedupe=False)
    assert first["deduplicated"] is second["deduplicated"] is False
    assert first["memoryId"] != second["memoryId"]
    assert sorted(listed(services)) == sorted([first["memoryId"], second["memoryId"]])
    assert services.index.count(NAMESPACE) == 2
    assert events(services, first["memoryId"]) == events(services, second["memoryId"]) == ["ADD"]
    # A later add with the default repeats what is stored, as ever.
    again = add(services, FACT)
    assert again["deduplicated"] is True and again["memoryId"] in (first["memoryId"], second["memoryId"])
    assert len(listed(services)) == 2


def test_the_default_keeps_one(services: Services) -> None:
    first = add(services, FACT)
    second = add(services, FACT, dedupe=True)
    assert second["deduplicated"] is True and second["memoryId"] == first["memoryId"]
    assert listed(services) == [first["memoryId"]]
    assert events(services, first["memoryId"]) == ["ADD", "DEDUPE"]


def test_near_identical_content_with_dedupe_false_is_found_by_search_beside_the_first(services: Services) -> None:
    """The hashing embedder gives these one vector (cosine 1.0): the default takes the second for the first."""
    first = add(services, FACT)
    assert add(services, FACT + ".")["memoryId"] == first["memoryId"]
    second = add(services, FACT + ".", dedupe=False)
    assert second["deduplicated"] is False and second["memoryId"] != first["memoryId"]
    found = call(services, "memory_search", {"query": "staging database", "threshold": 0.0})
    assert sorted(result["memoryId"] for result in found["results"]) == sorted([first["memoryId"], second["memoryId"]])


def test_dedupe_must_be_a_boolean(services: Services) -> None:
    with pytest.raises(InvalidInput) as raised:
        add(services, FACT, dedupe="no")
    assert raised.value.details["field"] == "dedupe"


def test_an_idempotency_key_still_makes_a_retried_call_store_once(services: Services) -> None:
    first = add(services, FACT, dedupe=False, idempotencyKey="kv-1")
    retry = add(services, FACT, dedupe=False, idempotencyKey="kv-1")
    assert retry == first
    assert listed(services) == [first["memoryId"]]
    assert events(services, first["memoryId"]) == ["ADD"]
    # The same key for the request with the default is another request.
    with pytest.raises(Conflict) as raised:
        add(services, FACT, idempotencyKey="kv-1")
    assert raised.value.details["field"] == "idempotencyKey"


def test_a_default_request_hashes_as_before_the_field_existed() -> None:
    """Stored idempotency records and the keys ``mnemo import`` derives from a request's hash stay valid."""
    request = MemoryAddInput.model_validate({"content": FACT, "tags": ["db"], "idempotencyKey": "k"})
    assert request_hash(request) == digest(request.model_dump_json(exclude={"idempotency_key", "dedupe"}))
    other = MemoryAddInput.model_validate({"content": FACT, "tags": ["db"], "idempotencyKey": "k", "dedupe": False})
    assert request_hash(other) != request_hash(request)


def test_batch_items_with_dedupe_false_are_stored_beside_the_scope_and_each_other(services: Services) -> None:
    existing = add(services, FACT)
    items = [
        {"content": FACT, "dedupe": False},
        {"content": FACT, "dedupe": False},
        {"content": FACT + ".", "dedupe": False},
        {"content": FACT},  # the default: repeats what is stored
    ]
    answer = call(services, "memory_add_batch", {"items": items})
    results = answer["results"]
    assert [result["success"] for result in results] == [True] * 4
    assert [result["deduplicated"] for result in results] == [False, False, False, True]
    new = [result["memoryId"] for result in results[:3]]
    assert len({existing["memoryId"], *new}) == 4
    assert (answer["added"], answer["deduplicated"], answer["failed"]) == (3, 1, 0)
    assert sorted(listed(services)) == sorted([existing["memoryId"], *new])
    # Only the default item left a DEDUPE entry, on the memory it names (the batch's first of that content).
    kept = results[3]["memoryId"]
    assert kept in (existing["memoryId"], new[0])
    assert {memory_id: events(services, memory_id) for memory_id in [existing["memoryId"], *new]} == {
        memory_id: ["ADD", "DEDUPE"] if memory_id == kept else ["ADD"] for memory_id in [existing["memoryId"], *new]
    }


def test_a_resent_keyed_batch_with_dedupe_false_stores_nothing_twice(services: Services) -> None:
    items = [{"content": FACT, "dedupe": False, "idempotencyKey": f"kv-{n}"} for n in range(3)]
    first = call(services, "memory_add_batch", {"items": items})
    again = call(services, "memory_add_batch", {"items": items})
    ids = [result["memoryId"] for result in first["results"]]
    assert len(set(ids)) == 3
    assert [result["memoryId"] for result in again["results"]] == ids
    assert sorted(listed(services)) == sorted(ids)


def test_the_import_batch_path_honours_dedupe_false(services: Services) -> None:
    """``mnemo import``'s batch path (``mnemo.memory.batch``): against the scope and within the call."""
    existing = add(services, FACT)
    bodies: list[dict[str, Any]] = [
        {"content": FACT, "dedupe": False},
        {"content": FACT, "dedupe": False},
        {"content": FACT},
    ]
    outputs = add_many(services.memory, ALICE, [MemoryAddInput.model_validate(body) for body in bodies])
    assert [output.deduplicated for output in outputs] == [False, False, True]
    new = [output.memory_id for output in outputs[:2]]
    assert len({existing["memoryId"], *new}) == 3
    assert sorted(listed(services)) == sorted([existing["memoryId"], *new])

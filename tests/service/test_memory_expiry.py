"""Expiry of memories and turns on the embedded default (docs/lifecycle.md).

``expiresAt`` on memory_add, add_messages and a strategy's ``expiresAfterDays``; reads leave an expired
memory out at once; the sweeper removes it with its index document and keeps its history (ADD, EXPIRE);
near-duplicates only against a memory that lives as long; validation naming the field; export and import.
A test makes an item expire by rewriting its ``expires_at`` into the past (no test waits for a clock).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers import ctx
from mnemo.cli.reindex import sweep_expired
from mnemo.conversations.store import doc_id
from mnemo.errors import InvalidInput
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.records import epoch_of
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", session="s1")


def call(services: Services, name: str, payload: dict[str, Any], context: Any = ALICE) -> dict[str, Any]:
    return get_tool(name).invoke(services, context, payload)


def later(days: float = 30) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def memory_item(services: Services, memory_id: str, context: Any = ALICE) -> Item:
    item = services.records.get(f"MEM|{context.scope_key('user')}", f"MEM#{memory_id}")
    assert item is not None
    return item


def expire(services: Services, item: Item) -> None:
    """Move an item's expires_at into the past, as the passing of time would."""
    services.records.write([Put(Item(item.pk, item.sk, item.data, item.version, expires_at=int(time.time()) - 5))])


def indexed(services: Services, namespace: str, doc: str) -> bool:
    vector = services.embedder.embed(["anything"])[0]
    return doc in {hit.id for hit in services.index.knn(namespace, vector, {}, 1000)}


def search_ids(services: Services, query: str) -> set[str]:
    found = call(services, "memory_search", {"query": query, "threshold": 0})
    return {result["memoryId"] for result in found["results"]}


def events(services: Services, memory_id: str) -> list[str]:
    return [change["event"] for change in call(services, "memory_history", {"memoryId": memory_id})["changes"]]


# ---------------------------------------------------------------- memories
def test_an_expiring_memory_answers_its_expiry_and_stores_it_as_the_ttl(services: Services) -> None:
    when = later(30)
    added = call(services, "memory_add", {"content": "The staging database moves on Friday", "expiresAt": when})
    item = memory_item(services, added["memoryId"])
    assert item.data["expiresAt"] == when
    assert item.expires_at == epoch_of(when)
    (listed,) = call(services, "memory_list", {"layer": "user"})["memories"]
    (found,) = call(services, "memory_search", {"query": "staging database", "threshold": 0})["results"]
    assert listed["expiresAt"] == found["expiresAt"] == when
    forever = call(services, "memory_add", {"content": "Alice prefers tea"})
    assert memory_item(services, forever["memoryId"]).expires_at is None
    assert {m["memoryId"]: m["expiresAt"] for m in call(services, "memory_list", {})["memories"]} == {
        added["memoryId"]: when,
        forever["memoryId"]: None,
    }


def test_an_expired_memory_is_left_out_at_once_and_swept_with_its_history_kept(services: Services) -> None:
    gone = call(services, "memory_add", {"content": "The staging database moves on Friday", "expiresAt": later()})
    kept = call(services, "memory_add", {"content": "The staging database runs Postgres 16"})
    item = memory_item(services, gone["memoryId"])
    expire(services, item)
    # Before storage removes it (DynamoDB takes days), every read already leaves it out.
    assert search_ids(services, "staging database") == {kept["memoryId"]}
    assert [m["memoryId"] for m in call(services, "memory_list", {})["memories"]] == [kept["memoryId"]]
    assert events(services, gone["memoryId"]) == ["ADD"], "the history still answers meanwhile"
    assert indexed(services, NAMESPACE, gone["memoryId"])

    assert sweep_expired(services) == {"memories": 1, "turns": 0, "other": 0}
    assert not indexed(services, NAMESPACE, gone["memoryId"])
    assert indexed(services, NAMESPACE, kept["memoryId"])
    assert list(services.records.expired()) == []
    changes = call(services, "memory_history", {"memoryId": gone["memoryId"]})["changes"]
    assert [change["event"] for change in changes] == ["ADD", "EXPIRE"]
    assert changes[1]["at"] == item.data["expiresAt"] and changes[1]["actor"] is None
    assert sweep_expired(services) == {"memories": 0, "turns": 0, "other": 0}
    assert events(services, gone["memoryId"]) == ["ADD", "EXPIRE"], "a second sweep writes nothing"


def test_the_memory_expiry_handler_writes_expire_once(services: Services) -> None:
    added = call(services, "memory_add", {"content": "Deploys freeze during the audit", "expiresAt": later()})
    item = memory_item(services, added["memoryId"])
    assert services.memory.expiry.on_removed(item) == "expired"
    assert services.memory.expiry.on_removed(item) == "repeat"
    assert events(services, added["memoryId"]).count("EXPIRE") == 1
    assert not indexed(services, NAMESPACE, added["memoryId"])


def test_an_expired_folded_memory_keeps_its_add_entry(services: Services) -> None:
    """A record holding a folded ADD entry (memory_add without expiresAt, then an expiry given by an import of
    its export line) has that entry written out when it expires, as a delete writes it."""
    added = call(services, "memory_add", {"content": "The VPN endpoint changed"})
    item = memory_item(services, added["memoryId"])
    assert "added" in item.data, "its ADD entry is folded in"
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    expires = int(time.time()) - 5
    ended = datetime.fromtimestamp(expires, UTC).isoformat().replace("+00:00", "Z")
    data = {**item.data, "createdAt": hour_ago, "expiresAt": ended}  # added an hour ago, expired since
    services.records.write([Put(Item(item.pk, item.sk, data, item.version, expires_at=expires))])
    assert sweep_expired(services)["memories"] == 1
    assert events(services, added["memoryId"]) == ["ADD", "EXPIRE"]


def test_a_repeat_dedupes_only_against_a_memory_that_lives_as_long(services: Services) -> None:
    content = "The on-call rota changes every Monday"
    forever = call(services, "memory_add", {"content": content})
    again = call(services, "memory_add", {"content": content, "expiresAt": later(5)})
    assert again["deduplicated"] and again["memoryId"] == forever["memoryId"], "a lasting memory stands for it"

    other = "The release train leaves on Thursdays"
    short = call(services, "memory_add", {"content": other, "expiresAt": later(5)})
    longer = call(services, "memory_add", {"content": other, "expiresAt": later(50)})
    assert not longer["deduplicated"], "a memory that expires sooner must not stand for one that lasts longer"
    lasting = call(services, "memory_add", {"content": other})
    assert not lasting["deduplicated"]
    sooner = call(services, "memory_add", {"content": other, "expiresAt": later(1)})
    assert sooner["deduplicated"] and sooner["memoryId"] in {short["memoryId"], longer["memoryId"]}


def test_the_batch_path_carries_expiry_and_dedupes_alike(services: Services) -> None:
    from mnemo.memory.batch import add_many
    from mnemo.memory.models import MemoryAddInput

    when = later(10)
    requests = [
        MemoryAddInput.model_validate({"content": "Quarterly report due in March", "expiresAt": when}),
        MemoryAddInput.model_validate({"content": "Quarterly report due in March"}),
    ]
    first, second = add_many(services.memory, ALICE, requests)
    assert not second.deduplicated, "the first expires: it cannot stand for a memory that never does"
    assert memory_item(services, first.memory_id).expires_at == epoch_of(when)
    assert memory_item(services, second.memory_id).expires_at is None


@pytest.mark.parametrize(
    ("when", "says"),
    [("2020-01-01T00:00:00Z", "in the future"), (None, "at most 3650 days")],
)
def test_an_expiry_in_the_past_or_too_far_ahead_is_invalid_input_naming_the_field(
    services: Services, when: str | None, says: str
) -> None:
    value = when or later(3651)
    with pytest.raises(InvalidInput) as refused:
        call(services, "memory_add", {"content": "x", "expiresAt": value})
    assert refused.value.details["field"] == "expiresAt" and says in refused.value.message
    with pytest.raises(InvalidInput) as turns:
        call(services, "add_messages", {"messages": [{"role": "user", "content": "hi"}], "expiresAt": value})
    assert turns.value.details["field"] == "expiresAt"
    assert call(services, "memory_list", {})["memories"] == []


def test_memory_add_batch_items_carry_expiry_and_a_bad_one_is_named(services: Services) -> None:
    when = later(4)
    items = [{"content": "Visitor badge for Tuesday", "expiresAt": when}, {"content": "Visitor badge for Tuesday"}]
    answer = call(services, "memory_add_batch", {"items": items})
    first, second = answer["results"]
    assert not second["deduplicated"], "an earlier item that expires cannot stand for one that never does"
    assert memory_item(services, first["memoryId"]).expires_at == epoch_of(when)
    with pytest.raises(InvalidInput) as refused:
        call(services, "memory_add_batch", {"items": [{"content": "x"}, {"content": "y", "expiresAt": later(-1)}]})
    assert refused.value.details["field"] == "items.1.expiresAt"


# ------------------------------------------------------------------- turns
def test_expiring_turns_are_hidden_then_swept_with_their_index_documents(services: Services) -> None:
    when = later(2)
    payload = {"messages": [{"role": "user", "content": "My flight lands at 9", "id": "t1"}], "expiresAt": when}
    assert call(services, "add_messages", payload)["stored"] == 1
    call(services, "add_messages", {"messages": [{"role": "user", "content": "My seat is 14C", "id": "t2"}]})
    scope = ALICE.scope_key("user")
    items = services.records.query(f"CONV|{scope}")
    turn = {item.sk: item for item in items}
    record, entry = turn["MSG#t1"], next(item for item in items if item.sk.startswith("TS#") and "t1" in item.sk)
    assert record.data["expiresAt"] == when and record.expires_at == entry.expires_at == epoch_of(when)
    assert turn["MSG#t2"].expires_at is None
    assert indexed(services, "conversations", doc_id(scope, "t1"))

    expire(services, record)
    expire(services, entry)
    found = call(services, "retrieve_conversation", {"explanation": "t", "query": "flight", "message_id": "t1"})
    assert found["data"]["conversations"] == []
    recalled = call(services, "memory_search", {"query": "flight lands", "threshold": 0, "includeTurns": True})
    assert "t1" not in {result["memoryId"] for result in recalled["results"]}

    assert sweep_expired(services) == {"memories": 0, "turns": 1, "other": 0}
    assert list(services.records.expired()) == [], "the record and its time entry went"
    assert not indexed(services, "conversations", doc_id(scope, "t1"))
    assert indexed(services, "conversations", doc_id(scope, "t2"))
    assert [item.sk for item in services.records.query(f"CONV|{scope}", "MSG#")] == ["MSG#t2"]


# -------------------------------------------------------------- extraction
def test_a_strategy_with_expires_after_days_writes_expiring_memories(tmp_path: Path) -> None:
    from scripted_model import ScriptedModel

    def script(tool: str, request: dict, ids: list[str]) -> dict:
        so_far = "Summary so far" in request["messages"][-1]["content"]
        text = "Alice planned a trip to Lisbon, then Porto." if so_far else "Alice planned a trip to Lisbon."
        return {"summary": [{"text": text, "sourceIds": ids}]}

    model = ScriptedModel()
    try:
        model.script = script
        services = Services(
            Settings(
                data_dir=tmp_path,
                embedder="hashing",
                openai_base_url=model.url,
                extraction_strategies=("summary",),
                extraction_config={"summary": {"expiresAfterDays": 7}},
            )
        )
        call(services, "add_messages", {"messages": [{"role": "user", "content": "Planning Lisbon", "id": "m1"}]})
        call(services, "memory_extract", {})
        (summary,) = call(services, "memory_list", {"layer": "session"})["memories"]
        call(services, "add_messages", {"messages": [{"role": "user", "content": "And Porto", "id": "m2"}]})
        second = call(services, "memory_extract", {})
    finally:
        model.close()
    assert second["run"]["strategies"][0]["candidates"][0]["decision"] == "superseded"
    lives = datetime.fromisoformat(summary["expiresAt"]) - datetime.fromisoformat(summary["createdAt"])
    assert timedelta(days=7) - timedelta(minutes=1) < lives <= timedelta(days=7)
    partition = f"MEM|{ALICE.scope_key('session')}"
    item = services.records.get(partition, f"MEM#{summary['memoryId']}")
    assert item is not None and item.data["supersededBy"], "rewritten when superseded..."
    assert item.expires_at == epoch_of(summary["expiresAt"]), "...with its expiry kept"
    newer = services.records.get(partition, f"MEM#{item.data['supersededBy']}")
    assert newer is not None and newer.expires_at is not None and newer.expires_at >= item.expires_at


def test_a_lasting_extracted_fact_is_not_kept_on_a_memory_that_expires_sooner(tmp_path: Path) -> None:
    from scripted_model import ScriptedModel

    fact = "Alice is allergic to peanuts."

    def script(tool: str, request: dict, ids: list[str]) -> dict:
        return {"facts": [{"text": fact, "subject": "Alice", "sourceIds": ids}]}

    model = ScriptedModel()
    try:
        model.script = script
        services = Services(
            Settings(data_dir=tmp_path, embedder="hashing", openai_base_url=model.url, extraction_strategies=("facts",))
        )
        soon = call(services, "memory_add", {"content": fact, "expiresAt": later(1)})
        call(
            services,
            "add_messages",
            {"messages": [{"role": "user", "content": "I am allergic to peanuts", "id": "m1"}]},
        )
        run = call(services, "memory_extract", {})
    finally:
        model.close()
    (candidate,) = run["run"]["strategies"][0]["candidates"]
    assert candidate["decision"] == "added", "kept on a memory that expires tomorrow: the fact would vanish with it"
    lasting = [m for m in call(services, "memory_list", {})["memories"] if m["memoryId"] != soon["memoryId"]]
    assert [(m["content"], m["expiresAt"]) for m in lasting] == [(fact, None)]


@pytest.mark.parametrize("days", [0, -1, 3651, "7", True])
def test_expires_after_days_out_of_range_is_refused(tmp_path: Path, days: Any) -> None:
    with pytest.raises(ValueError, match="expiresAfterDays"):
        Settings(data_dir=tmp_path, extraction_config={"summary": {"expiresAfterDays": days}})


# ------------------------------------------------------------- portability
def test_export_and_import_carry_the_expiry(tmp_path: Path, services: Services) -> None:
    from mnemo.portability.memories import read_lines, run_import
    from mnemo.tools.registry import get_tool as tool

    when = later(9)
    line = json.dumps({"content": "Imported reminder about the audit", "expiresAt": when})
    parse = tool("memory_add").parse
    lines = read_lines([line], ALICE, parse_json=json.loads, parse_request=parse)
    assert run_import(services.memory, lines, ALICE, batch=10)["added"] == 1
    (listed,) = call(services, "memory_list", {})["memories"]
    assert listed["expiresAt"] == when
    assert memory_item(services, listed["memoryId"]).expires_at == epoch_of(when)


def test_a_whole_export_and_import_carry_the_expiry(tmp_path: Path, services: Services) -> None:
    from helpers import make_services
    from portability_support import export_to, import_from, records_by_key

    when = later(9)
    added = call(services, "memory_add", {"content": "The audit ends in March", "expiresAt": when})
    turns = {"messages": [{"role": "user", "content": "Audit notes", "id": "a1"}], "expiresAt": when}
    call(services, "add_messages", turns)
    path = export_to(services, tmp_path / "backup.jsonl")
    item = memory_item(services, added["memoryId"])
    exported = records_by_key(path)
    assert exported[(item.pk, item.sk)]["expiresAt"] == epoch_of(when)
    assert exported[(f"CONV|{ALICE.scope_key('user')}", "MSG#a1")]["expiresAt"] == epoch_of(when)

    moved = make_services(tmp_path / "moved")
    import_from(moved, path)
    (listed,) = call(moved, "memory_list", {})["memories"]
    assert listed["expiresAt"] == when and memory_item(moved, added["memoryId"]).expires_at == epoch_of(when)
    record = moved.records.get(f"CONV|{ALICE.scope_key('user')}", "MSG#a1")
    assert record is not None and record.expires_at == epoch_of(when)

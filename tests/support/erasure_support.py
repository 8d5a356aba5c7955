"""Erasing a user: three users with data in every family, and what each of them can read back.

Alice of acme is erased; bob of acme (same tenant, same project) and alice of globex (same user id, another
tenant) must keep everything, byte for byte.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers import ctx
from mnemo.context import RequestContext
from mnemo.errors import MnemoError, ProviderError
from mnemo.portability.erasure import PAGE, RECEIPT_PREFIX, Erasure, is_personal_scope, receipt_partition, user_hash
from mnemo.portability.exporter import export
from mnemo.portability.selection import Selection
from mnemo.ports import Delete, Item, Put, RecordStore
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog
from portability_support import every_tool_example


def person(user: str, tenant: str) -> RequestContext:
    return ctx(user=user, tenant=tenant, agent="a1", session="s1", project="p1", team="t1", org="o1", roles=("writer",))


ALICE = person("alice", "acme")
BOB = person("bob", "acme")
OTHER_ALICE = person("alice", "globex")
#: An admin of acme: erases acme's users only.
ADMIN = ctx(user="root", tenant="acme", roles=("admin",))
#: The identities each person reads with: every layer of theirs, and their personal workspace (no project).
VIEWS = {
    "full": lambda who: who,
    "own": lambda who: ctx(user=who.user, tenant=who.tenant),
    "agent": lambda who: ctx(user=who.user, tenant=who.tenant, agent="a1"),
    "session": lambda who: ctx(user=who.user, tenant=who.tenant, session="s1"),
}


def call(services: Services, context: RequestContext, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    return load_catalog()[tool].invoke(services, context, body)


def populate_person(services: Services, who: RequestContext) -> None:
    """Every tool's example as ``who`` (every family), and more in each personal layer and the personal workspace."""
    every_tool_example(services, who)
    own = VIEWS["own"](who)
    for layer, view in (("user", own), ("agent", VIEWS["agent"](who)), ("session", VIEWS["session"](who))):
        call(services, view, "memory_add", {"content": f"{who.user} keeps this in the {layer} layer", "layer": layer})
    call(services, who, "memory_add", {"content": f"{who.user} told the project about the release", "layer": "project"})
    for text in ("one", "two"):
        call(services, own, "file_write", {"path": "private/diary.md", "content": f"{who.user} diary {text}\n"})
    call(services, own, "file_write", {"path": "private/gone.md", "content": "deleted\n"})
    call(services, own, "file_delete", {"path": "private/gone.md"})
    call(services, own, "file_write", {"path": "mnemo:///blocks/me.md", "content": f"{who.user} likes tea\n"})
    call(services, own, "block_pin", {"path": "mnemo:///blocks/me.md"})
    project_block = f"mnemo://project/blocks/{who.user}.md"
    call(services, who, "file_write", {"path": project_block, "content": f"{who.user} wrote this for the project\n"})
    call(services, who, "block_pin", {"path": project_block})
    call(
        services,
        own,
        "memorize_new_topic",
        {"topic": "travel", "tags": ["trips"], "summary": "Trips.", "content": "Lisbon in May."},
    )
    call(
        services,
        own,
        "add_memory_link",
        {"subject": who.user, "predicate": "lives_in", "object": "Lisbon", "text": f"{who.user} lives in Lisbon."},
    )


def bulk(services: Services, who: RequestContext, memories: int = 300) -> None:
    """Many memories and conversation turns of ``who``'s own (several pages of deletes each); contents are random
    words, so none is a near-repeat of another (each is stored)."""
    own = VIEWS["own"](who)
    for start in range(0, memories, 100):
        items = [
            {"content": " ".join(secrets.token_hex(4) for _ in range(8))}
            for _ in range(start, min(memories, start + 100))
        ]
        assert call(services, own, "memory_add_batch", {"items": items})["added"] == len(items)
    turns = [{"role": "user", "content": f"turn {n} " + secrets.token_hex(8), "id": f"t-{n}"} for n in range(100)]
    call(services, own, "add_messages", {"messages": turns})


def populate(services: Services) -> None:
    for who in (ALICE, BOB, OTHER_ALICE):
        populate_person(services, who)


def _safe(services: Services, context: RequestContext, tool: str, body: dict[str, Any]) -> Any:
    try:
        return call(services, context, tool, body)
    except MnemoError as error:
        return {"error": error.code}


def reads(services: Services, who: RequestContext) -> dict[str, Any]:
    """What every read tool answers ``who`` (each of their views), without the parts that change per call."""
    found: dict[str, Any] = {}
    for name, view in VIEWS.items():
        context = view(who)
        listed = {
            layer: _safe(services, context, "memory_list", {"layer": layer, "limit": 100})
            for layer in ("user", "agent", "session", "project")
        }
        ids = [m["memoryId"] for page in listed.values() if "memories" in page for m in page["memories"]]
        found[name] = {
            "memory_list": listed,
            "memory_search": _safe(
                services, context, "memory_search", {"query": f"{who.user} layer lisbon release", "limit": 50}
            ),
            "memory_history": {i: _safe(services, context, "memory_history", {"memoryId": i}) for i in ids},
            "retrieve_conversation": _safe(
                services,
                context,
                "retrieve_conversation",
                {"query": "weather Paris", "explanation": "x", "max_results": 20},
            ),
            "retrieve_execution": _safe(
                services, context, "retrieve_execution", {"query": "weather", "explanation": "x", "max_results": 20}
            ),
            "list_memories": _safe(services, context, "list_memories", {}),
            "recall_general_memory": _safe(services, context, "recall_general_memory", {}),
            "recall_memory": _safe(services, context, "recall_memory", {"topic": "travel"}),
            "search_memories": _safe(services, context, "search_memories", {"query": "Lisbon deploy roll back"}),
            "file_list": _safe(services, context, "file_list", {"path": "mnemo:///"}),
            "file_list_workspace": _safe(services, context, "file_list", {"path": ""}),
            "file_read": _safe(services, context, "file_read", {"path": "private/diary.md"}),
            "file_read_block": _safe(services, context, "file_read", {"path": "mnemo:///blocks/me.md"}),
            "pinned_context": _safe(services, context, "pinned_context", {}),
            "graph_search": _safe(
                services, context, "graph_search", {"query": "Where does Alice work? lives in Lisbon"}
            ),
            "get_memory_object": _safe(services, context, "get_memory_object", {"name": who.user or "", "depth": 1}),
            "extraction_status": _safe(services, context, "extraction_status", {"runs": 5}),
        }
    return json.loads(json.dumps(found, sort_keys=True, default=str))


#: What changes from one read to the next whatever is stored (times, and scores: BM25 weighs a term by the whole
#: index, so removing anyone's documents moves everyone's scores and order).
VOLATILE = {"asOf", "retrieval_timestamp", "message"}


def comparable(answers: Any, dropped: frozenset[str] = frozenset()) -> Any:
    """``answers`` without volatile fields, lists in a fixed order, and without anything naming a ``dropped`` id
    (the shared memories alice wrote, which her erasure takes from everyone's reads)."""
    if isinstance(answers, dict):
        return {
            key: comparable(value, dropped)
            for key, value in answers.items()
            if key not in VOLATILE and "score" not in key.lower() and key not in dropped
        }
    if isinstance(answers, list):
        kept = [comparable(each, dropped) for each in answers if not any(i in json.dumps(each) for i in dropped)]
        return sorted(kept, key=lambda each: json.dumps(each, sort_keys=True))
    return answers


def exported(services: Services, who: RequestContext, path: Path) -> list[dict[str, Any]]:
    """The records and blobs an export of ``who`` holds (header and end lines left out)."""
    with path.open("w", encoding="utf-8") as out:
        export(services, Selection(tenant=who.tenant, user=who.user), out)
    lines = [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]
    return [line for line in lines if line["type"] in ("record", "blob")]


def stored(services: Services) -> dict[tuple[str, str], Item]:
    """Every record in the store, by key."""
    return {(item.pk, item.sk): item for item in services.records.scan("")}


def index_counts(services: Services) -> dict[str, int]:
    return {
        namespace: services.index.count(namespace)
        for namespace in ("memory", "conversations", "executions", "topics", "blocks", "graph")
    }


def call_or_error(services: Services, context: Any, tool: str, body: dict[str, Any]) -> Any:
    try:
        return call(services, context, tool, body)
    except MnemoError as error:
        return {"error": error.code}


def alices(key: tuple[str, str]) -> bool:
    """Whether a record key belongs to one of acme alice's personal scopes."""
    pk, _ = key
    return is_personal_scope(pk.partition("|")[2], "acme", "alice")


PERSONAL = ("user", "agent", "session")


def nothing_left_for_alice(services: Services, tmp_path: Path) -> None:
    """Alice's export is empty, no record of her scopes is left, and no read tool finds anything of hers (in
    the shared layers, only what others wrote)."""
    assert exported(services, ALICE, tmp_path / "alice-after.jsonl") == []
    leftovers = [key for key in stored(services) if alices(key)]
    assert leftovers == []
    answers = reads(services, ALICE)
    for view, tools in answers.items():
        assert all(not tools["memory_list"][layer].get("memories") for layer in PERSONAL), view
        assert not tools["memory_history"] or view == "full", view
        assert not [hit for hit in tools["memory_search"]["results"] if hit["layer"] in PERSONAL], view
        assert not [hit for hit in tools["memory_search"]["results"] if "alice" in hit["content"]], view
        assert not tools["retrieve_conversation"]["data"]["conversations"], view
        assert not tools["retrieve_execution"]["data"]["executions"], view
        assert not tools["file_list"]["entries"], view
        assert tools["file_read_block"] == {"error": "NOT_FOUND"}, view
        assert not tools["pinned_context"]["blocks"], view
        graph = tools["graph_search"]
        assert not [hit for hit in graph["entities"] + graph["facts"] if hit["layer"] in PERSONAL], view
        assert tools["get_memory_object"] == {"error": "NOT_FOUND"}, view
        status = tools["extraction_status"]
        assert (status["pendingTurns"], status["recentRuns"], status["lastTurnAt"]) == (0, [], None), view
        if view != "full":  # the full view has a project: its topics and workspace are the project's
            assert not tools["list_memories"]["topics"], view
            assert not tools["recall_general_memory"].get("content"), view
            assert tools["recall_memory"] == {"error": "NOT_FOUND"}, view
            assert not tools["search_memories"]["results"], view
            assert tools["file_read"] == {"error": "NOT_FOUND"}, view
            assert not tools["file_list_workspace"]["entries"], view


def erase_alice_and_check(services: Services, tmp_path: Path) -> None:
    """Populate alice, bob and globex's alice; erase acme's alice as acme's admin; check nothing of her is left
    anywhere, the receipt's counts add up, and the others keep everything."""
    populate(services)
    before_alice = exported(services, ALICE, tmp_path / "alice.jsonl")
    assert {line["family"] for line in before_alice} >= {
        "memories",
        "conversations",
        "executions",
        "topics",
        "blocks",
        "pins",
        "workspace",
        "graph",
    }
    others = {
        who.tenant: (exported(services, who, tmp_path / f"{who.tenant}-{who.user}.jsonl"), reads(services, who))
        for who in (BOB, OTHER_ALICE)
    }
    before_records = stored(services)
    before_index = index_counts(services)
    shared_by_alice = [
        key
        for key, item in before_records.items()
        if key[0].startswith("MEM|t=acme|project") and key[1].startswith("MEM#") and item.data["createdBy"] == "alice"
    ]
    assert shared_by_alice
    assert [key for key in before_records if alices(key) and key[0].startswith("LEARN|")]

    # alice also pins bob's project block: its pinner list names her until the erasure takes her off it
    call(services, ALICE, "block_pin", {"path": "mnemo://project/blocks/bob.md"})
    bob_block = ("ASSET|" + BOB.scope_key("project"), "P#blocks/bob.md")
    assert ALICE.scope_key("agent") in services.records.get(*bob_block).data["pinnedBy"]  # type: ignore[union-attr]
    before_records = stored(services)

    receipt = call(services, ADMIN, "erase_user", {"subjectUserId": "alice"})
    assert services.records.get(*bob_block).data["pinnedBy"] == [BOB.scope_key("agent")]  # type: ignore[union-attr]
    for pinned in ("ASSET|" + ALICE.scope_key("project"), "P#blocks/alice.md"), bob_block:
        assert "alice" not in json.dumps(services.records.get(*pinned).data)  # type: ignore[union-attr]

    assert receipt["status"] == "completed"
    assert receipt["tenant"] == "acme"
    assert receipt["userHash"] == user_hash("acme", "alice")
    assert "alice" not in str(receipt)
    counts = receipt["counts"]
    for family in (
        "memories",
        "history",
        "conversations",
        "executions",
        "topics",
        "blocks",
        "pins",
        "files",
        "blobKeys",
        "graphEntities",
        "graphFacts",
        "indexDocuments",
    ):
        assert counts[family] > 0, family
    assert counts["sharedMemories"] == len(shared_by_alice)
    # The counts add up: every record that went is counted once, in one family.
    after_records = stored(services)
    gone = set(before_records) - set(after_records)
    assert all(
        alices(key) or key in shared_by_alice or key[0].startswith(("MEM|", "INDEX-", "LEARNQ|")) for key in gone
    )
    receipts = [key for key in set(after_records) - set(before_records)]
    assert receipts == [(receipt_partition("acme"), receipts[0][1])]
    assert receipts[0][0].startswith(RECEIPT_PREFIX)
    assert counts["records"] == len(gone)
    assert counts["records"] == sum(
        value for key, value in counts.items() if key not in ("records", "indexDocuments", "blobKeys")
    )
    # Every index document of an erased record went with it, and no other.
    after_index = index_counts(services)
    assert sum(before_index.values()) - sum(after_index.values()) == counts["indexDocuments"]
    # Every version of alice's personal workspace is gone from the blob store.
    assert services.blobs.list_keys("workspace/acme/user/alice/") == []
    assert services.blobs.versions("workspace/acme/user/alice/private/diary.md") == []
    assert services.blobs.versions("workspace/acme/user/alice/private/gone.md") == []

    nothing_left_for_alice(services, tmp_path)
    for pk, sk in before_records:
        if alices((pk, sk)) and sk.startswith("MEM#"):
            found = call_or_error(services, ALICE, "memory_history", {"memoryId": sk.removeprefix("MEM#")})
            assert found == {"error": "NOT_FOUND"}
    for who in (BOB, OTHER_ALICE):
        lines, answers = others[who.tenant]
        assert exported(services, who, tmp_path / f"{who.tenant}-{who.user}-after.jsonl") == lines, who.tenant
        dropped = frozenset(sk.removeprefix("MEM#") for _, sk in shared_by_alice)
        assert comparable(reads(services, who), dropped) == comparable(answers, dropped), who.tenant
    assert services.blobs.list_keys("workspace/acme/user/bob/")
    assert services.blobs.list_keys("workspace/globex/user/alice/")

    # The receipt is kept and shown again; a second erasure finds nothing more.
    again = call(services, ADMIN, "erase_user", {"subjectUserId": "alice"})
    assert again["erasureId"] != receipt["erasureId"]
    assert again["counts"]["records"] == 0
    kept = services.erasure.receipts("acme", "alice")
    assert [each.erasure_id for each in kept] == [receipt["erasureId"], again["erasureId"]]


class FailingAfter:
    """The record store, failing every write after ``deletes`` record deletes went through (a crash mid-erasure)."""

    def __init__(self, records: RecordStore, deletes: int) -> None:
        self._records = records
        self.left = deletes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._records, name)

    def write(self, operations: Sequence[Put | Delete]) -> None:
        deletes = sum(isinstance(op, Delete) for op in operations)
        if deletes and self.left < deletes:
            raise ProviderError("the table went away", {"service": "DynamoDB"})
        self.left -= deletes
        self._records.write(operations)


def interrupt_and_resume(
    reference: Services, interrupted: Services, tmp_path: Path, deletes: int, memories: int = 300
) -> None:
    """Erase alice on ``reference`` in one go, and on ``interrupted`` (the same population, with ``memories``
    more of hers) through a store that fails after ``deletes`` record deletes, then again: it resumes, and its
    counts are the reference's."""
    for services in (reference, interrupted):
        populate_person(services, ALICE)
        bulk(services, ALICE, memories)
        populate_person(services, BOB)
    expected = reference.erasure.erase("acme", "alice")
    assert expected.counts.records > deletes + PAGE  # it fails part-way, with pages left to do

    flaky = Erasure(
        FailingAfter(interrupted.records, deletes), interrupted.index, interrupted.blobs, families=interrupted.families
    )  # type: ignore[arg-type]
    bob_before = exported(interrupted, BOB, tmp_path / "bob.jsonl")
    with pytest.raises(ProviderError):
        flaky.erase("acme", "alice")
    running = interrupted.erasure.receipts("acme", "alice")
    assert [each.status for each in running] == ["running"]
    # Only whole pages were counted: what the store took before it failed, never more.
    assert running[0].counts.records <= deletes
    assert (running[0].counts.records > 0) == (deletes > 0)

    resumed = interrupted.erasure.erase("acme", "alice")
    assert resumed.status == "completed"
    assert resumed.erasure_id == running[0].erasure_id
    assert resumed.runs == 2
    assert resumed.counts == expected.counts
    assert exported(interrupted, ALICE, tmp_path / "alice.jsonl") == []
    assert exported(interrupted, BOB, tmp_path / "bob-after.jsonl") == bob_before
    assert Counter(each.status for each in interrupted.erasure.receipts("acme", "alice")) == {"completed": 1}

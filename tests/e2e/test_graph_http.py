"""The memory graph tools over real HTTP, on both adapter sets: `mnemo serve` on its embedded default
(SQLite and a local index) and `mnemo serve --aws-endpoint` on DynamoDB in a moto server.

The issue's scenario end to end: a link added, read back with its neighbours, invalidated by a
contradicting fact, and searched as things stood before and after the change (asOf, includeInvalid,
knownAt); idempotent repeats, version conflicts, invalidation, the two-step deletion, memory_search's
includeGraph, field-naming error envelopes, and isolation between users and tenants for every graph
tool. Each test takes a tenant of its own, so one server per adapter set serves the whole module.

No model is configured for these servers, so build_memory_from_text answers the PROVIDER_ERROR that
says how to configure one (tests/contract/test_extractors.py drives it with models).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from adapter_servers import Server, ServerOptions
from jsonschema import Draft202012Validator

from helpers import http_request
from mnemo.tools.registry import get_tool, load_catalog
from mnemo.tools.schema import output_schema

ENVELOPE = {"success", "errorCode", "message", "details", "retryable"}
TABLE = "records-graph-e2e"
BUCKET = "mnemo-graph-e2e"
#: Every tool of the graph family, from the catalog.
GRAPH_TOOLS = tuple(name for name, tool in load_catalog().items() if tool.family == "graph")
MISSING_FACT = "fct_" + "0" * 24
MISSING_ENTITY = "ent_" + "0" * 24

ACME = {
    "subject": "Alice",
    "predicate": "works_at",
    "object": "Acme",
    "subjectType": "person",
    "objectType": "organization",
    "text": "Alice works at Acme as a data engineer.",
    "validAt": "2024-03-01T00:00:00Z",
}
GLOBEX = {
    "subject": "Alice",
    "predicate": "works_at",
    "object": "Globex",
    "objectType": "organization",
    "text": "Alice works at Globex as a staff engineer.",
    "validAt": "2025-07-01T00:00:00Z",
    "exclusive": True,
}
BERLIN = {"subject": "Acme", "predicate": "Located In", "object": "Berlin", "objectType": "place"}
BEFORE = "2025-01-01T00:00:00Z"


# ------------------------------------------------------------------ servers ---
@pytest.fixture(scope="module")
def server_options() -> ServerOptions:
    """The servers of tests/e2e/conftest.py's ``server`` fixture, on this module's table and bucket."""
    return ServerOptions(TABLE, BUCKET)


# -------------------------------------------------------------------- calls ---
def who(tenant: str, user: str = "alice", **ids: str) -> dict[str, str]:
    return {"tenant": tenant, "user": user, "roles": "writer"} | ids


def call(url: str, tool: str, body: dict[str, Any], identity: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """One tool call; a 200 must match the tool's output schema, anything else be exactly the envelope."""
    headers = {"Content-Type": "application/json"}
    headers |= {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    status, answer = http_request(url, "POST", f"/v1/tools/{tool}", body, headers)
    assert isinstance(answer, dict), f"{tool}: HTTP {status} answered {answer!r}"
    if status == 200:
        Draft202012Validator(output_schema(get_tool(tool))).validate(answer)
        assert answer["success"] is True
    else:
        assert set(answer) == ENVELOPE, answer
        assert answer["success"] is False, answer
    return status, answer


def ok(url: str, tool: str, body: dict[str, Any], identity: dict[str, str]) -> dict[str, Any]:
    status, answer = call(url, tool, body, identity)
    assert status == 200, f"{tool} {body}: HTTP {status} {answer}"
    return answer


def fails(
    url: str, tool: str, body: dict[str, Any], identity: dict[str, str], status: int, code: str
) -> dict[str, Any]:
    got, answer = call(url, tool, body, identity)
    assert (got, answer["errorCode"]) == (status, code), f"{tool} {body}: HTTP {got} {answer}"
    return answer


def ids_of(facts: list[dict[str, Any]]) -> set[str]:
    return {fact["factId"] for fact in facts}


def search(url: str, me: dict[str, str], **body: Any) -> dict[str, Any]:
    return ok(url, "graph_search", {"query": "Where does Alice work?", **body}, me)


# ------------------------------------------------------------- the scenario ---
def test_a_link_read_with_neighbours_contradicted_and_searched_before_and_after(server: Server, tenant: str) -> None:
    url, me = server.url, who(tenant)

    # A link: both entities are created, the fact holds from validAt.
    added = ok(url, "add_memory_link", ACME, me)
    assert (added["created"], added["subject"]["created"], added["object"]["created"]) == (True, True, True)
    acme_fact = added["fact"]
    f1, alice_id, acme_id = added["factId"], added["subject"]["entityId"], added["object"]["entityId"]
    assert acme_fact["factId"] == f1
    assert added["invalidated"] == []
    assert (acme_fact["subject"], acme_fact["predicate"], acme_fact["object"]) == ("Alice", "works_at", "Acme")
    assert (acme_fact["validAt"], acme_fact["invalidAt"], acme_fact["expiredAt"]) == (ACME["validAt"], None, None)
    assert (acme_fact["status"], acme_fact["layer"], acme_fact["text"]) == ("valid", "user", ACME["text"])
    assert (added["subject"]["type"], added["object"]["type"]) == ("person", "organization")

    # The same link again stores nothing, even spelled differently (names without case, predicate snake_case).
    for again in (ACME, {**ACME, "subject": "alice", "predicate": "Works At", "object": "ACME "}):
        repeated = ok(url, "add_memory_link", again, me)
        assert (repeated["created"], repeated["factId"], repeated["invalidated"]) == (False, f1, [])
        assert (repeated["subject"]["entityId"], repeated["subject"]["created"]) == (alice_id, False)
        assert (repeated["object"]["entityId"], repeated["object"]["created"]) == (acme_id, False)
    berlin = ok(url, "add_memory_link", BERLIN, me)
    f2, berlin_id = berlin["factId"], berlin["object"]["entityId"]
    assert berlin["subject"] == {"entityId": acme_id, "name": "Acme", "type": "organization", "created": False}
    assert berlin["fact"]["predicate"] == "located_in"
    assert berlin["fact"]["text"] == "Acme located in Berlin"

    # Read back: depth 0, 1 and 2, by name (any case) and by id.
    alone = ok(url, "get_memory_object", {"name": "alice", "depth": 0}, me)
    assert alone["entity"]["entityId"] == alice_id
    assert alone["entity"]["version"] == 1
    assert alone["neighbours"] == []
    assert [f["factId"] for f in alone["facts"]] == [f1]
    one = ok(url, "get_memory_object", {"name": "Alice"}, me)
    assert one["neighbours"] == [
        {"entityId": acme_id, "name": "Acme", "type": "organization", "summary": "", "depth": 1, "via": [f1]}
    ]
    assert [f["factId"] for f in one["facts"]] == [f1]
    assert one["hasMore"] is False
    two = ok(url, "get_memory_object", {"entityId": alice_id, "depth": 2}, me)
    assert [(n["name"], n["depth"], n["via"]) for n in two["neighbours"]] == [("Acme", 1, [f1]), ("Berlin", 2, [f2])]
    assert ids_of(two["facts"]) == {f1, f2}
    from_acme = ok(url, "get_memory_object", {"entityId": acme_id}, me)
    assert {n["entityId"] for n in from_acme["neighbours"]} == {alice_id, berlin_id}

    # A contradicting fact: exclusive ends the old one as of its validAt, and keeps it.
    moved = ok(url, "add_memory_link", GLOBEX, me)
    f3, globex_id = moved["factId"], moved["object"]["entityId"]
    assert moved["created"] is True
    assert moved["invalidated"] == [f1]
    assert moved["subject"]["entityId"] == alice_id
    assert moved["fact"]["status"] == "valid"
    history = ok(url, "get_memory_object", {"name": "Alice", "includeHistory": True, "depth": 0}, me)
    old = {f["factId"]: f for f in history["facts"]}[f1]
    assert old["invalidAt"] == GLOBEX["validAt"]
    assert old["invalidatedBy"] == f3
    assert old["status"] == "invalid"
    assert old["expiredAt"] == moved["fact"]["createdAt"]
    assert old["validAt"] == ACME["validAt"]
    assert [f["factId"] for f in history["facts"]] == [f3, f1], "newest first"
    now = ok(url, "get_memory_object", {"name": "Alice"}, me)
    assert [f["factId"] for f in now["facts"]] == [f3]
    assert [(n["name"], n["via"]) for n in now["neighbours"]] == [("Globex", [f3])]
    then = ok(url, "get_memory_object", {"name": "Alice", "asOf": BEFORE, "depth": 2}, me)
    assert [(f["factId"], f["status"]) for f in then["facts"]] == [(f1, "valid")]
    # Acme located_in Berlin holds from when it was added (now), so at BEFORE the walk stops at Acme.
    assert [n["name"] for n in then["neighbours"]] == ["Acme"]

    # graph_search: what was true before the change, and what is true now.
    before = search(url, me, asOf=BEFORE, kind="facts")
    assert [(f["factId"], f["object"], f["status"]) for f in before["facts"]] == [(f1, "Acme", "valid")]
    assert before["asOf"].startswith("2025-01-01T00:00:00")
    current = search(url, me, kind="facts")
    works = [f for f in current["facts"] if f["predicate"] == "works_at"]
    assert [(f["factId"], f["object"], f["status"]) for f in works] == [(f3, "Globex", "valid")]
    assert current["entities"] == []
    assert current["retrieval"] in ("hybrid", "lexical")
    everything_now = search(url, me, includeInvalid=True, threshold=0)
    assert {f["factId"]: f["status"] for f in everything_now["facts"]} == {f1: "invalid", f2: "valid", f3: "valid"}
    assert {e["entityId"] for e in everything_now["entities"]} == {alice_id, acme_id, berlin_id, globex_id}
    everything_before = search(url, me, includeInvalid=True, threshold=0, asOf=BEFORE)
    assert {f["factId"]: f["status"] for f in everything_before["facts"]} == {
        f1: "valid",
        f2: "future",
        f3: "future",
    }
    only_valid_before = search(url, me, threshold=0, asOf=BEFORE)
    assert ids_of(only_valid_before["facts"]) == {f1}
    people = search(url, me, kind="entities", types=["person"], threshold=0)
    assert [e["entityId"] for e in people["entities"]] == [alice_id]
    assert people["facts"] == []

    # knownAt: as Mnemo knew things when it learned of Acme, Alice still worked there and Globex was unknown.
    learned_acme, learned_globex = acme_fact["createdAt"], moved["fact"]["createdAt"]
    assert learned_acme < berlin["fact"]["createdAt"] < learned_globex
    known_then = search(url, me, knownAt=learned_acme, threshold=0)
    assert [(f["factId"], f["status"]) for f in known_then["facts"]] == [(f1, "valid")]
    assert {e["entityId"] for e in known_then["entities"]} == {alice_id, acme_id}
    known_later = search(url, me, knownAt=learned_globex, threshold=0, includeInvalid=True)
    assert {f["factId"]: f["status"] for f in known_later["facts"]} == {f1: "invalid", f2: "valid", f3: "valid"}

    # memory_search with includeGraph carries the graph context beside the memories.
    ok(url, "memory_add", {"content": "Alice prefers Python for data pipelines."}, me)
    plain = ok(url, "memory_search", {"query": "Alice", "threshold": 0}, me)
    assert plain.get("graph") is None
    assert plain["results"]
    with_graph = ok(url, "memory_search", {"query": "Alice", "threshold": 0, "includeGraph": True}, me)
    assert [r["content"] for r in with_graph["results"]] == [r["content"] for r in plain["results"]]
    graph = with_graph["graph"]
    assert "Alice" in graph["entities"]
    shown = {f["factId"]: f for f in graph["facts"]}
    assert f3 in shown, graph
    assert f1 not in shown, graph  # current facts only
    assert (shown[f3]["object"], shown[f3]["status"]) == ("Globex", "valid")


def test_update_with_a_stale_version_is_a_409_naming_the_field(server: Server, tenant: str) -> None:
    url, me = server.url, who(tenant)
    ok(url, "add_memory_link", ACME, me)
    moved = ok(url, "add_memory_link", GLOBEX, me)
    alice = ok(url, "get_memory_object", {"name": "Alice", "depth": 0}, me)["entity"]
    assert alice["version"] == 1

    updated = ok(
        url,
        "update_memory_object",
        {"name": "Alice", "summary": "Data engineer.", "aliases": ["Alice Smith"], "expectedVersion": 1},
        me,
    )["entity"]
    assert (updated["version"], updated["summary"], updated["aliases"]) == (2, "Data engineer.", ["Alice Smith"])
    assert updated["entityId"] == alice["entityId"]
    assert updated["createdAt"] == alice["createdAt"]

    stale = fails(
        url,
        "update_memory_object",
        {"name": "Alice", "summary": "Lost update", "expectedVersion": 1},
        me,
        409,
        "CONFLICT",
    )
    assert stale["details"]["field"] == "expectedVersion"
    assert stale["details"]["currentVersion"] == 2
    by_alias = ok(url, "get_memory_object", {"name": "alice smith", "depth": 0}, me)["entity"]
    assert (by_alias["entityId"], by_alias["summary"], by_alias["version"]) == (alice["entityId"], "Data engineer.", 2)

    # A rename keeps the old name as an alias; facts show the new name; the old name still finds it.
    renamed = ok(url, "update_memory_object", {"name": "Globex", "newName": "Globex Corp"}, me)["entity"]
    assert renamed["name"] == "Globex Corp"
    assert renamed["aliases"] == ["Globex"]
    assert ok(url, "get_memory_object", {"name": "globex", "depth": 0}, me)["entity"]["name"] == "Globex Corp"
    fact = ok(url, "get_memory_object", {"name": "Alice", "depth": 0}, me)["facts"][0]
    assert (fact["factId"], fact["object"]) == (moved["factId"], "Globex Corp")
    # A name that belongs to another entity is a CONFLICT naming newName and that entity.
    taken = fails(url, "update_memory_object", {"name": "Acme", "newName": "Globex"}, me, 409, "CONFLICT")
    assert taken["details"]["field"] == "newName"
    assert taken["details"]["entityId"] == renamed["entityId"]
    taken = fails(url, "update_memory_object", {"name": "Acme", "aliases": ["Alice Smith"]}, me, 409, "CONFLICT")
    assert taken["details"]["field"] == "aliases"
    assert taken["details"]["entityId"] == alice["entityId"]
    assert ok(url, "get_memory_object", {"name": "Acme", "depth": 0}, me)["entity"]["version"] == 1
    fails(url, "update_memory_object", {"name": "Nobody", "summary": "x"}, me, 404, "NOT_FOUND")


def test_invalidate_keeps_the_fact_in_the_history(server: Server, tenant: str) -> None:
    url, me = server.url, who(tenant)
    added = ok(url, "add_memory_link", ACME, me)
    f1 = added["factId"]

    early = fails(
        url, "invalidate_memory_link", {"factId": f1, "invalidAt": "2024-01-01T00:00:00Z"}, me, 400, "INVALID_INPUT"
    )
    assert early["details"]["field"] == "invalidAt"
    ended = ok(url, "invalidate_memory_link", {"factId": f1, "reason": "Alice left Acme."}, me)
    fact = ended["fact"]
    assert ended["alreadyInvalid"] is False
    assert fact["status"] == "invalid"
    assert fact["reason"] == "Alice left Acme."
    assert fact["invalidAt"] is not None
    assert fact["invalidAt"] == fact["expiredAt"]
    again = ok(url, "invalidate_memory_link", {"factId": f1}, me)
    assert again["alreadyInvalid"] is True
    assert again["fact"]["invalidAt"] == fact["invalidAt"]

    assert ok(url, "get_memory_object", {"name": "Alice"}, me)["facts"] == []
    kept = ok(url, "get_memory_object", {"name": "Alice", "includeHistory": True}, me)["facts"]
    assert [(f["factId"], f["status"], f["reason"]) for f in kept] == [(f1, "invalid", "Alice left Acme.")]
    assert search(url, me, threshold=0)["facts"] == []
    assert ids_of(search(url, me, threshold=0, asOf=BEFORE)["facts"]) == {f1}
    # The link is open again: adding the fact anew creates a new one.
    anew = ok(url, "add_memory_link", {**ACME, "validAt": "2026-01-01T00:00:00Z"}, me)
    assert anew["created"] is True
    assert anew["factId"] != f1
    fails(url, "invalidate_memory_link", {"factId": MISSING_FACT}, me, 404, "NOT_FOUND")


def test_invalidates_by_id_and_history_that_ended_before_a_later_fact(server: Server, tenant: str) -> None:
    url, me = server.url, who(tenant)
    first = ok(
        url,
        "add_memory_link",
        {"subject": "checkout", "predicate": "uses_database", "object": "MySQL", "validAt": "2023-01-01T00:00:00Z"},
        me,
    )
    second = ok(
        url,
        "add_memory_link",
        {
            "subject": "checkout",
            "predicate": "uses_database",
            "object": "PostgreSQL",
            "validAt": "2024-06-01T00:00:00Z",
            "invalidates": [first["factId"]],
        },
        me,
    )
    assert second["invalidated"] == [first["factId"]]
    # An older fact learned late: it began before the current one, so it is stored as history ending then.
    late = ok(
        url,
        "add_memory_link",
        {
            "subject": "checkout",
            "predicate": "uses_database",
            "object": "SQLite",
            "validAt": "2022-01-01T00:00:00Z",
            "exclusive": True,
        },
        me,
    )
    assert late["created"] is True
    assert late["fact"]["invalidAt"] is not None
    facts = ok(url, "get_memory_object", {"name": "checkout", "includeHistory": True, "depth": 0}, me)["facts"]
    status = {f["object"]: f["status"] for f in facts}
    assert status == {"PostgreSQL": "valid", "MySQL": "invalid", "SQLite": "invalid"}
    current = ok(url, "get_memory_object", {"name": "checkout", "depth": 0}, me)["facts"]
    assert [f["object"] for f in current] == ["PostgreSQL"]
    same_time = fails(
        url,
        "add_memory_link",
        {
            "subject": "checkout",
            "predicate": "uses_database",
            "object": "Oracle",
            "validAt": "2024-06-01T00:00:00Z",
            "exclusive": True,
        },
        me,
        400,
        "INVALID_INPUT",
    )
    assert same_time["details"]["field"] == "validAt"


def test_delete_previews_then_needs_the_token_and_a_wrong_token_is_a_conflict(server: Server, tenant: str) -> None:
    url, me = server.url, who(tenant)
    f1 = ok(url, "add_memory_link", ACME, me)["factId"]
    f2 = ok(url, "add_memory_link", BERLIN, me)["factId"]
    f3 = ok(url, "add_memory_link", GLOBEX, me)["factId"]

    preview = ok(url, "delete_memory_object", {"name": "Acme"}, me)
    assert (preview["deleted"], preview["factsAffected"], preview["entity"]["name"]) == (False, 2, "Acme")
    assert sorted(preview["neighboursAffected"]) == ["Alice", "Berlin"]
    token = preview["confirmationToken"]
    assert token
    assert "confirmationToken" in preview["message"]
    # Nothing went: the preview deletes nothing.
    assert ok(url, "get_memory_object", {"name": "Acme", "includeHistory": True}, me)["entity"]["version"] == 1

    wrong = fails(
        url, "delete_memory_object", {"name": "Acme", "confirmationToken": "del_" + "0" * 32}, me, 409, "CONFLICT"
    )
    assert wrong["details"]["field"] == "confirmationToken"
    # The token of another object does not delete this one.
    other = ok(url, "delete_memory_object", {"name": "Berlin"}, me)["confirmationToken"]
    fails(url, "delete_memory_object", {"name": "Acme", "confirmationToken": other}, me, 409, "CONFLICT")
    # A change after the preview makes its token stale.
    ok(url, "update_memory_object", {"name": "Acme", "summary": "A company."}, me)
    stale = fails(url, "delete_memory_object", {"name": "Acme", "confirmationToken": token}, me, 409, "CONFLICT")
    assert stale["details"]["field"] == "confirmationToken"
    assert ok(url, "get_memory_object", {"name": "Acme", "depth": 0}, me)["entity"]["summary"] == "A company."

    token = ok(url, "delete_memory_object", {"name": "Acme"}, me)["confirmationToken"]
    gone = ok(url, "delete_memory_object", {"name": "Acme", "confirmationToken": token}, me)
    assert (gone["deleted"], gone["factsAffected"]) == (True, 2)
    fails(url, "get_memory_object", {"name": "Acme"}, me, 404, "NOT_FOUND")
    history = ok(url, "get_memory_object", {"name": "Alice", "includeHistory": True}, me)
    assert ids_of(history["facts"]) == {f3}
    assert [n["name"] for n in history["neighbours"]] == ["Globex"]
    berlin = ok(url, "get_memory_object", {"name": "Berlin", "includeHistory": True}, me)
    assert berlin["facts"] == []
    assert berlin["neighbours"] == []
    found = search(url, me, threshold=0, includeInvalid=True)
    assert ids_of(found["facts"]) == {f3}
    assert "Acme" not in {e["name"] for e in found["entities"]}
    fails(url, "invalidate_memory_link", {"factId": f1}, me, 404, "NOT_FOUND")
    fails(url, "delete_memory_object", {"factId": f2}, me, 404, "NOT_FOUND")
    # The name is free again: a new Acme is a new entity.
    assert ok(url, "add_memory_link", ACME, me)["object"]["created"] is True

    # One fact: preview, wrong token, confirm.
    fact_preview = ok(url, "delete_memory_object", {"factId": f3}, me)
    assert (fact_preview["deleted"], fact_preview["factsAffected"], fact_preview["fact"]["factId"]) == (False, 1, f3)
    fails(url, "delete_memory_object", {"factId": f3, "confirmationToken": "del_x"}, me, 409, "CONFLICT")
    done = ok(url, "delete_memory_object", {"factId": f3, "confirmationToken": fact_preview["confirmationToken"]}, me)
    assert done["deleted"] is True
    assert ok(url, "get_memory_object", {"name": "Globex", "includeHistory": True}, me)["facts"] == []
    fails(url, "delete_memory_object", {"entityId": MISSING_ENTITY}, me, 404, "NOT_FOUND")


# ----------------------------------------------------------------- bad input ---
BAD_INPUT: list[tuple[str, dict[str, Any], str]] = [
    ("add_memory_link", {"subject": "Alice", "object": "Acme"}, "predicate"),
    ("add_memory_link", {"predicate": "works_at", "object": "Acme"}, "subject"),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at"}, "object"),
    ("add_memory_link", {"subject": "  ", "predicate": "works_at", "object": "Acme"}, "subject"),
    ("add_memory_link", {"subject": "A" * 201, "predicate": "works_at", "object": "Acme"}, "subject"),
    ("add_memory_link", {"subject": "Alice", "predicate": "p" * 101, "object": "Acme"}, "predicate"),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "text": " "}, "text"),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "validAt": "soon"}, "validAt"),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "layer": "x"}, "layer"),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "layer": "project"}, "layer"),
    (
        "add_memory_link",
        {"subject": "Alice", "predicate": "works_at", "object": "Acme", "invalidates": ["x"]},
        "invalidates.0",
    ),
    ("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme", "colour": "red"}, "colour"),
    ("get_memory_object", {"name": "Alice", "depth": 4}, "depth"),
    ("get_memory_object", {"entityId": "ent_nothex"}, "entityId"),
    ("get_memory_object", {"name": "Alice", "limit": 0}, "limit"),
    ("get_memory_object", {"name": "Alice", "asOf": "yesterday"}, "asOf"),
    ("get_memory_object", {"name": "Alice", "layer": "team"}, "layer"),
    ("update_memory_object", {"name": "Alice", "aliases": [f"a{n}" for n in range(21)]}, "aliases"),
    ("update_memory_object", {"name": "Alice", "summary": "s", "expectedVersion": 0}, "expectedVersion"),
    ("graph_search", {}, "query"),
    ("graph_search", {"query": "   "}, "query"),
    ("graph_search", {"query": "q" * 2001}, "query"),
    ("graph_search", {"query": "Alice", "limit": 51}, "limit"),
    ("graph_search", {"query": "Alice", "limit": 0}, "limit"),
    ("graph_search", {"query": "Alice", "kind": "nodes"}, "kind"),
    ("graph_search", {"query": "Alice", "layers": ["nope"]}, "layers.0"),
    ("graph_search", {"query": "Alice", "threshold": 1.5}, "threshold"),
    ("graph_search", {"query": "Alice", "knownAt": "then"}, "knownAt"),
    ("invalidate_memory_link", {"factId": "nope"}, "factId"),
    ("invalidate_memory_link", {}, "factId"),
    ("invalidate_memory_link", {"factId": MISSING_FACT, "reason": " "}, "reason"),
    ("delete_memory_object", {"factId": "fct_short"}, "factId"),
    ("delete_memory_object", {"name": "Alice", "confirmationToken": "x" * 65}, "confirmationToken"),
    ("build_memory_from_text", {}, "content"),
    ("build_memory_from_text", {"content": "  "}, "content"),
    ("build_memory_from_text", {"content": "x" * 48_001}, "content"),
    ("build_memory_from_text", {"content": "Alice works at Acme.", "layer": "org"}, "layer"),
]


@pytest.mark.parametrize(
    ("tool", "body", "field"), BAD_INPUT, ids=[f"{t}-{f}-{i}" for i, (t, _, f) in enumerate(BAD_INPUT)]
)
def test_bad_input_is_a_400_envelope_naming_the_field(
    server: Server, tenant: str, tool: str, body: dict[str, Any], field: str
) -> None:
    answer = fails(server.url, tool, body, who(tenant), 400, "INVALID_INPUT")
    assert answer["details"]["field"] == field, answer
    assert answer["retryable"] is False, answer
    assert answer["message"].startswith(field.split(".")[0]), answer["message"]


SELECTOR_MISTAKES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("get_memory_object", {}, ("entityId", "name")),
    ("get_memory_object", {"name": "Alice", "entityId": MISSING_ENTITY}, ("entityId", "name")),
    ("update_memory_object", {"name": "Alice"}, ("newName", "type", "summary", "aliases")),
    ("delete_memory_object", {}, ("entityId", "name", "factId")),
    ("delete_memory_object", {"name": "Alice", "factId": MISSING_FACT}, ("entityId", "name", "factId")),
]


@pytest.mark.parametrize(("tool", "body", "fields"), SELECTOR_MISTAKES)
def test_a_selector_mistake_says_which_fields_to_give(
    server: Server, tenant: str, tool: str, body: dict[str, Any], fields: tuple[str, ...]
) -> None:
    answer = fails(server.url, tool, body, who(tenant), 400, "INVALID_INPUT")
    words = set(re.findall(r"[A-Za-z]+", answer["message"]))
    assert set(fields) <= words, answer["message"]


def test_add_memory_link_with_invalid_at_before_valid_at_names_invalid_at(server: Server, tenant: str) -> None:
    body = {**ACME, "invalidAt": "2024-01-01T00:00:00Z"}
    answer = fails(server.url, "add_memory_link", body, who(tenant), 400, "INVALID_INPUT")
    assert answer["details"]["field"] == "invalidAt", answer


def test_shared_layers_need_the_writer_role_and_missing_facts_are_not_found(server: Server, tenant: str) -> None:
    url = server.url
    writer = who(tenant, project="checkout")
    reader = {**who(tenant, "bob", project="checkout"), "roles": "reader"}
    link = {"subject": "checkout", "predicate": "uses", "object": "PostgreSQL", "layer": "project"}
    added = ok(url, "add_memory_link", link, writer)
    assert added["fact"]["layer"] == "project"
    # A teammate reads the project's graph, and cannot change it without the writer role.
    seen = ok(url, "get_memory_object", {"name": "checkout"}, reader)
    assert [f["factId"] for f in seen["facts"]] == [added["factId"]]
    assert ids_of(ok(url, "graph_search", {"query": "checkout PostgreSQL", "threshold": 0}, reader)["facts"]) == {
        added["factId"]
    }
    for tool, body in [
        ("add_memory_link", {**link, "object": "MySQL"}),
        ("update_memory_object", {"name": "checkout", "summary": "x"}),
        ("invalidate_memory_link", {"factId": added["factId"]}),
        ("delete_memory_object", {"name": "checkout"}),
        ("delete_memory_object", {"factId": added["factId"]}),
        ("build_memory_from_text", {"content": "checkout uses Redis.", "layer": "project"}),
    ]:
        denied = fails(url, tool, body, reader, 403, "UNAUTHORIZED")
        assert denied["details"]["requiredRole"] == "writer", denied
    missing = fails(url, "add_memory_link", {**ACME, "invalidates": [MISSING_FACT]}, writer, 404, "NOT_FOUND")
    assert missing["details"]["field"] == "invalidates"
    assert ok(url, "get_memory_object", {"name": "checkout"}, writer)["entity"]["version"] == 1


def test_build_memory_from_text_without_a_model_says_how_to_configure_one(server: Server, tenant: str) -> None:
    me = who(tenant)
    answer = fails(server.url, "build_memory_from_text", {"content": "Alice works at Acme."}, me, 502, "PROVIDER_ERROR")
    assert answer["retryable"] is False, answer
    assert "MNEMO_OPENAI_BASE_URL" in answer["message"], answer
    assert "MNEMO_EXTRACTOR" in answer["message"], answer
    assert answer["details"]["configured"] is False
    assert search(server.url, me, threshold=0)["entities"] == []


# ----------------------------------------------------------------- isolation ---
def test_other_users_and_tenants_cannot_reach_alices_graph(server: Server, tenant: str) -> None:
    url = server.url
    alice = who(tenant)
    first = ok(url, "add_memory_link", ACME, alice)
    fact_id, alice_id, acme_id = first["factId"], first["subject"]["entityId"], first["object"]["entityId"]
    fact_token = ok(url, "delete_memory_object", {"factId": fact_id}, alice)["confirmationToken"]
    secret = "sec-graph-0042"
    ok(url, "update_memory_object", {"name": "Alice", "summary": f"Holds {secret}."}, alice)
    entity_token = ok(url, "delete_memory_object", {"entityId": alice_id}, alice)["confirmationToken"]

    intruders = [
        who(tenant, "bob"),  # another user of the same tenant
        who(tenant, "bob", agent="coder", session="s1"),
        who(tenant + "-other"),  # the same user id in another tenant
        who("globex"),
        who(tenant + ".eu", "alice", agent="coder"),
    ]
    by_id_and_name: list[tuple[str, dict[str, Any]]] = [
        ("get_memory_object", {"name": "Alice"}),
        ("get_memory_object", {"name": "Alice", "layer": "user"}),
        ("get_memory_object", {"entityId": alice_id}),
        ("get_memory_object", {"entityId": acme_id, "includeHistory": True}),
        ("update_memory_object", {"name": "Alice", "summary": "stolen"}),
        ("update_memory_object", {"entityId": alice_id, "summary": "stolen", "expectedVersion": 2}),
        ("invalidate_memory_link", {"factId": fact_id, "reason": "stolen"}),
        ("delete_memory_object", {"name": "Alice"}),
        ("delete_memory_object", {"entityId": alice_id}),
        ("delete_memory_object", {"entityId": alice_id, "confirmationToken": entity_token}),
        ("delete_memory_object", {"name": "Alice", "confirmationToken": entity_token}),
        ("delete_memory_object", {"factId": fact_id}),
        ("delete_memory_object", {"factId": fact_id, "confirmationToken": fact_token}),
        ("add_memory_link", {**GLOBEX, "exclusive": False, "invalidates": [fact_id]}),
    ]
    for identity in intruders:
        for tool, body in by_id_and_name:
            answer = fails(url, tool, body, identity, 404, "NOT_FOUND")
            assert secret not in json.dumps(answer), f"LEAK: {tool} as {identity}: {answer}"
        for body in (
            {"query": f"Where does Alice work? {secret}", "threshold": 0, "includeInvalid": True},
            {"query": "Alice Acme", "threshold": 0, "asOf": BEFORE, "includeInvalid": True},
            {"query": "Alice", "threshold": 0, "knownAt": first["fact"]["createdAt"]},
        ):
            found = ok(url, "graph_search", body, identity)
            assert found["entities"] == [], f"LEAK: graph_search as {identity}: {found}"
            assert found["facts"] == [], f"LEAK: graph_search as {identity}: {found}"
        context = ok(url, "memory_search", {"query": "Alice Acme", "threshold": 0, "includeGraph": True}, identity)
        assert context["graph"] == {"entities": [], "facts": []}, f"LEAK: memory_search as {identity}: {context}"

    # Their own Alice is a different entity; it neither sees nor changes hers.
    bob = intruders[0]
    own = ok(url, "add_memory_link", {**ACME, "exclusive": True}, bob)
    assert own["created"] is True
    assert own["subject"]["created"] is True
    assert own["subject"]["entityId"] != alice_id
    assert own["factId"] != fact_id
    theirs = ok(url, "add_memory_link", {**GLOBEX}, bob)
    assert theirs["invalidated"] == [own["factId"]]
    assert ids_of(
        ok(url, "graph_search", {"query": "Alice", "threshold": 0, "includeInvalid": True}, bob)["facts"]
    ) == {
        own["factId"],
        theirs["factId"],
    }

    # Alice's graph is as she left it.
    mine = ok(url, "get_memory_object", {"name": "Alice"}, alice)
    assert (mine["entity"]["version"], mine["entity"]["summary"]) == (2, f"Holds {secret}.")
    assert [(f["factId"], f["status"], f["invalidAt"]) for f in mine["facts"]] == [(fact_id, "valid", None)]
    assert [n["entityId"] for n in mine["neighbours"]] == [acme_id]
    assert ids_of(search(url, alice, threshold=0, includeInvalid=True)["facts"]) == {fact_id}
    # Her preview tokens still work for her: nobody else's call changed anything.
    assert ok(url, "delete_memory_object", {"entityId": alice_id, "confirmationToken": entity_token}, alice)["deleted"]


@pytest.mark.parametrize(
    "spliced",
    [
        {"user": "bob|user|u=alice"},
        {"tenant": "TENANT|user|u=alice", "user": "bob"},
        {"user": "bob", "agent": "coder|user|u=alice"},
    ],
)
def test_identity_headers_cannot_splice_into_another_scope(
    server: Server, tenant: str, spliced: dict[str, str]
) -> None:
    url, alice = server.url, who(tenant)
    fact_id = ok(url, "add_memory_link", ACME, alice)["factId"]
    identity = {**alice, **{key: value.replace("TENANT", tenant) for key, value in spliced.items()}}
    bodies: dict[str, dict[str, Any]] = {
        "add_memory_link": {**GLOBEX, "invalidates": [fact_id]},
        "get_memory_object": {"name": "Alice"},
        "update_memory_object": {"name": "Alice", "summary": "x"},
        "graph_search": {"query": "Alice", "threshold": 0},
        "invalidate_memory_link": {"factId": fact_id},
        "delete_memory_object": {"factId": fact_id},
        "build_memory_from_text": {"content": "Alice works at Globex."},
    }
    assert set(bodies) == set(GRAPH_TOOLS), "a spliced identity is tried on every graph tool"
    for tool, body in bodies.items():
        status, answer = call(url, tool, body, identity)
        assert status in (400, 401, 403), f"{tool} as {identity}: HTTP {status} {answer}"
        assert "Acme" not in json.dumps(answer)
    assert ok(url, "get_memory_object", {"name": "Alice"}, alice)["facts"][0]["status"] == "valid"


# ----------------------------------------------------------------- on AWS ---
@pytest.mark.parametrize("server", ["moto"], indirect=True)  # what it looks at exists on the AWS adapters only
def test_on_aws_the_graph_is_dynamodb_items_of_the_callers_scope(server: Server, tenant: str) -> None:
    assert server.moto is not None
    url, me = server.url, who(tenant)
    added = ok(url, "add_memory_link", ACME, me)
    items = server.moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    mine = [i for i in items if i["pk"]["S"] == f"GRAPH|t={tenant}|user|u=alice"]
    sks = {i["sk"]["S"] for i in mine}
    fact_id, subject, obj = added["factId"], added["subject"]["entityId"], added["object"]["entityId"]
    assert {f"FACT#{fact_id}", f"ENT#{subject}", f"ENT#{obj}", f"LINK#{subject}#works_at#{obj}"} <= sks, sks
    assert sum(sk.startswith("EDGE#") for sk in sks) == 2
    assert sum(sk.startswith("NAME#") for sk in sks) == 2
    assert not [
        i
        for i in items
        if tenant in i["pk"]["S"]
        and i["pk"]["S"] not in {m["pk"]["S"] for m in mine}
        and i["pk"]["S"].startswith("GRAPH|")
    ]

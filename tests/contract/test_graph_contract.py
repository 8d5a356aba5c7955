"""The memory graph's tools, one suite over both adapter sets.

``embedded`` is the default stack (SQLite records, the local vector index);
``dynamodb`` keeps its records in a table built from template.yaml on a serial
moto server (the local vector index and the hashing embedder stand in for
OpenSearch and Titan). On DynamoDB the store's ``scan`` is refused on every
request path: only the test's own bookkeeping and ``reindex`` (maintenance)
may scan.

After each write the vector index (namespace ``graph``) must hold exactly the
live entities and facts, with no outbox marker left waiting.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, make_services
from mnemo.context import RequestContext
from mnemo.errors import MnemoError, ProviderError
from mnemo.graph.service import NAMESPACE
from mnemo.graph.store import PARTITION
from mnemo.ports import Item
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

ALICE = ctx(tenant="acme")
SCOPE = ALICE.scope_key("user")
PK = PARTITION + SCOPE
_tables = itertools.count()


class Stack:
    """A Services on one adapter set, with the test's own access to its raw records and index."""

    def __init__(self, kind: str, services: Services, data_dir: Path) -> None:
        self.kind = kind
        self.services = services
        self.data_dir = data_dir
        self.scans_allowed = False
        self.refused_scans = 0

    @contextmanager
    def scanning(self) -> Iterator[None]:
        """The test's bookkeeping (or maintenance) may scan; requests may not."""
        before, self.scans_allowed = self.scans_allowed, True
        try:
            yield
        finally:
            self.scans_allowed = before

    def call(self, tool: str, payload: dict[str, Any], context: RequestContext = ALICE) -> dict[str, Any]:
        return get_tool(tool).invoke(self.services, context, payload)

    def error(self, tool: str, payload: dict[str, Any], context: RequestContext = ALICE) -> MnemoError:
        with pytest.raises(MnemoError) as raised:
            self.call(tool, payload, context)
        return raised.value

    def raw(self, pk: str = PK) -> dict[str, Item]:
        return {item.sk: item for item in self.services.records.query(pk, "", limit=100_000)}

    def live_ids(self) -> set[str]:
        """Every live entity and fact in the records, all scopes."""
        with self.scanning():
            items = list(self.services.records.scan(PARTITION))
        return {
            item.sk.split("#", 1)[1]
            for item in items
            if item.sk.startswith("FACT#") or (item.sk.startswith("ENT#") and not item.data.get("deleting"))
        }

    def index_ids(self) -> set[str]:
        with sqlite3.connect(self.data_dir / "index.sqlite3") as conn:
            rows = conn.execute("SELECT id FROM vectors WHERE namespace = ?", (NAMESPACE,)).fetchall()
        return {row[0] for row in rows}

    def index_text(self, doc_id: str) -> str:
        with sqlite3.connect(self.data_dir / "index.sqlite3") as conn:
            row = conn.execute(
                "SELECT text FROM vectors WHERE namespace = ? AND id = ?", (NAMESPACE, doc_id)
            ).fetchone()
        return str(row[0]) if row else ""

    def pending(self) -> list[dict[str, Any]]:
        return [marker for marker in self.services.outbox.pending() if marker["family"] == NAMESPACE]

    def assert_index_in_line(self) -> None:
        assert self.pending() == []
        assert self.index_ids() == self.live_ids()


@pytest.fixture(params=["embedded", "dynamodb"])
def stack(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    table = None
    if request.param == "embedded":
        services = make_services(tmp_path)
    else:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
            monkeypatch.setenv(name, value)
        server = shared_moto_server()
        table = f"graph-contract-{next(_tables)}"
        create_records_table(server.client("dynamodb"), table, stream=False)
        services = Services(dynamodb_settings(server, table, tmp_path))
    built = Stack(request.param, services, tmp_path)
    if table is not None:
        records = services.records
        scan = records.scan

        def guarded_scan(*args: Any, **kwargs: Any) -> Any:
            if not built.scans_allowed:
                built.refused_scans += 1
                raise AssertionError("a request scanned the DynamoDB table")
            return scan(*args, **kwargs)

        monkeypatch.setattr(records, "scan", guarded_scan)
    set_services(services)
    try:
        yield built
        assert built.refused_scans == 0
    finally:
        set_services(None)
        if table is not None:
            shared_moto_server().client("dynamodb").delete_table(TableName=table)


def link(stack: Stack, subject: str, predicate: str, obj: str, **fields: Any) -> dict[str, Any]:
    return stack.call("add_memory_link", {"subject": subject, "predicate": predicate, "object": obj, **fields})


def get(stack: Stack, **fields: Any) -> dict[str, Any]:
    return stack.call("get_memory_object", fields)


def fact_ids(answer: dict[str, Any]) -> list[str]:
    return [fact["factId"] for fact in answer["facts"]]


def search(stack: Stack, query: str, **fields: Any) -> dict[str, Any]:
    return stack.call("graph_search", {"query": query, "threshold": 0.0, "limit": 50, **fields})


def kinds(raw: dict[str, Item]) -> dict[str, int]:
    counted: dict[str, int] = {}
    for sk in raw:
        counted[sk.split("#", 1)[0]] = counted.get(sk.split("#", 1)[0], 0) + 1
    return counted


def assert_no_orphans(stack: Stack, pk: str = PK) -> None:
    """Every EDGE#, LINK# and NAME# record points at a live entity or fact, and every fact has both edges."""
    raw = stack.raw(pk)
    entities = {sk[4:] for sk, item in raw.items() if sk.startswith("ENT#") and not item.data.get("deleting")}
    facts = {sk[5:]: item.data for sk, item in raw.items() if sk.startswith("FACT#")}
    for sk, item in raw.items():
        if sk.startswith("EDGE#"):
            entity_id, _, fact_id = sk[5:].split("#")
            assert entity_id in entities, sk
            assert fact_id in facts, sk
        elif sk.startswith("LINK#"):
            assert item.data["factId"] in facts, sk
            assert facts[item.data["factId"]]["invalidAt"] is None, sk
        elif sk.startswith("NAME#"):
            assert item.data["entityId"] in entities, sk
        elif sk.startswith("EXCL#"):
            assert item.data["subjectId"] in entities, sk
    for fact_id, fact in facts.items():
        assert fact["subjectId"] in entities, fact_id
        assert fact["objectId"] in entities, fact_id
        for end in {fact["subjectId"], fact["objectId"]}:
            assert f"EDGE#{end}#{fact['predicate']}#{fact_id}" in raw, fact_id


# ------------------------------------------------------------------ entities and names
def test_entities_are_created_and_resolved_by_name_without_case(stack: Stack) -> None:
    first = link(stack, "Alice", "Works At", "Acme", subjectType="Person", objectType="organization")
    assert first["created"] is True
    assert first["subject"]["created"]
    assert first["object"]["created"]
    assert first["fact"]["predicate"] == "works_at"
    assert first["fact"]["status"] == "valid"
    assert first["subject"]["type"] == "Person"
    second = link(stack, "  ALICE ", "uses", "acme")
    assert second["created"] is True
    assert not second["subject"]["created"]
    assert not second["object"]["created"]
    assert second["subject"]["entityId"] == first["subject"]["entityId"]
    assert second["object"]["entityId"] == first["object"]["entityId"]
    assert second["subject"]["name"] == "Alice"
    entity = get(stack, name="alice", depth=0)["entity"]
    assert entity["entityId"] == first["subject"]["entityId"]
    assert entity["version"] == 1
    assert kinds(stack.raw()) == {"ENT": 2, "NAME": 2, "FACT": 2, "EDGE": 4, "LINK": 2}
    stack.assert_index_in_line()


def test_a_self_loop_has_one_entity_and_one_edge(stack: Stack) -> None:
    added = link(stack, "Service", "depends_on", "service")
    assert added["subject"]["entityId"] == added["object"]["entityId"]
    assert kinds(stack.raw()) == {"ENT": 1, "NAME": 1, "FACT": 1, "EDGE": 1, "LINK": 1}
    assert link(stack, "SERVICE", "depends on", "Service")["created"] is False
    assert_no_orphans(stack)


def test_the_same_open_fact_twice_stores_nothing(stack: Stack) -> None:
    first = link(stack, "Alice", "works_at", "Acme", text="Alice works at Acme.")
    before = stack.raw()
    again = link(stack, "alice", "works-at", "ACME", text="Some other sentence", validAt="2020-01-01T00:00:00Z")
    assert again["created"] is False
    assert again["factId"] == first["factId"]
    assert again["invalidated"] == []
    assert again["fact"]["text"] == "Alice works at Acme."
    assert {sk: item.version for sk, item in stack.raw().items()} == {sk: item.version for sk, item in before.items()}
    stack.assert_index_in_line()


def test_a_historical_fact_is_idempotent_too(stack: Stack) -> None:
    times = {"validAt": "2020-01-01T00:00:00Z", "invalidAt": "2021-01-01T00:00:00Z"}
    first = link(stack, "Alice", "lived_in", "Paris", **times)
    assert first["created"] is True
    assert first["fact"]["status"] == "invalid"
    assert first["fact"]["expiredAt"] is not None
    assert "LINK" not in kinds(stack.raw())  # history holds no LINK
    again = link(stack, "ALICE", "lived_in", "paris", **times)
    assert again["created"] is False
    assert again["factId"] == first["factId"]
    other = link(stack, "Alice", "lived_in", "Paris", validAt="2020-01-01T00:00:00Z", invalidAt="2022-01-01T00:00:00Z")
    assert other["created"] is True
    assert other["factId"] != first["factId"]
    assert kinds(stack.raw())["FACT"] == 2
    stack.assert_index_in_line()


def test_an_end_not_after_the_start_is_refused(stack: Stack) -> None:
    """invalidAt must be after validAt, also when validAt defaults to now."""
    for fields in (
        {"invalidAt": "2020-01-01T00:00:00Z"},
        {"validAt": "2021-01-01T00:00:00Z", "invalidAt": "2020-01-01T00:00:00Z"},
        {"validAt": "2021-01-01T00:00:00Z", "invalidAt": "2021-01-01T00:00:00Z"},
    ):
        body = {"subject": "Alice", "predicate": "lived_in", "object": "Paris", **fields}
        error = stack.error("add_memory_link", body)
        assert error.code == "INVALID_INPUT", fields
    assert stack.error("add_memory_link", {**body, "invalidAt": "2020-01-01T00:00:00Z"}).details["field"] == (
        "invalidAt"
    )
    assert stack.live_ids() == set()


# ------------------------------------------------------------------ contradiction
def test_an_exclusive_fact_ends_the_older_one_and_releases_its_link(stack: Stack) -> None:
    old = link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    new = link(stack, "Alice", "works_at", "Globex", validAt="2025-06-01T00:00:00Z", exclusive=True)
    assert new["created"] is True
    assert new["invalidated"] == [old["factId"]]
    history = {fact["factId"]: fact for fact in get(stack, name="Alice", includeHistory=True)["facts"]}
    ended = history[old["factId"]]
    assert ended["invalidAt"] == "2025-06-01T00:00:00Z"
    assert ended["status"] == "invalid"
    assert ended["expiredAt"] is not None
    assert ended["invalidatedBy"] == new["factId"]
    assert history[new["factId"]]["status"] == "valid"
    raw = stack.raw()
    links = {item.data["factId"] for sk, item in raw.items() if sk.startswith("LINK#")}
    assert links == {new["factId"]}
    assert raw["FACT#" + old["factId"]].version == 2
    edges = [item for sk, item in raw.items() if sk.startswith("EDGE#") and sk.endswith(old["factId"])]
    assert len(edges) == 2
    assert all(e.data["invalidAt"] == "2025-06-01T00:00:00.000000Z" and e.version == 2 for e in edges)
    # The old triple holds again later: a new fact, not the ended one.
    back = link(stack, "Alice", "works_at", "Acme", validAt="2026-01-01T00:00:00Z", exclusive=True)
    assert back["created"] is True
    assert back["factId"] != old["factId"]
    assert back["invalidated"] == [new["factId"]]
    assert kinds(stack.raw())["FACT"] == 3
    assert fact_ids(get(stack, name="Alice", asOf="2026-06-01T00:00:00Z")) == [back["factId"]]
    assert_no_orphans(stack)
    stack.assert_index_in_line()


def test_exclusive_leaves_the_same_object_and_other_predicates_alone(stack: Stack) -> None:
    works = link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    lives = link(stack, "Alice", "lives_in", "Paris", validAt="2024-01-01T00:00:00Z")
    other = link(stack, "Bob", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    same = link(stack, "Alice", "works_at", "Acme", validAt="2025-01-01T00:00:00Z", exclusive=True)
    assert same["created"] is False
    assert same["factId"] == works["factId"]
    new = link(stack, "Alice", "works_at", "Globex", validAt="2025-01-01T00:00:00Z", exclusive=True)
    assert new["invalidated"] == [works["factId"]]
    current = set(fact_ids(get(stack, name="Alice", depth=0)))
    assert current == {new["factId"], lives["factId"]}
    assert fact_ids(get(stack, name="Bob", depth=0)) == [other["factId"]]


def test_an_exclusive_fact_at_the_same_instant_is_refused(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    error = stack.error(
        "add_memory_link",
        {
            "subject": "Alice",
            "predicate": "works_at",
            "object": "Globex",
            "validAt": "2024-01-01T00:00:00Z",
            "exclusive": True,
        },
    )
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "validAt"


def test_a_new_fact_older_than_the_current_one_becomes_history(stack: Stack) -> None:
    current = link(stack, "Alice", "works_at", "Globex", validAt="2025-01-01T00:00:00Z")
    older = link(stack, "Alice", "works_at", "Acme", validAt="2023-01-01T00:00:00Z", exclusive=True)
    assert older["created"] is True
    assert older["invalidated"] == []
    assert older["fact"]["invalidAt"] == "2025-01-01T00:00:00Z"
    assert older["fact"]["status"] == "invalid"
    assert fact_ids(get(stack, name="Alice", depth=0)) == [current["factId"]]
    assert fact_ids(get(stack, name="Alice", depth=0, asOf="2024-01-01T00:00:00Z")) == [older["factId"]]
    links = {item.data["factId"] for sk, item in stack.raw().items() if sk.startswith("LINK#")}
    assert links == {current["factId"]}
    # Retrying the same request stores nothing new.
    again = link(stack, "Alice", "works_at", "Acme", validAt="2023-01-01T00:00:00Z", exclusive=True)
    assert again["created"] is False
    assert again["factId"] == older["factId"]
    assert kinds(stack.raw())["FACT"] == 2
    stack.assert_index_in_line()


def test_invalidates_by_id(stack: Stack) -> None:
    old = link(stack, "Alice", "prefers", "Tea", validAt="2024-01-01T00:00:00Z")
    new = link(stack, "Alice", "prefers", "Coffee", validAt="2025-01-01T00:00:00Z", invalidates=[old["factId"]])
    assert new["invalidated"] == [old["factId"]]
    ended = get(stack, name="Alice", includeHistory=True)["facts"]
    assert [(f["factId"], f["status"]) for f in ended] == [(new["factId"], "valid"), (old["factId"], "invalid")]
    assert ended[1]["invalidatedBy"] == new["factId"]
    assert ended[1]["invalidAt"] == "2025-01-01T00:00:00Z"
    # Naming an already-ended fact changes nothing more.
    third = link(stack, "Alice", "prefers", "Water", validAt="2026-01-01T00:00:00Z", invalidates=[old["factId"]])
    assert third["invalidated"] == []
    unknown = "fct_" + "0" * 24
    error = stack.error(
        "add_memory_link", {"subject": "Alice", "predicate": "prefers", "object": "Juice", "invalidates": [unknown]}
    )
    assert error.code == "NOT_FOUND"
    assert error.details["field"] == "invalidates"
    assert error.details["factId"] == unknown
    assert stack.error("get_memory_object", {"name": "Juice"}).code == "NOT_FOUND"  # nothing was written
    assert_no_orphans(stack)
    stack.assert_index_in_line()


def test_invalidates_twenty_facts_in_one_add(stack: Stack) -> None:
    olds = [link(stack, "Hub", "uses", f"Tool {n}", validAt="2024-01-01T00:00:00Z")["factId"] for n in range(20)]
    new = link(stack, "Hub", "uses", "Everything", validAt="2025-01-01T00:00:00Z", invalidates=olds)
    assert sorted(new["invalidated"]) == sorted(olds)
    assert fact_ids(get(stack, name="Hub", depth=0)) == [new["factId"]]
    assert_no_orphans(stack)


def test_exclusive_over_more_open_facts_than_one_write_ends(stack: Stack) -> None:
    """Twenty open facts end in one add; more would not fit one all-or-nothing write (DynamoDB: 100 items)."""
    for n in range(21):
        link(stack, "Hub", "uses", f"Tool {n}", validAt="2024-01-01T00:00:00Z")
    before = {sk: item.version for sk, item in stack.raw().items()}
    body = {"subject": "Hub", "predicate": "uses", "object": "One tool", "validAt": "2025-01-01T00:00:00Z"}
    error = stack.error("add_memory_link", {**body, "exclusive": True})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "exclusive"
    assert error.details["limit"] == 20
    assert {sk: item.version for sk, item in stack.raw().items()} == before  # nothing written
    one = next(f["factId"] for f in get(stack, name="Tool 20")["facts"])
    # Ended before the new fact begins: no longer contradicted (a fact ended later would still overlap it).
    stack.call("invalidate_memory_link", {"factId": one, "invalidAt": "2024-06-01T00:00:00Z"})
    new = stack.call("add_memory_link", {**body, "exclusive": True})
    assert len(new["invalidated"]) == 20
    assert fact_ids(get(stack, name="Hub", depth=0)) == [new["factId"]]
    assert_no_orphans(stack)
    stack.assert_index_in_line()


# ------------------------------------------------------------------ time
def test_status_at_before_at_and_after_the_boundaries(stack: Stack) -> None:
    added = link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    stack.call("invalidate_memory_link", {"factId": added["factId"], "invalidAt": "2025-01-01T00:00:00Z"})

    def status(as_of: str) -> str | None:
        facts = get(stack, name="Alice", asOf=as_of, includeHistory=True)["facts"]
        current = fact_ids(get(stack, name="Alice", asOf=as_of))
        assert (current == [added["factId"]]) is (facts[0]["status"] == "valid")
        return str(facts[0]["status"])

    assert status("2023-12-31T23:59:59Z") == "future"
    assert status("2024-01-01T00:00:00Z") == "valid"
    assert status("2024-06-01T00:00:00Z") == "valid"
    assert status("2024-12-31T23:59:59.999999Z") == "valid"
    assert status("2025-01-01T00:00:00Z") == "invalid"
    assert status("2030-01-01T00:00:00Z") == "invalid"
    found = search(stack, "Alice works at Acme", kind="facts", asOf="2024-06-01T00:00:00Z")["facts"]
    assert [f["factId"] for f in found] == [added["factId"]]
    assert search(stack, "Alice works at Acme", kind="facts")["facts"] == []
    past = search(stack, "Alice works at Acme", kind="facts", includeInvalid=True)["facts"]
    assert [(f["factId"], f["status"]) for f in past] == [(added["factId"], "invalid")]


def test_known_at_hides_facts_learned_later_and_ends_recorded_later(stack: Stack) -> None:
    first = link(stack, "Alice", "works_at", "Acme", validAt="2020-01-01T00:00:00Z")
    known = first["fact"]["createdAt"]
    later = link(stack, "Alice", "lives_in", "Paris", validAt="2019-01-01T00:00:00Z")
    assert later["fact"]["createdAt"] > known
    stack.call("invalidate_memory_link", {"factId": first["factId"], "invalidAt": "2021-01-01T00:00:00Z"})

    def seen(**fields: Any) -> dict[str, str]:
        found = search(stack, "Alice works at Acme lives in Paris", kind="facts", **fields)["facts"]
        return {fact["factId"]: fact["status"] for fact in found}

    assert seen(asOf="2022-01-01T00:00:00Z") == {later["factId"]: "valid"}
    # As Mnemo knew things when the first fact was stored: the second is unknown, the end not yet recorded.
    assert seen(asOf="2022-01-01T00:00:00Z", knownAt=known) == {first["factId"]: "valid"}
    assert seen(asOf="2022-01-01T00:00:00Z", knownAt=known, includeInvalid=True) == {first["factId"]: "valid"}
    assert seen(asOf="2020-06-01T00:00:00Z") == {first["factId"]: "valid", later["factId"]: "valid"}
    assert seen(asOf="2022-01-01T00:00:00Z", includeInvalid=True) == {
        first["factId"]: "invalid",
        later["factId"]: "valid",
    }
    entities = search(stack, "Paris", kind="entities", knownAt=known)["entities"]
    assert "Paris" not in [entity["name"] for entity in entities]


# ------------------------------------------------------------------ get_memory_object
def test_depth_zero_to_three_and_validation(stack: Stack) -> None:
    chain = ["A", "B", "C", "D", "E"]
    facts = [link(stack, s, "next_to", o)["factId"] for s, o in itertools.pairwise(chain)]

    def reach(depth: int) -> dict[str, tuple[int, list[str]]]:
        answer = get(stack, name="a", depth=depth)
        return {n["name"]: (n["depth"], n["via"]) for n in answer["neighbours"]}

    assert reach(0) == {}
    assert reach(1) == {"B": (1, [facts[0]])}
    assert reach(2) == {"B": (1, [facts[0]]), "C": (2, [facts[1]])}
    assert reach(3) == {"B": (1, [facts[0]]), "C": (2, [facts[1]]), "D": (3, [facts[2]])}
    assert fact_ids(get(stack, name="A", depth=0)) == [facts[0]]
    assert set(fact_ids(get(stack, name="A", depth=3))) == set(facts[:3])  # facts past the first hop too
    middle = get(stack, name="C", depth=1)
    assert {n["name"] for n in middle["neighbours"]} == {"B", "D"}
    for depth in (-1, 4, 10**6):
        error = stack.error("get_memory_object", {"name": "A", "depth": depth})
        assert error.code == "INVALID_INPUT"
        assert error.details["field"] == "depth"
    for body in ({}, {"name": "A", "entityId": "ent_" + "0" * 24}):
        assert stack.error("get_memory_object", body).code == "INVALID_INPUT"
    missing = stack.error("get_memory_object", {"name": "Nobody"})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "name"
    missing = stack.error("get_memory_object", {"entityId": "ent_" + "0" * 24})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "entityId"


def test_walks_over_the_facts_valid_at_the_time_asked_about(stack: Stack) -> None:
    kept = link(stack, "A", "knows", "B")
    gone = link(stack, "A", "knows", "C", validAt="2020-01-01T00:00:00Z")
    stack.call("invalidate_memory_link", {"factId": gone["factId"], "invalidAt": "2021-01-01T00:00:00Z"})
    assert [n["name"] for n in get(stack, name="A")["neighbours"]] == ["B"]
    answer = get(stack, name="A", includeHistory=True)  # the history walks over ended facts too
    assert sorted(n["name"] for n in answer["neighbours"]) == ["B", "C"]
    assert set(fact_ids(answer)) == {kept["factId"], gone["factId"]}
    then = get(stack, name="A", asOf="2020-06-01T00:00:00Z")
    assert [n["name"] for n in then["neighbours"]] == ["C"]


def test_include_history_limit_and_has_more(stack: Stack) -> None:
    ids = [link(stack, "Alice", "knows", f"Friend {n}", validAt=f"202{n}-01-01T00:00:00Z")["factId"] for n in range(5)]
    ended = stack.call("invalidate_memory_link", {"factId": ids[0], "invalidAt": "2020-06-01T00:00:00Z"})
    assert ended["fact"]["status"] == "invalid"
    now = get(stack, name="Alice", depth=0)
    assert fact_ids(now) == ids[:0:-1]
    assert now["hasMore"] is False  # newest first
    history = get(stack, name="Alice", depth=0, includeHistory=True)
    assert fact_ids(history) == ids[::-1]
    assert [f["status"] for f in history["facts"]] == ["valid"] * 4 + ["invalid"]
    page = get(stack, name="Alice", depth=0, includeHistory=True, limit=2)
    assert fact_ids(page) == ids[:-3:-1]
    assert page["hasMore"] is True
    future = get(stack, name="Alice", depth=0, includeHistory=True, asOf="2022-06-01T00:00:00Z")
    assert [f["status"] for f in future["facts"]] == ["future", "future", "valid", "valid", "invalid"]
    assert stack.error("get_memory_object", {"name": "Alice", "limit": 0}).details["field"] == "limit"
    assert stack.error("get_memory_object", {"name": "Alice", "limit": 201}).details["field"] == "limit"


# ------------------------------------------------------------------ update_memory_object
def test_rename_keeps_the_old_name_as_an_alias(stack: Stack) -> None:
    added = link(stack, "Alice", "works_at", "Acme")
    entity_id = added["subject"]["entityId"]
    updated = stack.call("update_memory_object", {"name": "alice", "newName": "Alicia", "summary": "Engineer."})
    entity = updated["entity"]
    assert (entity["name"], entity["aliases"], entity["version"]) == ("Alicia", ["Alice"], 2)
    assert entity["summary"] == "Engineer."
    for name in ("ALICE", "alicia"):
        assert get(stack, name=name)["entity"]["entityId"] == entity_id
    assert link(stack, "Alice", "works_at", "Acme")["created"] is False  # the old name still resolves
    # facts name the entity as it is now
    assert get(stack, name="Acme")["facts"][0]["subject"] == "Alicia"
    names = {item.data["name"] for sk, item in stack.raw().items() if sk.startswith("NAME#")}
    assert names == {"Alice", "Alicia", "Acme"}
    # aliases given replace the list: the old name goes
    replaced = stack.call("update_memory_object", {"entityId": entity_id, "aliases": ["Ali"], "expectedVersion": 2})
    assert replaced["entity"]["aliases"] == ["Ali"]
    assert replaced["entity"]["version"] == 3
    names = {item.data["name"] for sk, item in stack.raw().items() if sk.startswith("NAME#")}
    assert names == {"Ali", "Alicia", "Acme"}
    assert stack.error("get_memory_object", {"name": "Alice"}).code == "NOT_FOUND"
    assert "Ali" in stack.index_text(entity_id)
    assert "Engineer." in stack.index_text(entity_id)
    found = search(stack, "Alicia Ali Engineer", kind="entities")["entities"]
    assert found
    assert found[0]["entityId"] == entity_id
    assert_no_orphans(stack)
    stack.assert_index_in_line()


def test_names_and_aliases_are_unique_in_a_layer(stack: Stack) -> None:
    alice = link(stack, "Alice", "knows", "Bob")
    bob_id, alice_id = alice["object"]["entityId"], alice["subject"]["entityId"]
    stack.call("update_memory_object", {"name": "Alice", "aliases": ["Al"]})
    clash = stack.error("update_memory_object", {"name": "Bob", "newName": "ALICE"})
    assert clash.code == "CONFLICT"
    assert clash.details == {"field": "newName", "entityId": alice_id}
    clash = stack.error("update_memory_object", {"name": "Bob", "aliases": ["Robert", "al"]})
    assert clash.code == "CONFLICT"
    assert clash.details == {"field": "aliases", "entityId": alice_id}
    bob = get(stack, entityId=bob_id, depth=0)["entity"]
    assert (bob["name"], bob["aliases"], bob["version"]) == ("Bob", [], 1)
    too_many = stack.error("update_memory_object", {"name": "Bob", "aliases": [f"b{n}" for n in range(21)]})
    assert too_many.code == "INVALID_INPUT"
    assert too_many.details["field"] == "aliases"
    nothing = stack.error("update_memory_object", {"name": "Bob"})
    assert nothing.code == "INVALID_INPUT"
    # An alias of one's own name is dropped, not a conflict.
    own = stack.call("update_memory_object", {"name": "Bob", "aliases": ["BOB", "Bobby"]})
    assert own["entity"]["aliases"] == ["Bobby"]
    assert_no_orphans(stack)


def test_a_stale_expected_version_is_a_conflict(stack: Stack) -> None:
    link(stack, "Alice", "knows", "Bob")
    stack.call("update_memory_object", {"name": "Alice", "summary": "One.", "expectedVersion": 1})
    stale = stack.error("update_memory_object", {"name": "Alice", "summary": "Two.", "expectedVersion": 1})
    assert stale.code == "CONFLICT"
    assert stale.details["field"] == "expectedVersion"
    assert stale.details["currentVersion"] == 2
    assert get(stack, name="Alice")["entity"]["summary"] == "One."


# ------------------------------------------------------------------ invalidate_memory_link
def test_invalidate_keeps_the_fact_and_is_safe_to_retry(stack: Stack) -> None:
    added = link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    ended = stack.call(
        "invalidate_memory_link", {"factId": added["factId"], "invalidAt": "2025-06-30T00:00:00Z", "reason": "Left."}
    )
    assert ended["alreadyInvalid"] is False
    assert ended["fact"]["status"] == "invalid"
    assert ended["fact"]["reason"] == "Left."
    assert ended["fact"]["expiredAt"] is not None
    assert "LINK" not in kinds(stack.raw())
    again = stack.call("invalidate_memory_link", {"factId": added["factId"], "invalidAt": "2025-07-01T00:00:00Z"})
    assert again["alreadyInvalid"] is True
    assert again["fact"]["invalidAt"] == "2025-06-30T00:00:00Z"
    assert stack.raw()["FACT#" + added["factId"]].version == 2
    # An earlier end than the recorded one moves it back.
    earlier = stack.call("invalidate_memory_link", {"factId": added["factId"], "invalidAt": "2025-01-01T00:00:00Z"})
    assert earlier["alreadyInvalid"] is False
    assert earlier["fact"]["invalidAt"] == "2025-01-01T00:00:00Z"
    for when in ("2024-01-01T00:00:00Z", "2023-01-01T00:00:00Z"):
        error = stack.error("invalidate_memory_link", {"factId": added["factId"], "invalidAt": when})
        assert error.code == "INVALID_INPUT"
        assert error.details["field"] == "invalidAt"
    missing = stack.error("invalidate_memory_link", {"factId": "fct_" + "1" * 24})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "factId"
    assert stack.error("invalidate_memory_link", {"factId": "fct_x"}).details["field"] == "factId"
    # Re-adding the triple now makes a new open fact.
    back = link(stack, "Alice", "works_at", "Acme")
    assert back["created"] is True
    assert back["factId"] != added["factId"]
    assert_no_orphans(stack)
    stack.assert_index_in_line()


# ------------------------------------------------------------------ delete_memory_object
def test_delete_an_entity_after_a_confirmed_preview(stack: Stack) -> None:
    a = link(stack, "Alice", "works_at", "Acme", exclusive=True)
    link(stack, "Bob", "knows", "Alice")
    link(stack, "Alice", "likes", "Alice")
    kept = link(stack, "Bob", "works_at", "Acme")
    stack.call("update_memory_object", {"name": "Alice", "aliases": ["Ally"]})
    alice_id = a["subject"]["entityId"]
    preview = stack.call("delete_memory_object", {"name": "ally"})
    assert preview["deleted"] is False
    assert preview["factsAffected"] == 3
    assert set(preview["neighboursAffected"]) == {"Acme", "Bob"}
    token = preview["confirmationToken"]
    assert token.startswith("del_")
    assert stack.call("delete_memory_object", {"name": "Alice"})["confirmationToken"] == token  # stable
    wrong = stack.error("delete_memory_object", {"name": "Alice", "confirmationToken": "del_" + "0" * 32})
    assert wrong.code == "CONFLICT"
    assert wrong.details["field"] == "confirmationToken"
    assert get(stack, entityId=alice_id)["entity"]["name"] == "Alice"
    done = stack.call("delete_memory_object", {"entityId": alice_id, "confirmationToken": token})
    assert done["deleted"] is True
    assert done["factsAffected"] == 3
    for name in ("Alice", "ally"):
        assert stack.error("get_memory_object", {"name": name}).code == "NOT_FOUND"
    assert stack.error("get_memory_object", {"entityId": alice_id}).code == "NOT_FOUND"
    raw = stack.raw()
    assert not [sk for sk in raw if alice_id in sk]
    assert not [sk for sk, item in raw.items() if item.data.get("entityId") == alice_id]
    assert kinds(raw) == {"ENT": 2, "NAME": 2, "FACT": 1, "EDGE": 2, "LINK": 1}
    assert fact_ids(get(stack, name="Bob", depth=0)) == [kept["factId"]]
    assert all(e["entityId"] != alice_id for e in search(stack, "Alice", kind="entities")["entities"])
    # The name is free again: a new entity, no fact of the old one.
    again = link(stack, "Alice", "works_at", "Acme")
    assert again["created"] is True
    assert again["subject"]["created"] is True
    assert again["subject"]["entityId"] != alice_id
    assert_no_orphans(stack)
    stack.assert_index_in_line()


def test_a_change_since_the_preview_refuses_the_delete(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme")
    token = stack.call("delete_memory_object", {"name": "Alice"})["confirmationToken"]
    link(stack, "Alice", "lives_in", "Paris")
    changed = stack.error("delete_memory_object", {"name": "Alice", "confirmationToken": token})
    assert changed.code == "CONFLICT"
    assert changed.details["field"] == "confirmationToken"
    token = stack.call("delete_memory_object", {"name": "Alice"})["confirmationToken"]
    stack.call("update_memory_object", {"name": "Alice", "summary": "Changed."})
    assert stack.error("delete_memory_object", {"name": "Alice", "confirmationToken": token}).code == "CONFLICT"
    acme = stack.call("delete_memory_object", {"name": "Acme"})["confirmationToken"]
    # Another entity's token does not delete this one.
    assert stack.error("delete_memory_object", {"name": "Alice", "confirmationToken": acme}).code == "CONFLICT"
    assert get(stack, name="Alice")["entity"]["summary"] == "Changed."


def test_delete_one_fact(stack: Stack) -> None:
    gone = link(stack, "Alice", "works_at", "Acme")
    kept = link(stack, "Alice", "lives_in", "Paris")
    preview = stack.call("delete_memory_object", {"factId": gone["factId"]})
    assert preview["deleted"] is False
    assert preview["factsAffected"] == 1
    assert preview["fact"]["factId"] == gone["factId"]
    assert preview["neighboursAffected"] == ["Alice", "Acme"]
    wrong = stack.error("delete_memory_object", {"factId": gone["factId"], "confirmationToken": "del_x"})
    assert wrong.code == "CONFLICT"
    other = stack.call("delete_memory_object", {"factId": kept["factId"]})["confirmationToken"]
    assert stack.error("delete_memory_object", {"factId": gone["factId"], "confirmationToken": other}).code == (
        "CONFLICT"
    )
    token = preview["confirmationToken"]
    stack.call("invalidate_memory_link", {"factId": gone["factId"]})
    assert stack.error("delete_memory_object", {"factId": gone["factId"], "confirmationToken": token}).code == (
        "CONFLICT"
    )
    token = stack.call("delete_memory_object", {"factId": gone["factId"]})["confirmationToken"]
    done = stack.call("delete_memory_object", {"factId": gone["factId"], "confirmationToken": token})
    assert done["deleted"] is True
    assert fact_ids(get(stack, name="Alice", includeHistory=True)) == [kept["factId"]]
    assert get(stack, name="Acme")["facts"] == []  # the entities stay
    missing = stack.error("delete_memory_object", {"factId": gone["factId"]})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "factId"
    # With its LINK gone, the triple can be added again.
    assert link(stack, "Alice", "works_at", "Acme")["created"] is True
    assert_no_orphans(stack)
    stack.assert_index_in_line()


def test_delete_selectors_are_exactly_one(stack: Stack) -> None:
    for body in ({}, {"name": "A", "factId": "fct_" + "0" * 24}, {"name": "A", "entityId": "ent_" + "0" * 24}):
        assert stack.error("delete_memory_object", body).code == "INVALID_INPUT"
    assert stack.error("delete_memory_object", {"name": "Nobody"}).code == "NOT_FOUND"
    assert stack.error("delete_memory_object", {"entityId": "ent_" + "0" * 24}).code == "NOT_FOUND"


def test_an_interrupted_delete_is_finished_by_calling_again(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    added = [link(stack, "Hub", "uses", f"Tool {n}") for n in range(45)]
    link(stack, "Other", "uses", "Tool 1")
    hub_id = added[0]["subject"]["entityId"]
    token = stack.call("delete_memory_object", {"name": "Hub"})["confirmationToken"]
    graph = stack.services.graph
    real_write = graph._records.write
    writes = {"n": 0}

    class Crash(Exception):
        pass

    def crashing_write(operations: Any) -> None:
        writes["n"] += 1
        if writes["n"] == 3:  # the tombstone, one batch of facts, then the process dies
            raise Crash
        real_write(operations)

    monkeypatch.setattr(graph._records, "write", crashing_write)
    with pytest.raises(Crash):
        stack.call("delete_memory_object", {"name": "Hub", "confirmationToken": token})
    monkeypatch.setattr(graph._records, "write", real_write)
    # Gone from reads already, though some facts remain.
    assert stack.error("get_memory_object", {"entityId": hub_id}).code == "NOT_FOUND"
    assert stack.error("get_memory_object", {"name": "hub"}).code == "NOT_FOUND"
    assert all(e["entityId"] != hub_id for e in search(stack, "Hub", kind="entities")["entities"])
    assert get(stack, name="Tool 30")["facts"] == []  # a fact whose end is being deleted is not shown
    remaining = [sk for sk in stack.raw() if sk.startswith("FACT#")]
    assert 1 < len(remaining) < 46
    finished = stack.call("delete_memory_object", {"entityId": hub_id})
    assert finished["deleted"] is True
    assert finished["factsAffected"] == len(remaining) - 1
    raw = stack.raw()
    assert not [sk for sk in raw if hub_id in sk]
    assert kinds(raw)["FACT"] == 1
    assert stack.error("delete_memory_object", {"entityId": hub_id}).code == "NOT_FOUND"
    assert_no_orphans(stack)
    stack.services.outbox.drain()
    stack.assert_index_in_line()


def test_a_crash_right_after_the_tombstone(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    added = link(stack, "Alice", "works_at", "Acme")
    alice_id = added["subject"]["entityId"]
    token = stack.call("delete_memory_object", {"name": "Alice"})["confirmationToken"]

    def crash(pk: str, entity_id: str) -> int:
        raise RuntimeError("the process died")

    monkeypatch.setattr(stack.services.graph._deletion, "erase", crash)
    with pytest.raises(RuntimeError):
        stack.call("delete_memory_object", {"name": "Alice", "confirmationToken": token})
    monkeypatch.undo()
    assert stack.raw()["ENT#" + alice_id].data["deleting"] is True
    assert stack.error("get_memory_object", {"name": "Alice"}).code == "NOT_FOUND"
    assert stack.error("delete_memory_object", {"name": "Alice"}).code == "NOT_FOUND"  # its name is gone
    # The name is free meanwhile: a new Alice is another entity.
    fresh = link(stack, "Alice", "lives_in", "Paris")
    assert fresh["subject"]["created"] is True
    assert fresh["subject"]["entityId"] != alice_id
    finished = stack.call("delete_memory_object", {"entityId": alice_id})
    assert finished["deleted"] is True
    assert finished["factsAffected"] == 1
    assert get(stack, name="Alice")["entity"]["entityId"] == fresh["subject"]["entityId"]
    assert not [sk for sk in stack.raw() if alice_id in sk]
    assert_no_orphans(stack)
    stack.services.outbox.drain()
    stack.assert_index_in_line()


# ------------------------------------------------------------------ index
def test_the_index_follows_every_write(stack: Stack) -> None:
    a = link(stack, "Alice", "works_at", "Acme", validAt="2024-01-01T00:00:00Z")
    stack.assert_index_in_line()
    link(stack, "Alice", "works_at", "Globex", validAt="2025-01-01T00:00:00Z", exclusive=True)
    stack.assert_index_in_line()
    stack.call("update_memory_object", {"name": "Globex", "newName": "Globex Corp", "type": "organization"})
    stack.assert_index_in_line()
    stack.call("invalidate_memory_link", {"factId": a["factId"], "invalidAt": "2024-06-01T00:00:00Z"})
    stack.assert_index_in_line()
    token = stack.call("delete_memory_object", {"factId": a["factId"]})["confirmationToken"]
    stack.call("delete_memory_object", {"factId": a["factId"], "confirmationToken": token})
    stack.assert_index_in_line()
    token = stack.call("delete_memory_object", {"name": "Acme"})["confirmationToken"]
    stack.call("delete_memory_object", {"name": "Acme", "confirmationToken": token})
    stack.assert_index_in_line()
    assert len(stack.index_ids()) == 3  # Alice, Globex Corp, and the fact between them


def test_reindex_rebuilds_from_the_records(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme")
    link(stack, "Bob", "knows", "Alice", validAt="2020-01-01T00:00:00Z", invalidAt="2021-01-01T00:00:00Z")
    expected = stack.live_ids()
    stack.services.index.clear(NAMESPACE)
    assert stack.index_ids() == set()
    with stack.scanning():
        assert stack.services.graph.reindex(batch=2) == len(expected)
    stack.assert_index_in_line()
    assert [e["name"] for e in search(stack, "Alice", kind="entities")["entities"]][:1] == ["Alice"]


def test_an_embedder_failure_leaves_markers_a_drain_resolves(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = stack.services.embedder

    def down(texts: Any) -> Any:
        raise ProviderError("embedder down")

    link(stack, "Alice", "works_at", "Acme")
    monkeypatch.setattr(embedder, "embed", down)
    added = link(stack, "Bob", "works_at", "Acme")
    assert added["created"] is True
    stack.call("update_memory_object", {"name": "Alice", "summary": "Data engineer."})
    assert len(stack.pending()) == 3  # the fact, Bob, and Alice's new text
    assert added["factId"] not in stack.index_ids()
    assert added["subject"]["entityId"] not in stack.index_ids()
    monkeypatch.undo()
    report = stack.services.outbox.drain()
    assert report.by_family[NAMESPACE] == 3
    stack.assert_index_in_line()
    assert "Data engineer." in stack.index_text(get(stack, name="Alice")["entity"]["entityId"])


# ------------------------------------------------------------------ search and memory_search
def test_graph_search_filters_kinds_types_and_layers(stack: Stack) -> None:
    writer = ctx(tenant="acme", project="checkout", roles=("writer",))
    link(stack, "PostgreSQL", "used_by", "Checkout API", subjectType="database", objectType="service")
    stack.call(
        "add_memory_link",
        {"subject": "Checkout API", "predicate": "uses", "object": "PostgreSQL", "layer": "project"},
        writer,
    )
    both = stack.call("graph_search", {"query": "PostgreSQL", "threshold": 0.0}, writer)
    assert {e["layer"] for e in both["entities"]} == {"user", "project"}
    assert both["searchedLayers"] == ["user", "project", "company"]
    only = stack.call("graph_search", {"query": "PostgreSQL", "threshold": 0.0, "layers": ["project"]}, writer)
    assert {e["layer"] for e in only["entities"] + only["facts"]} == {"project"}
    typed = search(stack, "PostgreSQL Checkout", kind="entities", types=["Database"])
    assert [e["name"] for e in typed["entities"]] == ["PostgreSQL"]
    assert typed["facts"] == []
    facts = search(stack, "PostgreSQL", kind="facts")
    assert facts["entities"] == []
    assert len(facts["facts"]) == 1
    for body, field in (
        ({"query": " "}, "query"),
        ({"query": "q", "kind": "x"}, "kind"),
        ({"query": "q", "limit": 51}, "limit"),
    ):
        assert stack.error("graph_search", body).details["field"] == field
    reader = ctx(tenant="acme", project="checkout")
    refused = stack.error(
        "add_memory_link", {"subject": "A", "predicate": "p", "object": "B", "layer": "project"}, reader
    )
    assert refused.code == "UNAUTHORIZED"
    missing = stack.error("add_memory_link", {"subject": "A", "predicate": "p", "object": "B", "layer": "project"})
    assert missing.code == "INVALID_INPUT"
    assert missing.details["field"] == "layer"


def test_memory_search_include_graph(stack: Stack) -> None:
    added = link(stack, "Alice", "works_at", "Acme Corporation", text="Alice works at Acme Corporation.")
    stack.call("memory_add", {"content": "Alice prefers short answers."})
    plain = stack.call("memory_search", {"query": "Alice Acme Corporation"})
    assert plain.get("graph") is None
    found = stack.call("memory_search", {"query": "Alice Acme Corporation", "includeGraph": True})
    assert "Alice" in found["graph"]["entities"]
    assert [fact["factId"] for fact in found["graph"]["facts"]] == [added["factId"]]
    other = ctx(tenant="acme", user="bob")
    assert stack.call("memory_search", {"query": "Alice Acme Corporation", "includeGraph": True}, other)["graph"] == {
        "entities": [],
        "facts": [],
    }


def test_extraction_without_a_model_is_a_provider_error(stack: Stack) -> None:
    error = stack.error("build_memory_from_text", {"content": "Alice works at Acme."})
    assert error.code == "PROVIDER_ERROR"
    assert stack.live_ids() == set()


def test_requests_never_scan(stack: Stack) -> None:
    """On DynamoDB the fixture refuses ``scan``; this runs every tool once so a scan anywhere would fail."""
    a = link(stack, "Alice", "works_at", "Acme")
    get(stack, name="Alice", depth=3, includeHistory=True)
    search(stack, "Alice")
    stack.call("update_memory_object", {"name": "Alice", "summary": "s"})
    stack.call("invalidate_memory_link", {"factId": a["factId"]})
    stack.call("memory_search", {"query": "Alice", "includeGraph": True})
    token = stack.call("delete_memory_object", {"name": "Alice"})["confirmationToken"]
    stack.call("delete_memory_object", {"name": "Alice", "confirmationToken": token})
    stack.error("build_memory_from_text", {"content": "x"})
    assert stack.refused_scans == 0


# ------------------------------------------------- exclusive over time (review findings)
def spans(stack: Stack, name: str, **fields: Any) -> list[tuple[str, str, str, str]]:
    """(object, validAt year, invalidAt year or '', status) of an entity's facts, sorted."""
    facts = get(stack, name=name, depth=0, includeHistory=True, **fields)["facts"]
    return sorted((f["object"], f["validAt"][:4], (f["invalidAt"] or "")[:4], f["status"]) for f in facts)


def test_an_exclusive_fact_inserted_into_the_past_splits_the_history(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme", validAt="2019-01-01T00:00:00Z", exclusive=True)
    link(stack, "Alice", "works_at", "Globex", validAt="2024-01-01T00:00:00Z", exclusive=True)
    initech = link(stack, "Alice", "works_at", "Initech", validAt="2021-01-01T00:00:00Z", exclusive=True)
    assert initech["fact"]["invalidAt"] == "2024-01-01T00:00:00Z"
    assert len(initech["invalidated"]) == 1
    assert spans(stack, "Alice", asOf="2022-06-01T00:00:00Z") == [
        ("Acme", "2019", "2021", "invalid"),
        ("Globex", "2024", "", "future"),
        ("Initech", "2021", "2024", "valid"),
    ]
    for year, employer in (("2020", "Acme"), ("2022", "Initech"), ("2025", "Globex")):
        held = get(stack, name="Alice", depth=0, asOf=f"{year}-06-01T00:00:00Z")["facts"]
        assert [fact["object"] for fact in held] == [employer], year
    assert_no_orphans(stack)


def test_a_fact_ending_later_still_counts_as_the_same_fact(stack: Stack) -> None:
    first = link(stack, "Fay", "works_at", "Acme", validAt="2020-01-01T00:00:00Z", exclusive=True)
    link(stack, "Fay", "works_at", "Globex", validAt="2090-01-01T00:00:00Z", exclusive=True)
    again = link(stack, "Fay", "works_at", "Acme")
    assert again["created"] is False
    assert again["factId"] == first["factId"]
    assert [f["object"] for f in get(stack, name="Fay", depth=0, asOf="2091-01-01T00:00:00Z")["facts"]] == ["Globex"]


def test_a_closed_exclusive_fact_does_not_end_one_that_outlives_it(stack: Stack) -> None:
    link(stack, "Gus", "works_at", "Acme", validAt="2019-01-01T00:00:00Z", exclusive=True)
    body = {"validAt": "2020-01-01T00:00:00Z", "invalidAt": "2021-01-01T00:00:00Z", "exclusive": True}
    before = {sk: item.version for sk, item in stack.raw().items()}
    error = stack.error("add_memory_link", {"subject": "Gus", "predicate": "works_at", "object": "Globex", **body})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "exclusive"
    assert {sk: item.version for sk, item in stack.raw().items()} == before
    assert spans(stack, "Gus") == [("Acme", "2019", "", "valid")]


def test_repeating_a_fact_with_exclusive_still_ends_what_it_contradicts(stack: Stack) -> None:
    paris = link(stack, "Bob", "lives_in", "Paris", validAt="2020-01-01T00:00:00Z")
    rome = link(stack, "Bob", "lives_in", "Rome", validAt="2023-01-01T00:00:00Z")
    again = link(stack, "Bob", "lives_in", "Rome", exclusive=True)
    assert again["created"] is False
    assert again["factId"] == rome["factId"]
    assert again["invalidated"] == [paris["factId"]]
    assert [f["object"] for f in get(stack, name="Bob", depth=0)["facts"]] == ["Rome"]
    assert spans(stack, "Bob")[0] == ("Paris", "2020", "2023", "invalid")
    assert_no_orphans(stack)


def test_a_fact_whose_end_is_being_deleted_is_not_found_not_a_crash(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = link(stack, "Alice", "works_at", "Acme")
    token = stack.call("delete_memory_object", {"name": "Acme"})["confirmationToken"]

    def crash(pk: str, entity_id: str) -> tuple[int, bool]:
        raise RuntimeError("the process died")

    monkeypatch.setattr(stack.services.graph._deletion, "erase", crash)
    with pytest.raises(RuntimeError):
        stack.call("delete_memory_object", {"name": "Acme", "confirmationToken": token})
    monkeypatch.undo()
    error = stack.error("invalidate_memory_link", {"factId": added["factId"]})
    assert error.code == "NOT_FOUND"
    assert error.details["field"] == "factId"


def test_deleting_an_entity_with_many_exclusive_predicates_fits_every_write(stack: Stack) -> None:
    """Every write stays within the 100 operations one all-or-nothing write may hold, on both adapter sets."""
    for n in range(105):
        link(stack, "Hub", f"role_{n}", f"Target {n}", exclusive=True)
    token = stack.call("delete_memory_object", {"name": "Hub"})["confirmationToken"]
    done = stack.call("delete_memory_object", {"name": "Hub", "confirmationToken": token})
    assert done["deleted"] is True
    assert done["factsAffected"] == 105
    assert done["hasMore"] is False
    assert not [sk for sk in stack.raw() if sk.startswith(("EXCL#", "LINK#", "FACT#"))]
    assert_no_orphans(stack)


def test_a_large_entity_is_deleted_over_several_calls(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    from mnemo.graph import deletion

    monkeypatch.setattr(deletion, "MAX_BATCHES", 2)  # 40 facts a call
    for n in range(50):
        link(stack, "Hub", "uses", f"Tool {n}")
    entity_id = get(stack, name="Hub", depth=0)["entity"]["entityId"]
    token = stack.call("delete_memory_object", {"name": "Hub"})["confirmationToken"]
    first = stack.call("delete_memory_object", {"name": "Hub", "confirmationToken": token})
    assert first["deleted"] is True
    assert first["hasMore"] is True
    assert first["factsAffected"] == 40
    assert stack.error("get_memory_object", {"entityId": entity_id}).code == "NOT_FOUND"
    rest = stack.call("delete_memory_object", {"entityId": entity_id})
    assert rest["hasMore"] is False
    assert rest["factsAffected"] == 10
    assert not [sk for sk in stack.raw() if entity_id in sk]
    assert_no_orphans(stack)


def test_a_link_racing_the_deletion_of_its_entity_never_links_to_a_deleted_entity(stack: Stack) -> None:
    """An add that resolved an entity just before its deletion began reads again and creates a new entity."""
    link(stack, "Alice", "works_at", "Acme")
    links = stack.services.graph._links
    resolve = links._resolve
    token = stack.call("delete_memory_object", {"name": "Acme"})["confirmationToken"]
    deleted = False

    def resolve_then_delete(*args: Any, **kwargs: Any) -> Any:
        nonlocal deleted
        found = resolve(*args, **kwargs)
        if not deleted and args[3] == "Acme":
            deleted = True
            stack.call("delete_memory_object", {"name": "Acme", "confirmationToken": token})
        return found

    links._resolve = resolve_then_delete  # type: ignore[method-assign]
    try:
        added = link(stack, "Bob", "works_at", "Acme")
    finally:
        del links._resolve
    assert deleted
    assert added["object"]["created"] is True
    assert get(stack, name="Acme", depth=0)["entity"]["entityId"] == added["object"]["entityId"]
    assert_no_orphans(stack)


def test_dates_are_iso_text_not_numbers(stack: Stack) -> None:
    for value in ("2024", 2024, "1700000000"):
        error = stack.error("add_memory_link", {"subject": "A", "predicate": "p", "object": "B", "validAt": value})
        assert error.code == "INVALID_INPUT"
        assert error.details["field"] == "validAt"


def test_memory_search_with_the_graph_and_a_blank_query_answers_nothing_from_the_graph(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme")
    answer = stack.call("memory_search", {"query": "   ", "includeGraph": True})
    assert answer["success"] is True
    assert answer["graph"] is None


def test_with_the_history_neighbours_are_reached_over_ended_facts_too(stack: Stack) -> None:
    link(stack, "Alice", "works_at", "Acme", validAt="2019-01-01T00:00:00Z", exclusive=True)
    link(stack, "Alice", "works_at", "Globex", validAt="2024-01-01T00:00:00Z", exclusive=True)
    link(stack, "Acme", "located_in", "Berlin")
    now = {n["name"]: n["depth"] for n in get(stack, name="Alice", depth=2)["neighbours"]}
    assert now == {"Globex": 1}
    ever = {n["name"]: n["depth"] for n in get(stack, name="Alice", depth=2, includeHistory=True)["neighbours"]}
    assert ever == {"Globex": 1, "Acme": 1, "Berlin": 2}


def test_a_rename_reaches_the_index_text_of_the_entitys_facts(stack: Stack) -> None:
    added = link(stack, "Alice", "works_at", "Acme", text="She joined in spring.")
    stack.call("update_memory_object", {"name": "Alice", "newName": "Zelda Quartermaine"})
    assert stack.pending() == []  # a small entity's facts are re-indexed before the rename answers
    found = search(stack, "Zelda Quartermaine", kind="facts")["facts"]
    assert [fact["factId"] for fact in found][:1] == [added["factId"]]
    with stack.scanning():
        stack.services.graph.reindex()
    assert [fact["factId"] for fact in search(stack, "Zelda Quartermaine", kind="facts")["facts"]][:1] == [
        added["factId"]
    ]
    stack.assert_index_in_line()


def test_a_large_entitys_rename_leaves_the_rest_of_its_facts_to_the_drain(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.graph import index

    monkeypatch.setattr(index, "REINDEX_NOW", 1)
    for n in range(3):
        link(stack, "Alice", "knows", f"Friend {n}")
    stack.call("update_memory_object", {"name": "Alice", "newName": "Zelda Quartermaine"})
    assert len(stack.pending()) == 2
    assert stack.services.outbox.drain().by_family == {NAMESPACE: 2}
    stack.assert_index_in_line()
    assert len(search(stack, "Zelda Quartermaine knows", kind="facts")["facts"]) == 3

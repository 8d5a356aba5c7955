"""The memory graph under concurrent callers, on both adapter sets (SQLite; DynamoDB on a serial moto
server, which, as DynamoDB does, checks and writes one item atomically).

Writers race on real threads released together by a barrier. What must hold: the same fact added by
many callers is stored once and every answer names it; one name is one entity; of two updates from
the same version one wins and the other gets CONFLICT; exclusive facts never leave two open facts of
one subject and predicate.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, make_services, race
from mnemo.errors import MnemoError
from mnemo.graph.store import PARTITION
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

ALICE = ctx(tenant="acme")
PK = PARTITION + ALICE.scope_key("user")
THREADS = 8
_tables = itertools.count()


@pytest.fixture(params=["embedded", "dynamodb"])
def services(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    table = None
    if request.param == "embedded":
        built = make_services(tmp_path)
    else:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
            monkeypatch.setenv(name, value)
        server = shared_moto_server()
        table = f"graph-race-{next(_tables)}"
        create_records_table(server.client("dynamodb"), table, stream=False)
        built = Services(dynamodb_settings(server, table, tmp_path))
    set_services(built)
    try:
        yield built
    finally:
        set_services(None)
        if table is not None:
            shared_moto_server().client("dynamodb").delete_table(TableName=table)


def call(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, ALICE, payload)


def raw(services: Services, prefix: str) -> list[Any]:
    return services.records.query(PK, prefix, limit=10_000)


def open_facts(services: Services, predicate: str) -> list[dict[str, Any]]:
    return [
        item.data
        for item in raw(services, "FACT#")
        if item.data["predicate"] == predicate and item.data["invalidAt"] is None
    ]


def link(subject: str, predicate: str, obj: str, **fields: Any) -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": obj, **fields}


@pytest.mark.parametrize("rounds", [3])
def test_the_same_new_fact_from_eight_threads_is_stored_once(services: Services, rounds: int) -> None:
    for n in range(rounds):
        body = link(f"Alice {n}", "works_at", f"Acme {n}")
        results = race(*[lambda body=body: call(services, "add_memory_link", body)] * THREADS)
        answers = [r for r in results if isinstance(r, dict)]
        assert answers, results
        assert len({answer["factId"] for answer in answers}) == 1
        assert sum(answer["created"] for answer in answers) == 1
        assert len({answer["subject"]["entityId"] for answer in answers}) == 1
    facts = raw(services, "FACT#")
    assert len(facts) == rounds
    assert len(raw(services, "ENT#")) == len(raw(services, "NAME#")) == 2 * rounds
    assert len(raw(services, "LINK#")) == rounds
    assert len(raw(services, "EDGE#")) == 2 * rounds
    assert [m for m in services.outbox.pending() if m["family"] == "graph"] == []


def test_two_threads_creating_one_entity_make_one(services: Services) -> None:
    results = race(
        lambda: call(services, "add_memory_link", link("Carol", "uses", "Vim")),
        lambda: call(services, "add_memory_link", link("CAROL", "uses", "Emacs")),
    )
    answers = [r for r in results if isinstance(r, dict)]
    assert len({answer["subject"]["entityId"] for answer in answers}) == 1
    assert sum(answer["subject"]["created"] for answer in answers) <= 1
    carol = [item for item in raw(services, "ENT#") if item.data["name"].casefold() == "carol"]
    assert len(carol) == 1
    assert {item.data["entityId"] for item in raw(services, "NAME#")} == {
        item.data["entityId"] for item in raw(services, "ENT#")
    }


def test_concurrent_updates_from_one_version(services: Services) -> None:
    call(services, "add_memory_link", link("Dave", "knows", "Erin"))
    results = race(
        *[
            lambda n=n: call(
                services, "update_memory_object", {"name": "Dave", "summary": f"Version {n}.", "expectedVersion": 1}
            )
            for n in range(4)
        ]
    )
    wins = [r for r in results if isinstance(r, dict)]
    assert len(wins) == 1
    assert all(r.code == "CONFLICT" for r in results if isinstance(r, MnemoError))
    entity = call(services, "get_memory_object", {"name": "Dave"})["entity"]
    assert entity["version"] == 2
    assert entity["summary"] == wins[0]["entity"]["summary"]


def test_concurrent_renames_to_one_name(services: Services) -> None:
    call(services, "add_memory_link", link("Frank", "knows", "Grace"))
    results = race(
        lambda: call(services, "update_memory_object", {"name": "Frank", "newName": "Sam"}),
        lambda: call(services, "update_memory_object", {"name": "Grace", "newName": "sam"}),
    )
    assert sum(isinstance(r, dict) for r in results) == 1
    names = [item.data["name"].casefold() for item in raw(services, "ENT#")]
    assert names.count("sam") == 1


@pytest.mark.parametrize("interleaved", [False, True], ids=["free", "interleaved"])
def test_racing_exclusive_adds_never_leave_two_open_facts(
    services: Services, interleaved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    call(services, "add_memory_link", link("Heidi", "knows", "Ivan"))  # Heidi exists, with no works_at fact
    if interleaved:  # every racer reads the subject's facts before any of them writes
        store = services.graph._store
        edges = store.edges

        def slow_edges(*args: Any, **kwargs: Any) -> Any:
            found = edges(*args, **kwargs)
            time.sleep(0.2)
            return found

        monkeypatch.setattr(store, "edges", slow_edges)
    for n in range(3):
        results = race(
            *[
                lambda company=company: call(
                    services, "add_memory_link", link("Heidi", "works_at", company, exclusive=True)
                )
                for company in (f"Acme {n}", f"Globex {n}", f"Initech {n}")
            ]
        )
        assert any(isinstance(r, dict) for r in results), results
        current = open_facts(services, "works_at")
        assert len(current) == 1, current
        links = [item.data["factId"] for item in raw(services, "LINK#") if "#works_at#" in item.sk]
        assert links == [current[0]["factId"]]


def test_racing_exclusive_adds_over_an_open_fact(services: Services) -> None:
    call(services, "add_memory_link", link("Judy", "lives_in", "Paris", validAt="2020-01-01T00:00:00Z"))
    results = race(
        lambda: call(services, "add_memory_link", link("Judy", "lives_in", "Rome", exclusive=True)),
        lambda: call(services, "add_memory_link", link("Judy", "lives_in", "Oslo", exclusive=True)),
    )
    assert any(isinstance(r, dict) for r in results), results
    assert len(open_facts(services, "lives_in")) == 1
    facts = {item.data["objectName"]: item.data for item in raw(services, "FACT#")}
    # Paris was ended by one of them; the other either ended that one or (stamped earlier) became history.
    assert facts["Paris"]["invalidAt"] is not None
    assert facts["Paris"]["invalidatedBy"] in {
        facts["Rome"]["factId"],
        facts["Oslo"]["factId"],
    }


def test_invalidate_racing_an_exclusive_add(services: Services) -> None:
    old = call(services, "add_memory_link", link("Karl", "drives", "Volvo", validAt="2020-01-01T00:00:00Z"))
    results = race(
        lambda: call(services, "add_memory_link", link("Karl", "drives", "Saab", exclusive=True)),
        lambda: call(services, "invalidate_memory_link", {"factId": old["factId"]}),
    )
    assert any(isinstance(r, dict) for r in results), results
    facts = {item.data["factId"]: item.data for item in raw(services, "FACT#")}
    assert facts[old["factId"]]["invalidAt"] is not None
    assert len(open_facts(services, "drives")) <= 1
    links = [item.data["factId"] for item in raw(services, "LINK#") if "#drives#" in item.sk]
    assert all(facts[fact_id]["invalidAt"] is None for fact_id in links)

"""Consolidation keeps its promises (docs/extraction.md, "Consolidation"), with a scripted model and the judge off.

The cases users meet first: an echoed fact, a paraphrase in one batch, a change that must supersede every
statement of its subject, a backfill older than what is current, a resend, a retraction; and the stores
written by the code before the subject pointer (duplicates), which search and ``--repair`` put right. The
state machine (tests/service/test_consolidation_machine.py) generates the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo.learning.consolidation import Target
from mnemo.memory.extracted import subject_key
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool
from tests.support.helpers import ctx
from tests.support.scripted_model import ScriptedModel

ALICE = ctx("alice", session="s1")
EMPLOYER = "Alice's employer"

Facts = Callable[[list[str]], list[dict[str, Any]]]


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel()
    yield server
    server.close()


def services_for(tmp_path: Path, model: ScriptedModel, **settings: Any) -> Services:
    values: dict[str, Any] = {
        "data_dir": tmp_path,
        "embedder": "hashing",
        "openai_base_url": model.url,
        "extraction_strategies": ("facts",),
        "extraction_judge": False,
        **settings,
    }
    return Services(Settings(**values))


def script(model: ScriptedModel, facts: Facts) -> None:
    model.script = lambda tool, request, ids: {"facts": facts(ids)} if tool == "record_facts" else None


def call(services: Services, name: str, payload: dict[str, Any], context: Any = ALICE) -> dict[str, Any]:
    return get_tool(name).invoke(services, context, payload)


def turns(*said: tuple[str, str, str, str]) -> dict[str, Any]:
    """(id, role, content, at) each."""
    return {"messages": [{"id": i, "role": role, "content": text, "at": at} for i, role, text, at in said]}


def fact(text: str, subject: str, *ids: str) -> dict[str, Any]:
    return {"text": text, "subject": subject, "sourceIds": list(ids)}


def current(services: Services, subject: str = EMPLOYER) -> list[dict[str, Any]]:
    listed = call(services, "memory_list", {"layer": "user", "limit": 100})["memories"]
    return [m for m in listed if m["metadata"].get("subjectKey") == subject_key(subject) and not m.get("supersededBy")]


def everything(services: Services) -> list[dict[str, Any]]:
    found = call(services, "memory_search", {"query": "Alice", "threshold": 0, "limit": 100, "includeSuperseded": True})
    return found["results"]


def test_an_echoed_fact_is_one_memory_citing_both_turns(tmp_path: Path, model: ScriptedModel) -> None:
    script(model, lambda ids: [fact("Alice works at Acme Corp.", EMPLOYER, i) for i in ids])
    services = services_for(tmp_path, model)
    call(
        services,
        "add_messages",
        turns(
            ("m1", "user", "I started a job at Acme", "2025-03-01T09:00:00Z"),
            ("m2", "assistant", "Congratulations on the Acme job!", "2025-03-01T09:00:05Z"),
        ),
    )
    run = call(services, "memory_extract", {})["run"]
    decisions = [c["decision"] for c in run["strategies"][0]["candidates"]]
    assert sorted(decisions) == ["added", "merged"]
    (memory,) = current(services)
    assert memory["metadata"]["provenance"]["messageIds"] == ["m1", "m2"]


def test_a_paraphrase_in_one_batch_keeps_the_latest_wording(tmp_path: Path, model: ScriptedModel) -> None:
    script(
        model,
        lambda ids: [
            fact("Alice is vegetarian.", "Alice's diet", ids[0]),
            fact("Alice follows a vegetarian diet.", "alice's diet ", ids[1]),
        ],
    )
    services = services_for(tmp_path, model)
    call(
        services,
        "add_messages",
        turns(
            ("m1", "user", "I'm vegetarian", "2025-03-01T09:00:00Z"),
            ("m2", "user", "No meat for me, ever", "2025-03-01T09:01:00Z"),
        ),
    )
    call(services, "memory_extract", {})
    (memory,) = current(services, "Alice's diet")
    assert memory["content"] == "Alice follows a vegetarian diet."
    assert memory["metadata"]["provenance"]["messageIds"] == ["m1", "m2"]


def test_a_change_supersedes_every_current_memory_of_its_subject_only(tmp_path: Path, model: ScriptedModel) -> None:
    services = services_for(tmp_path, model)
    # Two current memories of one subject, as the code before the subject pointer left them.
    legacy(services, "Alice works at Acme Corp.", EMPLOYER, "m1", "2025-03-01T09:00:00Z")
    legacy(services, "Alice is employed by Acme.", EMPLOYER, "m2", "2025-03-01T09:00:05Z")
    legacy(services, "Alice lives in Lisbon.", "Alice's home city", "m3", "2025-03-01T09:00:09Z")
    assert len(current(services)) == 2
    script(model, lambda ids: [fact("Alice works at Globex.", EMPLOYER, *ids)])
    call(services, "add_messages", turns(("m9", "user", "I left Acme and joined Globex", "2025-06-01T09:00:00Z")))
    call(services, "memory_extract", {})
    (memory,) = current(services)
    assert memory["content"] == "Alice works at Globex."
    assert [m["content"] for m in current(services, "Alice's home city")] == ["Alice lives in Lisbon."]
    found = call(services, "memory_search", {"query": "Alice works at", "threshold": 0, "limit": 20})
    assert [r["content"] for r in found["results"] if "work" in r["content"] or "employ" in r["content"]] == [
        "Alice works at Globex."
    ]
    superseded = {r["content"]: r["supersededBy"] for r in everything(services)}
    assert superseded["Alice works at Acme Corp."] == superseded["Alice is employed by Acme."] == memory["memoryId"]


def test_a_backfilled_older_fact_never_replaces_a_newer_one(tmp_path: Path, model: ScriptedModel) -> None:
    script(
        model,
        lambda ids: [
            fact("Alice works at Globex." if i == "new" else "Alice works at Initech.", EMPLOYER, i) for i in ids
        ],
    )
    services = services_for(tmp_path, model)
    call(services, "add_messages", turns(("new", "user", "I work at Globex", "2025-06-01T09:00:00Z")))
    call(services, "memory_extract", {})
    call(services, "add_messages", turns(("old", "user", "I work at Initech", "2020-01-01T09:00:00Z")))
    run = call(services, "memory_extract", {})["run"]
    (candidate,) = run["strategies"][0]["candidates"]
    assert candidate["decision"] == "outdated"
    (memory,) = current(services)
    assert memory["content"] == "Alice works at Globex."
    history = {r["content"]: r.get("supersededBy") for r in everything(services)}
    assert history["Alice works at Initech."] == memory["memoryId"], "kept as history, already superseded"


def test_a_retraction_supersedes_and_a_rerun_changes_nothing(tmp_path: Path, model: ScriptedModel) -> None:
    services = services_for(tmp_path, model)
    script(model, lambda ids: [fact("Alice works at Acme Corp.", EMPLOYER, *ids)])
    call(services, "add_messages", turns(("m1", "user", "I work at Acme", "2025-03-01T09:00:00Z")))
    call(services, "memory_extract", {})
    script(model, lambda ids: [fact("Alice no longer works at Acme Corp.", EMPLOYER, *ids)])
    call(services, "add_messages", turns(("m2", "user", "I no longer work there", "2025-04-01T09:00:00Z")))
    call(services, "memory_extract", {})
    (memory,) = current(services)
    assert memory["content"] == "Alice no longer works at Acme Corp."
    before = everything(services)
    # The same turns again (a resend), and the same batch again through the consolidator (a redelivery).
    call(services, "add_messages", turns(("m2", "user", "I no longer work there", "2025-04-01T09:00:00Z")))
    assert call(services, "memory_extract", {})["run"] is None
    assert sorted(map(str, everything(services))) == sorted(map(str, before))


def test_a_change_dated_today_by_the_model_is_not_older_than_this_mornings_fact(
    tmp_path: Path, model: ScriptedModel
) -> None:
    """The model dates "today I joined Globex" to the day (midnight): it still stands for the evening turn."""
    services = services_for(tmp_path, model)
    script(model, lambda ids: [fact("Alice works at Initech.", EMPLOYER, *ids)])
    call(services, "add_messages", turns(("m1", "user", "Still at Initech", "2025-06-20T09:00:00Z")))
    call(services, "memory_extract", {})
    script(model, lambda ids: [{**fact("Alice works at Globex.", EMPLOYER, *ids), "occurredAt": "2025-06-20"}])
    call(services, "add_messages", turns(("m2", "user", "Today I joined Globex", "2025-06-20T18:00:00Z")))
    (candidate,) = call(services, "memory_extract", {})["run"]["strategies"][0]["candidates"]
    assert candidate["decision"] == "superseded"
    assert [m["content"] for m in current(services)] == ["Alice works at Globex."]


def legacy(services: Services, text: str, subject: str, message_id: str, at: str) -> str:
    """A memory as the code before the subject pointer wrote it: added beside the others, no pointer moved."""
    memory_id = f"mem_legacy_{message_id}"
    target = Target(ALICE.scope_key("user"), "user", "fact", "facts", "scripted", "run_old", at, "alice")
    vector = services.memory.extracted.embed([text])
    services.memory.extracted.add(
        scope=target.scope,
        layer="user",
        memory_id=memory_id,
        content=text,
        tags=["fact"],
        metadata={
            "source": "extraction",
            "strategy": "facts",
            "subject": subject,
            "subjectKey": subject_key(subject),
            "provenance": {"strategy": "facts", "model": "old", "messageIds": [message_id], "runId": "run_old"},
        },
        occurred_at=at,
        actor="alice",
        vector=vector[0] if vector else None,
    )
    return memory_id


# ---------------------------------------------- stores written before the pointer
def duplicated_store(services: Services) -> dict[str, str]:
    """Duplicates as the code before the subject pointer left them: three statements of the employer, two of the
    diet, one of the city, all current."""
    return {
        "acme": legacy(services, "Alice works at Acme Corp.", EMPLOYER, "m1", "2025-03-01T09:00:00Z"),
        "acme2": legacy(services, "Alice is employed by Acme.", EMPLOYER, "m2", "2025-03-01T09:00:05Z"),
        "globex": legacy(services, "Alice works at Globex.", EMPLOYER, "m3", "2025-05-01T09:00:00Z"),
        "veg": legacy(services, "Alice is vegetarian.", "Alice's diet", "m4", "2025-03-02T09:00:00Z"),
        "veg2": legacy(services, "Alice follows a vegetarian diet.", "Alice's diet", "m5", "2025-03-03T09:00:00Z"),
        "city": legacy(services, "Alice lives in Lisbon.", "Alice's home city", "m6", "2025-03-04T09:00:00Z"),
    }


def test_search_answers_the_newest_of_a_subjects_duplicates_and_names_the_rest(
    tmp_path: Path, model: ScriptedModel
) -> None:
    services = services_for(tmp_path, model)
    ids = duplicated_store(services)
    found = call(services, "memory_search", {"query": "Alice works at Acme employed", "threshold": 0, "limit": 20})
    employer = [r for r in found["results"] if r["metadata"]["subjectKey"] == subject_key(EMPLOYER)]
    (newest,) = employer
    assert newest["memoryId"] == ids["globex"]
    assert sorted(newest["duplicates"]) == sorted([ids["acme"], ids["acme2"]])
    (diet,) = [r for r in found["results"] if r["metadata"]["subjectKey"] == subject_key("Alice's diet")]
    assert (diet["memoryId"], diet["duplicates"]) == (ids["veg2"], [ids["veg"]])


def test_repair_merges_the_duplicates_twice_over_with_the_same_result(tmp_path: Path, model: ScriptedModel) -> None:
    from mnemo.learning.repair import Repair

    services = services_for(tmp_path, model)
    ids = duplicated_store(services)
    first = Repair(services.records).run().view()
    assert first == {"memories": 6, "subjects": 3, "duplicates": 3, "pointers": 3, "conflicts": 0, "done": True}
    state = everything(services)
    assert {r["memoryId"]: r.get("supersededBy") for r in state} == {
        ids["acme"]: ids["globex"],
        ids["acme2"]: ids["globex"],
        ids["globex"]: None,
        ids["veg"]: ids["veg2"],
        ids["veg2"]: None,
        ids["city"]: None,
    }
    history = call(services, "memory_history", {"memoryId": ids["acme"]})
    assert [c["event"] for c in history["changes"]] == ["EXTRACT", "SUPERSEDE"]
    again = Repair(services.records).run().view()
    assert again == {"memories": 6, "subjects": 3, "duplicates": 0, "pointers": 0, "conflicts": 0, "done": True}
    assert everything(services) == state
    # The pointers it wrote are the ones consolidation reads: a change supersedes the repaired memory.
    script(model, lambda message_ids: [fact("Alice works at Initech.", EMPLOYER, *message_ids)])
    call(services, "add_messages", turns(("m9", "user", "I joined Initech", "2025-07-01T09:00:00Z")))
    call(services, "memory_extract", {})
    assert [m["content"] for m in current(services)] == ["Alice works at Initech."]


def test_a_repair_cut_short_by_its_deadline_is_finished_by_the_next_pass(tmp_path: Path, model: ScriptedModel) -> None:
    from mnemo.learning.repair import Repair

    services = services_for(tmp_path, model)
    duplicated_store(services)
    ticks = iter(range(100))
    cut = Repair(services.records).run(deadline=0.5, clock=lambda: next(ticks)).view()
    assert (cut["done"], cut["pointers"]) == (False, 1), "one subject begun before the deadline, the rest left"
    rest = Repair(services.records).run().view()
    assert (rest["done"], rest["pointers"]) == (True, 2)
    assert len(current(services)) == 1 and len(current(services, "Alice's diet")) == 1


@pytest.mark.parametrize("reworded", [False, True], ids=["same-words", "reworded"])
def test_a_redelivered_batch_of_an_expiring_strategy_changes_nothing(
    tmp_path: Path, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch, reworded: bool
) -> None:
    """The second run's memories would expire later than the first's: its turns, decided already, still keep
    the current memory (and the same words are that very memory, never written twice)."""
    from mnemo.learning import ledger
    from mnemo.learning.pipeline import StrategyConfig
    from mnemo.learning.service import stream_of
    from mnemo.ports import Put

    services = services_for(tmp_path, model, extraction_config={"facts": {"expiresAfterDays": 30}})
    script(model, lambda ids: [fact("Alice works at Acme Corp.", EMPLOYER, *ids)])
    said = turns(("m1", "user", "I work at Acme", "2025-03-01T09:00:00Z"))
    call(services, "add_messages", said)
    call(services, "memory_extract", {})
    (before,) = current(services)
    identity = {"tenant": ALICE.tenant, "user": "alice", "session": "s1"}
    marker = ledger.turn_marker(
        stream_of(ALICE), "2025-03-01T09:00:00Z", "x", "conversation", "m1", ALICE.scope_key("user"), identity
    )
    services.records.write([Put(marker.item)])
    monkeypatch.setattr(StrategyConfig, "expires_at", lambda self: "2035-01-01T00:00:00Z")
    text = "Alice is employed at Acme Corp, she said." if reworded else "Alice works at Acme Corp."
    script(model, lambda ids: [fact(text, EMPLOYER, *ids)])
    (candidate,) = call(services, "memory_extract", {})["run"]["strategies"][0]["candidates"]
    assert (candidate["decision"], candidate["memoryId"]) == ("kept", before["memoryId"])
    assert [m["memoryId"] for m in current(services)] == [before["memoryId"]]

"""Memory that learns, end to end on the embedded default with a scripted OpenAI-compatible model over HTTP.

add_messages, the strategies (facts, preferences, summary, lessons, graph), provenance, consolidation
(kept, superseded, the judge), memory_extract's dry run, the worker's triggers and the backfill.
Faults, isolation and kill -9 have files of their own (test_learning_faults.py, test_learning_crash.py,
tests/isolation/test_extraction_isolation.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo.errors import MnemoError
from mnemo.learning.outcomes import Left, NoticeOutcome
from mnemo.learning.service import LearningService
from mnemo.ports import StreamNotice
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool
from tests.support.helpers import ctx
from tests.support.scripted_model import ScriptedModel

ALICE = ctx("alice", session="s1", agent="helper")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel()
    yield server
    server.close()


def learning_services(tmp_path: Path, model: ScriptedModel, **settings: Any) -> Services:
    values: dict[str, Any] = {
        "data_dir": tmp_path,
        "embedder": "hashing",
        "openai_base_url": model.url,
        "extraction_strategies": ("facts",),
        **settings,
    }
    return Services(Settings(**values))


def call(services: Services, name: str, payload: dict[str, Any], context: Any = ALICE) -> dict[str, Any]:
    return get_tool(name).invoke(services, context, payload)


def said(*texts: str, start: int = 1, name: str = "alice") -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": text, "name": name, "id": f"m{start + n}", "at": f"2025-03-0{1 + n}T09:00:00Z"}
            for n, text in enumerate(texts)
        ]
    }


def fact(text: str, subject: str, *ids: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "subject": subject, "sourceIds": list(ids), **extra}


# ---------------------------------------------------------------- add_messages
def test_add_messages_stores_turns_as_conversation_records_idempotently(tmp_path: Path, model: ScriptedModel) -> None:
    services = learning_services(tmp_path, model)
    first = call(services, "add_messages", said("I moved to Lisbon", "I love window seats"))
    assert (first["stored"], first["repeated"], first["extraction"]) == (2, 0, "queued")
    assert first["pendingTurns"] == 2
    again = call(services, "add_messages", said("I moved to Lisbon", "I love window seats"))
    assert (again["stored"], again["repeated"]) == (0, 2)
    assert [m["outcome"] for m in again["messages"]] == ["repeat", "repeat"]
    assert again["pendingTurns"] == 2, "a repeat queues nothing new"
    found = call(services, "retrieve_conversation", {"explanation": "t", "query": "x", "message_id": "m1"})
    record = found["data"]["conversations"][0]
    assert record["user_input"] == "I moved to Lisbon"
    assert record["meta_data"] == {"mnemo_message": {"role": "user", "name": "alice"}, "session": "s1"}
    assert model.requests == [], "storing turns never calls the model"


def test_add_messages_refuses_a_conflicting_id_before_writing_anything(tmp_path: Path, model: ScriptedModel) -> None:
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("first"))
    batch = said("new one", "changed", start=0)  # m0 is new, m1 conflicts
    with pytest.raises(MnemoError) as refused:
        call(services, "add_messages", batch)
    assert refused.value.code == "CONFLICT"
    missing = call(services, "retrieve_conversation", {"explanation": "t", "query": "x", "message_id": "m0"})
    assert missing["data"]["conversations"] == [], "nothing of the call was written"


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "x", "id": f"m{n}"} for n in range(101)]}, "messages"),
        ({"messages": [{"role": "boss", "content": "x"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "x", "id": "has space"}]}, "messages"),
        (
            {"messages": [{"role": "user", "content": "x", "id": "a"}, {"role": "user", "content": "y", "id": "a"}]},
            "messages",
        ),
    ],
)
def test_add_messages_bad_input_names_the_field(
    tmp_path: Path, model: ScriptedModel, payload: dict, field: str
) -> None:
    services = learning_services(tmp_path, model)
    with pytest.raises(MnemoError) as refused:
        call(services, "add_messages", payload)
    assert refused.value.code == "INVALID_INPUT"
    assert field in str(refused.value.details) + refused.value.message


def test_a_message_without_an_id_gets_a_stable_derived_one(tmp_path: Path, model: ScriptedModel) -> None:
    services = learning_services(tmp_path, model)
    payload = {"messages": [{"role": "user", "content": "hello", "at": "2025-01-01T00:00:00Z"}]}
    first = call(services, "add_messages", payload)
    again = call(services, "add_messages", payload)
    assert first["messages"][0]["id"] == again["messages"][0]["id"]
    assert again["repeated"] == 1


# ------------------------------------------------------------------- facts
def test_facts_are_extracted_with_provenance_and_their_source_turns(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: (
        {"facts": [fact("Alice moved to Lisbon in February 2025.", "Alice's home city", "m1", occurredAt="2025-02")]}
        if tool == "record_facts"
        else None
    )
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("I moved to Lisbon last month", "Nice weather today"))
    run = call(services, "memory_extract", {})
    (part,) = run["run"]["strategies"]
    (candidate,) = part["candidates"]
    assert candidate["decision"] == "added" and candidate["sourceIds"] == ["m1"]
    assert part["inputTokens"] > 0 and part["outputTokens"] > 0
    found = call(services, "memory_search", {"query": "Lisbon", "threshold": 0, "includeSources": True})
    (memory,) = [r for r in found["results"] if r["kind"] == "memory"]
    assert memory["tags"] == ["fact"] and memory["layer"] == "user"
    assert memory["occurredAt"].startswith("2025-02-01")
    provenance = memory["metadata"]["provenance"]
    assert provenance["strategy"] == "facts" and provenance["messageIds"] == ["m1"]
    assert provenance["model"] == "openai-compatible:default" and provenance["runId"] == run["run"]["runId"]
    assert memory["metadata"]["source"] == "extraction", "never shown as something the user typed"
    assert [(s["messageId"], s["content"]) for s in memory["sources"]] == [("m1", "I moved to Lisbon last month")]
    assert run["pendingTurns"] == 0
    prompt = model.calls("record_facts")[0]["messages"][-1]["content"]
    assert "[m1] 2025-03-01T09:00:00.000000Z alice: I moved to Lisbon last month" in prompt


def test_an_undated_fact_happens_when_its_turn_was_said(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice has a cat.", "Alice's pets", "m2")]}
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("hi", "I have a cat"))
    call(services, "memory_extract", {})
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["occurredAt"].startswith("2025-03-02T09:00")


def test_dry_run_shows_decisions_and_writes_nothing(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice likes tea.", "Alice's drink", "m1")]}
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("I like tea"))
    preview = call(services, "memory_extract", {"dryRun": True})
    assert preview["run"]["dryRun"] is True
    assert preview["run"]["strategies"][0]["candidates"][0]["decision"] == "added"
    assert preview["pendingTurns"] == 1
    assert call(services, "memory_list", {"layer": "user"})["memories"] == []
    assert call(services, "extraction_status", {})["recentRuns"] == []


# ----------------------------------------------------------- consolidation
def test_the_same_fact_again_extends_its_provenance(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice lives in Lisbon.", "Alice's home city", ids[0])]}
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("I live in Lisbon"))
    call(services, "memory_extract", {})
    call(services, "add_messages", said("Still in Lisbon", start=2))
    second = call(services, "memory_extract", {})
    assert second["run"]["strategies"][0]["candidates"][0]["decision"] == "kept"
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["metadata"]["provenance"]["messageIds"] == ["m1", "m2"]
    history = call(services, "memory_history", {"memoryId": memory["memoryId"]})
    assert [c["event"] for c in history["changes"]] == ["EXTRACT", "EXTEND"]
    assert history["changes"][1]["messageIds"] == ["m2"]


@pytest.mark.parametrize("judge", [True, False])
def test_a_changed_fact_supersedes_the_old_one_which_stays(tmp_path: Path, model: ScriptedModel, judge: bool) -> None:
    answers = {"m1": "Alice lives in Lisbon.", "m2": "Alice now lives in Porto."}

    def script(tool: str, request: dict, ids: list[str]) -> dict | None:
        if tool == "decide_updates":
            return {"decisions": [{"pair": 0, "decision": "update"}]}
        return {"facts": [fact(answers[ids[0]], "Alice's home city", ids[0])]}

    model.script = script
    services = learning_services(tmp_path, model, extraction_judge=judge)
    call(services, "add_messages", said("I live in Lisbon"))
    first = call(services, "memory_extract", {})
    old_id = first["run"]["strategies"][0]["candidates"][0]["memoryId"]
    call(services, "add_messages", said("I moved to Porto", start=2))
    second = call(services, "memory_extract", {})
    candidate = second["run"]["strategies"][0]["candidates"][0]
    assert (candidate["decision"], candidate["supersedes"]) == ("superseded", old_id)
    assert len(model.calls("decide_updates")) == (1 if judge else 0)
    found = call(services, "memory_search", {"query": "where does Alice live", "threshold": 0})
    assert [r["content"] for r in found["results"]] == ["Alice now lives in Porto."]
    everything = call(
        services, "memory_search", {"query": "where does Alice live", "threshold": 0, "includeSuperseded": True}
    )
    assert {r["memoryId"]: r["supersededBy"] for r in everything["results"]} == {
        old_id: candidate["memoryId"],
        candidate["memoryId"]: None,
    }
    history = call(services, "memory_history", {"memoryId": old_id})
    assert [c["event"] for c in history["changes"]] == ["EXTRACT", "SUPERSEDE"]
    assert [v["content"] for v in history["versions"]] == ["Alice lives in Lisbon.", "Alice now lives in Porto."]


def test_the_judge_can_keep_both_facts_of_one_subject_in_one_merged_memory(
    tmp_path: Path, model: ScriptedModel
) -> None:
    answers = {"m1": "Alice speaks Portuguese.", "m2": "Alice speaks French too."}
    merged = "Alice speaks Portuguese and French."

    def script(tool: str, request: dict, ids: list[str]) -> dict | None:
        if tool == "decide_updates":
            return {"decisions": [{"pair": 0, "decision": "merge", "text": merged}]}
        return {"facts": [fact(answers[ids[0]], "Alice's languages", ids[0])]}

    model.script = script
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("Eu falo português"))
    first = call(services, "memory_extract", {})["run"]["strategies"][0]["candidates"][0]["memoryId"]
    call(services, "add_messages", said("Je parle français aussi", start=2))
    second = call(services, "memory_extract", {})
    (candidate,) = second["run"]["strategies"][0]["candidates"]
    assert (candidate["decision"], candidate["text"], candidate["supersedes"]) == ("superseded", merged, first)
    listed = call(services, "memory_list", {"layer": "user"})["memories"]
    assert [m["content"] for m in listed if not m.get("supersededBy")] == [merged], "one current, stating both"


def test_a_fact_about_another_subject_never_supersedes(tmp_path: Path, model: ScriptedModel) -> None:
    answers = {
        "m1": ("Alice lives in Lisbon.", "Alice's home city"),
        "m2": ("Alice lives for music.", "Alice's passion"),
    }
    model.script = lambda tool, request, ids: {"facts": [fact(*answers[ids[0]], ids[0])]}
    services = learning_services(tmp_path, model, extraction_judge=False)
    call(services, "add_messages", said("I live in Lisbon"))
    call(services, "memory_extract", {})
    call(services, "add_messages", said("I live for music", start=2))
    assert call(services, "memory_extract", {})["run"]["strategies"][0]["candidates"][0]["decision"] == "added"


# ------------------------------------------------------ the other strategies
def test_summary_is_one_session_memory_replaced_as_the_session_grows(tmp_path: Path, model: ScriptedModel) -> None:
    def script(tool: str, request: dict, ids: list[str]) -> dict | None:
        so_far = "Summary so far" in request["messages"][-1]["content"]
        text = "Alice talked about Lisbon, then Porto." if so_far else "Alice talked about Lisbon."
        return {"summary": [{"text": text, "sourceIds": ids}]}

    model.script = script
    services = learning_services(tmp_path, model, extraction_strategies=("summary",))
    call(services, "add_messages", said("Lisbon is lovely"))
    call(services, "memory_extract", {})
    call(services, "add_messages", said("Porto too", start=2))
    second = call(services, "memory_extract", {})
    assert second["run"]["strategies"][0]["candidates"][0]["decision"] == "superseded"
    assert "Summary so far:\nAlice talked about Lisbon." in model.calls("record_summary")[1]["messages"][-1]["content"]
    standing = [m for m in call(services, "memory_list", {"layer": "session"})["memories"] if not m["supersededBy"]]
    assert [m["content"] for m in standing] == ["Alice talked about Lisbon, then Porto."]
    assert standing[0]["tags"] == ["summary"]


def test_preferences_are_user_memories_tagged_preference(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: (
        {"preferences": [fact("Alice prefers window seats.", "seat preference", "m1")]}
        if tool == "record_preferences"
        else None
    )
    services = learning_services(tmp_path, model, extraction_strategies=("preferences",))
    call(services, "add_messages", said("Window seat please, always"))
    call(services, "memory_extract", {})
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["tags"] == ["preference"] and memory["occurredAt"] is None


def test_lessons_come_from_executions_into_the_agent_layer(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: (
        {"lessons": [fact("Retrying weather_api after a 429 with backoff worked.", "weather_api rate limits", ids[0])]}
        if tool == "record_lessons"
        else None
    )
    services = learning_services(tmp_path, model, extraction_strategies=("facts", "lessons"))
    call(
        services,
        "add_conversation",
        {"message_id": "x1", "explanation": "t", "user_input": "Weather?", "agent_response": "Rain."},
    )
    call(
        services,
        "add_execution",
        {
            "message_id": "x1",
            "explanation": "t",
            "execution_summary": "Called weather_api; retried after a 429",
            "tools_used": ["weather_api"],
            "errors": [{"error_type": "rate_limit", "error_message": "429", "recovery_successful": True}],
            "observations": "backoff helped",
            "success": True,
        },
    )
    run = call(services, "memory_extract", {})
    assert {p["strategy"] for p in run["run"]["strategies"]} == {"facts", "lessons"}
    (lesson,) = call(services, "memory_list", {"layer": "agent"})["memories"]
    assert lesson["tags"] == ["lesson"] and lesson["metadata"]["provenance"]["messageIds"] == ["x1"]
    prompt = model.calls("record_lessons")[0]["messages"][-1]["content"]
    assert "[x1]" in prompt and "weather_api" in prompt and "rate_limit" in prompt
    assert run["pendingTurns"] == 0


def test_lessons_without_an_agent_id_are_a_recorded_failure(tmp_path: Path, model: ScriptedModel) -> None:
    services = learning_services(tmp_path, model, extraction_strategies=("lessons",))
    no_agent = ctx("alice", session="s1")
    call(
        services,
        "add_execution",
        {
            "message_id": "x1",
            "explanation": "t",
            "execution_summary": "ran",
            "tools_used": [],
            "errors": [],
            "observations": "",
            "success": True,
        },
        no_agent,
    )
    run = call(services, "memory_extract", {}, no_agent)
    assert "agent" in run["run"]["strategies"][0]["failure"]["message"]
    assert model.requests == []


def test_the_graph_strategy_writes_the_users_graph(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {
        "entities": [{"name": "Alice", "type": "person"}, {"name": "Acme", "type": "organization"}],
        "facts": [{"subject": "Alice", "predicate": "works_at", "object": "Acme", "text": "Alice works at Acme."}],
    }
    services = learning_services(tmp_path, model, extraction_strategies=("graph",))
    call(services, "add_messages", said("I started at Acme"))
    run = call(services, "memory_extract", {})
    assert run["run"]["strategies"][0]["candidates"][0]["text"] == "Alice works_at Acme"
    facts = call(services, "graph_search", {"query": "Alice works at"})["facts"]
    assert facts and facts[0]["object"] == "Acme"


def test_each_strategy_can_have_its_own_model_prompt_and_keys(tmp_path: Path, model: ScriptedModel) -> None:
    config = {"facts": {"model": "small-model", "appendToPrompt": "Only facts about travel.", "metadataKeys": ["city"]}}
    model.script = lambda tool, request, ids: {
        "facts": [fact("Alice flew to Rome.", "Alice's trip", "m1", metadata={"city": "Rome", "source": "manual"})]
    }
    services = learning_services(tmp_path, model, extraction_config=config, extraction_judge=False)
    call(services, "add_messages", said("I flew to Rome"))
    call(services, "memory_extract", {})
    (request,) = model.calls("record_facts")
    assert request["model"] == "small-model"
    assert request["messages"][0]["content"].endswith("Only facts about travel.")
    assert "city" in request["messages"][-1]["content"]
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["metadata"]["city"] == "Rome"
    assert memory["metadata"]["source"] == "extraction", "the model cannot choose the source"
    status = call(services, "extraction_status", {})
    assert {s["strategy"]: s["model"] for s in status["strategies"] if s["enabled"]} == {
        "facts": "openai-compatible:small-model"
    }


# ---------------------------------------------------------------- workers
class RecordingQueue:
    def __init__(self) -> None:
        self.notices: list[StreamNotice] = []
        self.wakes: list[tuple[StreamNotice, int]] = []

    def notify(self, notice: StreamNotice) -> None:
        self.notices.append(notice)

    def wake_later(self, notice: StreamNotice, delay_seconds: int) -> None:
        self.wakes.append((notice, delay_seconds))


def test_the_worker_runs_every_n_turns_and_after_the_idle_time(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact(f"Fact from {i}.", f"subject {i}", i) for i in ids]}
    services = learning_services(tmp_path, model, extraction_every_turns=3, extraction_idle_minutes=10)
    queue = RecordingQueue()
    services.__dict__["extraction_queue"] = queue
    learning: LearningService = services.learning
    call(services, "add_messages", said("one", "two"))
    (notice,) = queue.notices
    assert (notice.reason, notice.identity) == (
        "turns",
        {"tenant": "acme", "user": "alice", "session": "s1", "agent": "helper"},
    )
    assert learning.on_notice(notice) == NoticeOutcome(0, Left.NOT_DUE)
    assert model.requests == [] and queue.wakes and queue.wakes[0][1] <= 600
    call(services, "add_messages", said("three", start=3))
    assert learning.on_notice(queue.notices[-1]) == NoticeOutcome(1, Left.NOTHING)
    assert len(call(services, "memory_list", {"layer": "user"})["memories"]) == 3
    call(services, "add_messages", said("four", start=4))
    assert learning.on_notice(queue.notices[-1]) == NoticeOutcome(0, Left.NOT_DUE)
    wake, _ = queue.wakes[-1]
    learning._clock = lambda: 10**10  # far past the idle time
    assert learning.on_notice(wake) == NoticeOutcome(1, Left.NOTHING)
    assert call(services, "extraction_status", {})["pendingTurns"] == 0
    assert list(learning.streams()) == [], "a stream with nothing waiting leaves the list"


def test_run_due_finds_waiting_streams_after_a_restart(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice likes jazz.", "music", ids[0])]}
    first = learning_services(tmp_path, model, extraction_every_turns=1)
    first.__dict__["extraction_queue"] = RecordingQueue()  # the notice is lost with the process
    call(first, "add_messages", said("I like jazz"))
    restarted = learning_services(tmp_path, model, extraction_every_turns=1)
    assert restarted.learning.run_due() == 1
    assert len(call(restarted, "memory_list", {"layer": "user"})["memories"]) == 1


def test_backfill_queues_stored_conversations_once(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact(f"Fact {i}.", f"s {i}", i) for i in ids]}
    off = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    call(off, "add_messages", said("one", "two"))
    services = learning_services(tmp_path, model)
    progress: list[tuple[int, int]] = []
    assert services.learning.backfill(ALICE, lambda done, total: progress.append((done, total))) == 1
    assert progress == [(1, 1)]
    assert len(call(services, "memory_list", {"layer": "user"})["memories"]) == 2
    assert services.learning.backfill(ALICE) == 0, "turns extracted already are not queued again"
    assert len(model.calls("record_facts")) == 1


def test_mnemo_extract_backfills_every_user_with_a_progress_line(
    tmp_path: Path, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mnemo.cli import main
    from mnemo.runtime import set_services

    model.script = lambda tool, request, ids: {"facts": [fact(f"Fact {i}.", f"s {i}", i) for i in ids]}
    off = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    call(off, "add_messages", said("one"))
    call(off, "add_messages", said("two", name="bob"), ctx("bob", session="s9"))
    monkeypatch.setenv("MNEMO_DATA_DIR", str(tmp_path))  # main() sets it: restored after the test
    monkeypatch.setenv("MNEMO_EMBEDDER", "hashing")
    monkeypatch.setenv("MNEMO_OPENAI_BASE_URL", model.url)
    monkeypatch.setenv("MNEMO_EXTRACTION_STRATEGIES", "facts")
    set_services(None)
    try:
        assert main(["extract", "--data-dir", str(tmp_path)]) == 0
        assert json.loads(capsys.readouterr().out) == {"users": 2, "runs": 2}
        assert main(["extract", "--data-dir", str(tmp_path)]) == 0
        assert json.loads(capsys.readouterr().out) == {"users": 2, "runs": 0}
    finally:
        set_services(None)
    assert main(["extract", "--data-dir", str(tmp_path), "--user", "not valid"]) == 2
    assert "--user" in capsys.readouterr().err
    set_services(None)
    monkeypatch.delenv("MNEMO_EXTRACTION_STRATEGIES")
    assert main(["extract", "--data-dir", str(tmp_path)]) == 2
    assert "extraction is off" in capsys.readouterr().err
    set_services(None)


def test_tokens_and_decisions_are_counted_per_strategy(tmp_path: Path, model: ScriptedModel) -> None:
    from mnemo import telemetry

    counted: dict[str, float] = {}
    previous = telemetry.install(lambda name, value, unit: counted.__setitem__(name, counted.get(name, 0) + value))
    try:
        model.script = lambda tool, request, ids: {"facts": [fact("Alice likes tea.", "drink", "m1")]}
        services = learning_services(tmp_path, model)
        call(services, "add_messages", said("I like tea"))
        call(services, "memory_extract", {})
    finally:
        telemetry.install(previous)
    assert counted["ExtractionFactsInputTokens"] > 0 and counted["ExtractionFactsOutputTokens"] > 0
    assert counted["ExtractionFactsAdded"] == 1
    assert "ExtractionFactsFailures" not in counted


def test_turns_said_at_one_time_reach_the_model_in_the_order_they_were_sent(
    tmp_path: Path, model: ScriptedModel
) -> None:
    services = learning_services(tmp_path, model)
    messages = [
        {"role": "user", "content": f"turn {n}", "id": f"D1:{n}", "at": "2025-03-01T09:00:00Z"} for n in range(1, 13)
    ]
    call(services, "add_messages", {"messages": messages})
    call(services, "memory_extract", {})
    (request,) = model.calls("record_facts")
    from tests.support.scripted_model import transcript_ids

    assert transcript_ids(request) == [f"D1:{n}" for n in range(1, 13)]


def test_one_idle_wake_up_per_quiet_spell(tmp_path: Path, model: ScriptedModel) -> None:
    services = learning_services(tmp_path, model, extraction_every_turns=5)
    queue = RecordingQueue()
    services.__dict__["extraction_queue"] = queue
    learning: LearningService = services.learning
    now = [time.time()]
    learning._clock = lambda: now[0]
    for start in (1, 2, 3):
        call(services, "add_messages", said(f"turn {start}", start=start))
        assert learning.on_notice(queue.notices[-1]) == NoticeOutcome(0, Left.NOT_DUE)
    assert len(queue.wakes) == 1, "a wake-up on its way is not sent again"


def test_a_run_of_some_strategies_leaves_the_turns_waiting_for_the_others(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: (
        {"facts": [fact("Alice likes tea.", "drink", "m1")]} if tool == "record_facts" else None
    )
    services = learning_services(tmp_path, model, extraction_strategies=("facts", "summary"))
    call(services, "add_messages", said("I like tea"))
    first = call(services, "memory_extract", {"strategies": ["facts"]})
    assert [p["strategy"] for p in first["run"]["strategies"]] == ["facts"]
    assert first["pendingTurns"] == 1, "the summary has not read the turn yet"
    second = call(services, "memory_extract", {})
    assert [p["strategy"] for p in second["run"]["strategies"]] == ["summary"]
    assert second["pendingTurns"] == 0
    assert len(model.calls("record_facts")) == 1


def test_memory_extract_leaves_what_the_deadline_cannot_fit_to_the_background(
    tmp_path: Path, model: ScriptedModel
) -> None:
    services = learning_services(
        tmp_path, model, extraction_strategies=("facts", "preferences", "summary"), request_deadline_seconds=1
    )
    call(services, "add_messages", said("I like tea"))
    run = call(services, "memory_extract", {})
    assert [p["strategy"] for p in run["run"]["strategies"]] == ["facts"], "the first always runs"
    assert run["run"]["deferred"] == ["preferences", "summary"]
    assert run["pendingTurns"] == 1
    background = learning_services(tmp_path, model, extraction_strategies=("facts", "preferences", "summary"))
    rest = call(background, "memory_extract", {})
    assert [p["strategy"] for p in rest["run"]["strategies"]] == ["preferences", "summary"]


def test_a_failed_run_arms_a_wake_up_so_a_quiet_session_is_tried_again(tmp_path: Path, model: ScriptedModel) -> None:
    from tests.support.scripted_model import Status

    model.script = lambda tool, request, ids: Status(503)
    services = learning_services(tmp_path, model, extraction_every_turns=1)
    queue = RecordingQueue()
    services.__dict__["extraction_queue"] = queue
    call(services, "add_messages", said("I like tea"))
    assert services.learning.on_notice(queue.notices[-1]) == NoticeOutcome(1, Left.FAILED)
    assert len(queue.wakes) == 1 and queue.wakes[0][0].reason == "idle"


def test_a_turn_dated_in_the_future_is_still_extracted_once_quiet(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice plans a trip.", "trip", ids[0])]}
    services = learning_services(tmp_path, model, extraction_every_turns=5)
    queue = RecordingQueue()
    services.__dict__["extraction_queue"] = queue
    call(
        services,
        "add_messages",
        {"messages": [{"role": "user", "content": "trip", "id": "f1", "at": "2099-01-01T00:00:00Z"}]},
    )
    learning: LearningService = services.learning
    learning._clock = lambda: time.time() + 11 * 60  # quiet by the server's clock, whatever the turn's date
    assert learning.on_notice(queue.notices[-1]) == NoticeOutcome(1, Left.NOTHING)


def test_backfill_after_live_extraction_still_finds_the_older_turns(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact(f"Fact {i}.", f"s {i}", i) for i in ids]}
    off = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    call(off, "add_messages", said("one", "two"))
    services = learning_services(tmp_path, model)
    call(services, "add_messages", said("three", start=3))
    call(services, "memory_extract", {})
    assert services.learning.backfill(ALICE) == 1
    contents = sorted(m["content"] for m in call(services, "memory_list", {"layer": "user"})["memories"])
    assert contents == ["Fact m1.", "Fact m2.", "Fact m3."]
    assert services.learning.backfill(ALICE) == 0


def test_two_agents_of_one_session_learn_into_their_own_layers(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"lessons": [fact(f"Lesson from {i}.", f"s {i}", i) for i in ids]}
    services = learning_services(tmp_path, model, extraction_strategies=("lessons",))
    for agent, message_id in (("a", "xa"), ("b", "xb")):
        call(
            services,
            "add_execution",
            {
                "message_id": message_id,
                "explanation": "t",
                "execution_summary": f"ran {message_id}",
                "tools_used": [],
                "errors": [],
                "observations": "",
                "success": True,
            },
            ctx("alice", session="s1", agent=agent),
        )
    while call(services, "memory_extract", {})["pendingTurns"]:
        pass
    for agent, message_id in (("a", "xa"), ("b", "xb")):
        listed = call(services, "memory_list", {"layer": "agent"}, ctx("alice", session="s1", agent=agent))
        assert [m["content"] for m in listed["memories"]] == [f"Lesson from {message_id}."]


def test_backfill_ignores_a_session_named_in_free_form_meta_data(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = lambda tool, request, ids: {"facts": [fact("Alice said hi.", "greeting", ids[0])]}
    off = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    pair = {
        "message_id": "p1",
        "explanation": "t",
        "user_input": "hi",
        "agent_response": "hello",
        "meta_data": {"session": "not a valid id"},
    }
    call(off, "add_conversation", pair)
    services = learning_services(tmp_path, model)
    assert services.learning.backfill(ctx("alice")) == 1
    assert len(call(services, "memory_list", {"layer": "user"}, ctx("alice"))["memories"]) == 1

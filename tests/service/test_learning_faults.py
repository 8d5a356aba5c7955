"""Memory that learns when its model misbehaves: every fault is reported, nothing is half-written, no turn is lost.

The strategies run on a scripted OpenAI-compatible model (tests/support/scripted_model.py, a real HTTP server in
a thread): an answer that is not JSON or breaks the schema is asked again once, then stands as the strategy's
failure with the raw answer while the turns wait (up to ``MAX_ATTEMPTS`` runs); throttling is retried with
backoff (the pauses recorded, never slept); too many candidates, a citation outside the batch, a model that is
down or never answers, and no model at all each end as the documented answer, and add_messages never waits.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_model import Answer, Block, Raw, ScriptedModel, Status, transcript_ids

from helpers import ctx, free_port
from mnemo.errors import MnemoError
from mnemo.learning.pipeline import MAX_ATTEMPTS, THROTTLE_FIRST_PAUSE, THROTTLE_TRIES
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", "acme", session="s1")
TURNS = [
    {"id": "m-1", "role": "user", "content": "I work at Acme as a data engineer.", "at": "2025-03-03T09:00:00Z"},
    {"id": "m-2", "role": "assistant", "content": "Noted: Acme, data engineering.", "at": "2025-03-03T09:00:05Z"},
]
NOT_JSON = "Sure! Alice works at Acme. {facts: oops"


def fact(text: str, *source_ids: str, subject: str = "Alice's employer") -> dict[str, Any]:
    return {"text": text, "subject": subject, "sourceIds": list(source_ids)}


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    served = ScriptedModel()
    yield served
    served.close()


def learning(data_dir: Path, base_url: str | None, **settings: Any) -> Services:
    """The embedded stack with the facts strategy on the model at ``base_url`` (no judge unless asked)."""
    values: dict[str, Any] = {"extraction_strategies": ("facts",), "extraction_judge": False, **settings}
    return Services(Settings(data_dir=data_dir, embedder="hashing", openai_base_url=base_url, **values))


def quiet(services: Services) -> list[float]:
    """The backoff pauses the pipeline asks for, recorded instead of slept (Services builds the pipeline with
    time.sleep and offers no seam of its own: the pipeline's ``sleep`` is replaced once it is built)."""
    pauses: list[float] = []
    services.learning._pipeline._sleep = pauses.append
    return pauses


def call(services: Services, tool: str, payload: dict[str, Any], context: Any = ALICE) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def facts_status(services: Services) -> dict[str, Any]:
    status = call(services, "extraction_status", {"runs": 0})
    return next(s for s in status["strategies"] if s["strategy"] == "facts")


def script(answers: Callable[[list[str]], Answer | None]) -> Callable[[str, dict[str, Any], list[str]], Any]:
    """Answer record_facts with ``answers(ids)``; every other tool the default (empty lists)."""
    return lambda tool, request, ids: answers(ids) if tool == "record_facts" else None


# ======================================================= answers out of shape ===
def test_arguments_that_are_not_json_are_asked_twice_then_stand_as_the_failure_and_the_turns_wait(
    tmp_path: Path, model: ScriptedModel
) -> None:
    model.script = script(lambda ids: Raw(NOT_JSON))
    services = learning(tmp_path, model.url)
    stored = call(services, "add_messages", {"messages": TURNS})
    assert (stored["pendingTurns"], stored["extraction"]) == (2, "queued")

    answer = call(services, "memory_extract", {})
    assert len(model.calls("record_facts")) == 2, "asked once, then once again: no more"
    (part,) = answer["run"]["strategies"]
    assert part["candidates"] == []
    assert part["failure"]["raw"] == NOT_JSON
    assert part["failure"]["attempts"] == 2
    assert "not JSON" in part["failure"]["message"]
    assert "failed strategies" in answer["message"]
    assert answer["pendingTurns"] == 2, "a failed strategy leaves its turns waiting"

    status = facts_status(services)
    assert (status["failures"], status["pendingTurns"], status["added"]) == (1, 2, 0)
    assert status["lastFailure"]["raw"] == NOT_JSON
    assert status["lastFailure"]["message"] == part["failure"]["message"]
    assert call(services, "extraction_status", {})["pendingTurns"] == 2

    # Up to MAX_ATTEMPTS runs fail on the same turns; then the turns are let go and the failure stands.
    for run in range(2, MAX_ATTEMPTS + 1):
        answer = call(services, "memory_extract", {})
        assert answer["run"]["strategies"][0]["failure"]["raw"] == NOT_JSON
        assert answer["pendingTurns"] == (0 if run == MAX_ATTEMPTS else 2)
    assert len(model.calls("record_facts")) == 2 * MAX_ATTEMPTS
    status = facts_status(services)
    assert (status["failures"], status["pendingTurns"], status["added"]) == (MAX_ATTEMPTS, 0, 0)
    assert status["lastFailure"]["raw"] == NOT_JSON
    assert call(services, "memory_list", {"layer": "user"})["memories"] == []

    again = call(services, "memory_extract", {})
    assert (again["run"], again["pendingTurns"]) == (None, 0)
    assert len(model.calls("record_facts")) == 2 * MAX_ATTEMPTS, "nothing waits: the model is not asked"
    assert "lastFailure" in json.dumps(call(services, "extraction_status", {}))


def test_an_answer_that_breaks_the_schema_is_asked_again_once_then_is_a_failure(
    tmp_path: Path, model: ScriptedModel
) -> None:
    unsourced = {"facts": [{"text": "Alice works at Acme.", "subject": "Alice's employer"}]}
    model.script = script(lambda ids: unsourced)
    services = learning(tmp_path, model.url)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    assert len(model.calls("record_facts")) == 2
    failure = answer["run"]["strategies"][0]["failure"]
    assert "does not match the schema at facts/0" in failure["message"], failure
    assert "sourceIds" in failure["message"]
    assert json.loads(failure["raw"]) == unsourced
    assert failure["attempts"] == 2
    assert answer["pendingTurns"] == 2
    assert facts_status(services)["lastFailure"]["raw"] == failure["raw"]
    assert call(services, "memory_list", {"layer": "user"})["memories"] == []


def test_a_second_answer_in_shape_after_one_out_of_shape_is_written(tmp_path: Path, model: ScriptedModel) -> None:
    answers = iter([{"facts": [{"text": "Alice works at Acme."}]}, {"facts": [fact("Alice works at Acme.", "m-1")]}])
    model.script = script(lambda ids: next(answers))
    services = learning(tmp_path, model.url)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    assert len(model.calls("record_facts")) == 2
    (part,) = answer["run"]["strategies"]
    assert part["failure"] is None
    assert [(c["text"], c["decision"]) for c in part["candidates"]] == [("Alice works at Acme.", "added")]
    assert answer["pendingTurns"] == 0
    assert part["inputTokens"] > 0 and part["outputTokens"] > 0, "both calls are counted"
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["metadata"]["source"] == "extraction"
    assert memory["metadata"]["provenance"]["messageIds"] == ["m-1"]


# ================================================================= throttling ===
def test_a_throttled_call_is_retried_with_backoff_and_its_facts_are_written(
    tmp_path: Path, model: ScriptedModel
) -> None:
    answers = iter([Status(429), {"facts": [fact("Alice works at Acme.", "m-1")]}])
    model.script = script(lambda ids: next(answers))
    services = learning(tmp_path, model.url)
    pauses = quiet(services)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    assert len(model.calls("record_facts")) == 2
    assert pauses == [THROTTLE_FIRST_PAUSE]
    (part,) = answer["run"]["strategies"]
    assert part["failure"] is None
    assert [c["decision"] for c in part["candidates"]] == ["added"]
    assert answer["pendingTurns"] == 0
    assert [m["content"] for m in call(services, "memory_list", {"layer": "user"})["memories"]] == [
        "Alice works at Acme."
    ]
    assert facts_status(services)["failures"] == 0


def test_a_model_that_stays_throttled_is_a_failure_after_its_tries_and_the_turns_wait(
    tmp_path: Path, model: ScriptedModel
) -> None:
    model.script = script(lambda ids: Status(429))
    services = learning(tmp_path, model.url)
    pauses = quiet(services)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    assert len(model.calls("record_facts")) == THROTTLE_TRIES, "throttling is retried, never asked twice over"
    assert pauses == [THROTTLE_FIRST_PAUSE * 2**n for n in range(THROTTLE_TRIES - 1)]
    failure = answer["run"]["strategies"][0]["failure"]
    assert "throttling" in failure["message"]
    assert failure["raw"] is None
    assert answer["pendingTurns"] == 2
    assert facts_status(services)["lastFailure"]["message"] == failure["message"]


# ================================================================ candidates ===
def test_more_candidates_than_the_cap_are_refused_as_a_failure_and_nothing_is_written(
    tmp_path: Path, model: ScriptedModel
) -> None:
    model.script = script(
        lambda ids: {"facts": [fact(f"Alice owns bike number {n}.", ids[0], subject=f"bike {n}") for n in range(3)]}
    )
    services = learning(tmp_path, model.url, extraction_max_candidates=2)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    # The whole answer is refused, never cut; the turns are asked again in halves, and a single turn still
    # over the cap is the failure.
    asked = [transcript_ids(request) for request in model.calls("record_facts")]
    assert asked == [["m-1", "m-2"], ["m-1"]]
    (part,) = answer["run"]["strategies"]
    assert part["candidates"] == []
    assert "the cap is 2" in part["failure"]["message"]
    assert "proposed 3 memories for 1 turn(s)" in part["failure"]["message"]
    assert answer["pendingTurns"] == 2
    assert call(services, "memory_list", {"layer": "user"})["memories"] == []
    status = call(services, "extraction_status", {})
    assert status["trigger"]["maxCandidates"] == 2
    assert "the cap is 2" in next(s for s in status["strategies"] if s["strategy"] == "facts")["lastFailure"]["message"]


def test_a_candidate_citing_a_message_outside_the_batch_is_refused_and_one_citing_the_batch_is_added(
    tmp_path: Path, model: ScriptedModel
) -> None:
    model.script = script(
        lambda ids: {
            "facts": [
                fact("Bob works at Initech.", "m-999", subject="Bob's employer"),
                fact("Alice works at Acme.", "m-1", "m-404"),
            ]
        }
    )
    services = learning(tmp_path, model.url)
    call(services, "add_messages", {"messages": TURNS})

    answer = call(services, "memory_extract", {})
    (part,) = answer["run"]["strategies"]
    assert part["failure"] is None
    decided = {c["text"]: c for c in part["candidates"]}
    assert decided["Bob works at Initech."]["decision"] == "refused"
    assert decided["Bob works at Initech."]["reason"] == "it cites no message id of this batch"
    assert decided["Bob works at Initech."]["sourceIds"] == []
    assert decided["Bob works at Initech."]["memoryId"] is None
    assert decided["Alice works at Acme."]["decision"] == "added"
    assert decided["Alice works at Acme."]["sourceIds"] == ["m-1"], "an id outside the batch is dropped"
    (memory,) = call(services, "memory_list", {"layer": "user"})["memories"]
    assert memory["content"] == "Alice works at Acme."
    assert memory["memoryId"] == decided["Alice works at Acme."]["memoryId"]
    assert memory["metadata"]["provenance"]["messageIds"] == ["m-1"]
    assert (facts_status(services)["added"], answer["pendingTurns"]) == (1, 0)


# ============================================================ model unreachable ===
def test_a_model_that_is_down_is_a_recorded_failure_and_nothing_else_breaks(tmp_path: Path) -> None:
    services = learning(tmp_path, f"http://127.0.0.1:{free_port()}/v1", extraction_every_turns=1)
    stored = call(services, "add_messages", {"messages": TURNS})
    assert (stored["stored"], stored["extraction"]) == (2, "queued")

    answer = call(services, "memory_extract", {})
    failure = answer["run"]["strategies"][0]["failure"]
    assert "unreachable" in failure["message"]
    assert (failure["raw"], failure["attempts"]) == (None, 1), "no answer: not asked again in the same run"
    assert answer["pendingTurns"] == 2
    assert facts_status(services)["lastFailure"]["message"] == failure["message"]

    # The worker's round meets the same failure and says so; the turns still wait.
    assert services.learning.run_due() == 1
    assert facts_status(services)["failures"] == 2
    assert call(services, "extraction_status", {})["pendingTurns"] == 2

    # Everything else works: more turns, memories, conversations.
    more = call(services, "add_messages", {"messages": [{"id": "m-3", "role": "user", "content": "I like tea."}]})
    assert (more["stored"], more["pendingTurns"]) == (1, 3)
    added = call(services, "memory_add", {"content": "Alice likes green tea.", "layer": "user"})
    assert [m["memoryId"] for m in call(services, "memory_list", {"layer": "user"})["memories"]] == [added["memoryId"]]
    found = call(
        services,
        "retrieve_conversation",
        {"query": "Acme data engineer", "explanation": "after an outage", "retrieval_strategy": "keyword"},
    )
    assert "m-1" in [c["message_id"] for c in found["data"]["conversations"]]


def test_add_messages_never_waits_for_a_model_that_never_answers(tmp_path: Path, model: ScriptedModel) -> None:
    release = threading.Event()
    model.script = lambda tool, request, ids: Block(release)
    try:
        services = learning(tmp_path, model.url, extraction_every_turns=1)
        stored = call(services, "add_messages", {"messages": TURNS})
        assert (stored["stored"], stored["pendingTurns"], stored["extraction"]) == (2, 2, "queued")
        pair = {
            "message_id": "c-1",
            "explanation": "a pair",
            "user_input": "Where do I work?",
            "agent_response": "At Acme.",
        }
        assert call(services, "add_conversation", pair)["success"] is True
        assert call(services, "extraction_status", {})["pendingTurns"] == 3
        assert model.requests == [], "storing turns sent nothing to the model"
    finally:
        release.set()


# ================================================================ no model ===
def test_strategies_without_a_model_leave_extraction_off_and_write_no_ledger(tmp_path: Path) -> None:
    services = learning(tmp_path, None)
    status = call(services, "extraction_status", {})
    assert status["enabled"] is False
    assert "MNEMO_EXTRACTION_STRATEGIES" in status["howToEnable"]
    assert "MNEMO_OPENAI_BASE_URL" in status["howToEnable"]
    assert [s["strategy"] for s in status["strategies"] if s["enabled"]] == []

    stored = call(services, "add_messages", {"messages": TURNS})
    assert (stored["stored"], stored["pendingTurns"], stored["extraction"]) == (2, 0, "off")
    assert "extraction is off" in stored["message"]
    pair = {"message_id": "c-1", "explanation": "a pair", "user_input": "Hi", "agent_response": "Hello"}
    assert call(services, "add_conversation", pair)["success"] is True

    with pytest.raises(MnemoError) as refused:
        call(services, "memory_extract", {})
    assert refused.value.code == "INVALID_INPUT"
    assert "extraction is off" in refused.value.message
    assert refused.value.details.get("enabled") is False

    assert list(services.records.scan("LEARN")) == [], "no LEARN| or LEARNQ| item without a model"
    assert call(services, "extraction_status", {})["pendingTurns"] == 0


def test_a_dense_batch_over_the_cap_is_asked_in_halves_and_nothing_is_lost(
    tmp_path: Path, model: ScriptedModel
) -> None:
    model.script = script(
        lambda ids: {"facts": [fact(f"Fact {i}.", i, subject=f"s {i}") for i in ids for _ in (0,)] * 2}
    )
    services = learning(tmp_path, model.url, extraction_max_candidates=2)
    call(services, "add_messages", {"messages": TURNS})
    answer = call(services, "memory_extract", {})
    (part,) = answer["run"]["strategies"]
    assert part["failure"] is None
    assert sorted(m["content"] for m in call(services, "memory_list", {"layer": "user"})["memories"]) == [
        "Fact m-1.",
        "Fact m-2.",
    ]
    assert answer["pendingTurns"] == 0


def test_a_model_outage_never_lets_the_turns_go(tmp_path: Path, model: ScriptedModel) -> None:
    model.script = script(lambda ids: Status(503))
    services = learning(tmp_path, model.url)
    call(services, "add_messages", {"messages": TURNS})
    for _ in range(MAX_ATTEMPTS + 2):
        assert call(services, "memory_extract", {})["pendingTurns"] == 2
    model.script = script(lambda ids: {"facts": [fact("Alice works at Acme.", "m-1")]})
    assert call(services, "memory_extract", {})["pendingTurns"] == 0
    assert [m["content"] for m in call(services, "memory_list", {"layer": "user"})["memories"]] == [
        "Alice works at Acme."
    ]

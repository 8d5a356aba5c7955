"""The profile strategy: one running profile per user, rewritten from the last one and what changed.

With a scripted OpenAI-compatible model: the profile is built after the run's facts and preferences are
written, cites the memories it was built from (never turns), supersedes the last one, is refused (never
cut) past ``maxTokens`` with what it would have taken in left for the next rewrite, and extraction_status
shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool
from tests.support.helpers import ctx
from tests.support.scripted_model import ScriptedModel

ALICE = ctx("alice", session="s1")
FACTS = {
    "m1": ("Alice lives in Lisbon.", "Alice's home city"),
    "m2": ("Alice works at Acme.", "Alice's employer"),
    "m3": ("Alice lives in Porto.", "Alice's home city"),
}


class Profiler:
    """The scripted model: facts per turn; a profile made of the given memories' texts (or ``long``)."""

    def __init__(self) -> None:
        self.long = False
        self.prompts: list[str] = []

    def __call__(self, tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
        if tool == "record_facts":
            return {"facts": [{"text": FACTS[i][0], "subject": FACTS[i][1], "sourceIds": [i]} for i in ids]}
        if tool == "record_profile":
            prompt = request["messages"][-1]["content"]
            self.prompts.append(prompt)
            lines = [line for line in prompt.splitlines() if line.startswith("[mem_")]
            memory_ids = [line[1 : line.index("]")] for line in lines]
            text = "Alice: " + " ".join(line.split("] ", 1)[1] for line in lines)
            return {"profile": [{"text": "word " * 400 if self.long else text, "sourceIds": memory_ids}]}
        return None


@pytest.fixture
def profiler() -> Profiler:
    return Profiler()


@pytest.fixture
def services(tmp_path: Path, profiler: Profiler) -> Iterator[Services]:
    model = ScriptedModel(profiler)
    yield Services(
        Settings(
            data_dir=tmp_path,
            embedder="hashing",
            openai_base_url=model.url,
            extraction_strategies=("facts", "profile"),
            extraction_judge=False,
            extraction_config={"profile": {"maxTokens": 100}},
        )
    )
    model.close()


def call(services: Services, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(name).invoke(services, ALICE, payload)


def say(services: Services, *ids: str) -> dict[str, Any]:
    messages = [{"id": i, "role": "user", "content": f"turn {i}", "at": f"2025-03-0{i[1]}T09:00:00Z"} for i in ids]
    call(services, "add_messages", {"messages": messages})
    return call(services, "memory_extract", {})


def profiles(services: Services) -> list[dict[str, Any]]:
    listed = call(services, "memory_list", {"layer": "user", "limit": 100})["memories"]
    return [m for m in listed if m["metadata"].get("strategy") == "profile"]


def test_the_profile_is_built_from_the_memories_a_run_wrote_and_rewritten_on_change(
    services: Services, profiler: Profiler
) -> None:
    run = say(services, "m1", "m2")
    parts = {part["strategy"]: part for part in run["run"]["strategies"]}
    assert list(parts) == ["facts", "profile"], "the profile runs after the facts it reads"
    written = {c["memoryId"] for c in parts["facts"]["candidates"]}
    (first,) = parts["profile"]["candidates"]
    assert first["decision"] == "added" and first["sourceIds"] == []
    (profile,) = profiles(services)
    assert profile["content"] == "Alice: Alice lives in Lisbon. Alice works at Acme."
    provenance = profile["metadata"]["provenance"]
    assert set(provenance["memoryIds"]) == written and provenance["messageIds"] == [], "memories, never turns"
    assert run["pendingTurns"] == 0, "the profile reads no turn: the turns are settled"

    run = say(services, "m3")
    (second,) = {p["strategy"]: p for p in run["run"]["strategies"]}["profile"]["candidates"]
    assert (second["decision"], second["supersedes"]) == ("superseded", first["memoryId"])
    assert "Profile so far:\nAlice: Alice lives in Lisbon. Alice works at Acme." in profiler.prompts[-1]
    assert "[mem_" in profiler.prompts[-1] and "Alice lives in Porto." in profiler.prompts[-1]
    current = [p for p in profiles(services) if not p.get("supersededBy")]
    assert [p["memoryId"] for p in current] == [second["memoryId"]]
    status = call(services, "extraction_status", {})
    assert status["profile"]["memoryId"] == second["memoryId"]
    assert status["profile"]["tokens"] <= 100 and status["profile"]["pending"] == 0
    (row,) = [s for s in status["strategies"] if s["strategy"] == "profile"]
    assert (row["enabled"], row["added"], row["superseded"], row["pendingTurns"]) == (True, 1, 1, 0)


def test_a_profile_over_max_tokens_is_refused_and_its_memories_wait_for_the_next(
    services: Services, profiler: Profiler
) -> None:
    profiler.long = True
    run = say(services, "m1")
    part = {p["strategy"]: p for p in run["run"]["strategies"]}["profile"]
    assert "over maxTokens 100: refused, not cut" in part["failure"]["message"]
    assert profiles(services) == []
    assert call(services, "extraction_status", {})["profile"] is None
    profiler.long = False
    say(services, "m2")
    (profile,) = profiles(services)
    assert profile["content"] == "Alice: Alice lives in Lisbon. Alice works at Acme.", "the left memory taken in"


def test_a_run_that_changes_no_fact_leaves_the_profile_alone(services: Services, profiler: Profiler) -> None:
    say(services, "m1")
    call(
        services,
        "add_messages",
        {"messages": [{"id": "m1b", "role": "user", "content": "hi", "at": "2025-03-05T09:00:00Z"}]},
    )
    # The model answers the same fact for the new turn (its own id): kept, nothing changed.
    FACTS["m1b"] = FACTS["m1"]
    try:
        run = call(services, "memory_extract", {})
    finally:
        del FACTS["m1b"]
    assert [p["strategy"] for p in run["run"]["strategies"]] == ["facts"]
    assert len(profiler.prompts) == 1


def test_a_one_sentence_rewrite_and_a_return_to_an_earlier_wording_are_new_versions(
    services: Services, profiler: Profiler
) -> None:
    """A running profile is never "the same" by similarity, and saying an earlier version again from other
    memories is a new version, not the old one kept."""
    texts = iter(["Alice lives in Lisbon. She works at Acme.", "Alice lives in Porto. She works at Acme."])
    texts_again = ["Alice lives in Lisbon. She works at Acme."]

    def answer(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
        if tool != "record_profile":
            return profiler(tool, request, ids)
        lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[mem_")]
        cited = [line[1 : line.index("]")] for line in lines]
        text = next(texts, None) or texts_again.pop()
        return {"profile": [{"text": text, "sourceIds": cited}]}

    services.settings  # noqa: B018 - the fixture's server is reached through the settings' URL
    model = ScriptedModel(answer)
    swapped = Services(services.settings.model_copy(update={"openai_base_url": model.url}))
    try:
        FACTS["m4"] = ("Alice lives in Lisbon again.", "Alice's home city")
        decisions = []
        for turn in ("m1", "m3", "m4"):
            run = say(swapped, turn)
            decisions += [
                c["decision"] for c in {p["strategy"]: p for p in run["run"]["strategies"]}["profile"]["candidates"]
            ]
    finally:
        del FACTS["m4"]
        model.close()
    assert decisions == ["added", "superseded", "superseded"]
    (current,) = [p for p in profiles(swapped) if not p.get("supersededBy")]
    assert current["content"] == "Alice lives in Lisbon. She works at Acme."
    assert len(profiles(swapped)) == 3, "three versions, each kept"

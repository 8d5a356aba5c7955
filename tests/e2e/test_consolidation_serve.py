"""The three ways consolidation used to contradict itself, through `mnemo serve` with a scripted model.

The real command as a child process, its extraction model the scripted OpenAI-compatible server (judge off),
and every call over HTTP with the X-Mnemo-* identity headers: an echoed fact is one memory citing both turns,
a change made in a later session supersedes the fact (search never answers both), and two wordings of one
subject in one batch are one memory. Then, the server stopped, `mnemo extract --repair` merges duplicates as
the code before the subject pointer wrote them, twice over with the same result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemo.memory.extracted import subject_key
from tests.support.helpers import http_call, serve_process
from tests.support.scripted_model import ScriptedModel

#: What the scripted model proposes for each turn id (the facts strategy).
FACTS: dict[str, list[tuple[str, str]]] = {
    "a1": [("Alice works at Acme Corp.", "Alice's employer")],
    "a2": [("Alice works at Acme Corp.", "Alice's employer")],  # the assistant's echo
    "b1": [("Alice works at Globex.", "Alice's employer")],
    "c1": [("Alice is vegetarian.", "Alice's diet")],
    "c2": [("Alice follows a vegetarian diet.", "alice's diet")],
}


def script(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
    if tool != "record_facts":
        return None
    return {"facts": [{"text": t, "subject": s, "sourceIds": [i]} for i in ids for t, s in FACTS.get(i, [])]}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    model = ScriptedModel(script)
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    env.update(
        MNEMO_OPENAI_BASE_URL=model.url,
        MNEMO_EXTRACTION_STRATEGIES="facts",
        MNEMO_EXTRACTION_JUDGE="false",
        MNEMO_EMBEDDER="hashing",
    )
    data = tmp_path / "data"
    process, url = serve_process(data, env)
    try:
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        model.close()


def call(url: str, tool: str, body: dict[str, Any], session: str = "s1") -> dict[str, Any]:
    status, answer = http_call(url, tool, body, tenant="acme", user="alice", session=session)
    assert status == 200, answer
    return answer


def say(url: str, session: str, *turns: tuple[str, str, str, str]) -> dict[str, Any]:
    messages = [{"id": i, "role": role, "content": text, "at": at} for i, role, text, at in turns]
    call(url, "add_messages", {"messages": messages}, session)
    return call(url, "memory_extract", {}, session)


def current(url: str, subject: str) -> list[dict[str, Any]]:
    found = call(url, "memory_search", {"query": "Alice", "threshold": 0, "limit": 50})["results"]
    return [r for r in found if r["metadata"].get("subjectKey") == subject_key(subject)]


def test_echo_change_and_paraphrase_through_mnemo_serve(served: str) -> None:
    url = served
    say(
        url,
        "s1",
        ("a1", "user", "I started a job at Acme", "2025-03-01T09:00:00Z"),
        ("a2", "assistant", "Congratulations on the Acme job!", "2025-03-01T09:00:05Z"),
    )
    (acme,) = current(url, "Alice's employer")
    assert acme["content"] == "Alice works at Acme Corp."
    assert acme["metadata"]["provenance"]["messageIds"] == ["a1", "a2"], "one memory citing both turns"

    run = say(url, "s2", ("b1", "user", "I left Acme and joined Globex", "2025-06-01T09:00:00Z"))
    (candidate,) = run["run"]["strategies"][0]["candidates"]
    assert (candidate["decision"], candidate["supersedes"]) == ("superseded", acme["memoryId"])
    assert [r["content"] for r in current(url, "Alice's employer")] == ["Alice works at Globex."]
    everything = call(url, "memory_search", {"query": "Alice works at", "threshold": 0, "includeSuperseded": True})
    assert {r["content"]: r["supersededBy"] for r in everything["results"]} == {
        "Alice works at Acme Corp.": candidate["memoryId"],
        "Alice works at Globex.": None,
    }

    say(
        url,
        "s3",
        ("c1", "user", "I'm vegetarian", "2025-07-01T09:00:00Z"),
        ("c2", "user", "No meat for me, ever", "2025-07-01T09:01:00Z"),
    )
    (diet,) = current(url, "Alice's diet")
    assert diet["content"] == "Alice follows a vegetarian diet."
    assert diet["metadata"]["provenance"]["messageIds"] == ["c1", "c2"]
    status = call(url, "extraction_status", {}, "s3")
    facts = next(s for s in status["strategies"] if s["strategy"] == "facts")
    assert (facts["added"], facts["merged"]) == (1, 1)


def test_mnemo_extract_repair_merges_old_duplicates_twice_over_with_the_same_result(tmp_path: Path) -> None:
    from mnemo.runtime import Services
    from mnemo.settings import Settings
    from tests.service.test_consolidation_invariants import ALICE, legacy

    data = tmp_path / "data"
    services = Services(Settings(data_dir=data, embedder="hashing"))
    first = legacy(services, "Alice works at Acme Corp.", "Alice's employer", "m1", "2025-03-01T09:00:00Z")
    second = legacy(services, "Alice is employed by Acme.", "Alice's employer", "m2", "2025-03-02T09:00:00Z")
    del services
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    command = [sys.executable, "-m", "mnemo.cli", "extract", "--repair", "--data-dir", str(data)]
    reports = []
    for _ in range(2):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=True)
        reports.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [(r["duplicates"], r["pointers"], r["done"]) for r in reports] == [(1, 1, True), (0, 0, True)]
    services = Services(Settings(data_dir=data, embedder="hashing"))
    stored = services.memory.extracted.get(ALICE.scope_key("user"), first)
    assert stored is not None and stored.data["supersededBy"] == second

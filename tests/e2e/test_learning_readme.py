"""The README's "memory that learns" curl block, run as written against `mnemo serve` on a scripted model.

The README starts the server on Ollama; here the same command runs with ``MNEMO_OPENAI_BASE_URL`` on a
scripted OpenAI-compatible server (tests/support/scripted_model.py) that answers the extraction requests
the server really sends. Everything else is the README test's: the block under ``bash -euo pipefail``,
every answer ``success: true``, and each ``# {...}`` comment met by an answer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_readme_examples import Clone, check_answers, examples, free_port, run_shell, wait_for_health
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.model


def script(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
    if tool == "record_facts" and "t3" in ids:
        return {
            "facts": [
                {
                    "text": "Alice moved to Porto in June 2025.",
                    "subject": "alice's home city",
                    "sourceIds": ["t3"],
                    "occurredAt": "2025-06",
                }
            ]
        }
    if tool == "record_facts":
        return {
            "facts": [
                {
                    "text": "Alice moved to Lisbon in February 2025.",
                    "subject": "Alice's home city",
                    "sourceIds": ["t1"],
                    "occurredAt": "2025-02",
                }
            ]
        }
    if "t1" not in ids:
        return None  # the later session's turn states no preference, and its summary is the model's empty answer
    if tool == "record_preferences":
        return {"preferences": [{"text": "Alice always books window seats.", "subject": "seats", "sourceIds": ["t1"]}]}
    if tool == "record_summary":
        return {"summary": [{"text": "Alice said she moved to Lisbon; she books window seats.", "sourceIds": ids}]}
    return None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Clone, ScriptedModel]]:
    model = ScriptedModel(script)
    folder = tmp_path_factory.mktemp("clone")
    (folder / ".venv").symlink_to(Path(sys.prefix))
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    env.update(
        MNEMO_OPENAI_BASE_URL=model.url,
        MNEMO_OPENAI_MODEL="llama3.2",
        MNEMO_EXTRACTION_STRATEGIES="facts,preferences,summary",
    )
    port = free_port()
    server = subprocess.Popen(
        [".venv/bin/mnemo", "serve", "--port", str(port), "--data-dir", ".mnemo"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    clone = Clone(folder, port, env, {})
    wait_for_health(clone.url, server, 120)
    try:
        yield clone, model
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        model.close()


def test_the_readme_conversation_becomes_memories(served: tuple[Clone, ScriptedModel]) -> None:
    clone, model = served
    block = examples()["learning-curl"]
    done = run_shell(clone, block)
    printed = check_answers(block, done.stdout)
    _, extracted, found, status, _, changed, everything = printed
    (change,) = changed["run"]["strategies"][0]["candidates"]
    (lisbon,) = [r for r in everything["results"] if "Lisbon" in r["content"]]
    assert (change["decision"], change["supersedes"]) == ("superseded", lisbon["memoryId"])
    assert lisbon["supersededBy"] == change["memoryId"]
    assert extracted["pendingTurns"] == 0
    assert {part["strategy"] for part in extracted["run"]["strategies"]} == {"facts", "preferences", "summary"}
    fact = next(r for r in found["results"] if "fact" in r["tags"])
    assert fact["sources"][0]["messageId"] == "t1"
    assert status["enabled"] is True and status["recentRuns"][0]["runId"] == extracted["run"]["runId"]
    # The model got exactly the documented request: the tool forced, the model the server was told.
    request = model.calls("record_facts")[0]
    assert request["model"] == "llama3.2"
    assert request["tool_choice"] == {"type": "function", "function": {"name": "record_facts"}}
    assert "[t1] 2025-03-03T09:00:00.000000Z user: I moved to Lisbon last month." in request["messages"][-1]["content"]

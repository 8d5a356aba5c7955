"""mnemo.client.strands' session manager and context hook: Strands agents (their models scripted) that keep
their sessions in a real local server, remember across sessions through memory_context, get their history
back exactly, behave as Strands' own repository tests ask, and store nothing twice when answers are lost.

As in test_client_strands.py, Strands and the client wheel are installed into a virtual environment of their
own (Strands pins an older MCP SDK than the service), and the scripts tests/e2e/strands_session_*.py run
there against the server."""

from __future__ import annotations

import json
import re
import subprocess
import venv
from pathlib import Path
from typing import Any

import pytest
from client_wheel import build_client_wheel

from helpers import local_server
from mnemo.runtime import Services

STRANDS = "strands-agents==1.62.0"
SYSTEM = "You are Alice's travel assistant."


@pytest.fixture(scope="module")
def strands_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with Strands Agents and the client wheel (and nothing of the service)."""
    root = tmp_path_factory.mktemp("strands-session")
    wheel = build_client_wheel(root)
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", STRANDS, str(wheel)], check=True, capture_output=True)
    return python


def run(python: Path, script: str, services: Services) -> dict[str, Any]:
    """``script`` (a strands_session_*.py beside this file) against a server over ``services``; its JSON line."""
    with local_server(services) as url:
        done = subprocess.run(
            [python, Path(__file__).with_name(script), url], capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_an_agent_remembers_across_sessions_and_is_restored_exactly(strands_python: Path, services: Services) -> None:
    seen = run(strands_python, "strands_session_remember.py", services)
    # The same session, a new Agent: every message (text, image bytes, tool use, tool result) and the state.
    assert seen["restored_same"] is True
    assert seen["restored_state"] == {"trips": 1}
    assert seen["blocks"] == [[["text"], ["image"]], [["text"], ["toolUse"]], [["toolResult"]], [["text"]]]
    assert seen["image_bytes"] is True
    assert seen["tool_result"] == "success"
    # A new user knows nothing yet: the prompt is the agent's own.
    assert seen["first_prompts"] == [SYSTEM, SYSTEM]
    # The words said went to conversation memory as turns of their session, each once; tool blocks did not.
    assert seen["waiting_after_invocation"] == 0
    assert [(t["role"], t["text"]) for t in seen["turns_1"]] == [
        ("user", "I moved to Lisbon last month."),
        ("assistant", "I'll remember that."),
        ("assistant", "Noted: you live in Lisbon now."),
    ]
    assert [(t["role"], t["text"]) for t in seen["turns_2"]] == [
        ("user", "Where do I live now?"),
        ("assistant", "You live in Lisbon."),
        ("user", "What should I pack?"),
        ("assistant", "Pack light."),
    ]
    ids = [t["id"] for t in seen["turns_1"] + seen["turns_2"]]
    assert len(set(ids)) == len(ids)
    # Another session: the fact stored in the first reaches the model's system prompt, once per invocation.
    first, second = seen["second_prompts"]
    for prompt in (first, second):
        assert prompt.startswith(SYSTEM + "\n<memory_context>\n")
        assert prompt.endswith("\n</memory_context>")
        assert prompt.count("<memory_context>") == 1
        assert "Alice lives in Lisbon" in prompt
    assert seen["second_prompt_after"] == SYSTEM
    # The hook alone, sections passed on: memories only, and no prompt left behind on an agent without one.
    (third,) = seen["third_prompts"]
    assert third.startswith("<memory_context>\n## Memories\n")
    assert "Alice lives in Lisbon" in third
    assert "## From past conversations" not in third
    assert seen["third_prompt_after"] is None


def test_the_repository_behaves_as_strands_own_tests_ask(strands_python: Path, services: Services) -> None:
    seen = run(strands_python, "strands_session_repository.py", services)
    assert seen["created"] is True
    assert seen["created_type"] is True
    assert seen["existing_reused"] is True
    assert seen["read_session"] is True
    assert seen["read_missing_session"] is None
    assert seen["create_session_twice"] == "SessionException: Session test-session already exists"
    assert seen["read_agent"] is True
    assert seen["read_missing_agent"] is None
    assert seen["updated_agent"] == [{"updated": "value"}, True]  # its creation time kept
    assert seen["update_missing_agent"].startswith("SessionException: Agent ghost in session test-session")
    assert seen["update_over_a_change"].startswith("SessionException: Agent test-agent in session test-session was")
    assert seen["read_message"] == "Message 1"
    assert seen["read_missing_message"] is None
    assert seen["list_all"] == list(range(10))
    assert seen["list_limit"] == [0, 1, 2]
    assert seen["list_offset"] == [5, 6, 7, 8, 9]
    assert seen["list_window"] == [4, 5]
    assert seen["list_new_agent"] == []
    assert seen["create_message_twice"].startswith("SessionException: Message 0 of agent test-agent")
    assert seen["updated_message"] == "Updated content"
    assert seen["update_missing_message"] == "SessionException: Message 500 does not exist"
    assert seen["invalid_message_id"].startswith("ValueError: message_id=<x>")
    assert seen["deleted"] == [None, []]
    assert seen["delete_missing"] == "SessionException: Session nonexistent-session does not exist"
    assert seen["corrupted"].startswith("SessionException: .strands/sessions/broken/session.json is not the JSON")
    assert seen["odd_ids"] == ["chat:42/a", "..", "chat:42/b"]
    assert seen["same_agent_id"] == "SessionException: The `agent_id` of an agent must be unique in a session."
    assert seen["restored"] == ["value", ["Hello"], True]
    assert seen["summarized"] == [["assistant", "summary"], ["user", "Hello"]]
    assert seen["fixed_tool_use"] == [["toolUse"], ["toolResult"], ["text"]]
    assert seen["fixed_result"] == "error"
    assert seen["swarm"] == ["completed", ["solo"]]
    # The card number never reached conversation memory: the turn waited, and took the redaction.
    assert seen["redacted_record"] == ["[redacted]", "[redacted]"]
    assert seen["redacted_turns"] == ["Blocked.", "[redacted]"]
    assert seen["unreachable"].startswith("SessionException: Reading session s failed: TRANSPORT")
    assert seen["api_key"].startswith("ValueError: MnemoSessionManager needs an identity")


def test_a_lost_answer_stores_nothing_twice(strands_python: Path, services: Services) -> None:
    """Every file_write and add_messages is first answered 504 after it ran: the manager sends it again,
    recognises its own write, and ends with what a conversation without lost answers stores."""
    seen = run(strands_python, "strands_session_retry.py", services)
    assert seen["lost"]["file_write"] >= 6 and seen["lost"]["add_messages"] == 2
    assert seen["sent"] == {"file_write": 2 * seen["lost"]["file_write"], "add_messages": 4}
    assert seen["versions_flaky"] == seen["versions_steady"]
    assert seen["versions_flaky"]["session.json"] == 1
    assert seen["versions_flaky"]["agents/default/messages/0000000003.json"] == 1
    assert seen["turns_flaky"] == seen["turns_steady"]
    assert seen["turns_flaky"] == [
        ["assistant", "Lisbon it is."],
        ["assistant", "Noted, window seats."],
        ["user", "Book me a flight to Lisbon."],
        ["user", "I prefer window seats."],
    ]
    assert seen["restored_same"] is True
    assert seen["restored_state"] == {"seat": "window"}


def test_the_documented_example_runs_as_written(strands_python: Path, services: Services, tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "strands.md").read_text()
    found = re.search(r"<!-- example: strands-session -->\n```python\n(.*?)```", doc, re.S)
    assert found is not None
    with local_server(services) as url:
        script = tmp_path / "example.py"
        script.write_text(found[1].replace("http://127.0.0.1:8765", url))
        done = subprocess.run([strands_python, script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    restored, heading, _day, said, answered = done.stdout.strip().splitlines()
    assert (restored, heading) == ("True", "## From past conversations")
    assert (said, answered) == ("user: I moved to Lisbon last month.", "assistant: Noted: you live in Lisbon.")

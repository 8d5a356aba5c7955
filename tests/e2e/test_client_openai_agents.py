"""mnemo.client.openai_agents: ``MnemoSession`` (the OpenAI Agents SDK's ``Session`` on Mnemo) and
``mnemo_instructions``, against a real local server.

The SDK pins its own MCP SDK, which may differ from the service's, so, as a user would, the test installs
the SDK and the client wheel (with its ``openai-agents`` extra) into a virtual environment of their own and
runs scripts there: openai_agents_session_suite.py (the SDK's own session test suite, adapted),
openai_agents_scenarios.py (item shapes, a Runner, retries, instructions), with the scripted model of
openai_agents_fake_model.py. What the scripts saw is checked here, with the service's own client where the
server's state is looked at."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from client_wheel import build_client_wheel

from helpers import local_server
from mnemo.client import LocalIdentity, MnemoClient, NotFoundError
from mnemo.runtime import Services

OPENAI_AGENTS = "openai-agents==0.24.0"
HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "openai-agents.md"

#: The cases of the adapted SDK suite (openai_agents_session_suite.py): each must have run, and passed.
SUITE_CASES = [
    "test_sqlalchemy_session_direct_ops",
    "test_sqlalchemy_session_can_store_non_ascii_without_escaping",
    "test_runner_integration",
    "test_session_isolation",
    "test_get_items_with_limit",
    "test_pop_from_empty_session",
    "test_concurrent_pop_item_returns_each_row_once",
    "test_pop_item_skips_corrupt_most_recent",
    "test_get_items_limit_skips_corrupt_newest_rows",
    "test_get_items_limit_returns_fewer_when_history_exhausted",
    "test_pop_item_returns_none_after_dropping_only_corrupt_rows",
    "test_add_empty_items_list",
    "test_add_items_concurrent_first_access_with_create_tables",
    "test_add_items_concurrent_first_write_after_tables_exist",
    "test_get_items_same_timestamp_consistent_order",
    "test_pop_item_same_timestamp_returns_latest",
    "test_get_items_orders_by_id_for_ties",
    "test_mutation_cancellation_waits_for_transaction_exit_add",
    "test_mutation_cancellation_waits_for_transaction_exit_pop",
    "test_mutation_cancellation_waits_for_transaction_exit_clear",
    "test_session_settings_default",
    "test_session_settings_from_url_class",
    "test_session_settings_from_url_dictionary",
    "test_get_items_uses_session_settings_limit",
    "test_get_items_explicit_limit_overrides_session_settings",
    "test_runner_with_session_settings_override",
]


@pytest.fixture(scope="module")
def agents_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with the OpenAI Agents SDK and the client wheel (and nothing of the service)."""
    root = tmp_path_factory.mktemp("openai-agents")
    wheel = build_client_wheel(root)
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", OPENAI_AGENTS, f"{wheel}[openai-agents]"],
        check=True,
        capture_output=True,
    )
    return python


def run(python: Path, *args: str | Path, timeout: int = 300) -> Any:
    """Runs a script in the SDK's environment; the JSON of its last line."""
    env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    done = subprocess.run([python, *args], capture_output=True, text=True, env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def alice(url: str, session: str | None = None, project: str | None = "atlas") -> MnemoClient:
    return MnemoClient(url, auth=LocalIdentity(user="alice", project=project, session=session))


def turns_of(url: str, session: str) -> list[tuple[str, str, str]]:
    """The session's stored turns, oldest first: (message id, role, text)."""
    found = alice(url, session).call(
        "retrieve_conversation",
        {"query": "turns", "explanation": "check the stored turns", "retrieval_strategy": "recent", "max_results": 50},
    )["data"]["conversations"]
    mine = [c for c in found if c["meta_data"].get("session") == session]
    mine.sort(key=lambda c: c["conversation_timestamp"])
    return [
        (c["message_id"], c["meta_data"]["mnemo_message"]["role"], c["user_input"] or c["agent_response"]) for c in mine
    ]


def test_the_sdks_session_suite_passes_on_a_mnemo_session(agents_python: Path, services: Services) -> None:
    with local_server(services) as url:
        results = run(agents_python, HERE / "openai_agents_session_suite.py", url, timeout=600)
    assert list(results) == SUITE_CASES
    assert {name: outcome for name, outcome in results.items() if outcome != "ok"} == {}


def test_every_item_shape_round_trips_and_user_and_assistant_text_become_turns(
    agents_python: Path, services: Services
) -> None:
    with local_server(services) as url:
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "shapes", url)
        turns = turns_of(url, "shapes-1")
        log = alice(url, "shapes-1", project=None).call("file_read", {"path": seen["path"]})
        with pytest.raises(NotFoundError):  # the project's workspace does not hold it
            alice(url, "shapes-1").call("file_read", {"path": seen["path"]})
        with pytest.raises(NotFoundError):  # nor does another user's
            MnemoClient(url, auth=LocalIdentity(user="bob")).call("file_read", {"path": seen["path"]})
    sent = seen["sent"]
    assert seen["got"] == sent
    assert seen["fresh"] == sent
    assert seen["last2"] == sent[-2:]
    assert seen["popped"] == sent[-1]
    assert seen["afterPop"] == sent[:-1]
    assert seen["path"] == "openai-agents/sessions/shapes-1.jsonl"
    header, *entries = log["content"].rstrip("\n").split("\n")  # not splitlines: U+2028 is inside a line
    assert json.loads(header)["session"] == "shapes-1"
    assert [json.loads(line)["item"] for line in entries] == sent[:-1]
    # Only the user's and the assistant's text became turns, in order; the popped item's turns stay.
    long_text = sent[-1]["content"]
    assert [(role, text) for _, role, text in turns] == [
        ("user", sent[0]["content"]),
        ("user", "What is in this picture?"),
        ("assistant", "Let me check the weather."),
        ("assistant", "It is 22°C in Lisbon.\nI cannot share the exact address."),
        ("assistant", long_text[:10_000]),
        ("assistant", long_text[10_000:]),
    ]
    ids = [message_id for message_id, _, _ in turns]
    epoch = json.loads(header)["epoch"]
    assert ids == [f"oa-{epoch}-{n}" for n in (0, 1, 3, 7)] + [f"oa-{epoch}-8.0", f"oa-{epoch}-8.1"]


def test_a_runner_sees_the_sessions_history_on_its_second_turn(agents_python: Path, services: Services) -> None:
    with local_server(services) as url:
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "runner", url)
        turns = turns_of(url, "runner-1")
    assert seen["outputs"] == ["It is sunny in Lisbon.", "You asked about Lisbon."]
    first_turn = seen["afterFirst"]
    assert [item.get("type", "message") for item in first_turn] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert first_turn[0] == {"role": "user", "content": "What is the weather in Lisbon?"}
    # The second run's model call got the first run's items, as stored, then the new question.
    assert seen["calls"][-1]["input"] == [*first_turn, {"role": "user", "content": "Which city did I ask about?"}]
    assert seen["items"][: len(first_turn)] == first_turn
    assert seen["items"][-1]["content"][0]["text"] == "You asked about Lisbon."
    assert [(role, text) for _, role, text in turns] == [
        ("user", "What is the weather in Lisbon?"),
        ("assistant", "It is sunny in Lisbon."),
        ("user", "Which city did I ask about?"),
        ("assistant", "You asked about Lisbon."),
    ]


GATEWAY_TIMEOUT = {
    "success": False,
    "errorCode": "TIMEOUT",
    "message": "Endpoint request timed out",
    "details": {},
    "retryable": True,
}


@contextmanager
def gateway(upstream: str, plan: dict[str, list[str]]) -> Iterator[str]:
    """A gateway in front of the server, as API Gateway is: each call of a tool named in ``plan`` takes the
    next step, ``pass`` (forwarded, answered), ``ran`` (forwarded, then a 504: it ran, the caller cannot know)
    or ``lost`` (a 504 without forwarding); other calls pass. Yields its URL."""
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            tool = self.path.rsplit("/", 1)[-1]
            with lock:
                steps = plan.get(tool) or []
                step = steps.pop(0) if steps else "pass"
            status, answer = 504, json.dumps(GATEWAY_TIMEOUT).encode()
            if step != "lost":
                headers = {k: v for k, v in self.headers.items() if k.lower().startswith(("x-mnemo-", "content-type"))}
                request = urllib.request.Request(upstream + self.path, data=body, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        forwarded = response.status, response.read()
                except urllib.error.HTTPError as error:
                    forwarded = error.code, error.read()
                if step == "pass":
                    status, answer = forwarded
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_a_call_that_may_have_run_is_never_applied_twice(agents_python: Path, services: Services) -> None:
    """The first add's log write and its turns run but are answered 504; the second add's first write is lost
    (504, never run); the pop's write runs and is answered 504. The session finds out which landed."""
    plan = {"file_write": ["ran", "lost", "pass", "ran"], "add_messages": ["ran"]}
    with local_server(services) as url, gateway(url, plan) as through:
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "retries", through)
        turns = turns_of(url, "retries-1")
        log = alice(url, "retries-1", project=None).call(
            "file_read", {"path": "openai-agents/sessions/retries-1.jsonl"}
        )
    assert plan == {"file_write": [], "add_messages": []}  # every fault was met
    assert seen["items"] == [
        {"role": "user", "content": "I prefer aisle seats."},
        {"role": "assistant", "content": "Noted."},
    ]
    assert seen["popped"] == {"role": "user", "content": "And I fly from Porto."}
    assert log["version"] == 3  # created, appended, popped: one write each
    assert [(role, text) for _, role, text in turns] == [
        ("user", "I prefer aisle seats."),
        ("assistant", "Noted."),
        ("user", "And I fly from Porto."),
    ]


def test_a_session_refuses_what_mnemo_cannot_keep(agents_python: Path, services: Services) -> None:
    with local_server(services) as url:
        alice(url, "taken", project=None).call(
            "file_write", {"path": "openai-agents/sessions/taken.jsonl", "content": "mine\n"}
        )
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "refusals", url)
        kept = alice(url, "taken", project=None).call("file_read", {"path": "openai-agents/sessions/taken.jsonl"})
        untouched = alice(url, "not-json", project=None).call("file_list", {"path": "openai-agents/"})
    assert seen["badId"] == ["IdentityValueError", "session"]
    assert seen["apiKey"] == "ValueError"
    assert seen["notJson"] == "TypeError"
    assert seen["notALog"] == ["ValueError", "ValueError"]
    assert kept["content"] == "mine\n"
    assert [entry["path"] for entry in untouched["entries"]] == ["openai-agents/sessions/taken.jsonl"]


def test_each_user_of_a_hosted_agent_has_a_session_of_their_own(agents_python: Path, services: Services) -> None:
    with local_server(services) as url:
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "users", url)
        carol = MnemoClient(url, auth=LocalIdentity(user="carol")).call("file_list", {"path": "openai-agents/"})
    assert seen == {
        "carol": [{"role": "user", "content": "Carol's question"}],
        "dave": [{"role": "user", "content": "Dave's question"}],
    }
    # The delegate named the project; the log is still carol's own workspace file.
    assert [entry["path"] for entry in carol["entries"]] == ["openai-agents/sessions/shared-1.jsonl"]


def test_the_log_path_keeps_every_session_id_apart() -> None:
    """In the service's environment (no SDK): the module imports without the SDK, and the path is the id,
    with the characters a path refuses written =XX (so no two ids share a file)."""
    from mnemo.client.openai_agents import log_path

    assert "agents" not in sys.modules
    assert log_path("chat-42") == "openai-agents/sessions/chat-42.jsonl"
    assert log_path("a:b/c=d") == "openai-agents/sessions/a=3Ab=2Fc=3Dd.jsonl"
    assert log_path("..") == "openai-agents/sessions/...jsonl"
    assert log_path("a=3Ab") != log_path("a:b")
    assert re.fullmatch(r"openai-agents/sessions/long/[0-9a-f]{64}\.jsonl", log_path("x/" * 100))
    assert log_path("x/" * 100) != log_path("x/" * 99 + "y/")


def test_mnemo_instructions_put_memory_context_into_the_instructions(agents_python: Path, services: Services) -> None:
    """The model's instructions are the base and memory_context's answer for the run's message, as of just
    before the message was stored (the SDK stores it before calling the model): alice's memory is in it, the
    question is not, though memory_context asked now finds it among the turns."""
    with local_server(services) as url:
        seen = run(agents_python, HERE / "openai_agents_scenarios.py", "instructions", url)
    context = seen["before"]["context"]
    assert seen["instructions"] == f"{seen['base']}\n\n{context}"
    assert "green tea" in context.lower()
    assert seen["question"] not in context
    assert seen["question"] in seen["now"]["context"]


def test_the_docs_example_runs_as_written(agents_python: Path, services: Services, tmp_path: Path) -> None:
    """docs/openai-agents.md's first python block, against a real server (only its port changed); what it
    prints is what its comments say."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    code = block.group(1)
    with local_server(services) as url:
        script = tmp_path / "example.py"
        script.write_text(code.replace("http://127.0.0.1:8765", url))
        env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"}
        done = subprocess.run([agents_python, script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    promised = re.findall(r"print\(.*\)  # (.*)", code)
    assert done.stdout.splitlines() == promised

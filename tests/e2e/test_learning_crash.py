"""kill -9 in the middle of an extraction run: started again, it skips no turn and writes no memory twice.

A child process (this interpreter on a small script) stores 8 turns of alice's session with add_messages
and runs memory_extract with the facts and preferences strategies on the scripted model
(tests/support/scripted_model.py), which runs here in the test's process and so outlives the child: facts
are answered at once, and the preferences call blocks. Once that call arrives the child is SIGKILLed,
after its facts were written and before any turn stopped waiting. Services built again on the same data
directory then run memory_extract until nothing waits: every turn was read by a facts run, every fact is
stored once (the second sighting is ``kept``), preferences read every turn, and no turn or stream is
left listed. The SQLite files the child held open (WAL) pass an integrity check afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_model import Block, ScriptedModel, transcript_ids

from helpers import ctx
from mnemo.learning import ledger
from mnemo.learning.service import stream_of
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", "acme", session="s1")
IDS = [f"m-{n}" for n in range(1, 9)]
STRATEGIES = ("facts", "preferences")
#: The most runs the restarted stack may need (one is enough: 8 turns fit one batch).
MOST_RUNS = 5

CHILD = """
import json, sys
from pathlib import Path

from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

data_dir, url = Path(sys.argv[1]), sys.argv[2]
settings = Settings(
    data_dir=data_dir, embedder="hashing", openai_base_url=url,
    extraction_strategies=("facts", "preferences"), extraction_judge=False,
)
services = Services(settings)
alice = RequestContext(tenant="acme", user="alice", session="s1")
messages = json.loads(sys.argv[3])
print(json.dumps(get_tool("add_messages").invoke(services, alice, {"messages": messages})), flush=True)
print(json.dumps(get_tool("memory_extract").invoke(services, alice, {})), flush=True)
"""


def fact_of(message_id: str) -> str:
    return f"Alice said fact {message_id}."


def preference_of(message_id: str) -> str:
    return f"Alice prefers option {message_id}."


class Model:
    """The scripted model: facts at once; preferences blocked (``arrived`` set) until ``release``."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.blocking = True
        self.served = ScriptedModel(self.answer)

    def answer(self, tool: str, request: dict[str, Any], ids: list[str]) -> Any:
        if tool == "record_facts":
            return {"facts": [{"text": fact_of(i), "subject": f"fact {i}", "sourceIds": [i]} for i in ids]}
        if self.blocking:
            self.arrived.set()
            return Block(self.release)
        return {"preferences": [{"text": preference_of(i), "subject": f"option {i}", "sourceIds": [i]} for i in ids]}


@pytest.fixture
def model() -> Iterator[Model]:
    scripted = Model()
    yield scripted
    scripted.release.set()
    scripted.served.close()


def settings(data_dir: Path, url: str) -> Settings:
    return Settings(
        data_dir=data_dir,
        embedder="hashing",
        openai_base_url=url,
        extraction_strategies=STRATEGIES,
        extraction_judge=False,
    )


def call(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, ALICE, payload)


def read_ids(requests: list[dict[str, Any]]) -> list[str]:
    return [message_id for request in requests for message_id in transcript_ids(request)]


def integrity(path: Path) -> str:
    assert path.is_file(), path
    connection = sqlite3.connect(path, timeout=30)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


def test_a_run_killed_mid_way_is_finished_after_a_restart_without_a_skipped_turn_or_a_double_fact(
    tmp_path: Path, model: Model
) -> None:
    data_dir, script = tmp_path / "data", tmp_path / "child.py"
    script.write_text(CHILD)
    messages = [
        {"id": message_id, "role": "user", "content": f"Turn {message_id}: something about me.", "name": "alice"}
        for message_id in IDS
    ]
    child = subprocess.Popen(
        [sys.executable, str(script), str(data_dir), model.served.url, json.dumps(messages)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        arrived = model.arrived.wait(timeout=60)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        out, err = child.communicate(timeout=30)
    assert arrived, f"the preferences call never came: {out}{err}"
    assert child.returncode == -signal.SIGKILL, (child.returncode, out, err)
    (stored,) = [json.loads(line) for line in out.splitlines()]  # add_messages answered; memory_extract never did
    assert (stored["stored"], stored["pendingTurns"]) == (8, 8)
    assert sorted(read_ids(model.served.calls("record_facts"))) == sorted(IDS)
    killed_at = len(model.served.requests)

    # The model answers again; the stack is rebuilt on the files the child was killed with.
    model.blocking = False
    model.release.set()
    services = Services(settings(data_dir, model.served.url))
    before = call(services, "extraction_status", {})
    assert before["pendingTurns"] == 8, "the killed run let no turn go"
    pending = {s["strategy"]: s["pendingTurns"] for s in before["strategies"] if s["enabled"]}
    assert pending == {"facts": 8, "preferences": 8}, "no strategy was recorded done before the kill"
    facts_before = call(services, "memory_list", {"layer": "user", "limit": 100})["memories"]
    assert sorted(m["content"] for m in facts_before) == sorted(fact_of(i) for i in IDS), "facts were written"

    decisions: dict[str, list[str]] = {"facts": [], "preferences": []}
    for _ in range(MOST_RUNS):
        answer = call(services, "memory_extract", {})
        for part in answer["run"]["strategies"]:
            assert part["failure"] is None, part
            decisions[part["strategy"]] += [c["decision"] for c in part["candidates"]]
        if answer["pendingTurns"] == 0:
            break
    assert answer["pendingTurns"] == 0

    # Every turn was read by a facts run (the killed one and the one after) and by a preferences run after it.
    after = model.served.requests[killed_at:]
    facts_reads = read_ids(model.served.calls("record_facts"))
    assert set(facts_reads) == set(IDS), "no turn skipped by facts"
    preference_reads = read_ids([r for r in after if r["tools"][0]["function"]["name"] == "record_preferences"])
    assert sorted(preference_reads) == sorted(IDS), "preferences read every turn once after the restart"
    assert decisions["facts"] == ["kept"] * 8, "the facts the killed run wrote are found, not written again"
    assert decisions["preferences"] == ["added"] * 8

    # Each memory once, with its one source turn.
    listed = call(services, "memory_list", {"layer": "user", "limit": 100})["memories"]
    contents = [m["content"] for m in listed]
    for message_id in IDS:
        assert contents.count(fact_of(message_id)) == 1, contents
        assert contents.count(preference_of(message_id)) == 1, contents
    assert len(contents) == 2 * len(IDS)
    for memory in listed:
        assert memory["metadata"]["source"] == "extraction"
        assert len(memory["metadata"]["provenance"]["messageIds"]) == 1

    # Nothing waits and the stream is no longer listed as having work.
    status = call(services, "extraction_status", {})
    assert status["pendingTurns"] == 0
    assert all(s["pendingTurns"] == 0 for s in status["strategies"])
    partition = ledger.partition_of(stream_of(ALICE))
    assert list(services.records.query(partition, ledger.TURN, limit=100)) == []
    assert list(services.records.scan(ledger.QUEUE)) == []
    assert services.learning.run_due() == 0
    assert len(model.served.requests) == killed_at + len(after), "nothing more was asked"

    # The SQLite files the child was killed with are whole.
    for name in ("mnemo.sqlite3", "index.sqlite3"):
        assert integrity(data_dir / name) == "ok", name

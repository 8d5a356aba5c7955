"""kill -9 of a real `mnemo serve` mid-write: every acknowledged write is there after a restart.

The burst is bench/load.py's crash scenario (`python bench/load.py --crash` reports the same
counts): threads write memories, conversations, topics and refines of one shared topic until
the server is SIGKILLed; it is restarted on the same data directory, the writes that got no
answer are sent again as a client would (memory_add with its idempotencyKey, the same
message_id, the same topic), and each acknowledged write must be found the way a user finds
it: memory_search, retrieve_conversation by message_id and by keyword, recall_memory and
search_memories. Each must be found by the first search after the restart: the server drains
its index outbox before it serves, and a resent memory_add answered from its idempotency record
completes its pending index write before it answers. (A write not found at once is still
re-checked a bounded number of times, so that a failure reports what was late rather than lost;
nothing here asserts on a clock.)
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from load import Answer, Client, Memory, ServerProcess, crash_scenario, found_by_search, identity, topic_body

WHO = identity("crash", "window")


def test_every_acknowledged_write_survives_kill_9_mid_burst(tmp_path: Path) -> None:
    report = crash_scenario(tmp_path / "data", clients=6, kill_after=150, embedder="hashing", seed=17, tries=60)

    assert report["killedMidBurst"], "the writers stopped before the kill: nothing was cut off"
    assert report["acknowledgedWhenKilled"] >= 150
    assert report["failuresBeforeKill"] == [], "5xx or non-envelope answers before the kill"
    assert report["refusedRetries"] == [], "a resent write was refused after the restart"
    for kind, counts in report["byKind"].items():
        assert counts["acknowledged"] > 0, f"no {kind} was acknowledged: the burst did not exercise it"
        assert counts["lost"] == 0, f"acknowledged {kind} writes lost after the restart: {counts['lostKeys']}"
        assert counts["foundAfterRestart"] == counts["acknowledged"] + counts.get("acknowledgedOnRetry", 0)
        # Found at the first search: the restarted server drained its index outbox before it served, and a
        # resend answered from its idempotency record completed its pending index write before answering.
        assert counts.get("foundOnlyAfterRecheck", 0) == 0, f"{kind} writes found only on a later search"
    refine = report["byKind"]["refine"]
    assert refine["versionMatchesMarkers"], (
        f"topic version {refine['finalVersion']}, {refine['markersPresent']} refines"
    )


def _stored(data_dir: Path, words: list[str]) -> set[str]:
    """The words that appear in a committed record of the SQLite store (read-only, beside the server)."""
    connection = sqlite3.connect(f"file:{data_dir / 'mnemo.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        return {w for w in words if connection.execute("SELECT 1 FROM items WHERE data LIKE ?", (f"%{w}%",)).fetchone()}
    finally:
        connection.close()


def _poll(checks: dict[str, Callable[[], bool]], tries: int, pause: float = 0.5) -> set[str]:
    """Run every check; re-run the failing ones up to ``tries`` times, ``pause`` s apart. The names still failing."""
    failing = set(checks)
    for attempt in range(tries):
        failing = {name for name in failing if not checks[name]()}
        if not failing or attempt == tries - 1:
            break
        time.sleep(pause)
    return failing


def _conversation_found(client: Client) -> bool:
    body = {"query": "quillfrostarchive", "explanation": "after the crash", "retrieval_strategy": "keyword"}
    answer = client.call("retrieve_conversation", body)
    return answer.ok and [c["message_id"] for c in answer.payload["data"]["conversations"]] == ["msg-cut-off"]


def _topic_found(client: Client) -> bool:
    answer = client.call("search_memories", {"query": "marrowglintdossier", "threshold": 0})
    return answer.ok and answer.payload["topics"][:1] == ["cut-off"]


# The write cut off, the unique word its record holds, and how a user finds it (given the resent answer).
CUT_OFF: dict[str, tuple[str, dict[str, Any], Callable[[Client, Answer], bool]]] = {
    "memory_add": (
        "zebracornledger",
        {"content": "The zebracornledger lives in vault nine", "idempotencyKey": "k"},
        lambda client, resent: found_by_search(client, Memory("zebracornledger", resent.payload["memoryId"], "user")),
    ),
    "add_conversation": (
        "quillfrostarchive",
        {
            "message_id": "msg-cut-off",
            "explanation": "crash test",
            "user_input": "Where is the quillfrostarchive?",
            "agent_response": "In the basement.",
        },
        lambda client, resent: _conversation_found(client),
    ),
    "memorize_new_topic": (
        "marrowglintdossier",
        topic_body("cut-off", "The marrowglintdossier is on shelf two."),
        lambda client, resent: _topic_found(client),
    ),
}


#: The writes that index before they write their record: cut off at the same lock, before the record.
INDEX_FIRST = {"memory_add"}


@pytest.mark.parametrize("tool", list(CUT_OFF))
def test_a_write_cut_off_between_records_and_index_is_found_once_resent(tmp_path: Path, tool: str) -> None:
    """SIGKILL while a write waits for the vector index: after its record (memory_add: before it).

    The test holds the local index's SQLite write lock (index.sqlite3 beside the records), so
    the write commits its record (and its index outbox marker) and then blocks on its index
    write; the server is killed there. After the restart the client sends it again: the answer
    is what was stored (idempotency replay, an idempotent repeat, or CONFLICT for the topic
    that exists), so the client now holds an acknowledgement, and search must find the write,
    at the latest once the server's background drain of the outbox has run (bounded re-checks).
    """
    word, body, found = CUT_OFF[tool]
    data_dir = tmp_path / "data"
    server = ServerProcess(data_dir, "hashing").start()
    warm = Client(server.port, WHO)
    assert warm.call("memory_add", {"content": "warm up the vector index"}).ok
    warm.close()

    lock = sqlite3.connect(data_dir / "index.sqlite3", isolation_level=None, timeout=30)
    lock.execute("BEGIN IMMEDIATE")
    answers: list[Answer] = []

    def send() -> None:
        client = Client(server.port, WHO, timeout=120)
        answers.append(client.call(tool, body))
        client.close()

    thread = threading.Thread(target=send)
    try:
        thread.start()
        # Bounded: the record commits within milliseconds; the index write then waits on the lock.
        _poll({"stored": lambda: bool(_stored(data_dir, [word]))}, tries=400, pause=0.05)
        reached = bool(_stored(data_dir, [word]))
        server.kill9()
    finally:
        lock.rollback()
        lock.close()
        server.stop()
    thread.join()
    if tool in INDEX_FIRST:
        # memory_add writes the index before its record (mnemo.memory.writes): killed while it waits on the
        # index, it has written nothing the records hold, and nothing was acknowledged.
        assert not reached, "memory_add committed its record before its index write"
    else:
        assert reached, "the write did not reach the records before the kill: the window was not exercised"
    assert answers, f"the cut-off write was answered: {answers}"
    assert answers[0].transport_error is not None, f"the cut-off write was answered: {answers}"

    restarted = ServerProcess(data_dir, "hashing", log=server.log).start()
    try:
        client = Client(restarted.port, WHO)
        resent = client.call(tool, body)
        exists = tool == "memorize_new_topic" and resent.code == "CONFLICT"  # stored before the kill
        assert resent.ok or exists, resent
        missing = _poll({tool: lambda: found(client, resent)}, tries=60)
        client.close()
    finally:
        restarted.stop()
    assert not missing, f"{tool} acknowledged on resend but not found by search after the restart"

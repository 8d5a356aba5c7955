"""Where extraction keeps its work: the turns waiting per stream, each stream's state, its runs.

A stream is the turns of one session of one user of one tenant (the session scope key; the user scope
key for turns written without a session). Its partition ``LEARN|{stream}`` holds:

======================================  ===============================================================
sk                                      holds
======================================  ===============================================================
``STATE``                               ``{stream, lastRunAt, runs, strategies: {name: counters},
                                        summaryText, summaryMemoryId, wakeAt, liveSince}``
``TURN#{at}#{storedAt}#{kind}#{id}``   a turn waiting ``{messageId, kind, at, scope, identity, done:
                                        [strategy], attempts: {strategy: n}}``, written with its record
``RUN#{at}#{runId}``                    what one run read, proposed and decided (RunView), kept 30 days
======================================  ===============================================================

and the partitions ``LEARNQ|{shard}`` list the streams that have turns waiting (sk: the stream), so a
worker finds them after a restart without scanning. A turn's marker and its stream's LEARNQ entry go out
in the same all-or-nothing write as the turn's record: a turn is never stored without its work. A stream's
``STATE`` is changed only through ``update_state`` (read, change, write back on the version read), by a run's
counters and by an idle wake-up's ``wakeAt``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any, Literal

from mnemo.ports import ConditionFailed, Item, Put, RecordStore

PARTITION = "LEARN|"
QUEUE = "LEARNQ|"
STATE = "STATE"
TURN = "TURN#"
RUN = "RUN#"
#: Shards of the list of streams with waiting turns.
QUEUE_SHARDS = 8
RUN_TTL_SECONDS = 30 * 24 * 3600


def partition_of(stream: str) -> str:
    """The ledger partition of a stream."""
    return f"{PARTITION}{stream}"


def turn_sk(at: str, stored_at: str, kind: str, message_id: str) -> str:
    """The sort key of a waiting turn: oldest first, and turns said at the same time in the order they were
    stored (add_messages stores a batch in its order), so a model reads them as they were said."""
    return f"{TURN}{at}#{stored_at}#{kind}#{message_id}"


def run_sk(at: str, run_id: str) -> str:
    """The sort key of a run's record."""
    return f"{RUN}{at}#{run_id}"


def queue_partition(stream: str) -> str:
    """The LEARNQ partition listing a stream while it has waiting turns."""
    shard = int(hashlib.sha256(stream.encode()).hexdigest()[:8], 16) % QUEUE_SHARDS
    return f"{QUEUE}{shard}"


def queue_partitions() -> list[str]:
    """Every LEARNQ partition."""
    return [f"{QUEUE}{shard}" for shard in range(QUEUE_SHARDS)]


def _fresh_version() -> int:
    # An unconditional overwrite still changes the version, so a delete conditioned on the version read
    # (the stream's last run) fails when a turn arrived meanwhile.
    return time.time_ns() // 1000


def turn_marker(
    stream: str, at: str, stored_at: str, kind: str, message_id: str, scope: str, identity: dict[str, str]
) -> Put:
    """A waiting turn's marker, written with the turn's record (only if absent: a turn is queued once), with the
    identity that wrote it (the transport's): the scope its memories go to."""
    data = {
        "messageId": message_id,
        "kind": kind,
        "at": at,
        "scope": scope,
        "storedAt": stored_at,
        "identity": identity,
        "done": [],
        "attempts": {},
    }
    return Put(Item(partition_of(stream), turn_sk(at, stored_at, kind, message_id), data), expect="absent")


def queue_entry(stream: str, identity: dict[str, str], last_turn_at: str) -> Put:
    """The stream's entry in the list of streams with waiting turns (overwritten by each turn)."""
    data = {"stream": stream, "identity": identity, "lastTurnAt": last_turn_at}
    return Put(Item(queue_partition(stream), stream, data, version=_fresh_version()))


def run_item(stream: str, at: str, run_id: str, view: dict[str, Any]) -> Put:
    """A run's record, kept ``RUN_TTL_SECONDS``."""
    return Put(
        Item(partition_of(stream), run_sk(at, run_id), view, expires_at=int(time.time()) + RUN_TTL_SECONDS),
        expect="absent",
    )


def update_state(
    records: RecordStore, stream: str, change: Callable[[dict[str, Any]], bool], *, tries: int = 1
) -> bool:
    """Read, change and write back the stream's ``STATE`` item, on the version read: ``change`` edits a copy of
    its data (a new stream's: no run yet) and answers whether to write it. When another writer changed the item
    meanwhile, all of it is done again, up to ``tries`` times. Whether it was written."""
    for _ in range(tries):
        state = records.get(partition_of(stream), STATE)
        data: dict[str, Any] = dict(state.data) if state else {"stream": stream, "runs": 0, "strategies": {}}
        if not change(data):
            return False
        version = state.version + 1 if state else 1
        expect: int | Literal["absent"] = state.version if state else "absent"
        try:
            records.write([Put(Item(partition_of(stream), STATE, data, version=version), expect=expect)])
            return True
        except ConditionFailed:
            continue
    return False


def decision_counts(run: dict[str, Any]) -> tuple[dict[str, int], int]:
    """A stored run record's decisions on its candidates, by decision, and how many of its strategies failed
    (extraction.completed's counts; memory_extract's message)."""
    decisions: dict[str, int] = {}
    failed = 0
    for part in run.get("strategies") or []:
        failed += 1 if part.get("failure") else 0
        for candidate in part.get("candidates") or []:
            decision = str(candidate.get("decision"))
            decisions[decision] = decisions.get(decision, 0) + 1
    return decisions, failed

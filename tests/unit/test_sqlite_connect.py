"""Several threads opening one fresh data directory at once (the first requests a server answers) all succeed.

Switching a new SQLite file to WAL races: SQLite answers the loser "database is locked" at once, without
the busy timeout. Each round opens fresh files from eight threads released together; before the switch was
retried, about one round in forty lost a thread this way.
"""

from __future__ import annotations

from pathlib import Path

from helpers import race
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Item, Put

ROUNDS, THREADS = 40, 8


def test_eight_threads_opening_fresh_stores_together_all_succeed(tmp_path: Path) -> None:
    for round_number in range(ROUNDS):
        directory = tmp_path / f"round-{round_number}"
        opened = race(
            *[lambda d=directory: LocalVectorIndex(d / "index.sqlite3")] * (THREADS // 2),
            *[lambda d=directory: SqliteRecordStore(d / "records.sqlite3")] * (THREADS // 2),
        )
        indexes = [handle for handle in opened if isinstance(handle, LocalVectorIndex)]
        stores = [handle for handle in opened if isinstance(handle, SqliteRecordStore)]
        assert len(indexes) == len(stores) == THREADS // 2
        stores[0].write([Put(Item("pk", "sk", {"round": round_number}))])
        assert stores[-1].get("pk", "sk") is not None  # one file, seen by every handle
        assert all(index.count("memory") == 0 for index in indexes)

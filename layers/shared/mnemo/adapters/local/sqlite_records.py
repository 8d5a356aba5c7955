"""RecordStore on SQLite (WAL): the embedded default's source of truth."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from mnemo.adapters.local.sqlite_connect import connect
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    version INTEGER NOT NULL,
    expires_at INTEGER,
    data TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
"""


def _prefix_upper_bound(prefix: str) -> str:
    """A string above every string that starts with ``prefix`` (for a range scan)."""
    return prefix + "\U0010ffff"


class SqliteRecordStore:
    """The RecordStore port on one SQLite file in WAL mode: always consistent, writes in one transaction.

    One connection per thread; threads of one process take turns to write. Expired items are filtered
    out on every read (and count as absent for conditions); nothing purges them.
    """

    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        # Threads of one process take turns here rather than in SQLite's busy handler, which sleeps
        # between tries (1 ms growing to 100 ms): under many concurrent writers its sleeps, not the
        # writes, set the pace. Other processes on the same file still meet the busy timeout.
        self._write_lock = threading.Lock()
        with self._connection() as conn:
            conn.executescript(_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self._path)
            self._local.conn = conn
        return conn

    @staticmethod
    def _item(row: tuple[str, str, int, int | None, str]) -> Item:
        """A selected row as an Item."""
        pk, sk, version, expires_at, data = row
        return Item(pk=pk, sk=sk, data=json.loads(data), version=version, expires_at=expires_at)

    def _live(self) -> tuple[str, int]:
        """The SQL condition that leaves expired items out, and the time it compares against."""
        return "(expires_at IS NULL OR expires_at > ?)", int(time.time())

    # ``consistent`` is accepted and ignored: one SQLite file has no stale replica to read from.
    def get(self, pk: str, sk: str, *, consistent: bool = True) -> Item | None:
        """One row by key."""
        live, now = self._live()
        row = (
            self._connection()
            .execute(
                f"SELECT pk, sk, version, expires_at, data FROM items WHERE pk = ? AND sk = ? AND {live}",
                (pk, sk, now),
            )
            .fetchone()
        )
        return self._item(row) if row else None

    def batch_get(self, keys: Sequence[tuple[str, str]], *, consistent: bool = True) -> list[Item]:
        """Rows by key, one SELECT per partition and 500 keys."""
        live, now = self._live()
        by_partition: dict[str, list[str]] = {}
        for pk, sk in keys:
            by_partition.setdefault(pk, []).append(sk)
        found: list[Item] = []
        for pk, sort_keys in by_partition.items():
            for start in range(0, len(sort_keys), 500):  # SQLite caps bound parameters per statement
                chunk = sort_keys[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                rows = (
                    self._connection()
                    .execute(
                        f"SELECT pk, sk, version, expires_at, data FROM items "
                        f"WHERE pk = ? AND sk IN ({marks}) AND {live}",
                        (pk, *chunk, now),
                    )
                    .fetchall()
                )
                found += [self._item(row) for row in rows]
        return found

    def query(
        self,
        pk: str,
        sk_prefix: str = "",
        *,
        limit: int = 100,
        descending: bool = False,
        between: tuple[str, str] | None = None,
        consistent: bool = True,
    ) -> list[Item]:
        """One range SELECT on the primary key."""
        live, now = self._live()
        order = "DESC" if descending else "ASC"
        if between is not None:
            if sk_prefix:
                raise ValueError("query takes a sort key prefix or a range, not both")
            bounds, upper = between, "sk <= ?"
        else:
            bounds, upper = (sk_prefix, _prefix_upper_bound(sk_prefix)), "sk < ?"
        rows = (
            self._connection()
            .execute(
                f"SELECT pk, sk, version, expires_at, data FROM items "
                f"WHERE pk = ? AND sk >= ? AND {upper} AND {live} ORDER BY sk {order} LIMIT ?",
                (pk, *bounds, now, limit),
            )
            .fetchall()
        )
        return [self._item(row) for row in rows]

    def scan(self, pk_prefix: str = "") -> Iterator[Item]:
        """Every live row under the prefix, read in one SELECT before the first is yielded."""
        live, now = self._live()
        rows = (
            self._connection()
            .execute(
                f"SELECT pk, sk, version, expires_at, data FROM items "
                f"WHERE pk >= ? AND pk < ? AND {live} ORDER BY pk, sk",
                (pk_prefix, _prefix_upper_bound(pk_prefix), now),
            )
            .fetchall()
        )
        for row in rows:
            yield self._item(row)

    def write(self, operations: Sequence[Put | Delete]) -> None:
        """Check every condition and apply every operation in one immediate transaction."""
        if len(operations) > MAX_WRITE_OPERATIONS:
            raise ValueError(f"at most {MAX_WRITE_OPERATIONS} operations change together (got {len(operations)})")
        with self._write_lock:
            self._write(operations)

    def _write(self, operations: Sequence[Put | Delete]) -> None:
        """The transaction of ``write``, rolled back when a condition fails."""
        conn = self._connection()
        live, now = self._live()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for op in operations:
                key = (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)
                row = conn.execute(
                    f"SELECT version FROM items WHERE pk = ? AND sk = ? AND {live}", (*key, now)
                ).fetchone()
                current = row[0] if row else None
                self._check(op, current, key)
                if isinstance(op, Put):
                    conn.execute(
                        "INSERT OR REPLACE INTO items (pk, sk, version, expires_at, data) VALUES (?, ?, ?, ?, ?)",
                        (op.item.pk, op.item.sk, op.item.version, op.item.expires_at, json.dumps(op.item.data)),
                    )
                else:
                    conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", key)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _check(op: Put | Delete, current: int | None, key: tuple[str, str]) -> None:
        """ConditionFailed unless ``op.expect`` holds for the stored version ``current`` (None: absent)."""
        expect = op.expect
        if expect is None:
            return
        if expect == "absent" and current is not None:
            raise ConditionFailed(f"{key} already exists")
        if expect == "present" and current is None:
            raise ConditionFailed(f"{key} does not exist")
        if isinstance(expect, int) and current != expect:
            raise ConditionFailed(f"{key} is at version {current}, expected {expect}")

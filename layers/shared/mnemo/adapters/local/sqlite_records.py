"""RecordStore on SQLite (WAL): the embedded default's source of truth.

With change capture on (``capture``: which keys to capture), every write also logs, in its own
transaction, one ``changes`` row per captured item it changes: the key, the body and version before
and after, and the time. That log is where local change events come from
(``mnemo.adapters.local.change_log``); with capture off (no webhook configured) nothing is logged
and a write costs what it always did.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from mnemo import clock
from mnemo.adapters.local.sqlite_connect import thread_connection
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
-- The expiry sweep (``expired``) reads only the rows that can expire, never the whole table.
CREATE INDEX IF NOT EXISTS items_expiring ON items (expires_at) WHERE expires_at IS NOT NULL;
"""

#: The change log a write fills when capture is on (read and emptied by ``change_log.SqliteChangeLog``).
CHANGES_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    old TEXT,
    new TEXT,
    old_version INTEGER,
    new_version INTEGER,
    at TEXT NOT NULL,
    leased_by TEXT,
    leased_until REAL
);
"""


def _stamp() -> str:
    """Now, as a change is stamped: ISO 8601 UTC with microseconds and a ``Z``."""
    return clock.now_iso()


def _prefix_upper_bound(prefix: str) -> str:
    """A string above every string that starts with ``prefix`` (for a range scan)."""
    return prefix + "\U0010ffff"


class SqliteRecordStore:
    """The RecordStore port on one SQLite file in WAL mode: always consistent, writes in one transaction.

    One connection per thread; threads of one process take turns to write. Expired items are filtered
    out on every read (and count as absent for conditions); the expiry sweeper
    (``mnemo.expiry``, through ``expired`` and ``Delete(expect="expired")``) purges them.
    """

    def __init__(self, path: Path | str, *, capture: Callable[[str, str], bool] | None = None) -> None:
        self._path = str(path)
        self._capture = capture
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        # Threads of one process take turns here rather than in SQLite's busy handler, which sleeps
        # between tries (1 ms growing to 100 ms): under many concurrent writers its sleeps, not the
        # writes, set the pace. Other processes on the same file still meet the busy timeout.
        self._write_lock = threading.Lock()
        with self._connection() as conn:
            conn.executescript(_SCHEMA + (CHANGES_SCHEMA if capture is not None else ""))

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        return thread_connection(self._local, self._path)

    @staticmethod
    def _item(row: tuple[str, str, int, int | None, str]) -> Item:
        """A selected row as an Item."""
        pk, sk, version, expires_at, data = row
        return Item(pk=pk, sk=sk, data=json.loads(data), version=version, expires_at=expires_at)

    def _live(self) -> tuple[str, int]:
        """The SQL condition that leaves expired items out, and the time it compares against."""
        return "(expires_at IS NULL OR expires_at > ?)", int(time.time())

    # ``consistent`` is accepted and ignored: one SQLite file has no stale replica to read from.
    def get(self, pk: str, sk: str, *, consistent: bool = True, expired: bool = False) -> Item | None:
        """One row by key (``expired``: a row past its ``expires_at`` the sweeper has not removed too)."""
        live, now = self._live() if not expired else ("1 = 1", 0)
        row = (
            self._connection()
            .execute(
                f"SELECT pk, sk, version, expires_at, data FROM items WHERE pk = ? AND sk = ? AND {live}",
                (pk, sk, now) if not expired else (pk, sk),
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

    def expired(self, pk_prefix: str = "") -> Iterator[Item]:
        """Every row under the prefix past its ``expires_at`` (still held: only the sweeper deletes rows)."""
        rows = (
            self._connection()
            .execute(
                "SELECT pk, sk, version, expires_at, data FROM items "
                "WHERE pk >= ? AND pk < ? AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY pk, sk",
                (pk_prefix, _prefix_upper_bound(pk_prefix), int(time.time())),
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
                if isinstance(op, Delete) and op.expect == "expired":  # the expiry sweeper's (mnemo.expiry)
                    self._delete_expired(conn, key, now)
                    continue
                held = "SELECT 1 FROM items WHERE pk = ? AND sk = ?"  # "new": not even a row past its expires_at
                if isinstance(op, Put) and op.expect == "new" and conn.execute(held, key).fetchone() is not None:
                    raise ConditionFailed(f"{key} holds an item")
                captured = self._capture is not None and self._capture(*key)
                row = conn.execute(
                    f"SELECT version{', data' if captured else ''} FROM items WHERE pk = ? AND sk = ? AND {live}",
                    (*key, now),
                ).fetchone()
                current = row[0] if row else None
                self._check(op, current, key)
                if isinstance(op, Put):
                    body = json.dumps(op.item.data)
                    conn.execute(
                        "INSERT OR REPLACE INTO items (pk, sk, version, expires_at, data) VALUES (?, ?, ?, ?, ?)",
                        (op.item.pk, op.item.sk, op.item.version, op.item.expires_at, body),
                    )
                else:
                    conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", key)
                if captured and (row is not None or isinstance(op, Put)):
                    new = (body, op.item.version) if isinstance(op, Put) else (None, None)
                    conn.execute(
                        "INSERT INTO changes (pk, sk, old, new, old_version, new_version, at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (*key, row[1] if row else None, new[0], current, new[1], _stamp()),
                    )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _delete_expired(conn: sqlite3.Connection, key: tuple[str, str], now: int) -> None:
        """Delete the item at ``key`` if it is past its ``expires_at``; ConditionFailed otherwise."""
        held = "SELECT 1 FROM items WHERE pk = ? AND sk = ? AND expires_at IS NOT NULL AND expires_at <= ?"
        if conn.execute(held, (*key, now)).fetchone() is None:
            raise ConditionFailed(f"{key} holds no expired item")
        conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", key)

    @staticmethod
    def _check(op: Put | Delete, current: int | None, key: tuple[str, str]) -> None:
        """ConditionFailed unless ``op.expect`` holds for the stored version ``current`` (None: absent)."""
        expect = op.expect
        if expect is None:
            return
        if expect in ("absent", "new") and current is not None:  # "new" also checked expired rows (``_write``)
            raise ConditionFailed(f"{key} already exists")
        if expect == "present" and current is None:
            raise ConditionFailed(f"{key} does not exist")
        if isinstance(expect, int) and current != expect:
            raise ConditionFailed(f"{key} is at version {current}, expected {expect}")

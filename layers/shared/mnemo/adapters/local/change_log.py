"""ChangeLog on SQLite: the changes the record store logged, and the delivery log of the events made of them.

Two tables in the record store's file (``mnemo.sqlite3``): ``changes`` (written by
``SqliteRecordStore`` with each captured change, in the same transaction) and
``deliveries`` (one row per event id and webhook URL: the exact body, the status,
the attempts, the last HTTP status or error, when the next attempt is due). Rows
are leased: a worker holds a row for a while, so the server's processes never work
on one row at the same time, and a worker killed mid-way leaves its rows to the
next one once the lease runs out. Delivered rows older than ``KEEP_DELIVERED_SECONDS``
are pruned.

A lease is held by a worker of one process (``{worker}@{host}:{pid}``): the leases of a process that is gone
(killed, crashed) on this host are freed as soon as another worker looks, so a restarted server does not wait
for them to run out.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo.adapters.local.sqlite_connect import thread_connection
from mnemo.adapters.local.sqlite_records import CHANGES_SCHEMA
from mnemo.changes import RecordChange
from mnemo.ports import Delivery

DELIVERIES_SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    next_at REAL NOT NULL,
    leased_by TEXT,
    leased_until REAL,
    UNIQUE (event_id, target)
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_at);
CREATE INDEX IF NOT EXISTS deliveries_recent ON deliveries (updated_at);
"""

#: Delivered rows are kept this long for `mnemo events`, then pruned.
KEEP_DELIVERED_SECONDS = 7 * 24 * 3600

_COLUMNS = "event_id, target, kind, body, status, attempts, last_status, last_error, created_at, updated_at, next_at"


def _delivery(row: tuple[Any, ...]) -> Delivery:
    return Delivery(*row)


class SqliteChangeLog:
    """The ChangeLog port on the record store's SQLite file (see the module docstring)."""

    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connection().executescript(CHANGES_SCHEMA + DELIVERIES_SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        return thread_connection(self._local, self._path)

    @staticmethod
    def _holder(worker: str) -> str:
        return f"{worker}@{socket.gethostname()}:{os.getpid()}"

    @staticmethod
    def _gone(holder: str) -> bool:
        """Whether ``holder`` was a process of this host that no longer runs."""
        host, _, pid = holder.rpartition("@")[2].rpartition(":")
        if host != socket.gethostname() or not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except OSError:  # it runs, as another user
            return False
        return False

    def _free_the_leases_of_gone_processes(self, conn: sqlite3.Connection, now: float) -> None:
        for table in ("changes", "deliveries"):
            holders = conn.execute(
                f"SELECT DISTINCT leased_by FROM {table} WHERE leased_until >= ? AND leased_by IS NOT NULL", (now,)
            ).fetchall()
            for (holder,) in holders:
                if self._gone(holder):
                    conn.execute(
                        f"UPDATE {table} SET leased_by = NULL, leased_until = NULL WHERE leased_by = ?", (holder,)
                    )

    def lease_changes(self, worker: str, limit: int, lease_seconds: float) -> list[RecordChange]:
        """The oldest changes no other worker holds, now held by ``worker``."""
        conn, now = self._connection(), time.time()
        worker = self._holder(worker)
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._free_the_leases_of_gone_processes(conn, now)
            rows = conn.execute(
                "SELECT seq, pk, sk, old, new, old_version, new_version, at FROM changes "
                "WHERE leased_until IS NULL OR leased_until < ? OR leased_by = ? ORDER BY seq LIMIT ?",
                (now, worker, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE changes SET leased_by = ?, leased_until = ? WHERE seq = ?",
                [(worker, now + lease_seconds, row[0]) for row in rows],
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return [
            RecordChange(
                seq=seq,
                pk=pk,
                sk=sk,
                old=json.loads(old) if old is not None else None,
                new=json.loads(new) if new is not None else None,
                old_version=old_version,
                new_version=new_version,
                at=at,
            )
            for seq, pk, sk, old, new, old_version, new_version, at in rows
        ]

    def settle_changes(self, seqs: Sequence[int], deliveries: Sequence[Delivery]) -> None:
        """Store the deliveries (a repeat of an event id and target is ignored) and forget the changes, at once."""
        conn, now = self._connection(), time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                f"INSERT OR IGNORE INTO deliveries ({_COLUMNS}) VALUES (?, ?, ?, ?, 'pending', 0, NULL, NULL, ?, ?, ?)",
                [(d.event_id, d.target, d.kind, d.body, d.created_at, d.updated_at, d.next_at) for d in deliveries],
            )
            conn.executemany("DELETE FROM changes WHERE seq = ?", [(seq,) for seq in seqs])
            conn.execute(
                "DELETE FROM deliveries WHERE status = 'delivered' AND updated_at < ?", (now - KEEP_DELIVERED_SECONDS,)
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def lease_deliveries(self, worker: str, limit: int, lease_seconds: float, now: float) -> list[Delivery]:
        """Pending deliveries due by ``now`` that no other worker holds, oldest first, now held by ``worker``."""
        conn = self._connection()
        worker = self._holder(worker)
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._free_the_leases_of_gone_processes(conn, time.time())
            rows = conn.execute(
                f"SELECT seq, {_COLUMNS} FROM deliveries WHERE status = 'pending' AND next_at <= ? "
                "AND (leased_until IS NULL OR leased_until < ? OR leased_by = ?) ORDER BY seq LIMIT ?",
                (now, time.time(), worker, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE deliveries SET leased_by = ?, leased_until = ? WHERE seq = ?",
                [(worker, time.time() + lease_seconds, row[0]) for row in rows],
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return [_delivery(row[1:]) for row in rows]

    def record_attempt(self, delivery: Delivery) -> None:
        """Store the outcome of an attempt and free the row."""
        self._connection().execute(
            "UPDATE deliveries SET status = ?, attempts = ?, last_status = ?, last_error = ?, updated_at = ?, "
            "next_at = ?, leased_by = NULL, leased_until = NULL WHERE event_id = ? AND target = ?",
            (
                delivery.status,
                delivery.attempts,
                delivery.last_status,
                delivery.last_error,
                delivery.updated_at,
                delivery.next_at,
                delivery.event_id,
                delivery.target,
            ),
        )

    def deliveries(self, limit: int, *, failed_only: bool = False) -> list[Delivery]:
        """The most recent deliveries, newest first; ``failed_only``: given up, or whose last attempt failed."""
        where = "WHERE status = 'failed' OR (status = 'pending' AND attempts > 0)" if failed_only else ""
        rows = (
            self._connection()
            .execute(f"SELECT {_COLUMNS} FROM deliveries {where} ORDER BY seq DESC LIMIT ?", (limit,))
            .fetchall()
        )
        return [_delivery(row) for row in rows]

    def pending_changes(self) -> int:
        """How many logged changes wait to be made into events (for `mnemo events`)."""
        return int(self._connection().execute("SELECT COUNT(*) FROM changes").fetchone()[0])

"""One way to open the embedded stores' SQLite files: write-ahead log, shared by threads and processes."""

from __future__ import annotations

import sqlite3
import threading
import time

#: How long to keep asking for the write-ahead log while other connections switch the same file to it.
_WAL_ATTEMPTS, _WAL_PAUSE_SECONDS = 100, 0.05


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode with WAL journaling and a 30 s busy timeout.

    Switching a new database to WAL takes an exclusive lock, and SQLite answers a switch racing
    another connection's with "database is locked" at once, without waiting out the busy timeout
    (seen when several threads open a fresh data directory together), so the switch is retried.
    """
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    for attempt in range(_WAL_ATTEMPTS):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or attempt == _WAL_ATTEMPTS - 1:
                conn.close()
                raise
            time.sleep(_WAL_PAUSE_SECONDS)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def thread_connection(local: threading.local, path: str) -> sqlite3.Connection:
    """The calling thread's connection to ``path`` kept in ``local``, opened (``connect``) on its first use."""
    conn: sqlite3.Connection | None = getattr(local, "conn", None)
    if conn is None:
        conn = connect(path)
        local.conn = conn
    return conn

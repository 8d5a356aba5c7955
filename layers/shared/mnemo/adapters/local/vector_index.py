"""VectorIndex in process: exact cosine k-NN (numpy) plus BM25, persisted in SQLite.

Exact search over a contiguous float32 matrix is a few milliseconds at tens of
thousands of vectors, which is the scale one machine serves; filters are
resolved to row sets through keyword postings before any scoring.

Several processes may share one data directory (the server and ``mnemo call``):
each keeps its own in-memory copy and reloads it when SQLite reports that
another connection committed.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemo.adapters.local.lexical import Bm25
from mnemo.ports import Filter, Hit, IndexDoc

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    vector BLOB NOT NULL,
    text TEXT NOT NULL,
    keywords TEXT NOT NULL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
"""


class _Space:
    """One namespace in memory. Rows are never reused; deleted rows are masked."""

    def __init__(self) -> None:
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.keywords: list[dict[str, list[str]]] = []
        self.row_of: dict[str, int] = {}
        self.postings: dict[tuple[str, str], set[int]] = defaultdict(set)
        self.bm25 = Bm25()

    def _grow(self, dims: int) -> None:
        rows = len(self.ids)
        if self.matrix.shape[1] != dims and rows == 0:
            self.matrix = np.zeros((0, dims), dtype=np.float32)
        if rows >= self.matrix.shape[0]:
            capacity = max(64, self.matrix.shape[0] * 2)
            matrix = np.zeros((capacity, dims), dtype=np.float32)
            matrix[:rows] = self.matrix[:rows]
            alive = np.zeros(capacity, dtype=bool)
            alive[:rows] = self.alive[:rows]
            self.matrix, self.alive = matrix, alive

    def add(self, doc_id: str, vector: np.ndarray, text: str, keywords: dict[str, list[str]]) -> None:
        self.remove(doc_id)
        if len(self.ids) and vector.shape[0] != self.matrix.shape[1]:
            raise ValueError(f"vector has {vector.shape[0]} dimensions, the index holds {self.matrix.shape[1]}")
        self._grow(vector.shape[0])
        row = len(self.ids)
        self.matrix[row] = vector
        self.alive[row] = True
        self.ids.append(doc_id)
        self.texts.append(text)
        self.keywords.append(keywords)
        self.row_of[doc_id] = row
        for name, values in keywords.items():
            for value in values:
                self.postings[(name, value)].add(row)
        self.bm25.add(row, text)

    def remove(self, doc_id: str) -> None:
        row = self.row_of.pop(doc_id, None)
        if row is None:
            return
        self.alive[row] = False
        for name, values in self.keywords[row].items():
            for value in values:
                self.postings[(name, value)].discard(row)
        self.bm25.remove(row, self.texts[row])

    def allowed(self, flt: Filter) -> set[int] | None:
        if not flt:
            return None
        result: set[int] | None = None
        for name, values in flt.items():
            rows: set[int] = set()
            for value in values:
                rows |= self.postings.get((name, value), set())
            result = rows if result is None else result & rows
            if not result:
                return set()
        return result

    def __len__(self) -> int:
        return len(self.row_of)


class LocalVectorIndex:
    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(self._path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._spaces: dict[str, _Space] = {}
        self._seen_version = self._data_version()

    # -- persistence -----------------------------------------------------
    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _space(self, namespace: str) -> _Space:
        version = self._data_version()
        if version != self._seen_version:
            self._spaces.clear()  # another process wrote: reload lazily
            self._seen_version = version
        space = self._spaces.get(namespace)
        if space is None:
            space = _Space()
            rows = self._conn.execute(
                "SELECT id, vector, text, keywords FROM vectors WHERE namespace = ?", (namespace,)
            )
            for doc_id, blob, text, keywords in rows:
                space.add(doc_id, np.frombuffer(blob, dtype=np.float32), text, json.loads(keywords))
            self._spaces[namespace] = space
        return space

    # -- port ------------------------------------------------------------
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        if not docs:
            return
        with self._lock:
            space = self._space(namespace)
            prepared = [(doc, np.asarray(doc.vector, dtype=np.float32)) for doc in docs]
            expected = space.matrix.shape[1] if len(space.ids) else prepared[0][1].shape[0]
            for doc, vector in prepared:  # check all before anything is written
                if vector.ndim != 1 or vector.shape[0] != expected:
                    raise ValueError(f"vector of {doc.id} has shape {vector.shape}, the index holds {expected}")
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors (namespace, id, vector, text, keywords) VALUES (?, ?, ?, ?, ?)",
                    [(namespace, d.id, v.tobytes(), d.text, json.dumps(d.keywords)) for d, v in prepared],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            for doc, vector in prepared:
                space.add(doc.id, vector, doc.text, doc.keywords)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        with self._lock:
            space = self._space(namespace)
            self._conn.executemany(
                "DELETE FROM vectors WHERE namespace = ? AND id = ?", [(namespace, doc_id) for doc_id in ids]
            )
            for doc_id in ids:
                space.remove(doc_id)

    def knn(self, namespace: str, vector: Sequence[float], flt: Filter, k: int) -> list[Hit]:
        with self._lock:
            space = self._space(namespace)
            if not len(space):
                return []
            allowed = space.allowed(flt)
            if allowed is None:
                rows = np.flatnonzero(space.alive[: len(space.ids)])
            else:
                rows = np.fromiter(allowed, dtype=np.int64, count=len(allowed))
            if rows.size == 0:
                return []
            query = np.asarray(vector, dtype=np.float32)
            if rows.size * 4 >= len(space.ids):
                # One pass over the contiguous matrix beats gathering most of its rows.
                scores = (space.matrix[: len(space.ids)] @ query)[rows]
            else:
                scores = space.matrix[rows] @ query
            if rows.size > k:
                best = np.argpartition(-scores, k)[:k]
                best = best[np.argsort(-scores[best])]
            else:
                best = np.argsort(-scores)
            return [Hit(space.ids[rows[i]], float(scores[i]), space.keywords[rows[i]]) for i in best]

    def lexical(self, namespace: str, text: str, flt: Filter, k: int) -> list[Hit]:
        with self._lock:
            space = self._space(namespace)
            scores, reference = space.bm25.scores(text, space.allowed(flt))
            if not scores or reference <= 0:
                return []
            best = heapq.nlargest(k, scores.items(), key=lambda pair: pair[1])
            return [Hit(space.ids[row], min(1.0, score / reference), space.keywords[row]) for row, score in best]

    def count(self, namespace: str) -> int:
        with self._lock:
            return len(self._space(namespace))

    def clear(self, namespace: str) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM vectors WHERE namespace = ?", (namespace,))
            self._spaces.pop(namespace, None)

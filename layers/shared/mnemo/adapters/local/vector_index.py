"""VectorIndex in process: cosine k-NN (exact, or HNSW above a size) plus BM25, persisted in SQLite.

Each namespace is held in memory as rows: a contiguous float32 matrix, the
texts and keywords, BM25 postings and keyword postings. Rows are never reused:
a delete or a replacement marks the old row dead in the ``alive`` mask, and a
namespace whose dead rows outnumber its live ones is reloaded compactly.

k-NN is exact (one pass over the allowed rows) while the filter allows at most
``exact_below`` rows; above that it asks an HNSW graph (``ann.py``, faiss) with
the filter and the alive mask as one bitmap, and falls back to exact if the
graph finds fewer than ``k`` rows. Filters resolve to boolean masks over rows: ``flt`` and the
term-match algebra of ``where`` alike, a range or substring test through the sorted values of its keyword.

Persistence: SQLite holds every document (``vectors``) and a log of changes
(``changes``: one row per upserted or deleted id, or a clear), in the same
transaction. The HNSW graph is saved beside the SQLite file with the ids of its
rows, so a restart reads it instead of rebuilding; on load every saved row is
checked against SQLite (same id, same vector) and anything that does not match is
treated as dead and re-added, so a stale graph costs time, never wrong answers,
and a file that fails its checksum is ignored.

Several processes may share one data directory (the server and ``mnemo call``):
each keeps its own copy in memory and, when SQLite reports that another
connection committed, replays the changes logged since it last looked.
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from mnemo.adapters.local import ann
from mnemo.adapters.local.lexical import Bm25
from mnemo.adapters.local.sqlite_connect import connect
from mnemo.ports import AllOf, AnyOf, AnyTerm, Filter, Hit, IndexDoc, Match, NoneOf, TermContains, TermRange

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    vector BLOB NOT NULL,
    text TEXT NOT NULL,
    keywords TEXT NOT NULL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    id TEXT
);
CREATE INDEX IF NOT EXISTS changes_by_namespace ON changes (namespace, seq);
"""

#: Filters allowing at most this many rows are searched exactly (a few milliseconds); larger ones use the graph.
EXACT_BELOW = 20_000
#: Changes kept in the log; a process further behind than this reloads the namespace.
KEEP_CHANGES = 100_000
#: A namespace is reloaded compactly once it has more dead rows than this and than live ones.
COMPACT_AFTER = 1024
#: Unsaved graph rows that trigger a save: at least this many, and at least 1/20 of the saved graph.
SAVE_AFTER = 1000


class _Rows:
    """An append-only array of row numbers (one keyword value's postings; dead rows stay, masked by ``alive``)."""

    __slots__ = ("rows", "size")

    def __init__(self) -> None:
        self.rows = np.empty(4, dtype=np.int64)
        self.size = 0

    def append(self, row: int) -> None:
        """Add a row, doubling the array when full."""
        if self.size == self.rows.shape[0]:
            self.rows = np.resize(self.rows, self.size * 2)
        self.rows[self.size] = row
        self.size += 1


#: The most rows whose parsed keywords a namespace keeps (a few kilobytes each at most).
PARSED_ROWS = 50_000


class _Space:
    """One namespace in memory."""

    def __init__(self, seq: int) -> None:
        self.seq = seq  # the last change of the log reflected here
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.n = 0  # rows used, dead ones included
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.keywords: list[str] = []  # JSON, parsed only for hits
        #: Parsed keywords of rows hit lately (a row's keywords never change: rows are only appended), so that
        #: the hits of every search are not parsed again; cleared past ``PARSED_ROWS``.
        self._parsed: dict[int, dict[str, list[str]]] = {}
        self.row_of: dict[str, int] = {}
        self.postings: dict[tuple[str, str], _Rows] = {}
        #: Each keyword's values (those of dead rows too), sorted when a range or substring test asks.
        self.values: dict[str, list[str]] = {}
        self._unsorted: set[str] = set()
        self.bm25 = Bm25()
        self.graph: ann.Graph | None = None
        self.saved_rows = 0  # graph rows when it was last saved or loaded
        self._generation = 0
        self._selections: dict[str, tuple[np.ndarray | None, int]] = {}
        self._selections_generation = 0

    @property
    def dims(self) -> int:
        """The namespace's vector dimension (0 before its first vector)."""
        return int(self.matrix.shape[1])

    @property
    def dead(self) -> int:
        """Rows that no longer hold a live document."""
        return self.n - len(self.row_of)

    def _reserve(self, dims: int, extra: int) -> None:
        """Room for ``extra`` more rows of ``dims`` numbers, doubling the matrix when it grows."""
        if self.n == 0 and self.matrix.shape[1] != dims:
            self.matrix = np.zeros((0, dims), dtype=np.float32)
        if self.n + extra > self.matrix.shape[0]:
            capacity = max(64, self.n + extra, self.matrix.shape[0] * 2)
            matrix = np.zeros((capacity, dims), dtype=np.float32)
            matrix[: self.n] = self.matrix[: self.n]
            alive = np.zeros(capacity, dtype=bool)
            alive[: self.n] = self.alive[: self.n]
            self.matrix, self.alive = matrix, alive

    def add(self, doc_id: str, vector: np.ndarray, text: str, keywords: str) -> None:
        """Hold a document in a new row, marking its previous row (if any) dead."""
        self.remove(doc_id)
        if self.n and vector.shape[0] != self.dims:
            raise ValueError(f"vector has {vector.shape[0]} dimensions, the index holds {self.dims}")
        self._reserve(vector.shape[0], 1)
        row = self.n
        self.matrix[row] = vector
        self._append(row, doc_id, text, keywords)

    def add_many(self, ids: list[str], matrix: np.ndarray, texts: list[str], keywords: list[str]) -> None:
        """Append documents not held yet (a load); ``matrix`` rows match ``ids``."""
        if not ids:
            return
        if self.n == 0 and self.matrix.shape[0] < len(ids) and matrix.flags.c_contiguous and matrix.dtype == np.float32:
            self.matrix, self.alive = matrix, np.zeros(len(ids), dtype=bool)  # a fresh load: adopt, do not copy
        else:
            self._reserve(matrix.shape[1], len(ids))
            self.matrix[self.n : self.n + len(ids)] = matrix
        for doc_id, text, words in zip(ids, texts, keywords, strict=True):
            self._append(self.n, doc_id, text, words)

    def add_dead(self, count: int, dims: int) -> None:
        """Rows of a saved graph that no longer hold a document: they keep the numbering, never match."""
        self._reserve(dims, count)
        self.ids.extend([""] * count)
        self.texts.extend([""] * count)
        self.keywords.extend(["{}"] * count)
        self.n += count
        self._generation += 1

    def _append(self, row: int, doc_id: str, text: str, keywords: str) -> None:
        """Index a row just written into the matrix: its id, BM25 terms and keyword postings."""
        self.alive[row] = True
        self.ids.append(doc_id)
        self.texts.append(text)
        self.keywords.append(keywords)
        self.row_of[doc_id] = row
        for name, values in json.loads(keywords).items():
            for value in values:
                posting = self.postings.get((name, value))
                if posting is None:
                    posting = self.postings[(name, value)] = _Rows()
                    self.values.setdefault(name, []).append(value)
                    self._unsorted.add(name)
                posting.append(row)
        self.bm25.add(row, text)
        self.n += 1
        self._generation += 1

    def remove(self, doc_id: str) -> None:
        """Mark the document's row dead (nothing if it is not held)."""
        row = self.row_of.pop(doc_id, None)
        if row is None:
            return
        self.alive[row] = False
        self.bm25.remove(row, self.texts[row])
        self.texts[row] = ""  # the text is only needed to remove it from BM25
        self._generation += 1

    def hit(self, row: int, score: float) -> Hit:
        """The row as a search hit with this score (its keywords shared with other hits of the row: read only)."""
        keywords = self._parsed.get(row)
        if keywords is None:
            if len(self._parsed) >= PARSED_ROWS:
                self._parsed.clear()
            keywords = self._parsed[row] = json.loads(self.keywords[row])
        return Hit(self.ids[row], score, keywords)

    def select(self, flt: Filter, where: Match | None = None) -> tuple[np.ndarray | None, int]:
        """Live rows passing the filter and ``where`` as a boolean mask over rows (None: every live row) and
        their count."""
        if not flt and where is None:
            return None, len(self.row_of)
        if self._selections_generation != self._generation:
            self._selections.clear()
            self._selections_generation = self._generation
        key = json.dumps(flt, sort_keys=True) + repr(where)  # frozen dataclasses: the repr is the value
        cached = self._selections.get(key)
        if cached is not None:
            return cached  # knn and lexical of one search share it
        mask = self.alive[: self.n].copy()
        for name, values in flt.items():
            mask &= self._rows_holding(name, values)
        if where is not None:
            mask &= self._matching(where)
        selection = mask, int(np.count_nonzero(mask))
        if len(self._selections) >= 16:
            self._selections.clear()
        self._selections[key] = selection
        return selection

    def _rows_holding(self, name: str, values: Sequence[str]) -> np.ndarray:
        """Rows (dead ones too) whose keyword ``name`` holds any of ``values``."""
        rows = np.zeros(self.n, dtype=bool)
        for value in values:
            posting = self.postings.get((name, value))
            if posting is not None:
                rows[posting.rows[: posting.size]] = True
        return rows

    def _sorted_values(self, name: str) -> list[str]:
        values = self.values.get(name, [])
        if name in self._unsorted:
            values.sort()
            self._unsorted.discard(name)
        return values

    def _with_prefix(self, name: str, prefix: str) -> tuple[list[str], int, int]:
        """The sorted values of a keyword and the slice of them that start with ``prefix``."""
        values = self._sorted_values(name)
        start = bisect.bisect_left(values, prefix)
        end = start
        if not prefix:
            end = len(values)
        elif ord(prefix[-1]) < 0x10FFFF:
            end = bisect.bisect_left(values, prefix[:-1] + chr(ord(prefix[-1]) + 1))
        else:
            while end < len(values) and values[end].startswith(prefix):
                end += 1
        return values, start, end

    def _matching(self, where: Match) -> np.ndarray:
        """Rows (dead ones too) passing a term-match expression (``mnemo.ports.Match``)."""
        if isinstance(where, AnyTerm):
            return self._rows_holding(where.field, where.values)
        if isinstance(where, TermRange):
            values, start, end = self._with_prefix(where.field, where.prefix)
            if where.low is not None:
                low = where.prefix + where.low
                lower = bisect.bisect_left if where.include_low else bisect.bisect_right
                start = max(start, lower(values, low, start, end))
            if where.high is not None:
                high = where.prefix + where.high
                upper = bisect.bisect_right if where.include_high else bisect.bisect_left
                end = min(end, upper(values, high, start, end))
            return self._rows_holding(where.field, values[start:end])
        if isinstance(where, TermContains):
            values, start, end = self._with_prefix(where.field, where.prefix)
            skip = len(where.prefix)
            return self._rows_holding(where.field, [v for v in values[start:end] if where.infix in v[skip:]])
        if isinstance(where, AllOf):
            rows = np.ones(self.n, dtype=bool)
            for part in where.parts:
                rows &= self._matching(part)
            return rows
        if not isinstance(where, AnyOf | NoneOf):
            raise ValueError(f"not a term-match expression: {where!r}")
        rows = np.zeros(self.n, dtype=bool)
        for part in where.parts:
            rows |= self._matching(part)
        return ~rows if isinstance(where, NoneOf) else rows

    def __len__(self) -> int:
        return len(self.row_of)


class LocalVectorIndex:
    """The VectorIndex port in process, persisted in SQLite (see the module docstring).

    Read-after-write: every write is seen by the next call on any handle of the same file (other
    processes catch up from the change log). ``exact_below``: filters allowing at most this many rows
    are searched exactly; ``persist_graph``: save the HNSW graph beside the SQLite file and read it
    back on load.
    """

    EXACT_BELOW = EXACT_BELOW
    #: Writes are by id and seen at once: no delete or replacement can miss a copy (``VectorIndex.refresh_window``).
    refresh_window = 0.0

    def __init__(self, path: Path | str, *, exact_below: int = EXACT_BELOW, persist_graph: bool = True) -> None:
        self._path = str(path)
        self._graph_dir: Path | None = None
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            if persist_graph:
                self._graph_dir = Path(self._path + ".ann")
        #: Public so that a benchmark can compare both paths on one loaded index.
        self.exact_below = exact_below
        self._lock = threading.RLock()
        self._conn = connect(self._path)
        self._conn.executescript(_SCHEMA)
        self._spaces: dict[str, _Space] = {}
        self._seen_version = self._data_version()

    # -- persistence -----------------------------------------------------
    def _data_version(self) -> int:
        """SQLite's counter of commits made by other connections to the file."""
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One immediate (write-locked) transaction, rolled back if the block raises."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _log(self, namespace: str, ids: Sequence[str | None]) -> int:
        """Record changed ids (None: a clear) in the open write transaction; returns the last sequence number."""
        self._conn.executemany("INSERT INTO changes (namespace, id) VALUES (?, ?)", [(namespace, i) for i in ids])
        seq = int(self._conn.execute("SELECT MAX(seq) FROM changes").fetchone()[0])
        if seq // 4096 != (seq - len(ids)) // 4096:  # now and then, not on every write
            self._conn.execute("DELETE FROM changes WHERE seq <= ?", (seq - KEEP_CHANGES,))
        return seq

    def _space(self, namespace: str, *, writing: bool = False) -> _Space:
        """The namespace in memory, brought up to date with what other connections committed.

        ``writing``: called inside a write transaction, where nobody else can commit: the namespace is caught up
        to the log's end whatever ``data_version`` said when it was last read.
        """
        version = self._data_version()
        if version != self._seen_version:
            self._seen_version = version
            for name in list(self._spaces):
                if not self._catch_up(name):
                    del self._spaces[name]
        elif writing and namespace in self._spaces and not self._catch_up(namespace):
            del self._spaces[namespace]
        space = self._spaces.get(namespace)
        if space is not None and space.dead > max(COMPACT_AFTER, len(space)):
            if self._graph_dir is not None:
                ann.discard(self._graph_dir, namespace)
            space = None
        if space is None:
            space = self._spaces[namespace] = self._load(namespace)
        return space

    def _catch_up(self, namespace: str) -> bool:
        """Replay others' logged changes into a loaded namespace; False when it must be reloaded instead."""
        space = self._spaces[namespace]
        changes = self._conn.execute(
            "SELECT seq, id FROM changes WHERE namespace = ? AND seq > ? ORDER BY seq", (namespace, space.seq)
        ).fetchall()
        oldest = self._conn.execute("SELECT MIN(seq) FROM changes").fetchone()[0]
        if oldest is not None and oldest > space.seq + 1:
            return False  # the log was pruned past what this copy has seen
        if not changes:
            return True
        if any(doc_id is None for _, doc_id in changes) or len(changes) > max(1000, len(space) // 2):
            return False
        changed = list(dict.fromkeys(doc_id for _, doc_id in changes))
        current: dict[str, tuple[bytes, str, str]] = {}
        for start in range(0, len(changed), 500):
            chunk = changed[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for doc_id, blob, text, keywords in self._conn.execute(
                f"SELECT id, vector, text, keywords FROM vectors WHERE namespace = ? AND id IN ({marks})",
                (namespace, *chunk),
            ):
                current[doc_id] = (blob, text, keywords)
        for doc_id in changed:
            if doc_id in current:
                blob, text, keywords = current[doc_id]
                vector = np.frombuffer(blob, dtype=np.float32)
                if space.n and vector.shape[0] != space.dims:
                    return False
                space.add(doc_id, vector, text, keywords)
            else:
                space.remove(doc_id)
        space.seq = max(seq for seq, _ in changes)
        return True

    def _load(self, namespace: str) -> _Space:
        """Read a namespace from SQLite into memory, reusing the saved graph's rows that still match."""
        outer = self._conn.in_transaction
        if not outer:
            self._conn.execute("BEGIN")  # one snapshot for the log position and the rows
        try:
            seq = int(self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0])
            total = int(
                self._conn.execute("SELECT COUNT(*) FROM vectors WHERE namespace = ?", (namespace,)).fetchone()[0]
            )
            cursor = self._conn.execute(
                "SELECT id, vector, text, keywords FROM vectors WHERE namespace = ?", (namespace,)
            )
            # Read in chunks straight into one matrix: holding every row's blob at once would double the peak.
            ids: list[str] = []
            texts: list[str] = []
            keywords: list[str] = []
            matrix = np.zeros((0, 0), dtype=np.float32)
            dims = 0
            while batch := cursor.fetchmany(8192):
                if not dims:
                    dims = len(batch[0][1]) // 4
                    matrix = np.empty((total, dims), dtype=np.float32)
                if any(len(row[1]) != dims * 4 for row in batch):
                    raise ValueError(f"namespace {namespace} holds vectors of different dimensions")
                start = len(ids)
                if start + len(batch) > total:  # cannot happen inside one snapshot; never write past the end
                    raise RuntimeError(f"namespace {namespace} changed while it was read")
                matrix[start : start + len(batch)] = np.frombuffer(
                    b"".join(row[1] for row in batch), dtype=np.float32
                ).reshape(len(batch), dims)
                ids.extend(row[0] for row in batch)
                texts.extend(row[2] for row in batch)
                keywords.extend(row[3] for row in batch)
        finally:
            if not outer:
                self._conn.execute("COMMIT")
        space = _Space(seq)
        if not ids:
            return space
        matrix = matrix[: len(ids)]
        saved = self._saved_graph(namespace, dims, len(ids))
        if saved is None:
            space.add_many(ids, matrix, texts, keywords)
            return space
        # Keep the saved numbering: row r of the graph is row r here when it still holds the same id and vector.
        position = {doc_id: index for index, doc_id in enumerate(ids)}
        graph_rows = saved.graph.rows
        source = np.full(graph_rows, -1, dtype=np.int64)
        for row, doc_id in enumerate(saved.ids):
            if doc_id:
                source[row] = position.get(doc_id, -1)
        step = 65_536
        for start in range(0, graph_rows, step):
            count = min(step, graph_rows - start)
            chunk = source[start : start + count]
            held = chunk >= 0
            same = np.zeros(count, dtype=bool)
            same[held] = saved.graph.matches(start, np.where(held[:, None], matrix[np.maximum(chunk, 0)], 0))[held]
            chunk[~same] = -1
        used = np.zeros(len(ids), dtype=bool)
        used[source[source >= 0]] = True
        space._reserve(dims, graph_rows + int(np.count_nonzero(~used)))  # one allocation, not one per doubling
        start = 0
        while start < graph_rows:  # runs of live rows are added together, runs of dead ones as placeholders
            live = source[start] >= 0
            end = start + 1
            while end < graph_rows and (source[end] >= 0) == live:
                end += 1
            if live:
                picks = source[start:end].tolist()
                space.add_many(
                    [ids[i] for i in picks], matrix[picks], [texts[i] for i in picks], [keywords[i] for i in picks]
                )
            else:
                space.add_dead(end - start, dims)
            start = end
        rest = np.flatnonzero(~used).tolist()
        space.add_many([ids[i] for i in rest], matrix[rest], [texts[i] for i in rest], [keywords[i] for i in rest])
        space.graph, space.saved_rows = saved.graph, graph_rows
        if len(rest) or space.dead:
            logger.info("saved ANN graph of %s: %d rows re-added, %d dead", namespace, len(rest), space.dead)
        return space

    def _saved_graph(self, namespace: str, dims: int, documents: int) -> ann.Saved | None:
        """The saved graph worth loading for a namespace of this size and dimension, if any."""
        if self._graph_dir is None or documents <= self.exact_below or not ann.faiss_available():
            return None
        saved = ann.load(self._graph_dir, namespace)
        if saved is None or saved.graph.dims != dims:
            return None
        return saved

    def _graph(self, namespace: str, space: _Space) -> ann.Graph:
        """The space's graph, built or extended to every row (and saved when enough is new)."""
        if space.graph is None:
            space.graph = ann.Graph.empty(space.dims)
            space.saved_rows = 0
        graph = space.graph
        if graph.rows < space.n:
            graph.add(space.matrix[graph.rows : space.n])
        if self._graph_dir is not None and graph.rows - space.saved_rows >= max(SAVE_AFTER, space.saved_rows // 20):
            try:
                ann.save(
                    self._graph_dir,
                    namespace,
                    graph,
                    [doc_id if space.alive[r] else "" for r, doc_id in enumerate(space.ids)],
                )
                space.saved_rows = graph.rows
            except OSError as error:  # the graph is a cache: failing to save it only costs the next load
                logger.warning("could not save the ANN graph of %s: %s", namespace, error)
        return graph

    # -- port ------------------------------------------------------------
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        """Write the documents in one SQLite transaction; ValueError, before any write, on a wrong dimension."""
        if not docs:
            return
        with self._lock, self._write():
            space = self._space(namespace, writing=True)
            prepared = [(doc, np.asarray(doc.vector, dtype=np.float32)) for doc in docs]
            expected = space.dims if len(space) else prepared[0][1].shape[0]
            for doc, vector in prepared:  # check all before anything is written
                if vector.ndim != 1 or vector.shape[0] != expected:
                    raise ValueError(f"vector of {doc.id} has shape {vector.shape}, the index holds {expected}")
            rows = [(namespace, d.id, v.tobytes(), d.text, json.dumps(d.keywords)) for d, v in prepared]
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors (namespace, id, vector, text, keywords) VALUES (?, ?, ?, ?, ?)", rows
            )
            seq = self._log(namespace, [doc.id for doc in docs])
            if space.n and not len(space) and space.dims != expected:
                space = self._spaces[namespace] = _Space(space.seq)  # emptied, now of another dimension
            for (_, doc_id, _, text, keywords), (_, vector) in zip(rows, prepared, strict=True):
                space.add(doc_id, vector, text, keywords)
            space.seq = seq

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Remove these ids in one SQLite transaction; unknown ids are ignored."""
        if not ids:
            return
        with self._lock, self._write():
            space = self._space(namespace, writing=True)
            self._conn.executemany(
                "DELETE FROM vectors WHERE namespace = ? AND id = ?", [(namespace, doc_id) for doc_id in ids]
            )
            seq = self._log(namespace, list(ids))
            for doc_id in ids:
                space.remove(doc_id)
            space.seq = seq

    def prune(self, namespace: str, ids: Sequence[str]) -> None:
        """Nothing to do: this index holds one copy per id (``refresh_window`` is 0)."""

    def knn(
        self, namespace: str, vector: Sequence[float], flt: Filter, k: int, *, where: Match | None = None
    ) -> list[Hit]:
        """Exact cosine k-NN; above ``exact_below`` allowed rows the HNSW graph's (exact if it finds too few)."""
        with self._lock:
            space = self._space(namespace)
            if not len(space):
                return []
            query = np.asarray(vector, dtype=np.float32)
            if query.shape != (space.dims,):
                raise ValueError(f"query has shape {query.shape}, the index holds {space.dims} dimensions")
            mask, count = space.select(flt, where)
            if count == 0 or k <= 0:
                return []
            allowed = space.alive[: space.n] if mask is None else mask
            want = min(k, count)
            if count > self.exact_below and ann.faiss_available():
                rows, scores = self._graph(namespace, space).search(query, allowed, count, want, space.matrix)
                if rows.shape[0] == want:
                    return [space.hit(int(row), float(score)) for row, score in zip(rows, scores, strict=True)]
                # The graph could not reach enough allowed rows (a very selective filter): answer exactly.
            rows = np.flatnonzero(allowed)
            if rows.size * 4 >= space.n:
                # One pass over the contiguous matrix beats gathering most of its rows.
                scores = ann.inner_products(space.matrix[: space.n], query)[rows]
            else:
                scores = ann.inner_products(space.matrix[rows], query)
            if rows.size > want:
                best = np.argpartition(-scores, want)[:want]
                best = best[np.argsort(-scores[best])]
            else:
                best = np.argsort(-scores)
            return [space.hit(int(rows[i]), float(scores[i])) for i in best]

    def lexical(self, namespace: str, text: str, flt: Filter, k: int, *, where: Match | None = None) -> list[Hit]:
        """BM25 over the namespace's postings, scaled by the query's reference score."""
        with self._lock:
            space = self._space(namespace)
            mask, count = space.select(flt, where)
            if count == 0 or k <= 0:
                return []
            if count == len(space):
                mask = None  # the filter keeps every live row (one scope): BM25 need not look at it per posting
            rows, scores, reference = space.bm25.top(text, mask, k)
            if not rows.shape[0] or reference <= 0:
                return []
            return [
                space.hit(int(row), min(1.0, float(score) / reference)) for row, score in zip(rows, scores, strict=True)
            ]

    def keywords_of(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """The filter fields of the ids held, read from memory."""
        with self._lock:
            space = self._space(namespace)
            rows = {doc_id: space.row_of.get(doc_id) for doc_id in ids}
            return {doc_id: space.hit(row, 0.0).keywords for doc_id, row in rows.items() if row is not None}

    def count(self, namespace: str) -> int:
        """Live documents in the namespace."""
        with self._lock:
            return len(self._space(namespace))

    def clear(self, namespace: str) -> None:
        """Drop the namespace's documents and its saved graph."""
        with self._lock:
            with self._write():
                self._conn.execute("DELETE FROM vectors WHERE namespace = ?", (namespace,))
                seq = self._log(namespace, [None])
            self._spaces[namespace] = _Space(seq)
            if self._graph_dir is not None:
                ann.discard(self._graph_dir, namespace)

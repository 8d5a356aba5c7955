"""Approximate k-NN for the embedded index: a faiss HNSW graph over a space's rows, saved beside SQLite.

The graph's ids are the space's rows (0, 1, 2, ... in the order they were added);
rows are never reused, so a deleted or replaced document stays in the graph and is
masked out at search time by the same bitmap that carries the filter.

faiss is imported on first use only: the AWS path never loads it, and without it
(``faiss_available()`` false) the local index stays exact.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

# Chosen on bench/scale.py's vectors (recall@10 of k=100 searches against exact; docs/scaling.md has the
# tables). On its first, near-uniform vectors at 50,000 rows, M 32 / efConstruction 100 levelled off near 0.95
# whatever efSearch: the graph, not the search, was the limit; M 48 / efConstruction 200 reached 0.98. On vectors
# matched to bge-small's statistics, 8-bit storage and re-scoring 2 x k candidates: at 100,000 rows 0.994 at
# efSearch 128, 0.995 at 256 and 512 (the flat float32 storage gives the same recall, more slowly); at
# 1,000,000 rows 0.973 / 0.977 / 0.990, and 0.990 whenever the candidate list is 400 or more.
#: HNSW links per node (layer 0 has twice as many).
M = 48
#: Candidate list while inserting: higher builds a better graph, more slowly.
EF_CONSTRUCTION = 200
#: Candidate list while searching, before the selectivity adjustment (never below k).
EF_SEARCH = 512
#: Upper bound of the adjusted candidate list for selective filters.
EF_SEARCH_MAX = 2048
#: The graph returns this many times ``k`` candidates, re-ranked by their exact inner product (float32 matrix).
RESCORE = 2
#: How the graph stores its vectors: "sq8" (8 bits per dimension, per-dimension range; a quarter of the float32
#: matrix, which stays the reference for scores), "fp16" (half) or "flat" (float32, a second copy of the matrix).
STORAGE = "sq8"

_FORMAT = 2


@lru_cache(maxsize=1)
def _faiss() -> Any:
    """The faiss module, imported once and set to one thread; ImportError without it."""
    import faiss

    # One query is one thread: with two cores shared by requests, OpenMP teams waiting on each
    # other cost more than they save. Bulk builds raise it for their duration.
    faiss.omp_set_num_threads(1)
    return faiss


def faiss_available() -> bool:
    """True when faiss can be imported (else the local index stays exact)."""
    try:
        _faiss()
    except ImportError:
        return False
    return True


def inner_products(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` on one thread (faiss's SIMD loop), whatever BLAS would do with the other core."""
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    query = np.ascontiguousarray(query, dtype=np.float32)
    if not faiss_available():
        return matrix @ query
    faiss = _faiss()
    out = np.empty(matrix.shape[0], dtype=np.float32)
    if matrix.shape[0]:
        faiss.fvec_inner_products_ny(
            faiss.swig_ptr(out), faiss.swig_ptr(query), faiss.swig_ptr(matrix), matrix.shape[1], matrix.shape[0]
        )
    return out


class Graph:
    """An HNSW graph (inner product on unit vectors = cosine) whose ids are rows 0..rows-1."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @classmethod
    def empty(cls, dims: int, storage: str | None = None) -> Graph:
        """A graph with no rows, storing vectors as ``storage`` (default ``STORAGE``)."""
        faiss = _faiss()
        storage = storage or STORAGE
        if storage == "flat":
            index = faiss.IndexHNSWFlat(dims, M, faiss.METRIC_INNER_PRODUCT)
        else:
            kind = {"sq8": faiss.ScalarQuantizer.QT_8bit, "fp16": faiss.ScalarQuantizer.QT_fp16}[storage]
            index = faiss.IndexHNSWSQ(dims, kind, M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        return cls(index)

    @property
    def storage(self) -> str:
        """How the graph stores its vectors: "sq8", "fp16" or "flat"."""
        inner = _faiss().downcast_index(self._index.storage)
        if not hasattr(inner, "sq"):
            return "flat"
        return "fp16" if inner.sq.qtype == _faiss().ScalarQuantizer.QT_fp16 else "sq8"

    @property
    def rows(self) -> int:
        """Rows in the graph, dead ones included."""
        return int(self._index.ntotal)

    @property
    def dims(self) -> int:
        """The vectors' dimension."""
        return int(self._index.d)

    def add(self, vectors: np.ndarray) -> None:
        """Append rows ``self.rows ..``; a bulk add uses every core."""
        if not vectors.shape[0]:
            return
        faiss = _faiss()
        threads = (os.cpu_count() or 1) if vectors.shape[0] >= 1000 else 1
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        faiss.omp_set_num_threads(threads)
        try:
            if not self._index.is_trained:
                # 8-bit codes: each dimension's range is taken from the first rows (the graph is first built over
                # every row of a space); later values outside it are clipped, which re-scoring makes harmless.
                self._index.train(vectors)
            self._index.add(vectors)
        finally:
            faiss.omp_set_num_threads(1)

    def matches(self, start: int, vectors: np.ndarray) -> np.ndarray:
        """Per row ``start ..``: does the graph hold exactly what ``vectors`` (that row's float32 vector) would
        store (the same code for quantised storage, the same bits for flat)?"""
        faiss = _faiss()
        count = vectors.shape[0]
        inner = faiss.downcast_index(self._index.storage)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        size = int(inner.code_size)
        codes = faiss.rev_swig_ptr(inner.codes.data(), inner.codes.size())[start * size : (start + count) * size]
        expected = inner.sa_encode(vectors) if count else np.zeros((0, size), dtype=np.uint8)
        return np.all(codes.reshape(count, size) == expected.reshape(count, size), axis=1)

    def candidates(self, query: np.ndarray, allowed: np.ndarray, count: int, wanted: int) -> np.ndarray:
        """Up to ``wanted`` rows among ``allowed`` (a boolean mask over the graph's rows, ``count`` of them true),
        nearest first by the graph's stored (possibly quantised) vectors."""
        faiss = _faiss()
        fraction = count / max(self.rows, 1)
        # A selective filter leaves fewer matching nodes on each path through the graph: widen the
        # candidate list in proportion so the matching ones found stay as many.
        ef = int(min(EF_SEARCH_MAX, max(wanted, EF_SEARCH) / max(fraction, 1e-9)))
        bitmap = np.packbits(allowed[: self.rows], bitorder="little")
        selector = faiss.IDSelectorBitmap(bitmap)
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(ef, wanted))
        query = np.ascontiguousarray(query, dtype=np.float32)
        _, labels = self._index.search(query[None, :], wanted, params=params)
        return labels[0][labels[0] >= 0]

    def search(
        self, query: np.ndarray, allowed: np.ndarray, count: int, k: int, matrix: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows and exact scores of up to ``k`` nearest rows among ``allowed``, best first: the graph proposes
        ``RESCORE * k`` candidates, their inner products with ``query`` in ``matrix`` (the float32 rows) rank
        them."""
        rows = self.candidates(query, allowed, count, min(count, RESCORE * k))
        scores = inner_products(matrix[rows], query)
        best = np.argsort(-scores, kind="stable")[:k]
        return rows[best], scores[best]


@dataclass
class Saved:
    """A graph read back from disk with the ids its rows held when it was written ("" for a dead row)."""

    graph: Graph
    ids: list[str]


def _paths(directory: Path, namespace: str) -> tuple[Path, Path]:
    """The graph file and its description for a namespace (named by a hash: namespaces are free text)."""
    stem = hashlib.sha256(namespace.encode()).hexdigest()[:32]
    return directory / f"{stem}.faiss", directory / f"{stem}.json"


def _digest(path: Path) -> str:
    """A file's SHA-256, read in 4 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def save(directory: Path, namespace: str, graph: Graph, ids: list[str]) -> None:
    """Write the graph and its row ids; a reader sees the old pair, the new pair, or a mismatch it rejects."""
    faiss = _faiss()
    directory.mkdir(parents=True, exist_ok=True)
    graph_path, meta_path = _paths(directory, namespace)
    suffix = f".{os.getpid()}.tmp"
    graph_tmp, meta_tmp = graph_path.with_name(graph_path.name + suffix), meta_path.with_name(meta_path.name + suffix)
    faiss.write_index(graph._index, str(graph_tmp))
    meta = {
        "format": _FORMAT,
        "namespace": namespace,
        "dims": graph.dims,
        "rows": graph.rows,
        "M": M,
        "efConstruction": EF_CONSTRUCTION,
        "storage": graph.storage,
        "sha256": _digest(graph_tmp),
        "ids": ids,
    }
    meta_tmp.write_text(json.dumps(meta))
    os.replace(graph_tmp, graph_path)
    os.replace(meta_tmp, meta_path)


def load(directory: Path, namespace: str) -> Saved | None:
    """The saved graph if its files agree with each other (checksum, row count, dimensions), else None.

    Agreement with the index's current documents is the caller's to check, row by row.
    """
    graph_path, meta_path = _paths(directory, namespace)
    if not graph_path.exists() or not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("format") != _FORMAT or meta.get("namespace") != namespace:
            return None
        ids = meta["ids"]
        # Check the bytes before faiss parses them: a truncated or foreign file must never reach its reader.
        if len(ids) != meta["rows"] or _digest(graph_path) != meta["sha256"]:
            logger.warning("saved ANN graph of %s does not match its description; rebuilding", namespace)
            return None
        index = _faiss().read_index(str(graph_path))
        graph = Graph(index)
        if graph.rows != meta["rows"] or graph.dims != meta["dims"]:
            return None
        return Saved(graph, [str(doc_id) for doc_id in ids])
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as error:
        logger.warning("saved ANN graph of %s is unreadable (%s); rebuilding", namespace, error)
        return None


def discard(directory: Path, namespace: str) -> None:
    """Delete a namespace's saved graph, if any."""
    for path in _paths(directory, namespace):
        path.unlink(missing_ok=True)

"""The batch path's in-call near-duplicate check: each memory against those added earlier in the same call.

The index cannot find what this call has not indexed yet, so ``BatchAdd``
(``mnemo.memory.batch``) keeps the vectors of the memories it adds, per scope,
and compares each new memory with them and with its own window, as one-by-one
adds would have seen them. Comparisons are matrix products with numpy, plain
Python without; a large scope bounds most products away first (``_Bound``).
"""

from __future__ import annotations

from typing import Any

#: The most memories of one fresh scope kept for the in-call near-duplicate check (about 150 MB at 384 dimensions).
SIMILAR_CAP = 100_000
#: Kept memories of one scope from which the in-call check first bounds similarities in a few dimensions (below,
#: one plain product is cheap).
PRUNE_FROM = 8192
#: Dimensions of that bound (principal directions of the kept memories).
PRUNE_DIMENSIONS = 32
#: Kept rows bounded per product (the bounds of one window's memories against them stay in cache).
_BLOCK = 1024
#: Float32 rounding room for the bound: a pair is looked at exactly whenever its bound comes this close.
_ROOM = 1e-3


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # a runtime without numpy (a Lambda layer): plain Python below
        return None
    return numpy


class _Bound:
    """A cheap upper bound on the similarities to one scope's kept memories, to skip most exact products.

    With ``P`` an orthonormal basis of a few principal directions of the kept memories, every vector ``a`` is
    ``P^T P a + a_perp``, so ``a . b = (P a) . (P b) + a_perp . b_perp <= (P a) . (P b) + |a_perp| |b_perp|``
    (Cauchy-Schwarz). That bound is one product of ``PRUNE_DIMENSIONS + 1`` columns, ``[P a, |a_perp|]`` against
    ``[P b, |b_perp|]``; only the pairs whose bound reaches the threshold are compared exactly, so the answer is
    the exact one, found for a fraction of the cost when the memories have structure (and the plain cost plus a
    little when they have none).
    """

    def __init__(self, np: Any, rows: Any) -> None:
        self.np = np
        # The principal directions of the rows kept so far, from their d x d second moments (any orthonormal
        # basis keeps the bound exact; these make it tight).
        moments = rows.T.astype(np.float64) @ rows.astype(np.float64)
        _, directions = np.linalg.eigh(moments)  # ascending eigenvalues
        self.basis = np.ascontiguousarray(directions[:, ::-1][:, :PRUNE_DIMENSIONS], dtype=np.float32)  # d x k
        self.reduced = np.zeros((0, PRUNE_DIMENSIONS + 1), dtype=np.float32)
        self.count = 0

    def project(self, vectors: Any) -> Any:
        np = self.np
        inside = vectors @ self.basis
        rest = vectors - inside @ self.basis.T
        return np.hstack([inside, np.sqrt(np.einsum("ij,ij->i", rest, rest))[:, None]]).astype(np.float32)

    def extend(self, rows: Any, count: int) -> None:
        """Bring the reduced rows up to the first ``count`` kept rows."""
        if count <= self.count:
            return
        if count > self.reduced.shape[0]:
            grown = self.np.zeros((max(2 * self.reduced.shape[0], count), self.reduced.shape[1]), dtype=self.np.float32)
            grown[: self.count] = self.reduced[: self.count]
            self.reduced = grown
        self.reduced[self.count : count] = self.project(rows[self.count : count])
        self.count = count

    def best(self, rows: Any, ids: list[str], matrix: Any, threshold: float) -> list[tuple[float, str] | None]:
        """For each row of ``matrix``, the most similar kept memory if it is at least ``threshold``, else None."""
        np = self.np
        self.extend(rows, len(ids))
        reduced = self.project(matrix)
        floor = threshold - _ROOM
        found_rows, found_columns = [], []
        # Blocks of kept rows small enough for the bounds to stay in cache (the product itself is cheap).
        for start in range(0, len(ids), _BLOCK):
            stop = min(start + _BLOCK, len(ids))
            hits = np.flatnonzero(reduced @ self.reduced[start:stop].T >= floor)  # far cheaper than a 2-d nonzero
            found_rows.append(hits // (stop - start))
            found_columns.append(hits % (stop - start) + start)
        near, columns = np.concatenate(found_rows), np.concatenate(found_columns)
        scores = np.einsum("ij,ij->i", matrix[near], rows[columns])
        keep = scores >= threshold
        near, columns, scores = near[keep], columns[keep], scores[keep]
        # The best per row, the first kept on a tie (as an argmax over every kept row would pick).
        best: dict[int, tuple[float, int]] = {}
        for n, column, score in zip(near.tolist(), columns.tolist(), scores.tolist(), strict=True):
            held = best.get(n)
            if held is None or score > held[0] or (score == held[0] and column < held[1]):
                best[n] = (score, column)
        found: list[tuple[float, str] | None] = [None] * len(matrix)
        for n, (score, column) in best.items():
            found[n] = (score, ids[column])
        return found


class InCallMemories:
    """Memories added in this call that the store check will not see, per scope: the in-batch near-duplicate check.

    A scope the index held nothing of when the call began is *fresh*: the
    index has nothing to find there but this call's own memories, so every one
    of them is kept here (up to ``cap``) and the per-memory knn is skipped.
    Elsewhere a memory is kept only until the index holds it. Rows live in a
    growing float32 matrix with numpy, in lists without. Once a scope keeps
    ``PRUNE_FROM`` memories, a ``_Bound`` spares most of the exact products.
    """

    def __init__(self, cap: int, threshold: float) -> None:
        self.np = _numpy()
        self._cap = cap
        self._threshold = threshold
        self._ids: dict[str, list[str]] = {}
        self._rows: dict[str, Any] = {}
        self._bounds: dict[str, _Bound] = {}
        #: scope -> True while the knn is skipped for it.
        self.fresh: dict[str, bool] = {}

    def add(self, scope: str, memory_id: str, vector: Any) -> None:
        """Keep a memory just added to ``scope`` (its unit vector) for the checks of later entries."""
        ids = self._ids.setdefault(scope, [])
        if self.np is None:
            self._rows.setdefault(scope, []).append(vector)
        else:
            rows = self._rows.get(scope)
            if rows is None or len(ids) == rows.shape[0]:
                grown = self.np.zeros((max(64, 2 * len(ids)), len(vector)), dtype=self.np.float32)
                if rows is not None:
                    grown[: len(ids)] = rows[: len(ids)]
                rows = self._rows[scope] = grown
            rows[len(ids)] = vector
        ids.append(memory_id)

    def indexed(self, memory_ids: set[str]) -> None:
        """These memories are in the index now: knn finds them, so only fresh scopes keep them (up to the cap)."""
        for scope, ids in self._ids.items():
            if self.fresh.get(scope) and len(ids) <= self._cap:
                continue
            self.fresh[scope] = False
            keep = [n for n, memory_id in enumerate(ids) if memory_id not in memory_ids]
            if len(keep) < len(ids):
                rows = self._rows[scope]
                self._rows[scope] = [rows[n] for n in keep] if self.np is None else rows[keep]
                self._ids[scope] = [ids[n] for n in keep]
                self._bounds.pop(scope, None)  # its reduced rows no longer line up

    def best(self, scope: str, matrix: Any) -> list[tuple[float, str] | None]:
        """For each row of ``matrix``, the most similar memory kept for the scope (None, or any one below the
        threshold, when none reaches it: the caller only uses an answer at or above it)."""
        ids = self._ids.get(scope)
        if not ids:
            return [None] * len(matrix)
        rows = self._rows[scope]
        if self.np is not None and len(ids) >= PRUNE_FROM and matrix.shape[1] > 2 * PRUNE_DIMENSIONS:
            bound = self._bounds.get(scope)
            if bound is None:
                bound = self._bounds[scope] = _Bound(self.np, rows[: len(ids)])
            return bound.best(rows, ids, matrix, self._threshold)
        scores = _similarities(self.np, matrix, rows[: len(ids)])
        if self.np is None:
            tops = [max(range(len(row)), key=row.__getitem__) for row in scores]
            return [(scores[n][top], ids[top]) for n, top in enumerate(tops)]
        tops = self.np.argmax(scores, axis=1)
        return [(float(scores[n, top]), ids[top]) for n, top in enumerate(tops.tolist())]


class ScopeWindow:
    """One scope's entries (those with vectors) of one window: similarities to the memories kept in
    ``InCallMemories`` and to each other, from two matrix products, so each entry can see those accepted before it."""

    def __init__(self, similar: InCallMemories, scope: str, vectors: list[list[float]]) -> None:
        self.np = np = similar.np
        self.matrix = vectors if np is None else np.asarray(vectors, dtype=np.float32)
        self._kept = similar.best(scope, self.matrix)
        self._within = _similarities(np, self.matrix, self.matrix)
        self._ids: list[str | None] = [None] * len(vectors)
        self._accepted = 0
        self._mask = None if np is None else np.zeros(len(vectors), dtype=bool)

    def best(self, row: int) -> tuple[float, str] | None:
        """The most similar memory kept from earlier or accepted earlier in this window."""
        found = self._kept[row]
        if not self._accepted:
            return found
        if self.np is None:
            scored = [(self._within[row][n], i) for n, i in enumerate(self._ids) if i is not None]
            here: tuple[float, str] = max(scored)
        else:
            scores = self.np.where(self._mask, self._within[row], -self.np.inf)
            top = int(self.np.argmax(scores))
            here = (float(scores[top]), self._ids[top] or "")
        return here if found is None or here[0] > found[0] else found

    def accept(self, row: int, memory_id: str) -> None:
        """Row ``row`` was stored as ``memory_id``: later rows of this window are compared with it."""
        self._ids[row] = memory_id
        self._accepted += 1
        if self._mask is not None:
            self._mask[row] = True


def _similarities(np: Any, left: Any, right: Any) -> Any:
    """Cosine similarities of unit vectors: a len(left) x len(right) matrix."""
    if np is None:
        return [[sum(a * b for a, b in zip(x, y, strict=True)) for y in right] for x in left]
    return np.asarray(left, dtype=np.float32) @ np.asarray(right, dtype=np.float32).T

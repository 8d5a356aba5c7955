"""Incremental BM25 over analysed text (lowercase, stop words out, Snowball stems).

Postings are numpy arrays per term, scored in bulk: a common term at a million
documents is a few vectorised passes instead of a million Python iterations.
The analysis and the formula live in ``mnemo.adapters.bm25_text`` (no numpy), which
the OpenSearch adapter shares.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from mnemo.adapters.bm25_text import K1, B, analyse, idf, term_score

__all__ = ["K1", "B", "Bm25", "analyse", "idf", "term_score"]


class _Postings:
    """One term's documents: parallel arrays of rows and term frequencies, appended to in place.

    Entries of removed rows stay until they outnumber the live ones (``stale``); the
    owner's ``present`` array tells them apart.
    """

    __slots__ = ("live", "rows", "size", "stale", "tfs")

    def __init__(self) -> None:
        self.rows = np.empty(4, dtype=np.int64)
        self.tfs = np.empty(4, dtype=np.float64)
        self.size = 0
        self.live = 0
        self.stale = 0

    def append(self, row: int, tf: int) -> None:
        """Add a row and its term frequency, doubling the arrays when full."""
        if self.size == self.rows.shape[0]:
            self.rows = np.resize(self.rows, self.size * 2)
            self.tfs = np.resize(self.tfs, self.size * 2)
        self.rows[self.size] = row
        self.tfs[self.size] = tf
        self.size += 1
        self.live += 1

    def keep(self, which: np.ndarray) -> None:
        """Keep only the entries ``which`` selects (a compaction: no entry is stale after it)."""
        rows, tfs = self.rows[: self.size][which], self.tfs[: self.size][which]
        self.size = rows.shape[0]
        self.rows = np.concatenate([rows, np.empty(max(4, self.size), dtype=np.int64)])
        self.tfs = np.concatenate([tfs, np.empty(max(4, self.size), dtype=np.float64)])
        self.stale = 0


class Bm25:
    """BM25 whose documents can be added and removed one at a time.

    Rows are small integers owned by the caller. Re-adding a row that was removed
    (or adding one twice) is allowed but costs a pass over every posting; callers
    that never reuse rows (the local index) never pay it.
    """

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self._terms: dict[str, _Postings] = {}
        self._length = np.zeros(0, dtype=np.float64)
        self._present = np.zeros(0, dtype=bool)
        self._used = np.zeros(0, dtype=bool)
        self._documents = 0
        self._total_length = 0

    def _reserve(self, row: int) -> None:
        """Room for ``row`` in the per-row arrays, growing them by doubling."""
        if row >= self._present.shape[0]:
            capacity = max(64, row + 1, 2 * self._present.shape[0])
            self._length = np.concatenate([self._length, np.zeros(capacity - self._length.shape[0])])
            self._present = np.concatenate([self._present, np.zeros(capacity - self._present.shape[0], dtype=bool)])
            self._used = np.concatenate([self._used, np.zeros(capacity - self._used.shape[0], dtype=bool)])

    def _purge(self, row: int) -> None:
        """Drop every posting entry of ``row`` (before the row is used again)."""
        for term, postings in list(self._terms.items()):
            mine = postings.rows[: postings.size] == row
            if mine.any():
                if self._present[row]:
                    postings.live -= 1
                else:
                    postings.stale -= 1
                postings.keep(~mine)
                postings.stale = int(np.count_nonzero(~self._present[postings.rows[: postings.size]]))
                if postings.live == 0:
                    del self._terms[term]
        if self._present[row]:
            self._present[row] = False
            self._documents -= 1
            self._total_length -= int(self._length[row])

    def add(self, row: int, text: str) -> None:
        """Index ``text`` as the document at ``row``."""
        terms = Counter(analyse(text))
        self._reserve(row)
        if self._used[row]:
            self._purge(row)
        for term, tf in terms.items():
            postings = self._terms.get(term)
            if postings is None:
                postings = self._terms[term] = _Postings()
            postings.append(row, tf)
        length = sum(terms.values())
        self._length[row] = length
        self._present[row] = True
        self._used[row] = True
        self._documents += 1
        self._total_length += length

    def remove(self, row: int, text: str) -> None:
        """Forget the document at ``row`` (``text`` is what it was added with); nothing if it is not held."""
        if row >= self._present.shape[0] or not self._present[row]:
            return
        self._present[row] = False
        self._documents -= 1
        self._total_length -= int(self._length[row])
        for term in set(analyse(text)):
            postings = self._terms.get(term)
            if postings is None:
                continue
            postings.live -= 1
            postings.stale += 1
            if postings.live == 0:
                del self._terms[term]
            elif postings.stale > max(postings.live, 16):
                # Compact once dead entries outnumber live ones, so scoring stays proportional to live documents.
                postings.keep(self._present[postings.rows[: postings.size]])

    def _idf(self, term: str) -> float:
        """The term's inverse document frequency over the live documents."""
        postings = self._terms.get(term)
        return idf(self._documents, postings.live if postings else 0)

    def top(self, text: str, allowed: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The ``k`` best rows (best first, ties by row), their raw BM25 scores, and the reference score.

        ``allowed`` is None (every row) or a boolean mask indexed by row (rows past its end are excluded).
        The reference score is what a document of average length holding each query term once would get;
        dividing by it gives an absolute [0, 1]-ish scale that does not depend on which other documents matched.
        """
        rows, scores, reference, floor = self._score(text, allowed, k)
        if rows.shape[0] > k and floor > 0:
            # At least k rows score ``floor`` or more: the others cannot reach the top k (nor tie at its cut).
            keep = scores >= floor
            rows, scores = rows[keep], scores[keep]
        if rows.shape[0] > k:
            # Equal scores are common (same tf, same length): those at the cut go by row, not by chance.
            kth = np.partition(scores, rows.shape[0] - k)[rows.shape[0] - k]
            ties = np.flatnonzero(scores == kth)
            ties = ties[np.argsort(rows[ties], kind="stable")]
            better = np.flatnonzero(scores > kth)
            best = np.concatenate([better, ties[: k - better.shape[0]]])
            rows, scores = rows[best], scores[best]
        order = np.lexsort((rows, -scores))
        return rows[order], scores[order], reference

    def scores(self, text: str, allowed: set[int] | None) -> tuple[dict[int, float], float]:
        """Raw BM25 per matching row, and the reference score (see ``top``)."""
        mask = None
        if allowed is not None:
            mask = np.zeros(self._present.shape[0], dtype=bool)
            inside = [row for row in allowed if 0 <= row < mask.shape[0]]
            mask[np.asarray(inside, dtype=np.int64)] = True
        rows, scores, reference, _ = self._score(text, mask)
        return dict(zip(rows.tolist(), scores.tolist(), strict=True)), reference

    def _score(self, text: str, allowed: np.ndarray | None, k: int = 0) -> tuple[np.ndarray, np.ndarray, float, float]:
        """Matching rows, their raw scores, the reference score and a floor: with ``k``, a score that at least
        ``k`` rows reach (0 when unknown)."""
        counts = Counter(term for term in analyse(text) if term in self._terms)
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if not counts:
            return *empty, 0.0, 0.0
        avg = self._total_length / max(self._documents, 1)
        k1, b = self.k1, self.b
        # term_score, vectorised: weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg)).
        base, per_length = k1 * (1 - b), k1 * b / avg
        keep = self._present
        if allowed is not None:
            keep = keep.copy()
            limit = min(keep.shape[0], allowed.shape[0])
            keep[:limit] &= allowed[:limit]
            keep[limit:] = False
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        ceiling = 0.0
        for term, query_tf in counts.items():
            weight = self._idf(term) * query_tf
            ceiling += weight
            postings = self._terms[term]
            rows, tfs = postings.rows[: postings.size], postings.tfs[: postings.size]
            if allowed is not None or postings.stale:
                which = keep[rows]
                rows, tfs = rows[which], tfs[which]
            if rows.shape[0]:
                parts.append((rows, (weight * (k1 + 1)) * tfs / (tfs + base + per_length * self._length[rows])))
        if not parts:
            return *empty, ceiling, 0.0
        if len(parts) == 1:
            return parts[0][0], parts[0][1], ceiling, 0.0
        # A row's score is the sum of its terms' positive contributions, so it is at least any one of them (also
        # in floating point: adding a non-negative number never rounds below either operand). The k-th best
        # contribution of one term is thus a score that k rows reach; the two smallest postings holding k rows
        # give it cheaply.
        floor = 0.0
        if k > 0:
            sizes = sorted((part[0].shape[0], n) for n, part in enumerate(parts) if part[0].shape[0] >= k)
            for _, n in sizes[:2]:
                contribution = parts[n][1]
                floor = max(floor, float(np.partition(contribution, contribution.shape[0] - k)[-k]))
        total = sum(part[0].shape[0] for part in parts)
        if total * 8 < keep.shape[0]:
            # Few postings: merge them by sorting rather than touching an array as long as the index.
            every = np.concatenate([part[0] for part in parts])
            rows, inverse = np.unique(every, return_inverse=True)
            scores = np.bincount(inverse, weights=np.concatenate([part[1] for part in parts]), minlength=rows.shape[0])
            return rows, scores, ceiling, floor
        accumulated = np.zeros(keep.shape[0], dtype=np.float64)
        for rows, contribution in parts:
            accumulated[rows] += contribution  # rows are unique within one term
        # Every contribution is positive (idf > 0, tf >= 1): a row that matched is above 0, and above the floor
        # only if it can be in the top k.
        rows = np.flatnonzero(accumulated >= floor) if floor > 0 else np.flatnonzero(accumulated)
        return rows, accumulated[rows], ceiling, floor

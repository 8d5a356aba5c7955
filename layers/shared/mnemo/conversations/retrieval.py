"""How a retrieval finds its page: a key lookup, the time entries, or the vector index.

- ``message_id`` given: one key lookup (filters still apply).
- ``recent``: the time entries, newest first, page by page (a time range is a
  key range); their copies of the execution filter fields are filtered in
  memory, then only the page of records is read.
- ``hybrid`` and ``keyword``: the vector index, filtered by scope and execution
  fields inside the index and by time on the hits' keywords; the best hits are
  read back from the records until the page is full, and a hit without a record
  (a stale index entry) is dropped.

Scores come from the one ranker (``mnemo.retrieval.ranker``, the memory calibration): the
cosine and the normalised BM25 on absolute 0-1 scales, blended. A hit is a match
when it shares a word with the query or its cosine is above the model's floor
for unrelated texts; ``keyword`` keeps only the lexical signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mnemo.conversations.store import RECENT_PAGE, RECENT_WALK, EntryStore
from mnemo.ports import Embedder, Filter, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank

#: Hits taken from each of k-NN and BM25 before filtering and ranking.
CANDIDATES = 200

#: A record and its relevance (None for the recent strategy, which does not rank).
Row = tuple[dict[str, Any], float | None]


@dataclass(frozen=True)
class Criteria:
    """What one retrieval asks for; ``low``/``high`` are key-format timestamps (see store.key_time)."""

    query: str
    strategy: str
    limit: int
    flt: Filter
    message_id: str | None = None
    low: str | None = None
    high: str | None = None


def within(stamp: str, low: str | None, high: str | None) -> bool:
    return not ((low and stamp < low) or (high and stamp > high))


def passes(words: dict[str, list[str]], flt: Filter) -> bool:
    """The index's filter rule applied outside it: each field shares a value with the filter."""
    return all(set(words.get(name, [])) & set(values) for name, values in flt.items() if name != "scope")


@dataclass(frozen=True)
class Ranked:
    message_id: str
    timestamp: str
    score: float


def rank(
    index: VectorIndex,
    embedder: Embedder,
    namespace: str,
    query: str,
    flt: Filter,
    *,
    lexical_only: bool,
    low: str | None = None,
    high: str | None = None,
) -> list[Ranked]:
    """Matches of ``query`` under ``flt`` and within [low, high], best first, newer first on a tie.

    Scores are compared at two decimals, so near-equal relevance goes to the newer entry.
    """
    ranking = hybrid_rank(index, embedder, namespace, query, flt, k=CANDIDATES, lexical_only=lexical_only)
    found: list[Ranked] = []
    for candidate in ranking.candidates:
        words = candidate.hit.keywords
        stamp = (words.get("timestamp") or [""])[0]
        if within(stamp, low, high) and candidate.related(ranking.calibration):
            score = min(1.0, max(0.0, candidate.score))
            found.append(Ranked((words.get("message_id") or [""])[0], stamp, score))
    found.sort(key=lambda hit: (round(hit.score, 2), hit.timestamp), reverse=True)
    return found


class Finder:
    def __init__(self, index: VectorIndex, embedder: Embedder) -> None:
        self._index = index
        self._embedder = embedder

    def find(
        self, store: EntryStore, scope: str, criteria: Criteria, words: Callable[[dict[str, Any]], Filter]
    ) -> tuple[list[Row], int]:
        """The page of (record, relevance) and the number of matches; ``words`` gives a record's filter fields."""
        if criteria.message_id is not None:
            data = store.get(scope, criteria.message_id)
            if data is None or not within(data["timestamp"], criteria.low, criteria.high):
                return [], 0
            return ([(data, 1.0)], 1) if passes(words(data), criteria.flt) else ([], 0)
        if criteria.strategy == "recent":
            return self._recent(store, scope, criteria)
        ranked = rank(
            self._index,
            self._embedder,
            store.kind.namespace,
            criteria.query,
            criteria.flt,
            lexical_only=criteria.strategy == "keyword",
            low=criteria.low,
            high=criteria.high,
        )
        return self._hydrate(store, scope, ranked, criteria.limit)

    @staticmethod
    def _recent(store: EntryStore, scope: str, criteria: Criteria) -> tuple[list[Row], int]:
        """The newest matches and their count.

        With a time range, every entry in it is walked and counted. Without one, the
        walk counts the newest ``RECENT_PAGE`` entries, and goes on (up to ``RECENT_WALK``)
        only while a selective filter has not filled the page yet.
        """
        ranged = criteria.low is not None or criteria.high is not None
        wanted: list[str] = []
        total = 0
        # Retrieval reads eventually consistently (half the read units): an entry added within the last
        # second may be missing; a lookup by message_id (``find``) stays consistent.
        for walked, entry in enumerate(store.recent(scope, criteria.low, criteria.high, consistent=False), start=1):
            if passes(entry, criteria.flt):
                total += 1
                if len(wanted) < criteria.limit:
                    wanted.append(entry["message_id"])
            if not ranged and walked >= (RECENT_WALK if len(wanted) < criteria.limit else RECENT_PAGE):
                break
        records = store.get_many(scope, wanted, consistent=False)
        return [(records[m], None) for m in wanted if m in records], total

    @staticmethod
    def _hydrate(store: EntryStore, scope: str, ranked: list[Ranked], limit: int) -> tuple[list[Row], int]:
        """Read the best hits back from the records until ``limit`` stand; a hit with no record is dropped."""
        rows: list[Row] = []
        dropped = position = 0
        while len(rows) < limit and position < len(ranked):
            batch = ranked[position : position + limit]
            position += len(batch)
            records = store.get_many(scope, [hit.message_id for hit in batch], consistent=False)
            for hit in batch:
                data = records.get(hit.message_id)
                if data is None or data["scope"] != scope:
                    dropped += 1
                    continue
                rows.append((data, round(hit.score, 4)))
        return rows[:limit], len(ranked) - dropped

"""The one hybrid ranker: memory, topics, conversations, knowledge, blocks and graph all rank through it.

A query is embedded (if the embedder fails, or the caller asks for keywords
only, ranking is lexical alone); the k-NN and BM25 candidates of one vector
index namespace are merged; and each candidate gets the calibrated 0-1 score of
docs/scoring.md (``mnemo.memory.scoring``). A candidate outside the dense top-N
counts at most the lowest cosine that made it in.

Fusion happens here, on the client side of the VectorIndex port, so the same
ranking runs over the embedded index and over OpenSearch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.errors import MnemoError
from mnemo.memory.scoring import Calibration, calibration_for
from mnemo.ports import Embedder, Filter, Hit, VectorIndex

#: Hits taken from each of k-NN and BM25 before ranking.
CANDIDATES = 100

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """One document found by either signal, with its calibrated relevance."""

    hit: Hit
    #: Calibrated 0-1 relevance, four decimals.
    score: float
    #: Cosine similarity (the floor stand-in when only BM25 found it); None when ranking is lexical.
    cosine: float | None
    #: BM25 on the absolute 0-1 scale; 0 when only k-NN found it.
    lexical: float

    @property
    def id(self) -> str:
        return self.hit.id

    def related(self, calibration: Calibration) -> bool:
        """Shares a word with the query, or is semantically closer than the model's unrelated floor."""
        return self.lexical > 0.0 or (self.cosine is not None and calibration.dense(self.cosine) > 0.0)


@dataclass(frozen=True)
class Ranking:
    """Candidates best first (by id on a tie), and whether the dense signal took part."""

    candidates: list[Candidate]
    dense: bool
    calibration: Calibration

    @property
    def retrieval(self) -> str:
        return "hybrid" if self.dense else "lexical"


def rank(
    index: VectorIndex,
    embedder: Embedder,
    namespace: str,
    query: str,
    flt: Filter,
    *,
    k: int = CANDIDATES,
    lexical_only: bool = False,
) -> Ranking:
    """Rank the documents of ``namespace`` under ``flt`` for ``query``."""
    calibration = calibration_for(embedder.name)
    vector = None if lexical_only else _embed_query(embedder, query)
    dense_hits = index.knn(namespace, vector, flt, k) if vector is not None else []
    lexical_hits = index.lexical(namespace, query, flt, k)
    dense = {hit.id: hit.score for hit in dense_hits}
    lexical = {hit.id: hit.score for hit in lexical_hits}
    hits = {hit.id: hit for hit in (*dense_hits, *lexical_hits)}
    floor = min(dense.values()) if dense else None
    candidates = []
    for doc_id, hit in hits.items():
        cosine = dense.get(doc_id, floor)
        lexical_score = lexical.get(doc_id, 0.0)
        score = round(calibration.score(cosine, lexical_score), 4)
        candidates.append(Candidate(hit, score, cosine, lexical_score))
    candidates.sort(key=lambda found: (-found.score, found.hit.id))
    return Ranking(candidates, vector is not None, calibration)


def _embed_query(embedder: Embedder, query: str) -> Sequence[float] | None:
    try:
        return embedder.embed([query])[0]
    except MnemoError as error:
        logger.warning("query embedding failed; ranking by keywords only: %s", error.message)
        return None

"""The one hybrid ranker: memory, topics, conversations, knowledge, blocks and graph all rank through it.

A query is embedded (if the embedder or the k-NN fails, or the caller asks for
keywords only, ranking is lexical alone); the k-NN and BM25 candidates of one vector
index namespace are merged; and each candidate gets the calibrated 0-1 score of
docs/scoring.md (``mnemo.retrieval.scoring``). A candidate outside the dense top-N
counts at most the lowest cosine that made it in.

With ``context`` (memory search), each candidate also gets the context signals
of ``mnemo.retrieval.scoring.Context``, read from the index documents' keywords:
``after`` (the id of the memory added just before it, same scope, same day),
``episode`` (the day it happened) and ``subject`` (its first word, when
capitalised). They are built from the candidates alone, so they cost no
further index call.

Fusion happens here, on the client side of the VectorIndex port, so the same
ranking runs over the embedded index and over OpenSearch.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.errors import MnemoError, Timeout
from mnemo.ports import Embedder, Filter, Hit, HybridSearchIndex, Match, VectorIndex
from mnemo.retrieval.scoring import Calibration, Context, calibration_for

#: Hits taken from each of k-NN and BM25 before ranking.
CANDIDATES = 100

#: Index keywords the context signals read (set by memory indexing).
AFTER, EPISODE, SUBJECT = "after", "episode", "subject"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

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
    #: Which searches found it: the k-NN (else ``cosine`` is the floor stand-in), BM25.
    by_vector: bool = False
    by_lexical: bool = False

    @property
    def id(self) -> str:
        return self.hit.id

    def parts(self, calibration: Calibration) -> tuple[float | None, float | None]:
        """What the score came from: the dense signal on its 0-1 scale and the lexical one, each None when
        that search did not find the document; four decimals."""
        vector = round(calibration.dense(self.cosine), 4) if self.by_vector and self.cosine is not None else None
        return vector, round(self.lexical, 4) if self.by_lexical else None

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


def hybrid_rank(
    index: VectorIndex,
    embedder: Embedder,
    namespace: str,
    query: str,
    flt: Filter,
    *,
    k: int = CANDIDATES,
    lexical_only: bool = False,
    context: bool = False,
    where: Match | None = None,
) -> Ranking:
    """Rank the documents of ``namespace`` under ``flt`` (and ``where``, see ``VectorIndex.knn``) for ``query``
    (with the context signals if ``context``)."""
    calibration = calibration_for(embedder.name)
    vector = None if lexical_only else _embed_query(embedder, query)
    both = _hybrid(index, namespace, vector, query, flt, k, where) if vector is not None else None
    if both is not None:  # an index without corpus statistics: both halves from its vector candidates
        dense_hits, lexical_hits = both
    else:
        knn_hits = _knn(index, namespace, vector, flt, k, where) if vector is not None else []
        if knn_hits is None:
            vector, knn_hits = None, []
        dense_hits = knn_hits
        lexical_hits = index.lexical(namespace, query, flt, k, where=where)
    dense = {hit.id: hit.score for hit in dense_hits}
    lexical = {hit.id: hit.score for hit in lexical_hits}
    hits = {hit.id: hit for hit in (*dense_hits, *lexical_hits)}
    floor = min(dense.values()) if dense else None
    found = [(hit, dense.get(doc_id, floor), lexical.get(doc_id, 0.0)) for doc_id, hit in hits.items()]
    contexts = _contexts(calibration, found, query) if context else {}
    candidates = [
        Candidate(
            hit,
            round(calibration.score(cosine, lexical_score, contexts.get(hit.id)), 4),
            cosine,
            lexical_score,
            by_vector=hit.id in dense,
            by_lexical=hit.id in lexical,
        )
        for hit, cosine, lexical_score in found
    ]
    candidates.sort(key=lambda found: (-found.score, found.hit.id))
    return Ranking(candidates, vector is not None, calibration)


def query_names(query: str) -> set[str]:
    """The capitalised words of a query after its first, lower-cased: the names it mentions."""
    words = _WORD.findall(query)
    return {word.lower() for word in words[1:] if word[0].isupper() and len(word) > 1}


def subject_of(content: str) -> str | None:
    """A memory's subject: its first word, lower-cased, when it is capitalised ("Caroline: ...", "Alice uses ...")."""
    match = _WORD.search(content)
    if match is None or not match.group()[0].isupper() or len(match.group()) < 2:
        return None
    return match.group().lower()


def _first(hit: Hit, key: str) -> str | None:
    values = hit.keywords.get(key)
    return values[0] if values else None


def _contexts(calibration: Calibration, found: list[tuple[Hit, float | None, float]], query: str) -> dict[str, Context]:
    """Each candidate's context signals, from the blends of the other candidates."""
    # One read of each hit's keywords: a ranking holds a few hundred candidates and this runs on every search.
    facts = [
        (hit.id, _first(hit, AFTER), _first(hit, EPISODE), _first(hit, "scope"), _first(hit, SUBJECT))
        for hit, _, _ in found
    ]
    blend = {hit.id: calibration.blend(cosine, lexical) for hit, cosine, lexical in found}
    neighbour: dict[str, float] = defaultdict(float)
    episode: dict[tuple[str | None, str], float] = defaultdict(float)
    for doc_id, after, day, scope, _ in facts:
        if after is not None and after in blend:  # a link counts both ways
            neighbour[doc_id] = max(neighbour[doc_id], blend[after])
            neighbour[after] = max(neighbour[after], blend[doc_id])
        if day is not None:
            key = (scope, day)
            episode[key] = max(episode[key], blend[doc_id])
    names = query_names(query)
    return {
        doc_id: Context(
            neighbour=neighbour.get(doc_id, 0.0),
            episode=episode[(scope, day)] if day is not None else 0.0,
            subject=1.0 if subject in names else 0.0,
            dated=day is not None,
        )
        for doc_id, _, day, scope, subject in facts
    }


def _hybrid(
    index: VectorIndex, namespace: str, vector: Sequence[float], query: str, flt: Filter, k: int, where: Match | None
) -> tuple[list[Hit], list[Hit]] | None:
    """Both halves from one search when the index offers it (``HybridSearchIndex``); None when it does not, or
    when that search failed (the ranking then falls back to ``knn`` and ``lexical``, as for any index)."""
    if not isinstance(index, HybridSearchIndex):
        return None
    try:
        return index.hybrid(namespace, vector, query, flt, k, where=where)
    except Timeout:
        raise
    except MnemoError as error:
        logger.warning("hybrid search failed; ranking by k-NN and keywords apart: %s", error.message)
        return None


def _knn(
    index: VectorIndex, namespace: str, vector: Sequence[float], flt: Filter, k: int, where: Match | None = None
) -> list[Hit] | None:
    """The k-NN hits, or None when the k-NN failed (ranking then falls back to keywords alone)."""
    try:
        return index.knn(namespace, vector, flt, k, where=where)
    except Timeout:
        raise  # the index itself did not answer (e.g. waking from idle): a keyword search would wait again
    except MnemoError as error:
        logger.warning("k-NN search failed; ranking by keywords only: %s", error.message)
        return None


#: The last queries embedded, per embedder: one request often ranks two namespaces for one query (memories
#: and turns: memory_search with includeTurns, memory_context), and a query is embedded (and, on Bedrock,
#: paid for) once.
_RECENT_QUERIES: OrderedDict[tuple[int, str, str], Sequence[float]] = OrderedDict()
RECENT_QUERIES = 64


def _embed_query(embedder: Embedder, query: str) -> Sequence[float] | None:
    key = (id(embedder), embedder.name, query)
    if key in _RECENT_QUERIES:
        _RECENT_QUERIES.move_to_end(key)
        return _RECENT_QUERIES[key]
    try:
        vector = embedder.embed([query])[0]
    except MnemoError as error:
        logger.warning("query embedding failed; ranking by keywords only: %s", error.message)
        return None
    _RECENT_QUERIES[key] = vector
    while len(_RECENT_QUERIES) > RECENT_QUERIES:
        _RECENT_QUERIES.popitem(last=False)
    return vector

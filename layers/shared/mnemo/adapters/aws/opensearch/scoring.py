"""Scores: the cosine behind a faiss inner-product score (and back), and BM25 over a namespace's numbers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mnemo.adapters.bm25_text import idf, term_score


def cosine_from_score(score: float) -> float:
    """The inner product (the cosine, for unit vectors) behind a faiss ``innerproduct`` score.

    OpenSearch documents the score of the ``innerproduct`` space for the NMSLIB and Faiss
    engines as: d = -(x . y); score = 1 / (1 + d) if d >= 0, else score = -d + 1
    (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-spaces/, table
    "OpenSearch score"; opensearch-project/documentation-website,
    _field-types/supported-field-types/knn-spaces.md). So a positive inner product p scores
    1 + p (> 1) and a negative or zero one scores 1 / (1 - p) (in (0, 1]); inverted below.
    """
    if score >= 1.0:
        return score - 1.0
    if score <= 0.0:  # not produced by the formula; the floor of unit vectors
        return -1.0
    return 1.0 - 1.0 / score


def score_from_cosine(cosine: float) -> float:
    """The faiss ``innerproduct`` score OpenSearch gives an inner product (see ``cosine_from_score``)."""
    distance = -cosine
    return 1.0 / (1.0 + distance) if distance >= 0 else 1.0 - distance


@dataclass(frozen=True)
class CorpusStats:
    """The namespace-wide numbers BM25 needs: document count, mean length, document frequencies."""

    n: int
    avgdl: float
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        """BM25's inverse document frequency of a term in this namespace."""
        return idf(self.n, self.df.get(term, 0))

    def weights(self, query_terms: Sequence[str]) -> dict[str, float]:
        """idf times the term's count in the query, for the query terms the namespace holds."""
        counts = Counter(term for term in query_terms if self.df.get(term, 0) > 0)
        return {term: self.idf(term) * count for term, count in counts.items()}

    def score(self, weights: Mapping[str, float], doc_terms: Sequence[str]) -> float:
        """Raw BM25 of one document, exactly as ``Bm25.scores`` computes it for one row."""
        tfs = Counter(doc_terms)
        avg = self.avgdl if self.avgdl > 0 else 1.0
        return sum(term_score(w, tfs[t], len(doc_terms), avg) for t, w in weights.items() if tfs[t])

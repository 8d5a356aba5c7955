"""BM25 over a search's own candidates: the lexical half of a hybrid ranking for an index that keeps no
corpus statistics (Amazon S3 Vectors).

The local index and OpenSearch score BM25 with the namespace's numbers (document count, mean length,
document frequencies). An index that answers a search with its candidates' text but no statistics can only
score those candidates against one another: here the candidates are the corpus, so a query word that every
candidate holds weighs almost nothing and a rare one weighs most, as in the namespace, but on a smaller
sample. The text is analysed as every index analyses it (``mnemo.adapters.bm25_text``), with the same
``k1`` and ``b``, and the score is scaled to [0, 1] as the port asks: against the score a document of
average length holding each query term once would get.

What this loses against the namespace's BM25 on LoCoMo dev is measured in docs/benchmarks.md ("S3 Vectors:
vector-first candidates, lexical rescoring").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from mnemo.adapters.bm25_text import analyse, idf, term_score


def rescore(text: str, candidates: Sequence[tuple[str, Sequence[str]]]) -> dict[str, float]:
    """Each candidate's BM25 score for ``text`` in [0, 1], the candidates ``(id, terms)`` (their analysed
    terms, with repeats) standing for the corpus; candidates holding no query term are left out."""
    query = analyse(text)
    if not query or not candidates:
        return {}
    documents = len(candidates)
    frequency: Counter[str] = Counter()
    for _, terms in candidates:
        frequency.update(set(terms))
    counts = Counter(term for term in query if frequency[term])
    weights = {term: idf(documents, frequency[term]) * count for term, count in counts.items()}
    reference = sum(weights.values())
    if reference <= 0:
        return {}
    average = sum(len(terms) for _, terms in candidates) / documents or 1.0
    scores = {}
    for doc_id, terms in candidates:
        held = Counter(terms)
        raw = sum(term_score(weight, held[term], len(terms), average) for term, weight in weights.items() if held[term])
        if raw > 0:
            scores[doc_id] = min(1.0, raw / reference)
    return scores

"""The embedded index searched as the S3 Vectors store searches: one hybrid query, BM25 over its results.

``VectorFirstIndex`` is the local index with the ``HybridSearchIndex`` capability of the S3 Vectors adapter
(``mnemo.adapters.aws.s3vectors``). S3 Vectors answers a hybrid query with the top ``k`` (at most
``S3_VECTORS_TOP_K``) of its k-NN and full-text rankings fused by Reciprocal Rank Fusion; here the k-NN
ranking is the local one, the full-text ranking the local BM25 (S3 Vectors' own analyser and statistics may
order it a little differently), fused with RRF's usual constant of 60. The dense half is the results the k-NN
search found, the lexical half every result rescored by ``mnemo.adapters.bm25_rescoring``, as the adapter
does. So ``bench/retrieval.py --vector-first`` measures, on the embedded default, what the S3 Vectors store's
ranking loses against today's hybrid, with nothing else changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.adapters.aws.s3vectors.queries import TOP_K as S3_VECTORS_TOP_K
from mnemo.adapters.bm25_rescoring import rescore
from mnemo.adapters.bm25_text import analyse
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Filter, Hit, Match

#: Reciprocal Rank Fusion's constant.
RRF_K = 60


class VectorFirstIndex(LocalVectorIndex):
    """The local index, ranked as the S3 Vectors store ranks (see the module docstring)."""

    def hybrid(
        self, namespace: str, vector: Sequence[float], text: str, flt: Filter, k: int, *, where: Match | None = None
    ) -> tuple[list[Hit], list[Hit]]:
        top = min(k, S3_VECTORS_TOP_K)
        knn = self.knn(namespace, vector, flt, top, where=where)
        lexical_hits = self.lexical(namespace, text, flt, top, where=where)
        fused: dict[str, float] = {}
        for ranking in (knn, lexical_hits):
            for rank, hit in enumerate(ranking, 1):
                fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
        kept = set(sorted(fused, key=lambda doc_id: (-fused[doc_id], doc_id))[:top])
        keywords = {hit.id: hit.keywords for hit in (*knn, *lexical_hits)}
        dense = [hit for hit in knn if hit.id in kept]
        with self._lock:
            space = self._space(namespace)
            candidates = [(doc_id, analyse(space.texts[space.row_of[doc_id]])) for doc_id in sorted(kept)]
        scores = rescore(text, candidates)
        lexical = [Hit(doc_id, score, keywords[doc_id]) for doc_id, score in scores.items()]
        lexical.sort(key=lambda hit: (-hit.score, hit.id))
        return dense, lexical

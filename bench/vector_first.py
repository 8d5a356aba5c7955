"""The embedded index searched as S3 Vectors searches: vector-first candidates, BM25 rescoring of their text.

``VectorFirstIndex`` is the local index with the ``HybridSearchIndex`` capability that the S3 Vectors adapter
has: a ranking's lexical half comes from its k-NN candidates (at most ``S3_VECTORS_TOP_K``, the service's
top-k limit), rescored by ``mnemo.adapters.bm25_rescoring``, instead of BM25 over the whole namespace. So
``bench/retrieval.py --vector-first`` measures, on the embedded default, what the S3 Vectors store's ranking
loses against today's hybrid, with nothing else changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.adapters.aws.s3vectors.queries import TOP_K as S3_VECTORS_TOP_K
from mnemo.adapters.bm25_rescoring import rescore
from mnemo.adapters.bm25_text import analyse
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Filter, Hit, Match


class VectorFirstIndex(LocalVectorIndex):
    """The local index, ranked vector-first (see the module docstring)."""

    def hybrid(
        self, namespace: str, vector: Sequence[float], text: str, flt: Filter, k: int, *, where: Match | None = None
    ) -> tuple[list[Hit], list[Hit]]:
        dense = self.knn(namespace, vector, flt, min(k, S3_VECTORS_TOP_K), where=where)
        with self._lock:
            space = self._space(namespace)
            candidates = [(hit.id, analyse(space.texts[space.row_of[hit.id]])) for hit in dense]
        scores = rescore(text, candidates)
        lexical = [Hit(hit.id, scores[hit.id], hit.keywords) for hit in dense if hit.id in scores]
        lexical.sort(key=lambda hit: (-hit.score, hit.id))
        return dense, lexical

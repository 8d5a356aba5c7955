"""One hybrid query of a vector index namespace, scored as memory_search scores (mnemo.memory.scoring).

The query is embedded (if the embedder fails, ranking is lexical alone), the
k-NN and BM25 candidates are merged, and each hit gets the calibrated 0-1
score. A hit outside the dense top-N counts at most the lowest cosine that
made it in.
"""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.errors import MnemoError
from mnemo.memory.scoring import calibration_for
from mnemo.ports import Embedder, Filter, Hit, VectorIndex

CANDIDATES = 100


def hybrid_hits(
    index: VectorIndex, embedder: Embedder, namespace: str, query: str, flt: Filter, k: int = CANDIDATES
) -> tuple[list[tuple[Hit, float]], bool]:
    """Hits with their score (four decimals), best first and by id on a tie; and whether the embedder answered."""
    try:
        vector: Sequence[float] | None = embedder.embed([query])[0]
    except MnemoError:
        vector = None
    dense_hits = index.knn(namespace, vector, flt, k) if vector is not None else []
    lexical_hits = index.lexical(namespace, query, flt, k)
    dense = {hit.id: hit.score for hit in dense_hits}
    lexical = {hit.id: hit.score for hit in lexical_hits}
    hits = {hit.id: hit for hit in (*dense_hits, *lexical_hits)}
    calibration = calibration_for(embedder.name)
    floor = min(dense.values()) if dense else None
    scored = [
        (hit, round(calibration.score(dense.get(hit.id, floor), lexical.get(hit.id, 0.0)), 4)) for hit in hits.values()
    ]
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))
    return scored, vector is not None

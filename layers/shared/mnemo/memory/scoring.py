"""How a memory's relevance score is built (documented in docs/scoring.md).

Both signals are first put on an absolute 0-1 scale, so that one threshold
means the same thing for every query:

* dense: cosine similarity mapped linearly from [DENSE_FLOOR, DENSE_CEILING]
  to [0, 1] and clipped; below the floor a text is unrelated for this model.
* lexical: BM25 divided by the score a typical document holding every query
  term once would get, clipped to 1 (the vector index does this).

The score is their weighted sum. A lexical match alone can never pass the
default threshold of 0.7; it needs the meaning to agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    dense_floor: float
    dense_ceiling: float
    dense_weight: float

    def dense(self, cosine: float) -> float:
        span = self.dense_ceiling - self.dense_floor
        return min(1.0, max(0.0, (cosine - self.dense_floor) / span))

    def fuse(self, cosine: float | None, lexical: float) -> float:
        if cosine is None:  # no embeddings: the lexical signal is all there is
            return lexical
        weight = self.dense_weight
        return weight * self.dense(cosine) + (1.0 - weight) * lexical


#: Per embedding model, measured on LoCoMo (bench/retrieval.py --calibrate).
CALIBRATIONS: dict[str, Calibration] = {
    "bge-small-en-v1.5-int8": Calibration(dense_floor=0.45, dense_ceiling=0.80, dense_weight=0.75),
    "hashing": Calibration(dense_floor=0.05, dense_ceiling=0.60, dense_weight=0.75),
}
DEFAULT_CALIBRATION = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.75)


def calibration_for(model: str) -> Calibration:
    return CALIBRATIONS.get(model, DEFAULT_CALIBRATION)

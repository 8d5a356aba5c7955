"""How a memory's relevance score is built (see docs/scoring.md).

Both signals are first put on an absolute 0-1 scale, so that one threshold
means the same thing for every query, whatever else is stored:

* dense: cosine similarity mapped linearly from [dense_floor, dense_ceiling]
  to [0, 1] and clipped; below the floor a text is unrelated for this model.
* lexical: BM25 divided by the score a document of average length holding each
  query term once would get, clipped to 1 (the vector index does this).

``raw = w * dense + (1 - w) * lexical`` ranks. The reported score is ``raw``
passed through a monotone piecewise-linear map that puts ``anchor`` at 0.7,
the specification's default threshold; ranking is unchanged by it. The
anchor is where, on LoCoMo, about two thirds of the true evidence turns pass
while 97% of the other turns of the same conversation are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_THRESHOLD = 0.7


@dataclass(frozen=True)
class Calibration:
    dense_floor: float
    dense_ceiling: float
    dense_weight: float
    anchor: float

    def dense(self, cosine: float) -> float:
        span = self.dense_ceiling - self.dense_floor
        return min(1.0, max(0.0, (cosine - self.dense_floor) / span))

    def raw(self, cosine: float | None, lexical: float) -> float:
        if cosine is None:  # no embeddings: the lexical signal is all there is
            return lexical
        weight = self.dense_weight
        return weight * self.dense(cosine) + (1.0 - weight) * lexical

    def score(self, cosine: float | None, lexical: float) -> float:
        raw = self.raw(cosine, lexical)
        if raw <= self.anchor:
            return DEFAULT_THRESHOLD * raw / self.anchor
        return DEFAULT_THRESHOLD + (1.0 - DEFAULT_THRESHOLD) * (raw - self.anchor) / (1.0 - self.anchor)


#: Per embedding model. bge: measured on LoCoMo (see docs/scoring.md, bench/calibrate.py).
CALIBRATIONS: dict[str, Calibration] = {
    "bge-small-en-v1.5-int8": Calibration(dense_floor=0.45, dense_ceiling=0.80, dense_weight=0.6, anchor=0.45),
    # Hashing vectors only see shared words and trigrams; for tests, not for quality.
    "hashing": Calibration(dense_floor=0.05, dense_ceiling=0.60, dense_weight=0.6, anchor=0.45),
}
DEFAULT_CALIBRATION = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.6, anchor=0.45)


def calibration_for(model: str) -> Calibration:
    return CALIBRATIONS.get(model, DEFAULT_CALIBRATION)

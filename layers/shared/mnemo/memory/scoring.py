"""How a memory's relevance score is built (see docs/scoring.md).

Both signals are first put on an absolute 0-1 scale, so that one threshold
means the same thing for every query, whatever else is stored:

* dense: cosine similarity mapped linearly from [dense_floor, dense_ceiling]
  to [0, 1] and clipped; below the floor a text is unrelated for this model.
* lexical: BM25 divided by the score a document of average length holding each
  query term once would get, clipped to 1 (the vector index does this).

``blend = w * dense + (1 - w) * lexical``. Memory search adds three context
signals, each 0-1 (``Context``): the best blend of the memory's neighbours (the
memory added just before or after it in its scope on the same day), the best
blend of its episode (the memories of its scope that happened the same day, it
included), and whether the query names the memory's subject (its first word).
``raw = (blend + a * neighbour + b * episode + c * subject) / (1 + a + b + c)``;
families without context rank by ``raw = blend``.

The reported score is ``raw`` passed through a monotone piecewise-linear map
that puts the anchor at 0.7, the specification's default threshold; ranking is
unchanged by it. The anchor (``anchor`` for the blend alone, ``context_anchor``
with context) is where, on LoCoMo, about two thirds of the true evidence turns
pass while 97% of the other turns of the same conversation are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_THRESHOLD = 0.7


@dataclass(frozen=True)
class Context:
    """The context signals of one memory, each on 0-1."""

    #: Best blend among the memories linked to it as its neighbours in time.
    neighbour: float = 0.0
    #: Best blend among the memories of its episode (same scope, same day), itself included.
    episode: float = 0.0
    #: 1 when the query names the memory's subject.
    subject: float = 0.0


@dataclass(frozen=True)
class Calibration:
    dense_floor: float
    dense_ceiling: float
    dense_weight: float
    anchor: float
    #: Weights of the context signals, relative to the blend's 1.
    neighbour_weight: float = 0.3
    episode_weight: float = 0.4
    subject_weight: float = 0.2
    context_anchor: float = 0.52

    def dense(self, cosine: float) -> float:
        span = self.dense_ceiling - self.dense_floor
        return min(1.0, max(0.0, (cosine - self.dense_floor) / span))

    def blend(self, cosine: float | None, lexical: float) -> float:
        if cosine is None:  # no embeddings: the lexical signal is all there is
            return lexical
        weight = self.dense_weight
        return weight * self.dense(cosine) + (1.0 - weight) * lexical

    def raw(self, cosine: float | None, lexical: float, context: Context | None = None) -> float:
        blend = self.blend(cosine, lexical)
        if context is None:
            return blend
        total = 1.0 + self.neighbour_weight + self.episode_weight + self.subject_weight
        return (
            blend
            + self.neighbour_weight * context.neighbour
            + self.episode_weight * context.episode
            + self.subject_weight * context.subject
        ) / total

    def calibrated(self, raw: float, anchor: float) -> float:
        """The 0-1 score of ``raw``: ``anchor`` goes to the default threshold, 0 and 1 stay."""
        if raw <= anchor:
            return DEFAULT_THRESHOLD * raw / anchor
        return DEFAULT_THRESHOLD + (1.0 - DEFAULT_THRESHOLD) * (raw - anchor) / (1.0 - anchor)

    def score(self, cosine: float | None, lexical: float, context: Context | None = None) -> float:
        anchor = self.anchor if context is None else self.context_anchor
        return self.calibrated(self.raw(cosine, lexical, context), anchor)


#: Per embedding model. bge: measured on LoCoMo (see docs/scoring.md, bench/calibrate.py).
CALIBRATIONS: dict[str, Calibration] = {
    "bge-small-en-v1.5-int8": Calibration(dense_floor=0.45, dense_ceiling=0.80, dense_weight=0.6, anchor=0.45),
    # Hashing vectors only see shared words and trigrams; for tests, not for quality.
    "hashing": Calibration(dense_floor=0.05, dense_ceiling=0.60, dense_weight=0.6, anchor=0.45),
}
DEFAULT_CALIBRATION = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.6, anchor=0.45)


def calibration_for(model: str) -> Calibration:
    return CALIBRATIONS.get(model, DEFAULT_CALIBRATION)

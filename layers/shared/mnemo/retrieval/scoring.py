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
A neighbour or an episode only ever lifts a memory (each counts at least the
memory's own blend), and a named subject adds ``c``::

    near = (blend + a * max(neighbour, blend) + b * max(episode, blend)) / (1 + a + b)
    raw = near + c * subject          (0 to 1 + c)

so a memory with no context (no date, no link, no name in the query) keeps
``raw = blend``, as in the families without context (topics, knowledge, ...).

The reported score is ``raw`` passed through a monotone piecewise-linear map
that puts the anchor at 0.7, the specification's default threshold. The anchor
is where, on LoCoMo, about two thirds of the true evidence turns pass while 97%
of the other turns of the same conversation are dropped: ``anchor`` for the
blend alone, ``context_anchor`` for dated memories under context (their episode
lifts every memory of a day with a strong hit, so the bar is higher). Results
are ordered by the score, so within each kind the order is that of ``raw``.
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
    #: The memory has a day (``occurredAt``): it has an episode and may have neighbours.
    dated: bool = False


@dataclass(frozen=True)
class Calibration:
    dense_floor: float
    dense_ceiling: float
    dense_weight: float
    anchor: float
    #: Weights of the neighbour and episode signals, relative to the blend's 1.
    neighbour_weight: float = 0.3
    episode_weight: float = 0.6
    #: What a named subject adds to raw (raw then runs to 1 + subject_weight).
    subject_weight: float = 0.1
    #: The anchor of dated memories under context.
    context_anchor: float = 0.58

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
        # = (blend + a * max(neighbour, blend) + b * max(episode, blend)) / (1 + a + b), exactly blend with no lift
        lift = self.neighbour_weight * max(context.neighbour - blend, 0.0)
        lift += self.episode_weight * max(context.episode - blend, 0.0)
        near = blend + lift / (1.0 + self.neighbour_weight + self.episode_weight)
        return near + self.subject_weight * context.subject

    def calibrated(self, raw: float, anchor: float, top: float = 1.0) -> float:
        """The 0-1 score of ``raw``: ``anchor`` goes to the default threshold, 0 stays, ``top`` goes to 1."""
        if raw <= anchor:
            return DEFAULT_THRESHOLD * raw / anchor
        return DEFAULT_THRESHOLD + (1.0 - DEFAULT_THRESHOLD) * (raw - anchor) / (top - anchor)

    def score(self, cosine: float | None, lexical: float, context: Context | None = None) -> float:
        """The calibrated score; a dated memory's neighbour and episode lift its raw, so its anchor is higher."""
        anchor = self.context_anchor if context is not None and context.dated else self.anchor
        top = 1.0 if context is None else 1.0 + self.subject_weight
        return self.calibrated(self.raw(cosine, lexical, context), anchor, top)


#: Per embedding model. bge: measured on LoCoMo (see docs/scoring.md, bench/calibrate.py).
CALIBRATIONS: dict[str, Calibration] = {
    "bge-small-en-v1.5-int8": Calibration(dense_floor=0.45, dense_ceiling=0.80, dense_weight=0.6, anchor=0.45),
    # Hashing vectors only see shared words and trigrams; for tests, not for quality.
    "hashing": Calibration(dense_floor=0.05, dense_ceiling=0.60, dense_weight=0.6, anchor=0.45),
}
DEFAULT_CALIBRATION = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.6, anchor=0.45)


def calibration_for(model: str) -> Calibration:
    return CALIBRATIONS.get(model, DEFAULT_CALIBRATION)

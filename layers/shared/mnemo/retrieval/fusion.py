"""One ranking of conversation turns and the memories extracted from them (memory_search ``includeTurns``).

Memory search with turns ranks two lists: the caller's conversation turns (the conversations namespace)
and their memories (the memory namespace), each by ``hybrid_rank``. Facts extracted from a conversation
cite the turns they came from (``metadata.provenance.messageIds``), so both lists are evidence about the
same turns. ``fuse`` merges them into one list of *units*, each a turn or a memory:

1. **Rank fusion, not score fusion.** Each turn gets ``1 / (k + rank)`` from its rank among the turns,
   plus ``fact_weight / (k + rank)`` from the best-ranked fact that cites it (reciprocal rank fusion,
   RRF). The two lists' scores are not comparable: a fact is a clean, self-contained sentence and scores
   systematically higher than the chatty turn it came from, so adding or interleaving raw scores lets
   facts crowd out turns (on LoCoMo dev, R@10: interleaving by score 75.6, adding the best citing
   fact's score 76.2, against 79.0 for turns alone), while ranks are on one scale whatever the lists
   hold. The small ``k`` keeps the head of each list decisive, and the facts weigh a quarter of the
   turns: a fact is a second opinion about a turn, voting for the turns it cites (LoCoMo dev: R@10 80.3,
   MRR 64.2, against 79.0 and 61.6 for turns alone; bench/fusion_lab.py has every variant tried).
2. **A fact stands for the turns it cites.** A unit is shown as the fact when the fact ranks better
   among the facts than its best cited turn does among the turns (or the turn was not found at all),
   else as the turn; a fact shown covers every turn it cites, so those turns are not shown again, and a
   fact whose turns are all shown already is dropped as redundant. Either way the unit keeps its place.
3. **Memories without provenance** (written by memory_add, or by a strategy that cites nothing) are
   units of their own, counted as a turn is (``memory_weight / (k + rank)``), so an explicit memory is
   not buried under turns.

Each result keeps two numbers: ``fused``, the RRF value that orders the list (best first, then by kind
and id, so the order is deterministic), and ``score``, the calibrated 0-1 relevance of what matched (the
turn's or the fact's own hybrid score, whichever is higher), which is what a threshold compares and
what a caller shows. Pure: no clock, no I/O.

The caller should rank each list as deep as memory search does (``hybrid_rank``'s default 100 candidates
from each of k-NN and BM25): the turns' context signals are computed from the candidates, and from 50 the
fused R@10 falls to 78.9. docs/benchmarks.md, "Extraction", has the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["turn", "fact"]

#: RRF's rank offset: small, so the first ranks of each list count most.
RANK_OFFSET = 5.0
#: What a fact's vote for the turns it cites weighs, a turn's own rank weighing 1.
FACT_WEIGHT = 0.25
#: What a memory without provenance weighs (as a turn).
MEMORY_WEIGHT = 1.0


@dataclass(frozen=True)
class TurnHit:
    """A ranked conversation turn: its message id and its calibrated 0-1 score."""

    id: str
    score: float


@dataclass(frozen=True)
class FactHit:
    """A ranked memory: its memory id, its calibrated 0-1 score, and the message ids it came from (none for a
    memory without provenance)."""

    id: str
    score: float
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fused:
    """One result: a turn (``sources`` is its own message id) or a memory (``sources`` its provenance)."""

    id: str
    kind: Kind
    #: The calibrated 0-1 relevance of what matched (for thresholds and display).
    score: float
    sources: tuple[str, ...]
    #: The fused rank value that orders the list.
    fused: float = 0.0


@dataclass
class _Unit:
    turn: str | None
    fact: FactHit | None
    fused: float
    relevance: float
    turn_rank: float
    fact_rank: float


def _units(
    turns: Sequence[TurnHit], facts: Sequence[FactHit], k: float, fact_weight: float, memory_weight: float
) -> tuple[dict[str, _Unit], list[_Unit]]:
    """Each turn's unit (its own rank's vote, and the best-ranked fact citing it), and the facts with no
    provenance as units of their own."""
    inf = float("inf")
    units: dict[str, _Unit] = {}
    for rank, turn in enumerate(turns, start=1):
        if turn.id in units:
            continue
        units[turn.id] = _Unit(turn.id, None, 1.0 / (k + rank), turn.score, rank, inf)
    memories: list[_Unit] = []
    seen: set[str] = set()
    for rank, fact in enumerate(facts, start=1):
        if fact.id in seen:
            continue
        seen.add(fact.id)
        if not fact.sources:
            memories.append(_Unit(None, fact, memory_weight / (k + rank), fact.score, inf, rank))
            continue
        for source in dict.fromkeys(fact.sources):
            unit = units.get(source)
            if unit is None:
                unit = units[source] = _Unit(source, None, 0.0, 0.0, inf, inf)
            if unit.fact is None:  # the best-ranked fact citing this turn votes for it
                unit.fact = fact
                unit.fact_rank = rank
                unit.fused += fact_weight / (k + rank)
                unit.relevance = max(unit.relevance, fact.score)
    return units, memories


def fuse(
    turns: Sequence[TurnHit],
    facts: Sequence[FactHit],
    *,
    limit: int = 10,
    k: float = RANK_OFFSET,
    fact_weight: float = FACT_WEIGHT,
    memory_weight: float = MEMORY_WEIGHT,
    show_facts: bool = True,
) -> list[Fused]:
    """The best ``limit`` results of turns and facts fused (see the module docstring for why this way).

    ``turns`` and ``facts`` are each best first (as ``hybrid_rank`` orders them; only their order and
    scores are read). A turn listed twice counts at its better rank; so does a fact. ``show_facts`` False
    shows every unit of a cited turn as the turn (facts only vote).
    """
    units, memories = _units(turns, facts, k, fact_weight, memory_weight)
    ordered = sorted(
        [*units.values(), *memories],
        key=lambda unit: (-unit.fused, unit.turn is None, unit.turn or "", unit.fact.id if unit.fact else ""),
    )
    results: list[Fused] = []
    shown_turns: set[str] = set()
    shown_facts: set[str] = set()
    for unit in ordered:
        if len(results) >= limit:
            break
        if unit.turn is None:  # a memory without provenance
            assert unit.fact is not None
            results.append(Fused(unit.fact.id, "fact", round(unit.relevance, 4), (), unit.fused))
            continue
        if unit.turn in shown_turns:
            continue
        best = unit.fact
        if show_facts and best is not None and unit.fact_rank < unit.turn_rank and best.id not in shown_facts:
            shown_facts.add(best.id)
            shown_turns.update(best.sources)
            results.append(
                Fused(best.id, "fact", round(unit.relevance, 4), tuple(dict.fromkeys(best.sources)), unit.fused)
            )
            continue
        shown_turns.add(unit.turn)
        results.append(Fused(unit.turn, "turn", round(unit.relevance, 4), (unit.turn,), unit.fused))
    return results

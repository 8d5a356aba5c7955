"""The graph strategy: build_memory_from_text over a batch's transcript, its facts shown as candidates.

The graph keeps its own consolidation (an exclusive fact invalidates the one it replaces; the same fact
twice is stored once), so a relationship the graph already held shows as kept and a new one as added.
"""

from __future__ import annotations

from mnemo.context import RequestContext
from mnemo.graph.extraction import GraphBuilder
from mnemo.graph.models import MAX_BUILD_CHARS, BuildMemoryFromTextInput, FactSource
from mnemo.learning.consolidation import Candidate
from mnemo.learning.transcript import Turn, transcript


def graph_candidates(
    builder: GraphBuilder, context: RequestContext, turns: list[Turn], limit: int = MAX_BUILD_CHARS
) -> list[Candidate]:
    """Extract the turns into the identity's user-layer graph, in pieces of whole turns whose transcript is at
    most ``limit`` characters (what one build_memory_from_text takes), so no turn is let go unread; one
    candidate per relationship, citing the turns of its piece."""
    candidates: list[Candidate] = []
    for piece in _pieces(turns, min(limit, MAX_BUILD_CHARS)):
        ids = list(dict.fromkeys(turn.message_id for turn in piece))
        request = BuildMemoryFromTextInput(
            content=transcript(piece),
            layer="user",
            reference_time=piece[-1].at,
            source=FactSource(kind="conversation", message_id=ids[-1][:256]),
        )
        output = builder.build(context, request)
        candidates += [
            Candidate(
                text=f"{relationship.from_} {relationship.relation} {relationship.to}",
                subject=relationship.from_,
                source_ids=ids,
                decision="added" if relationship.created else "kept",
                memory_id=relationship.fact_id,
            )
            for relationship in output.relationships
        ]
    return candidates


def _pieces(turns: list[Turn], limit: int) -> list[list[Turn]]:
    """The turns in order, grouped so that each group's transcript fits ``limit`` (a turn is at most
    MAX_TURN_CHARS, well under it)."""
    pieces: list[list[Turn]] = [[]]
    size = 0
    for turn in turns:
        length = len(transcript([turn])) + 1
        if pieces[-1] and size + length > limit:
            pieces.append([])
            size = 0
        pieces[-1].append(turn)
        size += length
    return [piece for piece in pieces if piece]

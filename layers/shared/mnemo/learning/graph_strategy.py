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


def graph_candidates(builder: GraphBuilder, context: RequestContext, turns: list[Turn]) -> list[Candidate]:
    """Extract the turns into the identity's user-layer graph; one candidate per relationship."""
    text = transcript(turns)[:MAX_BUILD_CHARS]
    ids = list(dict.fromkeys(turn.message_id for turn in turns))
    request = BuildMemoryFromTextInput(
        content=text,
        layer="user",
        reference_time=turns[-1].at,
        source=FactSource(kind="conversation", message_id=ids[-1][:256]),
    )
    output = builder.build(context, request)
    return [
        Candidate(
            text=f"{relationship.from_} {relationship.relation} {relationship.to}",
            subject=relationship.from_,
            source_ids=ids,
            decision="added" if relationship.created else "kept",
            memory_id=relationship.fact_id,
        )
        for relationship in output.relationships
    ]

"""memory_context's service: gather the candidates, rank them as memory_search does, pack them (no model).

- **profile**: the profile strategy's current memory of the caller's user scope (when the strategy is on and
  has run);
- **summary**: the summary strategy's current memory of the caller's session;
- **memories** and **turns**: memory_search with ``includeTurns`` (``mnemo.learning.recall``): the memories of
  every layer the caller reads and the caller's own turns, fused into one ranking in which an extracted fact
  stands for the turns it cites, so the budget is not spent on a fact and its turns unless each ranks on its
  own. Each is worth ``1 / (RANK_OFFSET + rank)``; ``mnemo.briefing.packing`` takes them by worth per token;
- **blocks**: the caller's pinned blocks and skills, as pinned_context shows them.

Superseded, orphaned and expired memories never reach the ranking (memory_search drops them). With ``asOf``
the context is the one the caller would have got then: nothing said or stored after it, the memories that
were current then (superseded later or not), and no memory that had expired by then. Pinned blocks are
shown as they are now, whatever ``asOf`` says: they hold no history.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mnemo.briefing.excerpts import excerpt, terms
from mnemo.briefing.models import SECTIONS, ContextSource, MemoryContextInput, MemoryContextOutput, Section
from mnemo.briefing.packing import Piece, pack
from mnemo.briefing.render import day, memory_line, turn_lines
from mnemo.context import RequestContext
from mnemo.files.pinning import Pinning, block_text
from mnemo.learning.recall import Recall
from mnemo.learning.strategies import PROFILE, PROFILE_SUBJECT, SUMMARY, SUMMARY_SUBJECT, Strategy, keeps_running
from mnemo.memory.extracted import EXTRACTION_SOURCE, ExtractedMemories
from mnemo.memory.models import MemoryResult, MemorySearchInput
from mnemo.memory.records import partition_of, record_sk
from mnemo.memory.service import MemoryService
from mnemo.ports import RecordStore

#: Rank offset of an item's worth: the first ranks are worth most, and the tail still counts.
RANK_OFFSET = 5.0
#: The worth of the pieces taken before the ranked ones (profile, summary, blocks).
FIXED = float("inf")
#: The ranking is read one candidate deep per this many tokens of budget (a turn of chat takes about 30), so
#: that packing has about twice what fits to choose from (LoCoMo dev at 1,000 tokens: 66 and 100 candidates
#: give the same 88.0%).
TOKENS_PER_CANDIDATE = 15
MIN_CANDIDATES, MAX_CANDIDATES = 30, 100
#: The best ranks are always offered whole: on LoCoMo dev at 1,000 tokens, excerpts of every rank lose answers
#: (the reference answer's words in the text: 31.8% of questions against 37.7% without excerpts); past the
#: first five they bring the most evidence turns in (90.3%, against 89.6% past seven and 88.3% past ten) for
#: 36.1% of answers.
WHOLE_RANKS = 5


class ContextService:
    """``build``: memory_context (see the module docstring)."""

    def __init__(
        self,
        recall: Recall,
        memory: MemoryService,
        extracted: ExtractedMemories,
        pinning: Pinning,
        records: RecordStore,
    ) -> None:
        self._recall = recall
        self._memory = memory
        self._extracted = extracted
        self._pinning = pinning
        self._records = records

    def build(self, context: RequestContext, request: MemoryContextInput) -> MemoryContextOutput:
        """The context for ``request.query`` within ``request.budget`` tokens, with every item's source."""
        wanted: set[Section] = set(request.sections or SECTIONS)
        pieces: list[Piece] = []
        shown: set[str] = set()
        if "profile" in wanted and context.can_read(PROFILE.layer):
            pieces += self._running(context, "profile", PROFILE, PROFILE_SUBJECT, request.as_of, shown)
        if "summary" in wanted and context.can_read(SUMMARY.layer):
            pieces += self._running(context, "summary", SUMMARY, SUMMARY_SUBJECT, request.as_of, shown)
        if wanted & {"memories", "turns"}:
            pieces += self._ranked(context, request, wanted, shown)
        if "blocks" in wanted:
            pieces += self._blocks(context)
        packed = pack(pieces, request.budget)
        return MemoryContextOutput(
            context=packed.context,
            tokens=packed.tokens,
            budget=request.budget,
            sections=packed.sections,
            sources=packed.sources,
            truncated=packed.truncated,
        )

    # ------------------------------------------------------------ pieces
    def _running(
        self,
        context: RequestContext,
        section: Section,
        strategy: Strategy,
        subject: str,
        as_of: datetime | None,
        shown: set[str],
    ) -> list[Piece]:
        scope = context.scope_key(strategy.layer)
        data = self._extracted.current_of(scope, strategy.name, subject)
        # asOf: the version current then, back along the rewrites (each record names the one it superseded).
        while data is not None and as_of is not None and _time(data["createdAt"]) > as_of:
            earlier = data.get("supersedes")
            item = self._extracted.get(scope, earlier) if earlier else None
            data = item.data if item is not None else None
        if data is None:
            return []
        shown.add(data["memoryId"])
        source = ContextSource(
            kind=section,
            id=data["memoryId"],
            section=section,
            layer=data["layer"],
            occurred_at=_time(data["createdAt"]),
            message_ids=_provenance(data.get("metadata") or {}),
            tokens=0,
        )
        text = f"(as of {day(_time(data['createdAt']))}) {' '.join(data['content'].split())}"
        return [Piece(source, text, FIXED, fixed=True)]

    def _results(
        self, context: RequestContext, request: MemoryContextInput, wanted: set[Section]
    ) -> list[MemoryResult]:
        """The search behind the ranked sections: memories, with their turns when those are wanted, as they
        stood at ``asOf`` when asked."""
        limit = max(MIN_CANDIDATES, min(MAX_CANDIDATES, request.budget // TOKENS_PER_CANDIDATE))
        search = MemorySearchInput(
            query=request.query,
            limit=limit,
            threshold=0.0,
            include_turns="turns" in wanted,
            include_superseded=request.as_of is not None,
        )
        as_of = request.as_of
        if search.include_turns:
            # The memories are admitted as they stood before fusion, so that one learned later neither shows nor
            # stands for its turns; the turns are then kept as they stood.
            admit = (lambda found: self._as_of(context, found, as_of)) if as_of is not None else None
            results = self._recall.search(context, search, admit=admit).results
            if as_of is not None:
                results = [result for result in results if result.kind != "turn" or _said_by(result, as_of)]
            return results
        results = self._memory.search(context, search).results
        return self._as_of(context, results, as_of) if as_of is not None else results

    def _ranked(
        self, context: RequestContext, request: MemoryContextInput, wanted: set[Section], shown: set[str]
    ) -> list[Piece]:
        results = self._results(context, request, wanted)
        pieces = []
        query_terms = terms(request.query)
        for rank, result in enumerate(results):
            if result.memory_id in shown:
                continue
            value = 1.0 / (RANK_OFFSET + rank)
            if result.kind == "turn":
                if "turns" not in wanted:
                    continue
                source = ContextSource(
                    kind="turn",
                    id=result.memory_id,
                    section="turns",
                    layer=result.layer,
                    occurred_at=result.occurred_at,
                    score=result.score,
                    message_ids=[result.memory_id],
                    tokens=0,
                )
                text = turn_lines(result.content)
                short = excerpt(text, query_terms) if rank >= WHOLE_RANKS else None
                pieces.append(Piece(source, text, value, said_at=result.occurred_at, excerpt=short))
            elif "memories" in wanted:
                metadata = result.metadata or {}
                if metadata.get("source") == EXTRACTION_SOURCE and keeps_running(metadata.get("strategy")):
                    continue  # a running memory: its own section (or none), never a ranked memory
                moment = result.occurred_at or _stated(metadata) or result.created_at
                source = ContextSource(
                    kind="memory",
                    id=result.memory_id,
                    section="memories",
                    layer=result.layer,
                    occurred_at=moment,
                    score=result.score,
                    message_ids=_provenance(metadata) if metadata.get("source") == EXTRACTION_SOURCE else [],
                    tokens=0,
                )
                pieces.append(Piece(source, memory_line(result.content, moment), value))
        return pieces

    def _as_of(self, context: RequestContext, results: list[MemoryResult], as_of: datetime) -> list[MemoryResult]:
        """The memories as they stood at ``as_of``: stored by then, current then, not yet expired (one read of the
        superseded ones' records, for when they were superseded)."""
        superseded = [r for r in results if r.kind == "memory" and r.superseded_by]
        ends: dict[str, datetime] = {}
        if superseded:
            keys = [(partition_of(context.scope_key(r.layer)), record_sk(r.memory_id)) for r in superseded]
            for item in self._records.batch_get(keys, consistent=False):
                at = item.data.get("supersededAt")
                if at:
                    ends[item.data["memoryId"]] = _time(at)
        kept = []
        for result in results:
            if result.created_at > as_of or (result.expires_at is not None and result.expires_at <= as_of):
                continue
            if result.superseded_by and result.memory_id not in ends:
                continue  # superseded at an unknown time: not shown as current
            if result.superseded_by and ends[result.memory_id] <= as_of:
                continue
            kept.append(result)
        return kept

    def _blocks(self, context: RequestContext) -> list[Piece]:
        pieces = []
        for block, content in self._pinning.pinned(context)[0]:
            source = ContextSource(kind="block", id=block.path, section="blocks", tokens=0)
            pieces.append(Piece(source, block_text(block, content), FIXED, fixed=True))
        return pieces


def _said_by(turn: MemoryResult, as_of: datetime) -> bool:
    """Whether a turn was stored, and said, by ``as_of``."""
    return turn.created_at <= as_of and (turn.occurred_at is None or turn.occurred_at <= as_of)


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _stated(metadata: dict[str, Any]) -> datetime | None:
    stated = metadata.get("statedAt")
    try:
        return _time(stated) if isinstance(stated, str) else None
    except ValueError:
        return None


def _provenance(metadata: dict[str, Any]) -> list[str]:
    provenance = metadata.get("provenance") or {}
    ids = provenance.get("messageIds") if isinstance(provenance, dict) else None
    return [str(i) for i in ids] if isinstance(ids, list) else []

"""memory_search over memories and the caller's own turns, fused; and the source turns of extracted memories.

With ``includeTurns``, the caller's conversation turns (their user scope, ranked as retrieve_conversation's
hybrid strategy ranks them) and the memories (as memory_search ranks them) are fused into one list
(``mnemo.retrieval.fusion``): an extracted memory that matches votes for the turns it came from. A turn
result has kind ``turn`` and its message id as ``memoryId``. With ``includeSources``, each extracted
memory is answered with its provenance's turns, read back from the records of the caller's own scope,
so a memory can never show a turn the caller could not read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from mnemo.context import RequestContext
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS, EntryStore
from mnemo.errors import InvalidInput
from mnemo.learning.transcript import conversation_turns
from mnemo.memory.extracted import EXTRACTION_SOURCE
from mnemo.memory.models import MemoryResult, MemorySearchInput, MemorySearchOutput, SourceTurn
from mnemo.memory.service import MemoryService
from mnemo.ports import Embedder, RecordStore, VectorIndex
from mnemo.retrieval.fusion import FactHit, TurnHit, fuse
from mnemo.retrieval.ranker import CANDIDATES, hybrid_rank

#: Memories and turns each strategy ranks before fusion, at least.
FUSION_DEPTH = 50
#: Each strategy ranks this many times the page's size (fusion reorders: a turn below the page may rise into it).
DEPTH_PER_RESULT = 3
#: The most source turns shown per extracted memory.
MAX_SOURCES = 10


class Recall:
    """memory_search with includeTurns and includeSources (see the module docstring)."""

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, memory: MemoryService) -> None:
        self._index = index
        self._embedder = embedder
        self._memory = memory
        self._conversations = EntryStore(records, CONVERSATIONS)
        self._executions = EntryStore(records, EXECUTIONS)

    def search(
        self,
        context: RequestContext,
        request: MemorySearchInput,
        admit: Callable[[list[MemoryResult]], list[MemoryResult]] | None = None,
    ) -> MemorySearchOutput:
        """The memories and the caller's turns, fused, best first (one page: no cursor with includeTurns)."""
        if request.cursor:
            raise InvalidInput(
                "cursor: a search with includeTurns answers one page; ask for a larger limit",
                {"field": "cursor"},
            )
        depth = max(FUSION_DEPTH, request.limit * DEPTH_PER_RESULT)
        memories = self._memory.search(
            context, request.model_copy(update={"include_turns": False, "limit": min(100, depth)})
        )
        turn_scope = context.scope_key("user") if context.user and "user" in memories.searched_layers else None
        turn_ranked: list[TurnHit] = []
        if turn_scope is not None:
            ranking = hybrid_rank(
                self._index,
                self._embedder,
                CONVERSATIONS.namespace,
                request.query,
                {"scope": [turn_scope]},
                k=max(CANDIDATES, depth),
                context=True,
            )
            for candidate in ranking.candidates:
                message_id = (candidate.hit.keywords.get("message_id") or [""])[0]
                if message_id and candidate.score >= request.threshold:
                    turn_ranked.append(TurnHit(message_id, candidate.score))
        # ``admit`` keeps the memories that may take part (memory_context's asOf): one it leaves out neither shows
        # nor stands for the turns it cites.
        admitted = admit(memories.results) if admit is not None else memories.results
        by_id = {result.memory_id: result for result in admitted}
        facts = [
            FactHit(result.memory_id, result.score, tuple(_provenance(result)) if _extracted(result) else ())
            for result in admitted
        ]
        fused = fuse(turn_ranked, facts, limit=depth)
        # The turns' records are read for the head of the fused list only, a page at a time until the page is
        # full: a record missing (a stale index entry) lets the next one in.
        results: list[MemoryResult] = []
        position = 0
        while position < len(fused) and len(results) <= request.limit:
            chunk = fused[position : position + request.limit + 1 - len(results)]
            position += len(chunk)
            ids = [f.id for f in chunk if f.kind == "turn"]
            records = self._conversations.get_many(turn_scope, ids, consistent=False) if turn_scope and ids else {}
            for item in chunk:
                if item.kind == "fact" and item.id in by_id:
                    results.append(by_id[item.id].model_copy(update={"score": round(item.score, 4)}))
                elif item.kind == "turn" and item.id in records:
                    results.append(_turn_result(records[item.id], item.score))
        output = MemorySearchOutput(
            results=results[: request.limit],
            # Those read, and those past them whose records were not read (counted as present).
            total_count=len(results) + len(fused) - position,
            searched_layers=memories.searched_layers,
            retrieval=memories.retrieval,
            has_more=len(results) > request.limit,
        )
        return output

    def attach_sources(self, context: RequestContext, output: MemorySearchOutput) -> None:
        """Each extracted memory's source turns, read back from the caller's own records (at most MAX_SOURCES)."""
        if context.user is None:
            return
        scope = context.scope_key("user")
        wanted = {
            result.memory_id: _provenance(result)[:MAX_SOURCES]
            for result in output.results
            if result.kind == "memory" and _extracted(result)
        }
        ids = [message_id for sources in wanted.values() for message_id in sources]
        if not ids:
            return
        said = self._conversations.get_many(scope, ids, consistent=False)
        done = self._executions.get_many(scope, [i for i in ids if i not in said], consistent=False)
        for result in output.results:
            if result.memory_id not in wanted:
                continue
            sources: list[SourceTurn] = []
            for message_id in wanted[result.memory_id]:
                if message_id in said:
                    for turn in conversation_turns(said[message_id]):
                        sources.append(
                            SourceTurn(
                                message_id=message_id,
                                role=turn.role,
                                name=turn.speaker if turn.speaker != turn.role else None,
                                content=turn.content,
                                timestamp=_time(turn.at),
                            )
                        )
                elif message_id in done:
                    record = done[message_id]
                    sources.append(
                        SourceTurn(
                            message_id=message_id,
                            kind="execution",
                            content=record.get("execution_summary", ""),
                            timestamp=_time(record["timestamp"]),
                        )
                    )
            result.sources = sources


def _extracted(result: MemoryResult) -> bool:
    return (result.metadata or {}).get("source") == EXTRACTION_SOURCE


def _provenance(result: MemoryResult) -> list[str]:
    provenance = (result.metadata or {}).get("provenance") or {}
    ids = provenance.get("messageIds") if isinstance(provenance, dict) else None
    return [str(i) for i in ids] if isinstance(ids, list) else []


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _turn_result(data: dict[str, Any], score: float) -> MemoryResult:
    turns = conversation_turns(data)
    text = "\n".join(f"{turn.speaker}: {turn.content}" for turn in turns)
    return MemoryResult(
        kind="turn",
        content=text,
        layer="user",
        score=round(score, 4),
        memory_id=data["message_id"],
        metadata=data.get("meta_data") or {},
        created_at=_time(data.get("stored_at") or data["timestamp"]),
        occurred_at=_time(data["timestamp"]),
        expires_at=data.get("expiresAt"),
    )

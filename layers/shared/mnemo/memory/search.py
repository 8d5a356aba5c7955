"""Reading memories: hybrid search over the caller's readable layers, and one memory's history.

The vector index only finds ids; every hit is read back from the records
before it reaches a caller, so a stale or foreign index entry can never leak.
"""

from __future__ import annotations

from typing import Any

from mnemo.budget import fit_head
from mnemo.context import MEMORY_LAYERS, RequestContext
from mnemo.errors import NotFound
from mnemo.memory.extracted import EXTRACTION_SOURCE, recency
from mnemo.memory.filters import Node, matches, request_filter, to_match
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import MemoryResult, MemorySearchInput, MemorySearchOutput
from mnemo.memory.records import history_prefix, partition_of, record_sk, with_folded
from mnemo.paging import decode_cursor, encode_cursor, fingerprint
from mnemo.ports import Embedder, Filter, RecordStore, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank


class MemorySearch:
    """``search`` and ``history``: the memory tools' reads that take a query or an id.

    The index ranks; the records (read back by key) decide what a caller sees.
    """

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder

    def history(self, context: RequestContext, memory_id: str) -> list[dict[str, Any]]:
        """Every recorded change to a memory the caller can read, oldest first (at most 1000).

        The first readable layer holding any change answers; NOT_FOUND when none does, as for another
        caller's memory.
        """
        for layer in context.readable_layers():
            partition = partition_of(context.scope_key(layer))
            # An added memory's ADD entry is folded into its record (mnemo.memory.records). The record is
            # read before the history: a delete in between writes the entry out as an item, which the
            # query then finds (with_folded keeps one of the two); read after, the entry could be in neither.
            # Read even once expired: until storage removes it (writing the entry out), the record holds its ADD.
            record = self._records.get(partition, record_sk(memory_id), expired=True)
            items = self._records.query(partition, history_prefix(memory_id), limit=1000)
            items = with_folded(items, record)[:1000]
            if items:
                return [item.data for item in items]
        raise NotFound(f"Memory '{memory_id}' not found", {"field": "memoryId", "memoryId": memory_id})

    # ------------------------------------------------------------- search
    def search(self, context: RequestContext, request: MemorySearchInput) -> MemorySearchOutput:
        """One page of the memories matching a query in the caller's readable layers, best first.

        Ranked by the hybrid score (vector and BM25; BM25 alone while the embedder is down, said in
        ``retrieval``), the more specific layer first; hits below the threshold, stale or foreign index
        entries and content repeated from a more specific layer are dropped. Eventually consistent: a memory
        just written may be missing for a moment. The page fits the response budget; ``nextCursor`` pages on
        and is bound to this query (INVALID_INPUT for a foreign cursor).
        """
        layers = context.readable_layers(list(request.layers) if request.layers else None)
        if not layers:
            return MemorySearchOutput(results=[], total_count=0, searched_layers=[])
        scopes = {context.scope_key(layer): layer for layer in layers}
        flt: Filter = {"scope": list(scopes)}
        # The filter narrows the index's candidates (``where``) and, below, every record read back.
        wanted = request_filter(request.filter, request.tags, request.metadata)
        where = to_match(wanted)
        ranking = hybrid_rank(self._index, self._embedder, NAMESPACE, request.query, flt, context=True, where=where)
        precedence = {layer: position for position, layer in enumerate(MEMORY_LAYERS)}
        ranked: list[tuple[int, float, str, str]] = []
        parts: dict[str, tuple[float | None, float | None]] = {}
        for candidate in ranking.candidates:
            scope = (candidate.hit.keywords.get("scope") or [""])[0]
            if scope in scopes and candidate.score >= request.threshold:
                ranked.append((precedence[scopes[scope]], -candidate.score, candidate.id, scope))
                parts[candidate.id] = candidate.parts(ranking.calibration)
        ranked.sort()

        owner = fingerprint(request.model_dump(mode="json", exclude={"cursor", "limit"}) | {"scopes": sorted(scopes)})
        offset = decode_cursor(request.cursor, owner)
        results, dropped = self._hydrate(
            ranked, parts, offset + request.limit, request.include_superseded, wanted, offset=offset
        )
        page = results[offset:]
        output = MemorySearchOutput(
            results=page,
            total_count=len(ranked) - dropped,
            searched_layers=layers,
            retrieval=ranking.retrieval,
        )
        page = fit_head(output, page, context.response_budget)
        has_more = offset + len(page) < output.total_count
        output.results = page
        output.has_more = has_more
        output.next_cursor = encode_cursor(offset + len(page), owner) if has_more else None
        return output

    def _hydrate(
        self,
        ranked: list[tuple[int, float, str, str]],
        parts: dict[str, tuple[float | None, float | None]],
        limit: int,
        include_superseded: bool = False,
        wanted: Node | None = None,
        *,
        offset: int = 0,
    ) -> tuple[list[MemoryResult], int]:
        """Read the best hits back from the records until ``limit`` results stand, each with its score's parts.

        Hits arrive in layer-precedence-then-score order. A hit with no record
        (a stale index entry, or the document of an add whose record write never
        happened: ``mnemo.memory.writes``), at another scope, orphaned, superseded, failing the
        filter ``wanted`` (the index document may be older than the record, or predate the filter's
        terms) or repeating content already taken from a more specific layer is dropped;
        the count of those drops is returned so that totalCount stays honest about
        what was seen. Each read asks for exactly the results still missing (the
        first one ``limit`` keys), so more keys are read only when some were dropped.
        """
        results: list[MemoryResult] = []
        seen_content: set[str] = set()
        subjects: dict[tuple[str, str, str], tuple[int, dict[str, Any]]] = {}
        dropped = 0
        position = 0
        while len(results) < limit and position < len(ranked):
            batch = ranked[position : position + limit - len(results)]
            position += len(batch)
            keys = [(partition_of(scope), record_sk(memory_id)) for _, _, memory_id, scope in batch]
            # Eventually consistent (half the read units): search is eventually consistent anyway (the index
            # shows a write after its refresh), so a hit missing or a version behind for a second is dropped
            # or shown as it was; what a caller sees is still only what the records hold in its scopes.
            found = {item.data["memoryId"]: item.data for item in self._records.batch_get(keys, consistent=False)}
            for _, negative_score, memory_id, scope in batch:
                data = found.get(memory_id)
                # Case and spacing ignored: content found twice is shown once, from the more specific layer.
                normalized = " ".join(data["content"].lower().split()) if data else ""
                superseded = bool(data and data.get("supersededBy")) and not include_superseded
                if (
                    data is None
                    or data["scope"] != scope
                    or data.get("orphaned")
                    or superseded
                    or (wanted is not None and not matches(wanted, data))
                    or normalized in seen_content
                ):
                    dropped += 1
                    continue
                seen_content.add(normalized)
                subject = _subject_of(data)
                if subject is not None and subject in subjects:
                    # Two current memories of one subject (stored before consolidation kept one per subject):
                    # the newest answers, the other is named beside it, never shown as its equal.
                    dropped += 1
                    place, held = subjects[subject]
                    # A result an earlier page showed stays as it was shown there (this page cannot replace it).
                    if place < offset or not _newer(data, held):
                        results[place].duplicates = [*(results[place].duplicates or []), memory_id]
                        continue
                    older = [held["memoryId"], *(results[place].duplicates or [])]
                    subjects[subject] = (place, data)
                    results[place] = self._result(data, memory_id, negative_score, parts)
                    results[place].duplicates = older
                    continue
                if subject is not None:
                    subjects[subject] = (len(results), data)
                if len(results) < limit:
                    results.append(self._result(data, memory_id, negative_score, parts))
        return results, dropped

    @staticmethod
    def _result(
        data: dict[str, Any],
        memory_id: str,
        negative_score: float,
        parts: dict[str, tuple[float | None, float | None]],
    ) -> MemoryResult:
        return MemoryResult(
            content=data["content"],
            layer=data["layer"],
            score=round(-negative_score, 4),
            vector_score=parts[memory_id][0],
            lexical_score=parts[memory_id][1],
            memory_id=memory_id,
            tags=data["tags"],
            metadata=data["metadata"],
            created_at=data["createdAt"],
            occurred_at=data.get("occurredAt"),
            superseded_by=data.get("supersededBy"),
            expires_at=data.get("expiresAt"),
        )


def _subject_of(data: dict[str, Any]) -> tuple[str, str, str] | None:
    """The subject an extracted memory that is current is about (scope, strategy, subject key), or None."""
    metadata = data.get("metadata") or {}
    if data.get("supersededBy") or metadata.get("source") != EXTRACTION_SOURCE or not metadata.get("subjectKey"):
        return None
    return data["scope"], str(metadata.get("strategy")), str(metadata["subjectKey"])


def _newer(data: dict[str, Any], held: dict[str, Any]) -> bool:
    """Whether a memory states its subject later than another (``recency``)."""
    return recency(data) > recency(held)

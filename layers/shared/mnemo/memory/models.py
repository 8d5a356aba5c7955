"""Request and response models of the memory tools (seed 000, Memory Tools).

Each model is described by a comment, not a docstring: pydantic publishes a model's docstring as the
description of its JSON Schema, so a docstring would change the generated catalog the client ships.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from mnemo import clock
from mnemo.context import Layer
from mnemo.graph.context_models import GraphContext
from mnemo.memory.filters import parse_filter
from mnemo.models import Boolean, Integer, Number, ToolRequest, ToolResponse, UtcDateTime, WireModel

MAX_CONTENT_CHARS = 8000
MAX_METADATA_BYTES = 8192

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
Scalar = str | int | float | bool
#: The ``metadata.source`` values a caller may give (``knowledge_sync`` marks sync's pointer memories).
CALLER_SOURCES = ("manual", "conversation", "tool_result", "import")
#: The furthest an ``expiresAt`` may lie ahead (docs/lifecycle.md): ten years of 365 days.
MAX_EXPIRY_DAYS = 3650


def future_expiry(value: datetime) -> datetime:
    """An ``expiresAt`` as sent: in the future and at most ``MAX_EXPIRY_DAYS`` ahead (ValueError otherwise, so
    INVALID_INPUT names the field); whole seconds, as storage keeps it (DynamoDB TTL is in epoch seconds)."""
    now = clock.now()
    if value <= now:
        raise ValueError("must be in the future (an ISO 8601 time after now)")
    if value > now + timedelta(days=MAX_EXPIRY_DAYS):
        raise ValueError(f"must be at most {MAX_EXPIRY_DAYS} days (10 years) from now")
    return value.replace(microsecond=0)


#: When a memory or a turn expires: search, list and the console leave it out from then on, and storage
#: removes it later (docs/lifecycle.md).
ExpiresAt = Annotated[UtcDateTime, AfterValidator(future_expiry)]
EXPIRES_AT_DESCRIPTION = (
    "When it expires (ISO 8601, in the future, at most 10 years ahead): from then on search and list leave it "
    "out, memory_history shows EXPIRE, and storage deletes it. Never expires when omitted."
)


# memory_add's request: the content and where and how to store it.
class MemoryAddInput(ToolRequest):
    content: str = Field(
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
        description="The content to remember: a clear, self-contained statement.",
    )
    layer: Layer = Field("user", description="Memory scope. agent, user, session, project, team, org or company.")
    tags: list[Tag] = Field(default_factory=list, max_length=20, description="Tags for categorisation and filtering.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata (JSON object).")
    occurred_at: UtcDateTime | None = Field(
        None, description="When the fact happened (ISO 8601), as distinct from when it is stored."
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="Makes retries safe: a repeated call with the same key stores once and answers the same.",
    )
    expires_at: ExpiresAt | None = Field(None, description=EXPIRES_AT_DESCRIPTION)
    # Left out of a dump when true (the default), so a request's idempotency hash (``request_hash``) and the
    # keys ``mnemo import`` derives from it stay what they were before the field existed.
    dedupe: Boolean = Field(
        True,
        exclude_if=lambda value: value is True,
        description="false: store it even when a near-identical or identical memory exists in this scope (a "
        "key-value store's items, where equal values under different keys are different memories); no DEDUPE "
        "history entry, deduplicated is false.",
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value

    @field_validator("metadata")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        import json

        if len(json.dumps(value, default=str)) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata must serialise to at most {MAX_METADATA_BYTES} bytes")
        # Only knowledge sync writes pointer memories; a caller's memory must never pass for one.
        if value.get("source", "manual") not in CALLER_SOURCES:
            raise ValueError(f"metadata.source must be one of {', '.join(CALLER_SOURCES)} (knowledge_sync is sync's)")
        if "knowledgePointer" in value:
            raise ValueError("metadata.knowledgePointer is written by knowledge sync only")
        return value


# memory_add's answer: the stored memory, or the existing one it repeats.
class MemoryAddOutput(ToolResponse):
    memory_id: str = Field(description="ID of the stored memory (the existing one when deduplicated).")
    message: str
    deduplicated: bool = Field(False, description="True when a near-identical memory already existed in this scope.")
    layer: Layer


#: What ``filter`` says on memory_search and memory_list (the grammar is mnemo.memory.filters').
FILTER_DESCRIPTION = (
    "Only memories passing this filter (docs/filters.md): field conditions on metadata.<key>, tags, source, "
    'createdAt, occurredAt, expiresAt, e.g. {"and": [{"metadata.priority": {"gte": 3}}, {"tags": {"all": ["a", '
    '"b"]}}, {"source": "manual"}]}. Operators eq, ne, in, nin, gt, gte, lt, lte, contains, exists, all (tags), '
    'combined with and/or/not (at most 5 deep, 50 conditions). {"tags": [...], "metadata": {...}} keeps its '
    "meaning: any of the tags, each metadata key equal."
)


def _valid_filter(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A filter checked against the grammar: INVALID_INPUT naming the path of what is wrong."""
    parse_filter(value)
    return value


# memory_search's request: the query, the layers, filters and paging.
class MemorySearchInput(ToolRequest):
    query: str = Field(min_length=1, max_length=2000, description="Search query in natural language.")
    layers: list[Layer] | None = Field(
        None, min_length=1, description="Layers to search. If not specified, searches all accessible layers."
    )
    limit: Integer = Field(10, ge=1, le=100, description="Maximum number of results.")
    threshold: Number = Field(0.7, ge=0.0, le=1.0, description="Minimum relevance score (0.0 - 1.0).")
    tags: list[Tag] | None = Field(None, description="Only memories carrying at least one of these tags.")
    metadata: dict[str, Scalar] | None = Field(
        None, description="Only memories whose metadata has each of these key/value pairs."
    )
    filter: dict[str, Any] | None = Field(None, description=FILTER_DESCRIPTION)
    cursor: str | None = Field(
        None, max_length=512, description="The nextCursor of a previous answer, to get the following page."
    )
    include_graph: Boolean = Field(
        False, description="Also answer the memory graph's entities and current facts that match the query."
    )
    include_superseded: Boolean = Field(
        False, description="Also answer memories a newer extracted memory superseded (left out by default)."
    )
    include_sources: Boolean = Field(
        False, description="Answer each extracted memory with the turns it came from (its provenance), read back."
    )
    include_turns: Boolean = Field(
        False,
        description="Also search the caller's own conversation turns, fused with the memories: a result of kind "
        "'turn' is a stored turn (memoryId is its message id), and an extracted memory that matches votes for the "
        "turns it came from.",
    )

    @field_validator("filter")
    @classmethod
    def _filter(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _valid_filter(value)


# A turn an extracted memory came from, read back from the conversation or execution records.
class SourceTurn(WireModel):
    message_id: str
    kind: Literal["conversation", "execution"] = "conversation"
    role: str | None = None
    name: str | None = None
    content: str
    timestamp: datetime | None = None


# One memory found by memory_search, with its score and the score's two sides.
class MemoryResult(WireModel):
    kind: Literal["memory", "turn"] = Field(
        "memory", description="memory, or turn: one of the caller's stored conversation turns (includeTurns)."
    )
    content: str
    layer: Layer
    score: float = Field(description="Relevance, 0.0 - 1.0 (see docs/scoring.md).")
    vector_score: float | None = Field(
        None,
        description="The vector side of the score: cosine similarity put on the model's 0-1 scale (docs/scoring.md); "
        "null when the vector search did not find the memory (or ranking was lexical).",
    )
    lexical_score: float | None = Field(
        None,
        description="The lexical side of the score: BM25 on its absolute 0-1 scale (docs/scoring.md); null when the "
        "keyword search did not find the memory.",
    )
    memory_id: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    occurred_at: datetime | None = None
    superseded_by: str | None = Field(
        None, description="The memory that replaced this one (only with includeSuperseded)."
    )
    expires_at: datetime | None = Field(None, description="When the memory expires; null when it never does.")
    duplicates: list[str] | None = Field(
        None,
        description="Older current memories of this extracted memory's subject, left out of the results (stored "
        "before consolidation kept one per subject; `mnemo extract --repair` supersedes them).",
    )
    sources: list[SourceTurn] | None = Field(
        None, description="With includeSources, for an extracted memory: the turns it came from."
    )


# memory_search's answer: one page of results, best first.
class MemorySearchOutput(ToolResponse):
    results: list[MemoryResult]
    total_count: int = Field(description="Results above the threshold, before the limit.")
    searched_layers: list[Layer]
    retrieval: Literal["hybrid", "lexical"] = Field(
        "hybrid", description="'lexical' when embeddings were unavailable and ranking fell back to BM25 alone."
    )
    has_more: bool = Field(False, description="True when more results follow; pass nextCursor to get them.")
    next_cursor: str | None = Field(None, description="Cursor of the next page, when hasMore.")
    graph: GraphContext | None = Field(None, description="With includeGraph: related entities and facts.")


# memory_delete's request: the memory to delete.
class MemoryDeleteInput(ToolRequest):
    memory_id: str = Field(min_length=1, max_length=128, description="ID of the memory to delete.")


# memory_delete's answer.
class MemoryDeleteOutput(ToolResponse):
    message: str
    memory_id: str


# memory_history's request: the memory and paging.
class MemoryHistoryInput(ToolRequest):
    memory_id: str = Field(min_length=1, max_length=128, description="ID of the memory whose history to read.")
    limit: Integer = Field(50, ge=1, le=200, description="Maximum number of changes per page.")
    cursor: str | None = Field(
        None, max_length=512, description="The nextCursor of a previous answer, to get the following page."
    )


# One change in a memory's history.
class MemoryChange(WireModel):
    event: str = Field(
        description="What happened: ADD, DEDUPE (the same content was added again and kept once), DELETE, "
        "SYNC_ADD or SYNC_UPDATE (knowledge sync wrote it), ORPHAN (its knowledge item is gone), EXTRACT (an "
        "extraction strategy wrote it), EXTEND (the same fact was extracted again: more source turns), SUPERSEDE "
        "(a newer extracted memory replaced it), EXPIRE (its expiresAt passed and it was removed; at is its "
        "expiresAt)."
    )
    at: datetime = Field(description="When it happened (UTC).")
    actor: str | None = Field(None, description="The user whose call made the change.")
    content_hash: str | None = Field(None, description="SHA-256 of the content the change carried.")
    superseded_by: str | None = Field(None, description="SUPERSEDE: the memory that replaced it.")
    message_ids: list[str] | None = Field(None, description="EXTRACT and EXTEND: the turns it came from.")


# memory_history's answer: one page of a memory's changes, oldest first.
class MemoryHistoryOutput(ToolResponse):
    memory_id: str
    layer: Layer = Field(description="The layer the memory is (or was) in.")
    changes: list[MemoryChange] = Field(description="The memory's changes, oldest first.")
    versions: list[ListedMemory] = Field(
        default_factory=list,
        description="When extraction superseded it or it superseded another: every version of the fact, oldest "
        "first, this one included (each with supersededBy when it was replaced).",
    )
    has_more: bool = Field(False, description="True when more changes follow; pass nextCursor to get them.")
    next_cursor: str | None = Field(None, description="Cursor of the next page, when hasMore.")


# memory_list's request: the layer and paging.
class MemoryListInput(ToolRequest):
    layer: Layer = Field("user", description="The layer to list: agent, user, session, project, team, org or company.")
    limit: Integer = Field(20, ge=1, le=100, description="Maximum number of memories per page.")
    cursor: str | None = Field(
        None, max_length=512, description="The nextCursor of a previous answer, to get the following page."
    )
    filter: dict[str, Any] | None = Field(None, description=FILTER_DESCRIPTION)

    @field_validator("filter")
    @classmethod
    def _filter(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _valid_filter(value)


# One memory as memory_list shows it.
class ListedMemory(WireModel):
    content: str
    layer: Layer
    memory_id: str
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    occurred_at: datetime | None = None
    superseded_by: str | None = Field(None, description="The memory that replaced this one, if any.")
    supersedes: str | None = Field(None, description="The memory this one replaced (extraction), if any.")
    expires_at: datetime | None = Field(None, description="When the memory expires; null when it never does.")


# memory_list's answer: one page of a layer's memories, newest first.
class MemoryListOutput(ToolResponse):
    memories: list[ListedMemory] = Field(description="The layer's memories, newest first.")
    layer: Layer
    has_more: bool = Field(False, description="True when more memories follow; pass nextCursor to get them.")
    next_cursor: str | None = Field(None, description="Cursor of the next page, when hasMore.")

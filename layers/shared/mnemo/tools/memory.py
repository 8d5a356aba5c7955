"""Memory tools: store, search, browse and delete memories across layers, and read a memory's history (seed 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.budget import fit_head
from mnemo.context import RequestContext
from mnemo.memory.models import (
    MemoryAddInput,
    MemoryAddOutput,
    MemoryDeleteInput,
    MemoryDeleteOutput,
    MemoryHistoryInput,
    MemoryHistoryOutput,
    MemoryListInput,
    MemoryListOutput,
    MemorySearchInput,
    MemorySearchOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import Rights

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Long-term memory of the user and of this agent"


@tool(
    "memory",
    rights=Rights(records="read-write", embeds=True, index="write"),
)
def memory_add(services: Services, context: RequestContext, request: MemoryAddInput) -> MemoryAddOutput:
    """[SPECIFICATION] Store a piece of information in memory for future reference.

    Tool exposure: `memory_add`

    Use this to remember user preferences, project context, decisions made, or any
    information that should persist across sessions. The layer defaults to `user`;
    shared layers (project, team, org, company) need the writer role. A near-identical
    memory already in the same scope is not stored twice: its id comes back with
    `deduplicated: true`; `dedupe: false` stores it all the same (a key-value store's
    items, where equal values under different keys are different memories). An
    `idempotencyKey` makes a retried call store once.
    `expiresAt` gives the memory an end (at most 10 years ahead): from then on search
    and list leave it out, memory_history records EXPIRE and storage deletes it; a
    memory repeating one that expires sooner is stored beside it (docs/lifecycle.md).

    **When to use:** a fact, preference or decision worth recalling later. Keep each
    memory one self-contained statement; set `occurredAt` when the fact happened at a
    known time.

    **Usage:**
    ```json
    {"content": "User prefers functional programming patterns over OOP", "layer": "user", "tags": ["preferences", "coding-style"]}
    ```

    **Returns:**
    ```json
    {"success": true, "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "message": "Memory stored successfully", "deduplicated": false, "layer": "user"}
    ```

    **Errors:**
    - INVALID_INPUT: content missing, blank or over 8000 characters; unknown layer; the
      layer's ids are not in the request context (details name the missing id);
      `expiresAt` in the past or more than 10 years ahead.
    - UNAUTHORIZED: writing a shared layer without the writer role.
    - CONFLICT: the idempotency key was used for a different request (not retryable).
    - PROVIDER_ERROR: the embedder or the store failed (retryable).

    @see mnemo.memory.service.MemoryService.add
    """
    return services.memory.add(context, request)


@tool(
    "memory",
    rights=Rights(records="read", embeds=True, index="read"),
)
def memory_search(services: Services, context: RequestContext, request: MemorySearchInput) -> MemorySearchOutput:
    """[SPECIFICATION] Search your memory for relevant past information.

    Tool exposure: `memory_search`

    Use this to recall user preferences, project context, previous decisions, or any
    stored knowledge. Ranking is hybrid (BM25 with vector similarity) on a calibrated
    0-1 score; results below `threshold` are dropped. Results are ordered by layer
    precedence (agent > user > session > project > team > org > company), then score.
    Only layers whose ids the caller has are searched; `searchedLayers` says which.
    Each result also says what its score came from: `vectorScore` (the vector search's
    similarity on its 0-1 scale) and `lexicalScore` (BM25 on its 0-1 scale), each null
    when that search did not find the memory.
    With `includeGraph`, the answer also carries `graph`: the memory graph's
    entities the query finds, with their current facts, and the facts it finds
    itself (at most 20), so one call gives the memories and their context.
    Memories the extraction strategies learned carry `metadata.source: extraction` and
    `metadata.provenance` (strategy, model, messageIds); one a newer extracted memory
    superseded is left out unless `includeSuperseded` (then it has `supersededBy`).
    `includeSources` answers each extracted memory with the turns it came from.
    `includeTurns` also ranks the caller's own stored turns (kind `turn`, the message
    id as `memoryId`) and fuses them with the memories: a fact that matches votes for
    its source turns. It answers one page (no cursor).
    `filter` keeps only the memories passing it (docs/filters.md): conditions on
    `metadata.<key>`, `tags`, `source`, `createdAt`, `occurredAt` and `expiresAt` with
    eq, ne, in, nin, gt, gte, lt, lte, contains, exists and all (tags), combined by
    and/or/not, e.g. `{"metadata.priority": {"gte": 3}}`; `tags` and `metadata` (top level
    or in `filter`) keep their meaning: any of the tags, each metadata key equal.

    **When to use:** before answering anything that may depend on what was said or
    decided before.

    **Usage:**
    ```json
    {"query": "What are the user's coding preferences?", "layers": ["user", "project"], "limit": 5}
    ```

    **Returns:**
    ```json
    {"success": true, "results": [{"content": "User prefers functional programming patterns over OOP", "layer": "user", "score": 0.92, "vectorScore": 0.88, "lexicalScore": 0.75, "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "tags": ["preferences", "coding-style"], "metadata": {"source": "manual"}, "createdAt": "2026-01-07T10:00:00Z", "occurredAt": null}], "totalCount": 1, "searchedLayers": ["user", "project"], "retrieval": "hybrid"}
    ```

    **Errors:**
    - INVALID_INPUT: query missing; limit outside 1-100; threshold outside 0-1; an
      unknown layer; a cursor with includeTurns; a malformed filter (details.field is
      its path, e.g. `filter.and[1].createdAt.gt`).

    @see mnemo.memory.service.MemoryService.search
    @see mnemo.learning.recall.Recall.search
    @see mnemo.graph.service.GraphService.context_for
    """
    output = (
        services.recall.search(context, request) if request.include_turns else services.memory.search(context, request)
    )
    if request.include_sources:
        services.recall.attach_sources(context, output)
    if request.include_graph and request.query.strip():  # a blank query finds nothing in the graph
        output.graph = services.graph.context_for(context, request.query, request.layers)
        budget = context.response_budget
        if budget is not None:
            output.graph.facts = fit_head(output, output.graph.facts, budget)
    return output


@tool(
    "memory",
    rights=Rights(records="read-write", index="delete"),
)
def memory_delete(services: Services, context: RequestContext, request: MemoryDeleteInput) -> MemoryDeleteOutput:
    """[SPECIFICATION] Delete a memory that is no longer relevant or was stored incorrectly.

    Tool exposure: `memory_delete`

    Use this sparingly: memories usually remain valuable for context. Only memories in
    the caller's own scopes can be deleted; any other id answers NOT_FOUND, whether or
    not it exists elsewhere. The deletion is kept in the memory's history.

    **Usage:**
    ```json
    {"memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Memory deleted successfully", "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f"}
    ```

    **Errors:**
    - NOT_FOUND: no such memory in the caller's scopes.
    - UNAUTHORIZED: deleting from a shared layer without the writer role.
    - INVALID_INPUT: the memory mirrors a knowledge item (sync owns it; change the
      knowledge file instead).
    - CONFLICT: the memory changed during the delete (retryable).

    @see mnemo.memory.service.MemoryService.delete
    """
    return services.memory.delete(context, request)


@tool(
    "memory",
    rights=Rights(records="read"),
)
def memory_list(services: Services, context: RequestContext, request: MemoryListInput) -> MemoryListOutput:
    """[SPECIFICATION] List the memories of one layer, newest first, without a query.

    Tool exposure: `memory_list`

    Use this to browse what is remembered in a layer (Mem0's `get_all`): each memory
    with its id, tags, metadata and dates, newest first, a page at a time. The layer
    defaults to `user`; only a layer whose ids are in the caller's request context can
    be listed. Memories whose knowledge item is gone are not listed (as in search).
    `filter` keeps only the memories passing it, with the grammar of memory_search's
    (docs/filters.md); the cursor pages on under the same filter.

    **When to use:** reviewing or cleaning up a layer; for recalling by meaning, use
    memory_search.

    **Usage:**
    ```json
    {"layer": "user", "limit": 20}
    ```

    **Returns:**
    ```json
    {"success": true, "memories": [{"content": "User prefers functional programming patterns over OOP", "layer": "user", "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "tags": ["preferences", "coding-style"], "metadata": {"source": "manual"}, "createdAt": "2026-01-07T10:00:00Z", "occurredAt": null}], "layer": "user", "hasMore": false, "nextCursor": null}
    ```

    **Errors:**
    - INVALID_INPUT: unknown layer; the layer's ids are not in the request context
      (details name the missing id); limit outside 1-100; a cursor from another listing
      or filter; a malformed filter (details.field is its path).

    @see mnemo.memory.service.MemoryService.list_layer
    """
    return services.memory.list_layer(context, request)


@tool(
    "memory",
    rights=Rights(records="read"),
)
def memory_history(services: Services, context: RequestContext, request: MemoryHistoryInput) -> MemoryHistoryOutput:
    """[SPECIFICATION] Show the history of one memory: when it was added, deduplicated and deleted.

    Tool exposure: `memory_history`

    Every change to a memory is kept (Mem0's `history`): ADD, DEDUPE (the same content
    was added again and kept once), DELETE, and for knowledge pointers SYNC_ADD,
    SYNC_UPDATE and ORPHAN; each with its time, the user who made it and the hash of
    the content. A deleted memory keeps its history. Only memories in layers the caller
    may read have a history to show; any other id answers NOT_FOUND, whether or not it
    exists elsewhere. Oldest first, a page at a time.

    **When to use:** to see where a memory came from, or whether and when it was deleted.

    **Usage:**
    ```json
    {"memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f"}
    ```

    **Returns:**
    ```json
    {"success": true, "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "layer": "user", "changes": [{"event": "ADD", "at": "2026-01-07T10:00:00Z", "actor": "alice", "contentHash": "9b1c0f4e2d6a8b3c5e7f9a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d"}, {"event": "DELETE", "at": "2026-01-09T16:30:00Z", "actor": "alice", "contentHash": "9b1c0f4e2d6a8b3c5e7f9a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d"}], "hasMore": false, "nextCursor": null}
    ```

    **Errors:**
    - NOT_FOUND: no such memory in the caller's readable layers.
    - INVALID_INPUT: memoryId missing; limit outside 1-200; a cursor from another history.

    @see mnemo.memory.service.MemoryService.history_page
    """
    return services.memory.history_page(context, request)

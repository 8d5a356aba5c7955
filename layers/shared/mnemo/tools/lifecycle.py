"""Lifecycle tools: memories added and deleted in batches, and a user erased from every family (issue 36)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mnemo.context import ADMIN_ROLE, RequestContext
from mnemo.errors import Unauthorized
from mnemo.memory.batch_models import (
    MemoryAddBatchInput,
    MemoryAddBatchOutput,
    MemoryDeleteBatchInput,
    MemoryDeleteBatchOutput,
)
from mnemo.portability.erasure import EraseUserInput, EraseUserOutput
from mnemo.tools.registry import tool
from mnemo.tools.rights import WORKSPACE_PURGE, Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Memories added and deleted in batches, and a user erased (GDPR)"


@tool(
    "lifecycle",
    rights=Rights(records="read-write", embeds=True, index="write"),
    runtime=Runtime(timeout=29, deadline=26),
)
def memory_add_batch(services: Services, context: RequestContext, request: MemoryAddBatchInput) -> MemoryAddBatchOutput:
    """[SPECIFICATION] Store up to 100 memories in one call, with one result per memory.

    Tool exposure: `memory_add_batch`

    Each item takes memory_add's fields and is stored exactly as memory_add stores it:
    its layer checked, a near-identical memory already in the scope kept instead
    (`deduplicated: true` with its id), its `idempotencyKey` honoured, all its records
    written at once or not at all. An item that repeats an earlier item of the same
    batch (same content and layer) deduplicates against the memory that one stored.
    Items are stored in order and each gets a result at its `index`: `success`,
    `memoryId`, `deduplicated`, `layer`, or, when it failed, `errorCode`, `message`,
    `retryable` and `details`; a failed item stores nothing and the others are
    stored all the same. The answer counts `added`, `deduplicated` and `failed`.
    Resending a batch whose items carry idempotency keys stores nothing twice.
    Items not started when the request deadline comes (behind API Gateway) answer a
    retryable TIMEOUT each and store nothing: send those items again.
    A request whose shape is wrong (no items, more than 100, an item that memory_add
    would refuse as invalid) is refused whole before anything is stored, naming the
    field (`items.3.content`).

    **When to use:** importing or remembering several facts at once (a list of
    preferences, notes from a document) instead of one memory_add per fact.

    **Usage:**
    ```json
    {"items": [{"content": "User prefers dark mode in every editor", "tags": ["preferences"], "idempotencyKey": "pref-dark-mode"}, {"content": "The project deploys from the main branch on Fridays", "layer": "project"}]}
    ```

    **Returns:**
    ```json
    {"success": true, "results": [{"index": 0, "success": true, "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "deduplicated": false, "layer": "user", "message": "Memory stored successfully"}, {"index": 1, "success": true, "memoryId": "mem_8b2d4f6a1c3e5a7b9d0f2e4c", "deduplicated": false, "layer": "project", "message": "Memory stored successfully"}], "added": 2, "deduplicated": 0, "failed": 0}
    ```

    **Errors:**
    - INVALID_INPUT: items missing, empty or more than 100; an item memory_add would
      refuse as invalid (details name it, e.g. `items.3.content`).
    - Per item (in its result, not for the call): INVALID_INPUT when the layer's ids are
      not in the request context, UNAUTHORIZED for a shared layer without the writer
      role, CONFLICT when its idempotency key was used for a different request,
      PROVIDER_ERROR when the store failed (retryable), TIMEOUT when the request
      deadline came before it was started (retryable; nothing stored).

    @see mnemo.memory.service.MemoryService.add_batch
    @see mnemo.memory.batch_items.MemoryBatches.add
    """
    return services.memory.add_batch(context, request, deadline=_deadline(services))


@tool(
    "lifecycle",
    rights=Rights(records="read-write", index="delete"),
    runtime=Runtime(timeout=29, deadline=26),
)
def memory_delete_batch(
    services: Services, context: RequestContext, request: MemoryDeleteBatchInput
) -> MemoryDeleteBatchOutput:
    """[SPECIFICATION] Delete up to 100 memories in one call, with one result per id.

    Tool exposure: `memory_delete_batch`

    Each id is deleted exactly as memory_delete deletes it: only memories in the
    caller's own scopes, the deletion kept in the memory's history. Ids are handled in
    order and each gets a result at its `index`: `success` and `memoryId`, or, when
    it was not deleted, `errorCode` (NOT_FOUND for an id outside the caller's scopes,
    whether or not it exists elsewhere, and for an id given twice; UNAUTHORIZED for a
    shared layer without the writer role; INVALID_INPUT for a memory that mirrors a
    knowledge item), `message`, `retryable` and `details`. The other ids are deleted
    all the same. The answer counts `deleted` and `failed`.

    **When to use:** cleaning up many memories at once, e.g. the ids memory_list
    showed as outdated.

    **Usage:**
    ```json
    {"memoryIds": ["mem_3f9a1c0d2b7e4a6f8c1d2e3f", "mem_0000aaaa1111bbbb2222cccc"]}
    ```

    **Returns:**
    ```json
    {"success": true, "results": [{"index": 0, "success": true, "memoryId": "mem_3f9a1c0d2b7e4a6f8c1d2e3f", "message": "Memory deleted successfully"}, {"index": 1, "success": false, "memoryId": "mem_0000aaaa1111bbbb2222cccc", "errorCode": "NOT_FOUND", "message": "Memory 'mem_0000aaaa1111bbbb2222cccc' not found", "retryable": false, "details": {"field": "memoryId", "memoryId": "mem_0000aaaa1111bbbb2222cccc"}}], "deleted": 1, "failed": 1}
    ```

    **Errors:**
    - INVALID_INPUT: memoryIds missing, empty or more than 100; an id empty or over 128
      characters.
    - Per id (in its result, not for the call): NOT_FOUND, UNAUTHORIZED, INVALID_INPUT
      (a knowledge pointer), CONFLICT when the memory changed during the delete
      (retryable), TIMEOUT when the request deadline came before it was started
      (retryable; nothing deleted).

    @see mnemo.memory.service.MemoryService.delete_batch
    @see mnemo.memory.batch_items.MemoryBatches.delete
    """
    return services.memory.delete_batch(context, request, deadline=_deadline(services))


# Erasure deletes records of every family, their index documents and every version of the personal workspace's
# blobs; it scans the table for the partitions of the user's agents and sessions (the one tool that scans).
# Behind API Gateway's 29 s: no page of deletes starts after 26 s, and the answer says `running`.
@tool(
    "lifecycle",
    rights=Rights(records="read-write", index="delete", bucket=WORKSPACE_PURGE, scans=True),
    runtime=Runtime(timeout=29, deadline=26),
    repeatable=True,
)
def erase_user(services: Services, context: RequestContext, request: EraseUserInput) -> EraseUserOutput:
    """[SPECIFICATION] Erase everything stored for one user of the caller's tenant (GDPR), and answer a receipt.

    Tool exposure: `erase_user`

    Needs the `admin` role. The tenant is always the caller's own; the user to erase is
    `subjectUserId`, the only tool field that names someone other than the caller. Deletes
    the user's memories (every layer of theirs: user, agent, session) with their history,
    the memories they wrote into shared layers (counted as `sharedMemories`; knowledge
    pointers stay), conversations, executions, topics, StoredAssets and pins, their personal
    workspace files with every blob version, graph entities and facts, extraction state and
    the index documents of all of these. The receipt counts what went per family; it
    keeps a hash of the user id, never the id, and is kept a year. Resumable: a run that
    stops early (a failure, or the request deadline: `status: running`) is resumed by the
    next call for the same user, and the counts add up across runs. Stop the user's
    traffic first: writes made during the erasure may survive it.

    **When to use:** a data subject asked to be forgotten, or a user leaves the tenant.

    **Usage:**
    ```json
    {"subjectUserId": "bob"}
    ```

    **Returns:**
    ```json
    {"success": true, "erasureId": "era_5f0c2a9e7b1d3c4a6e8f0a1b", "tenant": "acme", "userHash": "9c1185a5c5e9fc54612808977ee8f548b2258d31b1f0c3c0b2e8a1f7c2d4e6f8", "startedAt": "2026-11-28T10:00:00.000000Z", "completedAt": "2026-11-28T10:00:02.512000Z", "status": "completed", "runs": 1, "counts": {"memories": 12, "sharedMemories": 1, "history": 15, "idempotency": 3, "conversations": 8, "executions": 2, "topics": 2, "blocks": 1, "pins": 1, "files": 1, "blobKeys": 1, "graphEntities": 3, "graphFacts": 2, "extraction": 5, "indexMarkers": 0, "indexDocuments": 31, "otherRecords": 30, "records": 86}}
    ```

    **Errors:**
    - UNAUTHORIZED: the caller lacks the `admin` role.
    - INVALID_INPUT: `subjectUserId` missing, empty or not an id.
    - CONFLICT: another run of this user's erasure is writing its receipt (retryable).
    - PROVIDER_ERROR: a store failed part-way (retryable: the next call resumes).

    @see mnemo.portability.erasure.Erasure.erase
    """
    if ADMIN_ROLE not in context.roles:
        raise Unauthorized(
            f"erase_user needs the '{ADMIN_ROLE}' role", {"field": "subjectUserId", "requiredRole": ADMIN_ROLE}
        )
    seconds = services.settings.request_deadline_seconds
    deadline = time.monotonic() + seconds if seconds else None
    erasure = services.erasure
    return erasure.erase(context.tenant, request.subject_user_id, deadline=deadline)


def _deadline(services: Services) -> float | None:
    """When a batch stops starting items (``time.monotonic()``), from the request deadline, if one is set."""
    seconds = services.settings.request_deadline_seconds
    return time.monotonic() + seconds if seconds else None

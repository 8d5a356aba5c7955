"""Sync tools: mirror organisational knowledge into memory, by hand, and report on it (seed 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import WRITER_ROLE, RequestContext
from mnemo.errors import Unauthorized
from mnemo.sync.models import SyncNowInput, SyncNowOutput, SyncStatusInput, SyncStatusOutput
from mnemo.sync.visibility import visible_failures
from mnemo.tools.registry import tool
from mnemo.tools.rights import KNOWLEDGE_CURRENT, Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Sync of organisational knowledge into memory, and its status"


# Sync lists and reads the current files (ListBucket also turns a missing key into NoSuchKey rather
# than AccessDenied), writes the catalog, its index documents and the pointer memories. Behind API
# Gateway's 29 s: a run starts no item after 26 s and answers with the rest deferred.
@tool(
    "sync",
    rights=Rights(records="read-write", embeds=True, index="write", bucket=KNOWLEDGE_CURRENT),
    # 512 MB, as KnowledgeSyncFunction, which runs the same sync: whole files parsed and embedded.
    runtime=Runtime(timeout=29, deadline=26, memory=512),
)
def sync_now(services: Services, context: RequestContext, request: SyncNowInput) -> SyncNowOutput:
    """[SPECIFICATION] Manually trigger synchronization between memory and knowledge systems.

    Tool exposure: `sync_now`

    Use this after significant knowledge updates or if you suspect memories are out of date
    with the latest organizational policies. Each accepted knowledge item of the caller's
    tenant is mirrored as a pointer memory in its layer, so memory_search finds it. Only
    what changed is written (SHA-256 over each item); `force` re-applies everything.
    A file that fails (bad front matter, a pattern RE2 rejects) is reported and retried on
    the next sync; the others are synced. `failedItems` lists the failures in the caller's
    own layers. `force` needs the writer role. Sync also runs on a schedule and when a
    file changes in the knowledge bucket.

    **When to use:** right after pushing knowledge, or when sync_status reports failures.

    **Usage:**
    ```json
    {"force": false, "layers": ["org", "company"]}
    ```

    **Returns:**
    ```json
    {"success": true, "result": {"added": 3, "updated": 1, "deleted": 1, "unchanged": 5, "failures": 0}, "durationMs": 412.5, "message": "Synced 5 changed items, 5 unchanged", "failedItems": []}
    ```

    **Errors:**
    - CONFLICT: another sync of this tenant is running (retryable).
    - UNAUTHORIZED: `force` without the writer role.
    - INVALID_INPUT: an unknown type or layer.
    - PROVIDER_ERROR: the knowledge store could not be listed (retryable).

    @see mnemo.sync.service.SyncService.sync
    """
    if request.force and WRITER_ROLE not in context.roles:
        raise Unauthorized(
            f"force: re-applying every item needs the '{WRITER_ROLE}' role",
            {"field": "force", "requiredRole": WRITER_ROLE},
        )
    output = services.sync.sync(
        context.tenant, request, actor=context.user or "sync", seconds=services.settings.request_deadline_seconds
    )
    output.failed_items = visible_failures(context, output.failed_items)
    return output


@tool(
    "sync",
    rights=Rights(records="read"),
)
def sync_status(services: Services, context: RequestContext, request: SyncStatusInput) -> SyncStatusOutput:
    """[SPECIFICATION] Check the status of memory-knowledge synchronization, including last sync time, pending changes, and any sync failures.

    Tool exposure: `sync_status`

    Healthy means the tenant has synced within the staleness limit (a day by default) and
    no item is failing. `failedItems` counts the tenant's failing files; `failures` lists
    those in the caller's own layers with their error, time and retry count.

    **When to use:** when knowledge seems out of date, or before trusting memory_search to
    reflect the latest policies.

    **Usage:**
    ```json
    {}
    ```

    **Returns:**
    ```json
    {"success": true, "healthy": true, "lastSyncAt": "2026-11-22T04:00:00Z", "timeSinceSync": "5 minutes ago", "failedItems": 0, "stats": {"totalSyncs": 12, "totalItemsSynced": 40, "avgSyncDurationMs": 350.2}, "failures": [], "running": false}
    ```

    **Errors:**
    - PROVIDER_ERROR: the records store failed (retryable).

    @see mnemo.sync.service.SyncService.status
    """
    status = services.sync.status(context.tenant)
    status.failures = visible_failures(context, status.failures)
    return status

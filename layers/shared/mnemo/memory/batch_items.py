"""memory_add_batch and memory_delete_batch: up to 100 memories per call, one result per item, in order.

Each item goes through the very write its single tool uses, so its rules hold per item unchanged:

* **add**: ``MemoryWrites.add`` (``memory_add``): layer checks, idempotency (a resent item with its
  ``idempotencyKey`` answers as it first did, and stores nothing again; the key with another content is a
  CONFLICT; ``mnemo.memory.keys``), near-duplicates (DEDUPE history), the dated chain, index-first writes
  with the outbox as fallback. Each item's records (its memory, or its DEDUPE history item with, when keyed,
  its idempotency record; a dated memory's LAST pointer) go out in one all-or-nothing write, so an item that
  fails leaves nothing of itself behind, whatever happened to the others.
* **delete**: ``MemoryWrites.delete`` (``memory_delete``): NOT_FOUND for an id outside the caller's scopes,
  UNAUTHORIZED for a shared layer without the writer role, INVALID_INPUT for a knowledge pointer.

What the batch adds:

* **One embedder call.** Every undated item's content is embedded at once before the first write and handed
  to ``add`` (``content_vector``). A dated item embeds its one text itself, as ``memory_add`` does: its
  content, or the pair with the memory before it that day (which only the write finds), so no dated item
  embeds twice and its near-duplicate check is ``memory_add``'s. If the embedder fails, the items are stored
  unembedded and queued for the indexer, as ``memory_add`` stores one while the embedder is down.
* **Repeats within the batch.** An item whose content and layer repeat an earlier item's deduplicates
  against the memory that item stored (or repeats), even before the index shows it (OpenSearch refreshes
  about a second later): its memory is named to ``add`` (``repeats``), which checks its record. An item
  with ``dedupe`` false repeats nothing: it is stored beside the scope's memories and the batch's others.
* **Per-item errors.** A domain error of an item (``MnemoError``) becomes that item's result with the
  envelope's code, message, retryable flag and details; anything else is logged and answered as the
  doors answer it (PROVIDER_ERROR, "Internal error; it has been logged"). The other items go on.

The request's shape is checked whole by its model before any item runs (``mnemo.memory.batch_models``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Literal

from mnemo.context import RequestContext
from mnemo.errors import MnemoError, ProviderError, Timeout
from mnemo.memory.batch_models import (
    AddedItem,
    BatchItemResult,
    MemoryAddBatchInput,
    MemoryAddBatchOutput,
    MemoryDeleteBatchInput,
    MemoryDeleteBatchOutput,
)
from mnemo.memory.models import MemoryDeleteInput
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.writes import MemoryWrites

logger = logging.getLogger(__name__)


def failure(error: Exception) -> dict[str, Any]:
    """An item's failed result fields (``success`` false, the envelope's code, message, retryable, details)."""
    if not isinstance(error, MnemoError):
        logger.exception("batch item failed", exc_info=error)
        error = ProviderError("Internal error; it has been logged", {"type": type(error).__name__})
    envelope = error.envelope()
    return {
        "success": False,
        "error_code": envelope["errorCode"],
        "message": envelope["message"],
        "retryable": envelope["retryable"],
        "details": envelope["details"],
    }


def not_started() -> dict[str, Any]:
    """The result fields of an item left unstarted at the request deadline: a retryable TIMEOUT, nothing stored."""
    return failure(Timeout("Not started: the request deadline came first; nothing was stored for it, send it again"))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


class MemoryBatches:
    """The batch tools over the single writes (see the module docstring)."""

    def __init__(self, writes: MemoryWrites, sync: MemoryIndexSync) -> None:
        self._writes = writes
        self._sync = sync

    def add(
        self, context: RequestContext, request: MemoryAddBatchInput, *, deadline: float | None = None
    ) -> MemoryAddBatchOutput:
        """Store each item as ``memory_add`` would, in order; one result per item, and the counts.

        ``deadline`` (``time.monotonic()``): no item is started after it; each left answers a retryable TIMEOUT
        (``not_started``) and stores nothing, so the call answers inside the API's time limit with every item's
        fate known, and the caller sends only those items again.
        """
        undated = [item.content for item in request.items if item.occurred_at is None]
        embedded = iter(self._sync.try_embed(undated) if undated else [])  # empty when the embedder failed
        # A dated item embeds its own text in ``add`` ("embed"); an undated one takes its vector, or None.
        vectors: list[Sequence[float] | Literal["embed"] | None] = [
            "embed" if item.occurred_at is not None else next(embedded, None) for item in request.items
        ]
        #: (layer, content) -> the memory an earlier item of this batch stored or repeats.
        earlier: dict[tuple[str, str], str] = {}
        results: list[AddedItem] = []
        for index, (item, vector) in enumerate(zip(request.items, vectors, strict=True)):
            if _past(deadline):
                results.append(AddedItem(index=index, **not_started()))
                continue
            same = earlier.get((item.layer, item.content)) if item.dedupe else None
            try:
                output = self._writes.add(context, item, content_vector=vector, repeats=[same] if same else [])
            except Exception as error:  # this item's failure is its result; the others go on
                results.append(AddedItem(index=index, **failure(error)))
                continue
            earlier.setdefault((item.layer, item.content), output.memory_id)
            results.append(
                AddedItem(
                    index=index,
                    success=True,
                    memory_id=output.memory_id,
                    deduplicated=output.deduplicated,
                    layer=output.layer,
                    message=output.message,
                )
            )
        stored = [result for result in results if result.success]
        return MemoryAddBatchOutput(
            results=results,
            added=sum(1 for result in stored if not result.deduplicated),
            deduplicated=sum(1 for result in stored if result.deduplicated),
            failed=len(results) - len(stored),
        )

    def delete(
        self, context: RequestContext, request: MemoryDeleteBatchInput, *, deadline: float | None = None
    ) -> MemoryDeleteBatchOutput:
        """Delete each id as ``memory_delete`` would, in order; one result per id (an id given twice: the
        second answers NOT_FOUND), and the counts. ``deadline`` as for ``add``."""
        results: list[BatchItemResult] = []
        for index, memory_id in enumerate(request.memory_ids):
            if _past(deadline):
                results.append(BatchItemResult(index=index, memory_id=memory_id, **not_started()))
                continue
            try:
                output = self._writes.delete(context, MemoryDeleteInput(memory_id=memory_id))
            except Exception as error:  # this id's failure is its result; the others go on
                results.append(BatchItemResult(index=index, memory_id=memory_id, **failure(error)))
                continue
            results.append(BatchItemResult(index=index, success=True, memory_id=memory_id, message=output.message))
        deleted = sum(1 for result in results if result.success)
        return MemoryDeleteBatchOutput(results=results, deleted=deleted, failed=len(results) - deleted)

"""Request and response models of the batch tools, memory_add_batch and memory_delete_batch (issue 36).

An item of memory_add_batch is memory_add's request itself (``MemoryAddInput``), so every field memory_add
gains, the batch item gains too. Each model is described by a comment, not a docstring (see
``mnemo.memory.models``: a docstring would become the JSON Schema's description).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from mnemo.context import Layer
from mnemo.memory.models import MemoryAddInput
from mnemo.models import ToolRequest, ToolResponse, WireModel

#: The most items one batch call takes (memories to add, ids to delete).
MAX_BATCH_ITEMS = 100

MemoryId = Annotated[str, StringConstraints(min_length=1, max_length=128)]


# memory_add_batch's request: the memories to store, each as memory_add takes it.
class MemoryAddBatchInput(ToolRequest):
    items: list[MemoryAddInput] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        description="The memories to store (at most 100), each with memory_add's fields; answered in this order.",
    )


# memory_delete_batch's request: the memories to delete.
class MemoryDeleteBatchInput(ToolRequest):
    memory_ids: list[MemoryId] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        description="IDs of the memories to delete (at most 100); answered in this order.",
    )


# What happened to one item of a batch: its outcome, or its error as the error envelope words it.
class BatchItemResult(WireModel):
    index: int = Field(description="The item's position in the request, from 0.")
    success: bool = Field(description="Whether this item was stored (or deleted); false: see errorCode.")
    memory_id: str | None = Field(
        None, description="The memory stored, the existing one it repeats, or the one deleted (or not found)."
    )
    error_code: str | None = Field(
        None, description="When it failed: INVALID_INPUT, UNAUTHORIZED, NOT_FOUND, CONFLICT, PROVIDER_ERROR, ..."
    )
    message: str | None = Field(None, description="What happened to the item, or why it failed.")
    retryable: bool | None = Field(None, description="When it failed: whether sending the item again may succeed.")
    details: dict[str, Any] | None = Field(None, description="When it failed: the error's details (its field).")


# One item of memory_add_batch's answer.
class AddedItem(BatchItemResult):
    deduplicated: bool | None = Field(
        None, description="True when a near-identical memory already existed in the scope (its id is answered)."
    )
    layer: Layer | None = Field(None, description="The layer the memory is in, when stored.")


# memory_add_batch's answer: one result per item, in request order, and the counts.
class MemoryAddBatchOutput(ToolResponse):
    results: list[AddedItem] = Field(description="One result per item, in request order.")
    added: int = Field(description="Items stored as new memories.")
    deduplicated: int = Field(description="Items that repeat a memory already stored (its id answered).")
    failed: int = Field(description="Items not stored (success false).")


# memory_delete_batch's answer: one result per id, in request order, and the counts.
class MemoryDeleteBatchOutput(ToolResponse):
    results: list[BatchItemResult] = Field(description="One result per id, in request order.")
    deleted: int = Field(description="Memories deleted.")
    failed: int = Field(description="Ids not deleted (success false).")

"""Requests and answers of the sync tools (seed 000, Sync Tools)."""

from __future__ import annotations

from pydantic import Field

from mnemo.knowledge.models import KnowledgeLayer, KnowledgeType
from mnemo.models import Boolean, ToolRequest, ToolResponse, WireModel


class SyncNowInput(ToolRequest):
    force: Boolean = Field(False, description="Force full sync: re-apply every item, ignoring delta detection.")
    types: list[KnowledgeType] | None = Field(None, min_length=1, description="Only sync these knowledge types.")
    layers: list[KnowledgeLayer] | None = Field(None, min_length=1, description="Only sync these layers.")


class SyncCounts(WireModel):
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failures: int = 0


class FailedItem(WireModel):
    knowledge_id: str = Field(description="The item id, or the file path when the file could not be read as an item.")
    path: str
    error: str
    field: str | None = Field(None, description="The front matter field (or 'path', 'content') that failed.")
    failed_at: str
    retry_count: int = Field(description="0 on the first failure, then one more for each later sync it fails.")


class SyncNowOutput(ToolResponse):
    result: SyncCounts
    duration_ms: float
    message: str
    failed_items: list[FailedItem] = Field(
        default_factory=list, description="The files of the caller's layers that failed in this run."
    )
    deferred: int = Field(
        0, description="Items left for the next sync: this one reached the deployment's time limit first."
    )


class SyncStatusInput(ToolRequest):
    """No input required."""


class SyncStats(WireModel):
    total_syncs: int = 0
    total_items_synced: int = 0
    avg_sync_duration_ms: float = 0.0


class SyncStatusOutput(ToolResponse):
    healthy: bool = Field(description="Synced at least once, recently enough, with no failed items.")
    last_sync_at: str | None
    time_since_sync: str = Field(description="Time since the last sync, e.g. '5 minutes ago', or 'never'.")
    failed_items: int
    stats: SyncStats
    failures: list[FailedItem] = Field(
        default_factory=list, description="The failed items in the caller's layers, with their errors."
    )
    running: bool = Field(False, description="True while a sync holds the lock.")

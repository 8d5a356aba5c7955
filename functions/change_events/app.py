"""Lambda entry for change events: DynamoDB Stream batches of record changes in, EventBridge events out."""

from mnemo.entry.change_events import handler

__all__ = ["handler"]

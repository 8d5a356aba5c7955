"""Lambda entry for knowledge sync: EventBridge schedule and S3 object events of the knowledge bucket."""

from mnemo.entry.sync_events import handler

__all__ = ["handler"]

"""Lambda entry for extraction: SQS batches of the extraction queue (run) and of its wake queue (forwarded)."""

from mnemo.entry.extraction_events import handler

__all__ = ["handler"]

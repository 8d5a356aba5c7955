"""Lambda entry for the indexer: DynamoDB Stream batches of memory records in, batch item failures out."""

from mnemo.entry.indexer import handler

__all__ = ["handler"]

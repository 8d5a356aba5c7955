"""Lambda entry for the outline index sync (experimental): S3 object events of the workspace files."""

from mnemo.entry.outline_events import handler

__all__ = ["handler"]

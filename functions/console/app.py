"""Lambda entry for the console: API Gateway proxy events for GET /ui and /ui/{proxy+} in, its files out."""

from mnemo.entry.console_lambda import handler

__all__ = ["handler"]

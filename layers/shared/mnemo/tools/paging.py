"""Cursors for paged results.

A cursor is opaque to clients: base64 of the next offset and a fingerprint of
the query it belongs to, so a cursor replayed against another query is refused
rather than silently skipping results.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from mnemo.errors import invalid_field


def fingerprint(parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def encode_cursor(offset: int, query_fingerprint: str) -> str:
    raw = json.dumps({"o": offset, "f": query_fingerprint}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, query_fingerprint: str) -> int:
    """The offset a cursor points at (0 without one); INVALID_INPUT naming `cursor` otherwise."""
    if not cursor:
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset, owner = int(data["o"]), str(data["f"])
    except (ValueError, KeyError, TypeError, OverflowError):
        raise invalid_field("cursor", "not a cursor this service issued") from None
    if owner != query_fingerprint or offset < 0:
        raise invalid_field("cursor", "belongs to a different query; repeat the query without it")
    return offset

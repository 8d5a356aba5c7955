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
    """A short, stable digest of a query's parts, which a cursor carries so it is refused on another query."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _pack(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unpack(cursor: str, *keys: str) -> list[Any]:
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
        return [data[key] for key in keys]
    except (ValueError, KeyError, TypeError):
        raise invalid_field("cursor", "not a cursor this service issued") from None


def encode_cursor(offset: int, query_fingerprint: str) -> str:
    """An opaque cursor for ``offset`` within the query of ``query_fingerprint``."""
    return _pack({"o": offset, "f": query_fingerprint})


def decode_cursor(cursor: str | None, query_fingerprint: str) -> int:
    """The offset a cursor points at (0 without one); INVALID_INPUT naming `cursor` otherwise."""
    if not cursor:
        return 0
    raw_offset, owner = _unpack(cursor, "o", "f")
    try:
        offset = int(raw_offset)
    except (ValueError, TypeError, OverflowError):
        raise invalid_field("cursor", "not a cursor this service issued") from None
    if str(owner) != query_fingerprint or offset < 0:
        raise invalid_field("cursor", "belongs to a different query; repeat the query without it")
    return offset


def encode_after(name: str, listing_fingerprint: str) -> str:
    """A cursor that resumes a listing in name order after ``name``."""
    return _pack({"a": name, "f": listing_fingerprint})


def decode_after(cursor: str | None, listing_fingerprint: str) -> str | None:
    """The name a listing resumes after (None without a cursor); INVALID_INPUT naming `cursor` otherwise."""
    if not cursor:
        return None
    after, owner = _unpack(cursor, "a", "f")
    if not isinstance(after, str) or owner != listing_fingerprint:
        raise invalid_field("cursor", "belongs to a different listing; list again without it")
    return after

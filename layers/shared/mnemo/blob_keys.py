"""What a blob key may be: the same rule for the directory store, S3 and an import.

A key is ``/``-separated segments of a safe alphabet, never empty, ``.`` or ``..``, so no key can
name a path outside its store's root (locally) or its prefix (on S3).
"""

from __future__ import annotations

import re

from mnemo.errors import InvalidInput

_SEGMENT = re.compile(r"^[A-Za-z0-9._@+=,~%-]+$")


def check_blob_key(key: str) -> list[str]:
    """The key's segments, or INVALID_INPUT naming ``key`` when it is not a valid blob key."""
    parts = key.split("/")
    if not key or any(p in ("", ".", "..") or not _SEGMENT.match(p) for p in parts):
        raise InvalidInput(f"key: '{key}' is not a valid blob key", {"field": "key"})
    return parts

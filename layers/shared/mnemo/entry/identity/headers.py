"""The ``X-Mnemo-*`` headers of an API Gateway event, and which headers a SigV4 signature covers.

REST events (payload 1.0) carry ``headers`` with names as sent and ``multiValueHeaders`` with every
value; HTTP API events (payload 2.0) carry ``headers`` with lowercased names, repeated headers joined
by commas. Names are compared case-insensitively. A header sent more than once (REST) is refused, so
the value read is the only value sent.

API Gateway checks a SigV4 signature over the headers its ``SignedHeaders`` lists (in the
``Authorization`` header, or ``X-Amz-SignedHeaders`` for a presigned URL); any other header could
have been added on the way, so a delegate's identity headers count only when they are listed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mnemo.errors import Unauthorized

PREFIX = "x-mnemo-"
#: Header (lowercase) -> the identity field it names.
IDENTITY_HEADERS: Mapping[str, str] = {
    f"{PREFIX}{field}": field for field in ("tenant", "user", "agent", "session", "project", "team", "org", "roles")
}
_SIGNED = re.compile(r"SignedHeaders=([^,\s]*)")


def display(name: str) -> str:
    """A header's name as documented: ``x-mnemo-user`` -> ``X-Mnemo-User``."""
    return "-".join(part[:1].upper() + part[1:] for part in name.lower().split("-"))


@dataclass(frozen=True)
class SentHeader:
    key: str  # lowercase
    value: str

    @property
    def name(self) -> str:
        return display(self.key)

    @property
    def field(self) -> str | None:
        """The identity field it names; None for an ``X-Mnemo-*`` header that names none."""
        return IDENTITY_HEADERS.get(self.key)


def _mapping(raw: Any) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


def mnemo_headers(event: Mapping[str, Any]) -> list[SentHeader]:
    """Every ``X-Mnemo-*`` header the request carries, in a stable order; UNAUTHORIZED for one sent twice."""
    found: dict[str, SentHeader] = {}
    for name, value in _mapping(event.get("headers")).items():
        key = str(name).lower()
        if not key.startswith(PREFIX):
            continue
        if key in found:  # two spellings of one name in one mapping
            raise Unauthorized(f"{display(key)} was sent more than once", {"field": display(key)})
        found[key] = SentHeader(key, "" if value is None else str(value))
    for name, values in _mapping(event.get("multiValueHeaders")).items():
        key = str(name).lower()
        if key.startswith(PREFIX) and isinstance(values, list) and len(values) > 1:
            raise Unauthorized(f"{display(key)} was sent more than once", {"field": display(key)})
    return [found[key] for key in sorted(found)]


def signed_headers(event: Mapping[str, Any]) -> frozenset[str]:
    """The lowercase names the request's SigV4 signature covers (empty when it shows none)."""
    for name, value in _mapping(event.get("headers")).items():
        if str(name).lower() == "authorization" and isinstance(value, str):
            match = _SIGNED.search(value)
            return frozenset(match.group(1).lower().split(";")) if match else frozenset()
    for name, value in _mapping(event.get("queryStringParameters")).items():
        if str(name).lower() == "x-amz-signedheaders" and isinstance(value, str):
            return frozenset(value.lower().split(";"))
    return frozenset()

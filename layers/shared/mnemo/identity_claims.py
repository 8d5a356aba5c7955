"""Identity claims in a request body: which fields would claim one, and how they are screened.

Every door (API Gateway, Bedrock, MCP, the local server) and the catalog screen a body the same way,
so the rule lives here, below all of them: a body may repeat who the caller is, never claim someone else.
"""

from __future__ import annotations

from typing import Any

from mnemo.context import RequestContext
from mnemo.errors import Unauthorized

#: The ids a request context carries, in the order of its layers.
IDENTITY_KEYS = ("tenant", "user", "agent", "session", "project", "team", "org")


def parse_roles(raw: Any) -> frozenset[str]:
    """Roles as a set, from a list or a comma-separated string; blanks are dropped."""
    if isinstance(raw, list | tuple | set | frozenset):
        return frozenset(str(role).strip() for role in raw if str(role).strip())
    if isinstance(raw, str):
        return frozenset(role.strip() for role in raw.split(",") if role.strip())
    return frozenset()


#: Body fields that would claim an identity; the transport is the only source of one.
IDENTITY_CLAIMS: dict[str, str] = {
    f"{key}{suffix}": key for key in IDENTITY_KEYS for suffix in ("", "Id", "_id", "ID")
} | {"roles": "roles"}


def strip_identity_claims(payload: Any, context: RequestContext) -> Any:
    """Refuse a body that claims another identity; drop claims that merely repeat the caller's.

    A client (MemoryOS's schemas carry ``user_id``, for one) may echo who it is;
    that is harmless and removed before validation. Any value that differs from
    what the transport vouched for is UNAUTHORIZED, naming the field.
    """
    if not isinstance(payload, dict):
        return payload
    claims = [key for key in payload if key in IDENTITY_CLAIMS]
    if not claims:
        return payload
    for key in claims:
        attribute = IDENTITY_CLAIMS[key]
        claimed = payload[key]
        actual = getattr(context, attribute)
        same = sorted(actual) == sorted(parse_roles(claimed)) if attribute == "roles" else claimed == actual
        if not same:
            raise Unauthorized(
                f"{key}: identity comes from the transport, not the request body",
                {"field": key},
            )
    return {key: value for key, value in payload.items() if key not in IDENTITY_CLAIMS}

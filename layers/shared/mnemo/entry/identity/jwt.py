"""Identity from a verified token's claims: the HTTP API JWT authorizer, and REST's Cognito authorizer.

Where the claims are: HTTP API payload 2.0 ``requestContext.authorizer.jwt.claims``; REST (Cognito
user pool authorizer) and HTTP API payload 1.0 ``requestContext.authorizer.claims``. Which claim
carries which field is ``MNEMO_JWT_CLAIMS`` (``settings``), by default ``sub`` for the user and
``custom:tenant``, ``custom:agent``, ``custom:session``, ``custom:project``, ``custom:team``,
``custom:org`` and ``custom:roles`` for the rest.

How values arrive: an HTTP API JWT authorizer passes every claim as a string, an array claim as its
items between brackets, space-separated (``["a", "b"]`` arrives as ``"[a b]"``); REST passes claims with
their JSON types. So:

- an id field takes a string (used exactly as it is, then checked as every id) or a number; an empty
  string counts as absent; a list, object or boolean is UNAUTHORIZED naming the claim;
- ``roles`` takes a list of strings, ``"[a b]"``, a JSON array in a string (``'["a","b"]'``), or a
  comma-separated string (``"writer,reader"``); items are trimmed and empty ones dropped;
- the user claim is required; without the tenant claim the tenant is the API's account.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mnemo.errors import Unauthorized


def roles_from_claim(value: Any, claim: str) -> frozenset[str]:
    items: list[Any]
    if isinstance(value, list | tuple):
        items = list(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            items = decoded if isinstance(decoded, list) else text[1:-1].split()
        else:
            items = text.split(",")
    else:
        raise Unauthorized(f"The token's {claim} claim is not a list of roles", {"field": "roles", "claim": claim})
    if not all(isinstance(item, str) for item in items):
        raise Unauthorized(
            f"The token's {claim} claim holds a role that is not a string", {"field": "roles", "claim": claim}
        )
    return frozenset(item.strip() for item in items if item.strip())


def _id_from_claim(value: Any, field: str, claim: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise Unauthorized(f"The token's {claim} claim ({field}) is not a single id", {"field": field, "claim": claim})
    text = str(value)
    return text or None


def values_from_claims(
    claims: Mapping[str, Any], mapping: Mapping[str, str], account: str | None
) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """The identity values the claims carry, and for each field the details that name its claim."""
    values: dict[str, Any] = {}
    sources: dict[str, dict[str, str]] = {}
    for field, claim in mapping.items():
        sources[field] = {"field": field, "claim": claim}
        raw = claims.get(claim)
        if raw is None:
            continue
        if field == "roles":
            values["roles"] = roles_from_claim(raw, claim)
            continue
        value = _id_from_claim(raw, field, claim)
        if value is not None:
            values[field] = value
    if "user" not in values:
        claim = mapping["user"]
        raise Unauthorized(f"The token has no {claim} claim, which names the user", {"field": "user", "claim": claim})
    if "tenant" not in values:
        if not account:
            claim = mapping["tenant"]
            raise Unauthorized(
                f"The token has no {claim} claim, which names the tenant", {"field": "tenant", "claim": claim}
            )
        values["tenant"] = account
        sources["tenant"] = {"field": "tenant", "source": "requestContext.accountId"}
    return values, sources

"""What a trusted delegate's headers say, and how other callers' ``X-Mnemo-*`` headers are refused.

The rules are mnemo.entry.identity's docstring; this module applies them to the headers
(``headers``) of one event, for a caller already identified.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo.context import _ID_PATTERN
from mnemo.entry.identity.headers import SentHeader
from mnemo.entry.identity.iam import Caller
from mnemo.errors import Unauthorized

#: Field -> the envelope details that name where its value came from (a header, a claim).
Sources = dict[str, dict[str, str]]


def _roles(raw: str) -> frozenset[str]:
    """A Lambda authorizer's roles as a comma-separated string (spaces around items ignored)."""
    return frozenset(role.strip() for role in raw.split(",") if role.strip())


def refuse_headers(sent: list[SentHeader], why: str) -> None:
    """Callers who cannot name an identity: the first ``X-Mnemo-*`` header is UNAUTHORIZED, named."""
    if sent:
        header = sent[0]
        raise Unauthorized(f"{header.name}: {why}", {"field": header.name})


def _unknown(header: SentHeader) -> Unauthorized:
    return Unauthorized(f"{header.name} is not an identity header", {"field": header.name})


def agree(sent: list[SentHeader], values: Mapping[str, Any]) -> None:
    """Headers beside a Lambda authorizer's context: each must say what the authorizer vouched for."""
    for header in sent:
        if header.field is None:
            raise _unknown(header)
        if header.field == "roles":
            same = _roles(header.value) == values.get("roles", frozenset())
        else:
            same = header.value == values.get(header.field, "local" if header.field == "tenant" else None)
        if not same:
            raise Unauthorized(
                f"{header.name} names an identity the authorizer did not vouch for", {"field": header.name}
            )


def _header_roles(header: SentHeader) -> frozenset[str]:
    if header.value == "":
        return frozenset()
    roles = header.value.split(",")
    for role in roles:
        if not _ID_PATTERN.fullmatch(role):
            raise Unauthorized(
                f"{header.name}: {role[:80]!r} is not a role; roles are comma-separated ids "
                "(letters, digits and ._@:+=/-, no spaces)",
                {"field": header.name},
            )
    return frozenset(roles)


def delegated(caller: Caller, sent: list[SentHeader], signed: frozenset[str]) -> tuple[dict[str, Any], Sources]:
    """A trusted delegate's call: itself when it names no one, else the identity its signed headers name."""
    values: dict[str, Any] = {"tenant": caller.account, "user": caller.user}
    if not sent:
        return values, {}
    values = {"tenant": caller.account}
    sources: Sources = {}
    for header in sent:
        if header.field is None:
            raise _unknown(header)
        if header.field == "tenant":
            raise Unauthorized(
                f"{header.name}: the tenant is the delegate's account ({caller.account}) and cannot be named",
                {"field": header.name},
            )
        if header.key not in signed:
            raise Unauthorized(
                f"{header.name} must be signed: list it in the SigV4 SignedHeaders with the rest",
                {"field": header.name},
            )
        sources[header.field] = {"field": header.name}
        if header.field == "roles":
            values["roles"] = _header_roles(header)
        elif header.value == "":
            raise Unauthorized(
                f"{header.name} is empty; leave it out to name no {header.field}", {"field": header.name}
            )
        else:
            values[header.field] = header.value
    if "user" not in values:
        raise Unauthorized(
            "X-Mnemo-User is required: a delegate that names an identity names its end user",
            {"field": "X-Mnemo-User"},
        )
    return values, sources

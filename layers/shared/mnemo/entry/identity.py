"""Identity from an API Gateway REST proxy event: the authorizer vouches, the body never does.

Sources, in order: a Lambda authorizer's context (flat keys ``tenant``, ``user``,
``agent``, ``session``, ``project``, ``team``, ``org``, ``roles``), Cognito
claims (``sub``, ``custom:tenant``, ``custom:roles``...), the IAM caller
(account as tenant, user ARN as user), then an API key (``apikey:<key id>`` as
user, ``MNEMO_API_KEY_TENANT`` as tenant). The local server plays the Lambda
authorizer, filling the context from its ``X-Mnemo-*`` headers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mnemo.context import RequestContext
from mnemo.errors import Unauthorized

IDENTITY_KEYS = ("tenant", "user", "agent", "session", "project", "team", "org")


def _roles(raw: Any) -> frozenset[str]:
    if isinstance(raw, list | tuple | set | frozenset):
        return frozenset(str(role).strip() for role in raw if str(role).strip())
    if isinstance(raw, str):
        return frozenset(role.strip() for role in raw.split(",") if role.strip())
    return frozenset()


def _from_mapping(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in IDENTITY_KEYS:
        value = values.get(f"{prefix}{key}")
        if value not in (None, ""):
            found[key] = str(value)
    roles = values.get(f"{prefix}roles")
    if roles is not None:
        found["roles"] = _roles(roles)
    return found


def _validated(values: dict[str, Any]) -> RequestContext:
    """A context from transport values; a malformed identity is UNAUTHORIZED, naming the field."""
    try:
        return RequestContext.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise Unauthorized(f"identity {field}: {first['msg']}", {"field": field}) from None


def context_from_event(event: Mapping[str, Any]) -> RequestContext:
    request_context = event.get("requestContext") or {}
    authorizer = request_context.get("authorizer") or {}
    claims = authorizer.get("claims") if isinstance(authorizer, Mapping) else None
    values: dict[str, Any] = {}
    if isinstance(claims, Mapping) and claims.get("sub"):
        values = _from_mapping(claims, "custom:")
        values.setdefault("user", str(claims["sub"]))
    elif isinstance(authorizer, Mapping) and (authorizer.get("user") or authorizer.get("principalId")):
        values = _from_mapping(authorizer)
        values.setdefault("user", str(authorizer.get("principalId")))
    else:
        identity = request_context.get("identity") or {}
        if identity.get("userArn"):
            values = {"user": identity["userArn"], "tenant": identity.get("accountId") or "default"}
        elif identity.get("apiKeyId"):
            # API-key mode: each key is one caller; the tenant is the deployment's.
            values = {
                "user": f"apikey:{identity['apiKeyId']}",
                "tenant": os.environ.get("MNEMO_API_KEY_TENANT", "default"),
            }
    if not values.get("user"):
        raise Unauthorized("The request carries no caller identity", {"source": "requestContext.authorizer"})
    return _validated(values)


def context_from_environment(environ: Mapping[str, str]) -> RequestContext:
    """Identity for processes a single caller starts (the CLI, MCP stdio).

    ``MNEMO_TENANT``, ``MNEMO_USER`` (or MemoryOS's ``MEMORY_USER_ID``),
    ``MNEMO_AGENT``, ``MNEMO_SESSION``, ``MNEMO_PROJECT``, ``MNEMO_TEAM``,
    ``MNEMO_ORG`` and ``MNEMO_ROLES``; tenant and user default to ``local``.
    """
    values: dict[str, Any] = {"tenant": "local", "user": environ.get("MEMORY_USER_ID") or "local"}
    for key in IDENTITY_KEYS:
        value = environ.get(f"MNEMO_{key.upper()}")
        if value:
            values[key] = value
    values["roles"] = _roles(environ.get("MNEMO_ROLES", "writer"))
    return _validated(values)


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
        same = sorted(actual) == sorted(_roles(claimed)) if attribute == "roles" else claimed == actual
        if not same:
            raise Unauthorized(
                f"{key}: identity comes from the transport, not the request body",
                {"field": key},
            )
    return {key: value for key, value in payload.items() if key not in IDENTITY_CLAIMS}

"""Who is calling, from an API Gateway event: the authorizer vouches, the body never does.

``context_from_event`` is the one entry point every API Gateway door calls (the tool functions and
/mcp). It reads REST events (payload 1.0) and HTTP API events (payload 2.0, ``"version": "2.0"``).
docs/identity.md has the same rules as a table.

This module applies the rules; its submodules hold the parts, all imported here since every door needs
them: ``headers`` (the ``X-Mnemo-*`` headers, and which ones a SigV4 signature covers), ``iam`` (the
principal an ARN names), ``delegates`` (what a trusted delegate's headers say), ``jwt`` (a token's
claims) and ``settings`` (the deployment's identity settings). ``local`` reads `mnemo serve`'s headers as
a Lambda authorizer's context; only the local server imports it, so no Lambda loads it.

Who the caller is, by the first source the event carries:

1. A Lambda authorizer's context (REST ``requestContext.authorizer``, HTTP API
   ``requestContext.authorizer.lambda``): flat ``tenant``, ``user`` (else ``principalId``), ``agent``,
   ``session``, ``project``, ``team``, ``org`` and ``roles`` (a list or a comma-separated string).
   The local server plays this authorizer. The authorizer is trusted for everything; an
   ``X-Mnemo-*`` header is accepted only when it says what the authorizer says.
2. A verified token's claims (REST Cognito ``authorizer.claims``, HTTP API ``authorizer.jwt.claims``):
   mapped by ``MNEMO_JWT_CLAIMS`` (``jwt``, ``settings``). The tenant claim, else the
   API's account. Any ``X-Mnemo-*`` header is UNAUTHORIZED naming it: the token is the identity.
3. A SigV4 caller (REST ``identity.userArn``, HTTP API ``authorizer.iam.userArn``), ``iam``:
   the tenant is the caller's account. An assumed-role session stands for its role
   (``arn:aws:iam::<account>:role/<Name>``), so every session of one role is one user; an IAM user
   ARN is the user as it is. No agent, session, project, team, org or roles.

   A trusted delegate is a caller whose role is listed in ``MNEMO_TRUSTED_DELEGATES`` (the
   template's ``TrustedDelegateArns``), matched on partition, account and role name exactly. A
   delegate acts for its end users through ``X-Mnemo-User`` (then required), ``-Agent``,
   ``-Session``, ``-Project``, ``-Team``, ``-Org`` and ``-Roles``, under these rules:

   - each must be covered by the signature (listed in SigV4's ``SignedHeaders``), else it could
     have been spliced in on the way: UNAUTHORIZED naming it, saying it must be signed;
   - values are used exactly as sent and checked as every id (``mnemo.context``): no trimming, an
     empty value refused, naming the header; ``X-Mnemo-Roles`` is a comma-separated list of ids
     (empty: no roles; absent: no roles), and the delegate is trusted for the roles it grants;
   - ``X-Mnemo-Tenant`` is refused: the tenant stays the delegate's account;
   - a delegate that sends no ``X-Mnemo-*`` header is itself (its role ARN).

   A caller whose role is not listed, and any IAM user, that sends any ``X-Mnemo-*`` header is
   UNAUTHORIZED naming the header: never silently given its own identity instead.
4. An API key (REST ``identity.apiKeyId``): the user is ``apikey:<key id>``, the tenant
   ``MNEMO_API_KEY_TENANT`` (set alike on every function), else the API's account; so one key is
   one tenant on every function, /mcp included. ``X-Mnemo-*`` headers are refused.

No source: UNAUTHORIZED. A malformed value: UNAUTHORIZED naming the header, claim or field. A
misconfigured setting: PROVIDER_ERROR naming it (``settings``). Every ``X-Mnemo-*`` header
other than the eight identity headers is refused too (a misspelt header must not pass unnoticed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mnemo.context import RequestContext
from mnemo.entry.identity.delegates import Sources, agree, delegated, refuse_headers
from mnemo.entry.identity.headers import SentHeader, mnemo_headers, signed_headers
from mnemo.entry.identity.iam import caller_from_arn
from mnemo.entry.identity.jwt import values_from_claims
from mnemo.entry.identity.settings import API_KEY_TENANT_SETTING, jwt_claims, trusted_delegates
from mnemo.errors import Unauthorized
from mnemo.identity_claims import IDENTITY_KEYS, parse_roles


def _from_mapping(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in IDENTITY_KEYS:
        value = values.get(f"{prefix}{key}")
        if value not in (None, ""):
            found[key] = str(value)
    roles = values.get(f"{prefix}roles")
    if roles is not None:
        found["roles"] = parse_roles(roles)
    return found


def context_from_values(values: Mapping[str, Any], sources: Sources | None = None) -> RequestContext:
    """The caller's context from identity values a door read off its transport (``tenant``, ``user``,
    ``agent``, ``session``, ``project``, ``team``, ``org``, ``roles``), checked as every id is
    (``mnemo.context``): API Gateway events, the environment and Bedrock's session attributes all end
    here. A malformed identity is UNAUTHORIZED, naming the field.

    ``sources`` names where a field's value came from (``{"user": {"field": "X-Mnemo-User"}}``): the
    refusal's details are those, so a client learns which header or claim to fix.
    """
    try:
        return RequestContext.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        details = (sources or {}).get(field) or {"field": field}
        where = "" if details.get("field", field) == field else f" ({details['field']})"
        if "claim" in details:
            where = f" (claim {details['claim']})"
        raise Unauthorized(f"identity {field}{where}: {first['msg']}", details) from None


def _mapping(raw: Any) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


# ------------------------------------------------------------------ sources ---
def _iam(arn: str, event: Mapping[str, Any], sent: list[SentHeader]) -> tuple[dict[str, Any], Sources]:
    delegates = trusted_delegates()  # first: a broken list fails every SigV4 call alike, not only a delegate's
    caller = caller_from_arn(arn)
    if caller is None:
        raise Unauthorized("The caller's ARN is not an IAM or STS principal", {"field": "userArn"})
    if caller.role is not None and caller.role in delegates:
        return delegated(caller, sent, signed_headers(event))
    refuse_headers(
        sent,
        f"only a trusted delegate (an IAM role listed in TrustedDelegateArns) may name an identity; "
        f"this caller is {caller.user}",
    )
    return {"tenant": caller.account, "user": caller.user}, {}


def _claims(claims: Mapping[str, Any], account: str | None, sent: list[SentHeader]) -> tuple[dict[str, Any], Sources]:
    refuse_headers(sent, "a token's claims are the identity; identity headers are refused")
    return values_from_claims(claims, jwt_claims(), account)


def _lambda(context: Mapping[str, Any], sent: list[SentHeader]) -> dict[str, Any]:
    values = _from_mapping(context)
    if "user" not in values and context.get("principalId") not in (None, ""):
        values["user"] = str(context["principalId"])
    agree(sent, values)
    return values


def context_from_event(event: Mapping[str, Any]) -> RequestContext:
    """The caller of an API Gateway event, REST or HTTP API (the rules are this module's docstring)."""
    request_context = _mapping(event.get("requestContext"))
    authorizer = _mapping(request_context.get("authorizer"))
    account = request_context.get("accountId")
    account = account if isinstance(account, str) and account else None
    sent = mnemo_headers(event)
    values: dict[str, Any] = {}
    sources: Sources = {}
    if event.get("version") == "2.0":
        jwt = _mapping(authorizer.get("jwt"))
        iam = _mapping(authorizer.get("iam"))
        lambda_context = authorizer.get("lambda")
        if isinstance(lambda_context, Mapping):
            values = _lambda(lambda_context, sent)
        elif isinstance(jwt.get("claims"), Mapping):
            values, sources = _claims(jwt["claims"], account, sent)
        elif isinstance(iam.get("userArn"), str) and iam["userArn"]:
            values, sources = _iam(iam["userArn"], event, sent)
    else:
        identity = _mapping(request_context.get("identity"))
        claims = authorizer.get("claims")
        if isinstance(claims, Mapping) and claims:
            values, sources = _claims(claims, account, sent)
        elif authorizer.get("user") or authorizer.get("principalId"):
            values = _lambda(authorizer, sent)
        elif isinstance(identity.get("userArn"), str) and identity["userArn"]:
            values, sources = _iam(identity["userArn"], event, sent)
        elif identity.get("apiKeyId"):
            refuse_headers(sent, "an API key caller cannot name an identity; identity headers are refused")
            tenant = os.environ.get(API_KEY_TENANT_SETTING) or account or "default"
            values = {"user": f"apikey:{identity['apiKeyId']}", "tenant": tenant}
    if not values.get("user"):
        raise Unauthorized("The request carries no caller identity", {"source": "requestContext.authorizer"})
    return context_from_values(values, sources)


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
    values["roles"] = parse_roles(environ.get("MNEMO_ROLES", "writer"))
    return context_from_values(values)

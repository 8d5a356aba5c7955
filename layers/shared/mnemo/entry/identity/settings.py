"""The deployment's identity settings, read from the environment on each call and checked.

- ``MNEMO_TRUSTED_DELEGATES``: a comma-separated list of IAM role ARNs
  (``arn:aws:iam::<account>:role/[<path>/]<Name>``), the template's ``TrustedDelegateArns``. Blank
  items and spaces around items are ignored; anything that is not a role ARN makes the setting invalid.
- ``MNEMO_JWT_CLAIMS``: which claim carries each identity field, as comma-separated ``field=claim``
  pairs, e.g. ``user=email,tenant=org_id,roles=groups``. Fields are ``tenant``, ``user``, ``agent``,
  ``session``, ``project``, ``team``, ``org`` and ``roles``; a field left out keeps its default claim
  (``DEFAULT_CLAIMS``). A claim name is everything after the first ``=`` (``custom:team`` and
  ``https://example.com/roles`` are fine) and may not hold a comma. Spaces around names are ignored.
- ``MNEMO_API_KEY_TENANT``: the tenant of every API key caller; unset, the API's account.

An invalid setting is the deployment's fault, not the caller's: every call it affects answers
PROVIDER_ERROR (not retryable) naming the setting, and ``check_settings`` reports it before a deploy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

from mnemo.entry.identity.iam import RoleKey, role_from_arn
from mnemo.errors import MnemoError

DELEGATES_SETTING = "MNEMO_TRUSTED_DELEGATES"
CLAIMS_SETTING = "MNEMO_JWT_CLAIMS"
API_KEY_TENANT_SETTING = "MNEMO_API_KEY_TENANT"

#: The claims read when MNEMO_JWT_CLAIMS names no other: a Cognito user pool's ``sub`` and custom attributes.
DEFAULT_CLAIMS: Mapping[str, str] = MappingProxyType(
    {
        "tenant": "custom:tenant",
        "user": "sub",
        "agent": "custom:agent",
        "session": "custom:session",
        "project": "custom:project",
        "team": "custom:team",
        "org": "custom:org",
        "roles": "custom:roles",
    }
)


class SettingError(MnemoError):
    """A deployment setting that cannot be used: the operator must fix it; calling again will not help."""

    code = "PROVIDER_ERROR"
    retryable = False


def _invalid(setting: str, message: str) -> SettingError:
    return SettingError(f"The deployment's {setting} setting is invalid: {message}", {"setting": setting})


@lru_cache(maxsize=16)
def parse_delegates(raw: str) -> frozenset[RoleKey]:
    """The roles a ``MNEMO_TRUSTED_DELEGATES`` value lists; SettingError naming the first bad item."""
    roles: set[RoleKey] = set()
    for item in raw.split(","):
        arn = item.strip()
        if not arn:
            continue
        role = role_from_arn(arn)
        if role is None:
            raise _invalid(
                DELEGATES_SETTING, f"{arn[:200]!r} is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)"
            )
        roles.add(role)
    return frozenset(roles)


@lru_cache(maxsize=16)
def parse_claims(raw: str) -> Mapping[str, str]:
    """Field -> claim name: the defaults with a ``MNEMO_JWT_CLAIMS`` value's pairs over them."""
    mapping = dict(DEFAULT_CLAIMS)
    named: set[str] = set()
    for item in raw.split(","):
        pair = item.strip()
        if not pair:
            continue
        field, equals, claim = pair.partition("=")
        field, claim = field.strip(), claim.strip()
        if not equals:
            raise _invalid(CLAIMS_SETTING, f"{pair[:200]!r} is not field=claim")
        if field not in DEFAULT_CLAIMS:
            raise _invalid(CLAIMS_SETTING, f"unknown field {field[:80]!r}; fields are {', '.join(DEFAULT_CLAIMS)}")
        if field in named:
            raise _invalid(CLAIMS_SETTING, f"the field {field!r} is named twice")
        if not claim:
            raise _invalid(CLAIMS_SETTING, f"the claim for {field!r} is empty")
        named.add(field)
        mapping[field] = claim
    return MappingProxyType(mapping)


def trusted_delegates(environ: Mapping[str, str] | None = None) -> frozenset[RoleKey]:
    return parse_delegates((os.environ if environ is None else environ).get(DELEGATES_SETTING, ""))


def jwt_claims(environ: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return parse_claims((os.environ if environ is None else environ).get(CLAIMS_SETTING, ""))


def check_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """Every problem with the identity settings, as messages (empty when all is well)."""
    problems: list[str] = []
    for check in (trusted_delegates, jwt_claims):
        try:
            check(environ)
        except SettingError as error:
            problems.append(error.message)
    return problems

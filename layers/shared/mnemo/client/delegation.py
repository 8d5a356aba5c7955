"""Acting for an end user: the identity a trusted delegate names on each call.

A hosted agent that serves many users (an ECS task, a Lambda, an instance) signs its calls with SigV4
under its IAM role. When that role is listed in the deployment's ``TrustedDelegateArns``, the API takes the
end user, and the rest of the identity, from the ``X-Mnemo-User``, ``-Agent``, ``-Session``, ``-Project``,
``-Team``, ``-Org`` and ``-Roles`` headers, which the signature must cover; anyone else who sends them is
refused (UNAUTHORIZED naming the header). The tenant is not named: it stays the delegate's account.

Values are checked here with the service's own rules (``mnemo.context``), so a malformed id fails before
anything is sent: each id is 1 to 256 of letters, digits and ``._@:+=,/-``, used exactly as given (no
trimming). Roles are such ids without a comma (the header is a comma-separated list); ``roles=None``
sends no Roles header (on the deployed API: no roles; on ``mnemo serve``: its default roles), ``roles=()``
an empty one (no roles, on both).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: ``mnemo.context``'s id pattern (a test keeps them equal; the client cannot import pydantic).
ID_PATTERN = re.compile(r"[A-Za-z0-9._@:+=,/\-]{1,256}")

#: The fields a delegate may name, in header order (``X-Mnemo-<Field>``).
FIELDS = ("user", "agent", "session", "project", "team", "org")

_RULE = "letters, digits and ._@:+=,/- (1 to 256)"


class IdentityValueError(ValueError):
    """An identity value the service would refuse; ``field`` names it (``user``, ``roles``...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"on_behalf_of {field}: {message}")
        self.field = field


def _id(field: str, value: object) -> None:
    if not isinstance(value, str):
        raise IdentityValueError(field, f"an id is a string, not {type(value).__name__}")
    if not ID_PATTERN.fullmatch(value):
        raise IdentityValueError(field, f"{value[:80]!r} is not an id: use {_RULE}")


def role_names(value: object) -> tuple[str, ...]:
    """Roles as a tuple, each checked (a single string is refused: it would be read as its letters)."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise IdentityValueError("roles", "a sequence of role names, e.g. ('writer',), not a single string")
    roles = tuple(value)
    for role in roles:
        _id("roles", role)
        if "," in role:
            raise IdentityValueError("roles", f"{role!r} holds a comma, which separates roles in the header")
    return roles


@dataclass(frozen=True)
class Delegation:
    """Who a trusted delegate acts for: the end user (required) and, optionally, the agent, session,
    project, team, org and roles. Checked when built (``IdentityValueError`` naming the field)."""

    user: str
    agent: str | None = None
    session: str | None = None
    project: str | None = None
    team: str | None = None
    org: str | None = None
    roles: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _id("user", self.user)
        for field in FIELDS[1:]:
            value = getattr(self, field)
            if value is not None:
                _id(field, value)
        if self.roles is not None:
            object.__setattr__(self, "roles", role_names(self.roles))

    def headers(self) -> dict[str, str]:
        """The ``X-Mnemo-*`` headers that name this identity (unset fields are left out)."""
        found = {f"X-Mnemo-{field.title()}": value for field in FIELDS if (value := getattr(self, field)) is not None}
        if self.roles is not None:
            found["X-Mnemo-Roles"] = ",".join(self.roles)
        return found

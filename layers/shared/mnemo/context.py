"""Who is calling: the identity every tool call carries, taken from the transport.

A tool body never supplies identity. Each front door builds a ``RequestContext``
from what its transport vouches for (an authorizer, Bedrock session attributes,
the MCP process environment, or the local server's ``X-Mnemo-*`` headers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Layer = Literal["agent", "user", "session", "project", "team", "org", "company"]

#: Memory precedence: the most specific layer first.
MEMORY_LAYERS: tuple[Layer, ...] = ("agent", "user", "session", "project", "team", "org", "company")
SHARED_LAYERS: frozenset[str] = frozenset({"project", "team", "org", "company"})
WRITER_ROLE = "writer"
#: Tenant administration (erase_user): granted as the writer role is (a Lambda authorizer's ``roles``, a token's
#: roles claim, a trusted delegate's ``X-Mnemo-Roles``, ``MNEMO_ROLES``), and never by default.
ADMIN_ROLE = "admin"

# The ids a layer needs, in the order they make up its scope key.
LAYER_IDS: dict[str, tuple[str, ...]] = {
    "agent": ("user", "agent"),
    "user": ("user",),
    "session": ("user", "session"),
    "project": ("project",),
    "team": ("team",),
    "org": ("org",),
    "company": (),
}

#: Matched whole (``fullmatch``): ``$`` would also match before a final newline, making ``u1\n`` a user.
_ID_PATTERN = re.compile(r"[A-Za-z0-9._@:+=,/\-]{1,256}")


class RequestContext(BaseModel):
    """The caller's identity. ``tenant`` is the company: nothing crosses it."""

    model_config = ConfigDict(frozen=True)

    tenant: str = "local"
    user: str | None = None
    agent: str | None = None
    session: str | None = None
    project: str | None = None
    team: str | None = None
    org: str | None = None
    roles: frozenset[str] = Field(default_factory=frozenset)
    #: The most bytes of JSON the front door can hand back (Bedrock, MCP and Lambda
    #: each have a limit); paged results stop short of it and say hasMore.
    response_budget: int | None = Field(None, ge=1024)

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str) -> str:
        if not value or not _ID_PATTERN.fullmatch(value):
            raise ValueError("the tenant is required and uses letters, digits and ._@:+=,/- (at most 256)")
        return value

    @field_validator("user", "agent", "session", "project", "team", "org")
    @classmethod
    def _safe_id(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not _ID_PATTERN.fullmatch(value):
            raise ValueError("identity values use letters, digits and ._@:+=,/- (at most 256)")
        return value

    def missing_ids(self, layer: str) -> list[str]:
        """The identity fields ``layer`` needs that this caller lacks (empty: the layer is theirs)."""
        return [name for name in LAYER_IDS[layer] if getattr(self, name) is None]

    def can_read(self, layer: str) -> bool:
        """Whether the caller has every id ``layer`` needs."""
        return not self.missing_ids(layer)

    def can_write(self, layer: str) -> bool:
        """Whether the caller may write ``layer``: its ids, and for a shared layer the writer role."""
        return self.can_read(layer) and (layer not in SHARED_LAYERS or WRITER_ROLE in self.roles)

    def scope_key(self, layer: str) -> str:
        """A stable key for one layer of this caller, e.g. ``t=acme|user|u=alice``.

        Components are joined with ``|``, which identity values cannot contain,
        so no id can forge another scope.
        """
        missing = self.missing_ids(layer)
        if missing:
            raise ValueError(f"the {layer} layer has no {missing[0]} id in this context")
        parts = [f"t={self.tenant}", layer]
        parts += [f"{name[0]}={getattr(self, name)}" for name in LAYER_IDS[layer]]
        return "|".join(parts)

    def readable_layers(self, requested: list[str] | None = None) -> list[Layer]:
        """The layers of ``requested`` (every memory layer when None or empty) the caller can read, in layer order."""
        wanted = set(requested) if requested else set(MEMORY_LAYERS)
        return [layer for layer in MEMORY_LAYERS if layer in wanted and self.can_read(layer)]


@dataclass(frozen=True)
class ScopeKey:
    """A parsed scope key: the tenant, the layer, and the layer's ids (``{"user": "alice"}``)."""

    tenant: str
    layer: str
    ids: dict[str, str]


def parse_scope(key: str) -> ScopeKey | None:
    """The scope a key names, or None when it is not a well-formed scope key."""
    parts = key.split("|")
    if len(parts) < 2 or not parts[0].startswith("t=") or parts[1] not in LAYER_IDS:
        return None
    names = LAYER_IDS[parts[1]]
    if len(parts) != 2 + len(names):
        return None
    ids: dict[str, str] = {}
    for name, part in zip(names, parts[2:], strict=True):
        label, _, value = part.partition("=")
        if label != name[0] or not value:
            return None
        ids[name] = value
    return ScopeKey(parts[0].removeprefix("t="), parts[1], ids)

"""A record change, a change event, and the envelope every event is delivered in.

``RecordChange`` is what both change sources give: a DynamoDB stream record
(``mnemo.entry.change_events``) and a row of the local change log (``ChangeLog``,
which numbers its rows: ``seq``). A record family maps a change of its records to
events (``mnemo.families.RecordFamily.events``, with ``make_event``).

The envelope (docs/events.md; docs/events/<kind>.schema.json for each kind)::

    {"specVersion": "1", "id": "evt_<32 hex>", "kind": "memory.added", "time": "...Z",
     "tenant": "acme", "layer": "user", "user": "alice",
     "ids": {"memoryId": "...", "user": "alice"}, "version": 1,
     "data": {...}, "content": {...}}

``tenant``, ``layer``, ``user`` and the layer's ids in ``ids`` come from the
record's partition key (its scope key, ``mnemo.context.parse_scope``), never
from the record's body, which a model may have written. ``content`` is there
only when the deployment opts in (``include_content``); ``data`` never holds
what a user or a model wrote, only ids, hashes, counts and times.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from mnemo.context import parse_scope

#: The envelope's version: a consumer checks it before it reads the rest.
SPEC_VERSION = "1"

KINDS: tuple[str, ...] = (
    "memory.added",
    "memory.updated",
    "memory.superseded",
    "memory.deleted",
    "memory.expired",
    "graph.fact.added",
    "graph.fact.invalidated",
    "graph.fact.deleted",
    "file.written",
    "file.deleted",
    "block.written",
    "block.deleted",
    "sync.completed",
    "extraction.completed",
    "user.erased",
)


@dataclass(frozen=True)
class RecordChange:
    """One record's change, as a DynamoDB stream record or a local change-log row describes it.

    ``old``/``new``: the body (``Item.data``) before and after (None: absent); ``old_version``/``new_version``
    the versions; ``at``: when the change was stored (ISO 8601 UTC); ``by_service``: the store removed the item
    itself (DynamoDB's TTL), which is an expiry, never a user's delete; ``seq``: the change log's number of the
    row (None for a stream record).
    """

    pk: str
    sk: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    at: str
    old_version: int | None = None
    new_version: int | None = None
    by_service: bool = False
    seq: int | None = None

    @property
    def inserted(self) -> bool:
        return self.old is None and self.new is not None

    @property
    def modified(self) -> bool:
        return self.old is not None and self.new is not None

    @property
    def removed(self) -> bool:
        return self.old is not None and self.new is None


@dataclass(frozen=True)
class ChangeEvent:
    """One change event before it is put in its envelope (``envelope``)."""

    id: str
    kind: str
    time: str
    tenant: str
    layer: str | None
    user: str | None
    ids: dict[str, str]
    version: int | None
    data: dict[str, Any] = field(default_factory=dict)
    content: dict[str, Any] | None = None

    def envelope(self, include_content: bool = False) -> dict[str, Any]:
        """The event as delivered; ``content`` only with ``include_content`` (the deployment's opt-in)."""
        body: dict[str, Any] = {
            "specVersion": SPEC_VERSION,
            "id": self.id,
            "kind": self.kind,
            "time": self.time,
            "tenant": self.tenant,
            "layer": self.layer,
            "user": self.user,
            "ids": dict(self.ids),
            "version": self.version,
            "data": dict(self.data),
        }
        if include_content and self.content is not None:
            body["content"] = dict(self.content)
        return body


def event_id(kind: str, *parts: object) -> str:
    """A deterministic event id: the same change, delivered again, gives the same id."""
    text = json.dumps([kind, *parts], separators=(",", ":"), default=str)
    return "evt_" + hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Owner:
    """Whose a partition is: tenant, layer and the layer's ids, from its scope key."""

    tenant: str
    layer: str | None
    ids: dict[str, str]

    @property
    def user(self) -> str | None:
        return self.ids.get("user")


def owner_of(scope: str) -> Owner | None:
    """The owner a scope key names (``t=acme|user|u=alice``), a bare tenant (``t=acme``), or None."""
    parsed = parse_scope(scope)
    if parsed is not None:
        return Owner(parsed.tenant, parsed.layer, dict(parsed.ids))
    if scope.startswith("t=") and "|" not in scope and len(scope) > 2:
        return Owner(scope.removeprefix("t="), None, {})
    return None


def make_event(
    change: RecordChange,
    owner: Owner,
    kind: str,
    subject: dict[str, str],
    *,
    data: dict[str, Any] | None = None,
    content: dict[str, Any] | None = None,
    identity: tuple[object, ...] | None = None,
    time: str | None = None,
    version: int | Literal["change"] | None = "change",
) -> ChangeEvent:
    """The event ``kind`` of ``change``; its id from ``identity`` when given (an event two changes can stand for,
    such as an expiry), else from the change's key, version and time; ``time`` and ``version`` the change's
    unless given."""
    if version == "change":
        version = change.new_version if change.new is not None else change.old_version
    parts = identity if identity is not None else (change.pk, change.sk, version, change.new is None, change.at)
    return ChangeEvent(
        id=event_id(kind, *parts),
        kind=kind,
        time=time or change.at,
        tenant=owner.tenant,
        layer=owner.layer,
        user=owner.user,
        ids={**owner.ids, **subject},
        version=version,
        data=data or {},
        content=content,
    )

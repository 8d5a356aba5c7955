"""Record families: each declares its key layout and what the cross-cutting parts need of it.

A record family is the records one package owns in the records table: every partition key that starts with
its ``partition`` prefix (``MEM|``, ``GRAPH|``...), followed by a scope key (``t=acme|user|u=alice``) or a
tenant (``t=acme``). Its package declares it, in a light module of its own that imports no service
(``mnemo.memory.family``, ``mnemo.graph.family``...): the sort keys it uses, how a change of one of its
records maps to change events, which of its records the vector index mirrors, how an erasure finds and counts
them, and whether an export carries them. ``mnemo.runtime.record_families`` registers them all, and the
cross-cutting parts loop over that registry (``Families``) instead of naming a family's keys:

- change events (``mnemo.events``): ``captures`` and ``events``;
- erasure (``mnemo.portability.erasure``): ``personal``, ``erasure_order``, ``count_as``, ``before_erase``
  and ``steps``;
- export and import (``mnemo.portability``): ``exported_as`` and ``index``;
- the index outbox and expiry: ``index`` (and ``document``, for a family its own service does not index).

docs/architecture.md, "Adding a record family", says how to add one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mnemo.context import parse_scope

if TYPE_CHECKING:
    from mnemo.changes import ChangeEvent, Owner, RecordChange
    from mnemo.ports import BlobStore, Item, RecordStore

#: Records an erasure deletes in one write: the receipt's update takes the last of a write's operations
#: (``mnemo.ports.MAX_WRITE_OPERATIONS`` is 100).
ERASURE_PAGE = 99
#: Layers whose scope key names the user first (``t={tenant}|{layer}|u={user}...``): an erasure takes them.
PERSONAL_LAYERS = ("user", "agent", "session")


@dataclass(frozen=True)
class IndexEntry:
    """The index document of one record: its outbox ``family`` (the index namespace), the ``reference`` an
    outbox marker names it by, and its document ``doc_id``."""

    family: str
    reference: Mapping[str, str]
    doc_id: str


@dataclass(frozen=True)
class IndexDocument:
    """What the generic indexer (``mnemo.family_index``) embeds of one record of a family that declares a
    ``document``, and the exact-match fields it keeps beside the vector (``IndexDoc.keywords``)."""

    text: str
    keywords: Mapping[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ErasureScope:
    """What an erasure step reads and writes: the stores, and the user of the tenant being erased."""

    records: RecordStore
    blobs: BlobStore
    tenant: str
    user: str


#: A page of records an erasure deletes in one write (at most ``ERASURE_PAGE``).
ErasurePage = list["Item"]


def _other(sk: str) -> str:
    return "otherRecords"


@dataclass(frozen=True)
class ErasureStep:
    """An erasure step a family adds to the scan of its personal scopes (shared layers, blobs, queues): its
    ``name`` in the receipt's ``done`` list, its place among the steps (``order``; a family's personal scopes
    are erased at its ``erasure_order``, and the index outbox last), its pages, and the receipt count each
    record adds to (``count_as(sk)``)."""

    name: str
    order: int
    pages: Callable[[ErasureScope], Iterator[ErasurePage]]
    count_as: Callable[[str], str] = _other


def _no_events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    return []


def _never(sk: str) -> bool:
    return False


@dataclass(frozen=True)
class RecordFamily:
    """One record family: its layout and what the cross-cutting parts need to know of it.

    ``name``: the family's name in an erasure's receipt (its step); ``partition``: the partition key prefix, with
    its ``|`` (unique to the family); ``sort_keys``: the sort key prefixes its records use; ``package``: the
    package that owns it, the only one that may spell those keys (tests/unit/test_key_literals.py).
    ``captures(sk)``: whether a change of a record with this sort key can give an event (the local change log
    stores only those, the AWS stream filter passes only those); ``events(change, owner)``: the events of one
    change (``owner``: the partition's scope).
    ``index(item)``: the record's index document, if the index mirrors it (the import queues its marker, expiry
    and erasure delete it); ``document(item)``: what the generic indexer embeds, for a family no service of its
    own indexes (None: its service does).
    ``personal``: an erasure deletes its records in the user's personal scopes (``PERSONAL_LAYERS``), in
    ``erasure_order``, each page after ``before_erase`` (what must go first: blobs, pinner lists; it answers
    counts to add), each record counted by ``count_as(sk)`` (a field of the receipt's counts, camelCase);
    ``steps``: the erasure steps it adds. ``exported_as``: the family's name in an export (None: not exported,
    as derived records are rebuilt instead).
    """

    name: str
    partition: str
    package: str
    sort_keys: tuple[str, ...] = ()
    captures: Callable[[str], bool] = _never
    events: Callable[[RecordChange, Owner], list[ChangeEvent]] = _no_events
    index: Callable[[Item], IndexEntry | None] | None = None
    document: Callable[[Item], IndexDocument | None] | None = None
    personal: bool = False
    erasure_order: int = 100
    count_as: Callable[[str], str] = _other
    before_erase: Callable[[ErasureScope, Sequence[Item]], Mapping[str, int]] | None = None
    steps: tuple[ErasureStep, ...] = ()
    exported_as: str | None = None

    def scope_of(self, pk: str) -> str:
        """The scope key (or tenant) a partition of this family names."""
        return pk.removeprefix(self.partition)

    def partition_of(self, scope: str) -> str:
        """The partition of this family in ``scope``."""
        return f"{self.partition}{scope}"


class Families:
    """The registered record families (``mnemo.runtime.record_families``), looked up by partition or name."""

    def __init__(self, families: Sequence[RecordFamily]) -> None:
        partitions = [family.partition for family in families]
        if len(set(partitions)) != len(partitions):
            raise ValueError(f"two families share a partition prefix: {sorted(partitions)}")
        names = [family.name for family in families]
        if len(set(names)) != len(names):
            raise ValueError(f"two families share a name: {sorted(names)}")
        self.all: tuple[RecordFamily, ...] = tuple(families)

    def __iter__(self) -> Iterator[RecordFamily]:
        return iter(self.all)

    def owning(self, pk: str) -> RecordFamily | None:
        """The family whose partition ``pk`` is, if any."""
        return next((family for family in self.all if pk.startswith(family.partition)), None)

    def named(self, name: str) -> RecordFamily:
        """The family called ``name`` (KeyError if none is)."""
        for family in self.all:
            if family.name == name:
                return family
        raise KeyError(name)

    def captured(self, pk: str, sk: str) -> bool:
        """Whether a change of this record can give a change event (else it need not be captured at all)."""
        family = self.owning(pk)
        return family is not None and family.captures(sk)

    def index_entry(self, item: Item) -> IndexEntry | None:
        """The index document of ``item``, if its family's index mirrors it."""
        family = self.owning(item.pk)
        return family.index(item) if family is not None and family.index is not None else None

    @property
    def personal(self) -> tuple[RecordFamily, ...]:
        """The families an erasure deletes in the user's personal scopes, in the order it does."""
        return tuple(sorted((family for family in self.all if family.personal), key=lambda f: f.erasure_order))

    @property
    def exported(self) -> dict[str, RecordFamily]:
        """Export name -> family, for every family an export carries."""
        return {family.exported_as: family for family in self.all if family.exported_as}


# ------------------------------------------------------------ personal scopes
def is_personal_scope(scope: str, tenant: str, user: str) -> bool:
    """Whether a scope key is one of the user's own: their user layer, or one of their agents or sessions."""
    found = parse_scope(scope)
    return (
        found is not None
        and found.tenant == tenant
        and found.layer in PERSONAL_LAYERS
        and found.ids.get("user") == user
    )


def paged(items: Sequence[Item]) -> Iterator[ErasurePage]:
    """``items`` in erasure pages of at most ``ERASURE_PAGE``."""
    for start in range(0, len(items), ERASURE_PAGE):
        yield list(items[start : start + ERASURE_PAGE])


def personal_prefixes(prefix: str, tenant: str, user: str) -> list[str]:
    """Scan prefixes that cover every partition of ``prefix`` in the user's personal scopes (a prefix may
    also cover another user's, ``u=al`` before ``u=alice``: callers check each with ``is_personal_scope``)."""
    return [
        f"{prefix}t={tenant}|user|u={user}",
        f"{prefix}t={tenant}|agent|u={user}|",
        f"{prefix}t={tenant}|session|u={user}|",
    ]

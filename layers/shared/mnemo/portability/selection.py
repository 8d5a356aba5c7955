"""What one export holds: a tenant, or one user of it, optionally narrowed to some layers.

Every record that belongs to someone lives in a partition ``{family prefix}{scope key}``
(``RequestContext.scope_key``: ``t={tenant}|{layer}|{x}={id}...``), so the scope
key alone says whether a record is in a selection; an export carries the record
families that declare an export name (``RecordFamily.exported_as``). Knowledge files say it by
their path (``company/``, ``orgs/{id}/`` ...), workspace files by the partition
of the records that name them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.context import LAYER_IDS, MEMORY_LAYERS, ScopeKey, parse_scope
from mnemo.families import Families
from mnemo.knowledge.documents import LAYER_FOLDERS, split_key

#: Blob families: the knowledge repository and the project workspace's file contents.
BLOB_FAMILIES = ("knowledge", "workspace")
#: Layers that belong to one user: a user's export is these, for that user.
USER_LAYERS = frozenset(layer for layer, ids in LAYER_IDS.items() if "user" in ids)


def split_partition(pk: str, families: Families) -> tuple[str, ScopeKey] | None:
    """(export family, scope) of an exportable record's partition (its family's ``exported_as``), else None."""
    family = families.owning(pk)
    scope = parse_scope(family.scope_of(pk)) if family is not None and family.exported_as else None
    return (family.exported_as, scope) if family is not None and family.exported_as and scope else None


@dataclass(frozen=True)
class Selection:
    """A tenant; with ``user``, only that user's layers; with ``layers``, only those layers."""

    tenant: str
    user: str | None = None
    layers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [layer for layer in self.layers if layer not in MEMORY_LAYERS]
        if unknown:
            raise ValueError(f"unknown layer {unknown[0]!r}; layers are {', '.join(MEMORY_LAYERS)}")

    @property
    def kind(self) -> str:
        """``layer`` when narrowed to layers, ``user`` for one user, else ``tenant``."""
        if self.layers:
            return "layer"
        return "user" if self.user else "tenant"

    def holds(self, scope: ScopeKey) -> bool:
        """Whether a scope is in the selection: the tenant, the layers if named, and for a user only their own
        layers."""
        if scope.tenant != self.tenant or (self.layers and scope.layer not in self.layers):
            return False
        if self.user is not None:
            return scope.layer in USER_LAYERS and scope.ids.get("user") == self.user
        return True

    def holds_partition(self, pk: str, families: Families) -> bool:
        """Whether a record partition belongs to a scope in the selection."""
        found = split_partition(pk, families)
        return found is not None and self.holds(found[1])

    def holds_knowledge(self, key: str) -> bool:
        """Knowledge is the shared layers' (company, org, team, project): never in a user's export."""
        found = split_key(key)
        if found is None or found[0] != self.tenant or self.user is not None:
            return False
        if not self.layers:
            return True
        folder = found[1].split("/", 1)[0]
        return ("company" if folder == "company" else LAYER_FOLDERS.get(folder)) in self.layers

    def scan_prefixes(self, families: Families) -> list[str]:
        """Record partitions to scan: one prefix per exported family, narrowed to the tenant."""
        return [family.partition_of(f"t={self.tenant}|") for family in families.exported.values()]

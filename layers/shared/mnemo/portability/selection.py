"""What one export holds: a tenant, or one user of it, optionally narrowed to some layers.

Every record that belongs to someone lives in a partition ``{PREFIX}|{scope key}``
(``RequestContext.scope_key``: ``t={tenant}|{layer}|{x}={id}...``), so the scope
key alone says whether a record is in a selection. Knowledge files say it by
their path (``company/``, ``orgs/{id}/`` ...), workspace files by the partition
of the records that name them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.context import LAYER_IDS, MEMORY_LAYERS, ScopeKey, parse_scope
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS
from mnemo.files.pins import PINS_PREFIX
from mnemo.files.store import ASSET_PREFIX, WORKSPACE_PREFIX
from mnemo.graph.store import PARTITION as GRAPH_PARTITION
from mnemo.knowledge.documents import LAYER_FOLDERS, split_key
from mnemo.memory.records import PARTITION as MEMORY_PARTITION
from mnemo.topics.records import PARTITION as TOPIC_PARTITION

#: Partition prefix (with its ``|``) -> family, for every record family an export carries (the rest is derived
#: and rebuilt); each prefix comes from its family's layout module.
RECORD_FAMILIES: dict[str, str] = {
    MEMORY_PARTITION: "memories",
    CONVERSATIONS.partition_prefix: "conversations",
    EXECUTIONS.partition_prefix: "executions",
    TOPIC_PARTITION: "topics",
    ASSET_PREFIX: "blocks",
    PINS_PREFIX: "pins",
    WORKSPACE_PREFIX: "workspace",
    GRAPH_PARTITION: "graph",
}
#: Blob families: the knowledge repository and the project workspace's file contents.
BLOB_FAMILIES = ("knowledge", "workspace")
FAMILIES = (*RECORD_FAMILIES.values(), "knowledge")
#: Layers that belong to one user: a user's export is these, for that user.
USER_LAYERS = frozenset(layer for layer, ids in LAYER_IDS.items() if "user" in ids)


def split_partition(pk: str) -> tuple[str, ScopeKey] | None:
    """(family, scope) of an exportable record's partition, else None."""
    prefix, bar, rest = pk.partition("|")
    family = RECORD_FAMILIES.get(prefix + bar)
    scope = parse_scope(rest) if family else None
    return (family, scope) if family and scope else None


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

    def holds_partition(self, pk: str) -> bool:
        """Whether a record partition belongs to a scope in the selection."""
        found = split_partition(pk)
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

    def scan_prefixes(self) -> list[str]:
        """Record partitions to scan: one prefix per family, narrowed to the tenant."""
        return [f"{prefix}t={self.tenant}|" for prefix in RECORD_FAMILIES]

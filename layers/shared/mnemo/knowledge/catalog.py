"""The synced knowledge catalog: one record per item in its layer's partition, one index doc.

Records (the truth the tools read):
    KNOW|{scope} / ITEM#{id}   the parsed item, its effective status and first-sync time

``scope`` is the same key a memory layer uses (``t=acme|org|o=engineering``),
so a caller reaches exactly the knowledge layers its identity names, as with
memories. The vector index (namespace ``knowledge``) only finds ids; every hit
is read back from the records before it is answered.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from mnemo.context import RequestContext
from mnemo.knowledge.family import ITEM, PARTITION
from mnemo.knowledge.models import KNOWLEDGE_LAYERS, KnowledgeItem, KnowledgeLayer
from mnemo.ports import IndexDoc, Item, RecordStore

NAMESPACE = "knowledge"
_EMBED_BODY_CHARS = 1500
MAX_ITEMS_PER_LAYER = 50_000


def scope_of(tenant: str, layer: str, layer_id: str | None) -> str:
    """The scope key of a knowledge layer of a tenant (``layer_id``: the org, team or project id)."""
    ids = {"org": {"org": layer_id}, "team": {"team": layer_id}, "project": {"project": layer_id}}.get(layer, {})
    return RequestContext(tenant=tenant, **ids).scope_key(layer)


#: Every knowledge catalog partition starts so; the scope follows.
PARTITION_PREFIX = PARTITION


def partition(scope: str) -> str:
    """The catalog partition of a scope: ``KNOW|{scope}``."""
    return f"{PARTITION_PREFIX}{scope}"


def item_key(item_id: str) -> str:
    """The sort key of a knowledge item: ``ITEM#{id}``."""
    return f"{ITEM}{item_id}"


def doc_id(scope: str, item_id: str) -> str:
    """The vector index id of an item in a scope (a digest, so any id makes a safe one)."""
    return "kn_" + hashlib.sha256(f"{scope}#{item_id}".encode()).hexdigest()[:24]


def visible_layers(context: RequestContext, wanted: KnowledgeLayer | None = None) -> list[KnowledgeLayer]:
    """The knowledge layers the caller's identity names, most specific first."""
    return [layer for layer in KNOWLEDGE_LAYERS if (wanted in (None, layer)) and context.can_read(layer)]


def stored_item(item: Item) -> KnowledgeItem:
    """The knowledge item a catalog record holds."""
    return KnowledgeItem.model_validate(item.data["item"])


def effective_status(data: dict[str, Any]) -> str:
    """An item's status as sync derived it (an accepted item another supersedes is ``superseded``), else its own."""
    return str(data.get("effectiveStatus") or data["item"]["status"])


def embedding_text(item: KnowledgeItem) -> str:
    """What is embedded for an item: title, summary, tags and the start of its content."""
    return f"{item.title}. {item.summary} {' '.join(item.tags)}\n{item.content[:_EMBED_BODY_CHARS]}"


def index_doc(item: KnowledgeItem, scope: str, status: str, vector: Sequence[float]) -> IndexDoc:
    """The index document of an item, with the keywords knowledge_query filters on (scope, layer, type, status, tags,
    id)."""
    return IndexDoc(
        id=doc_id(scope, item.id),
        vector=vector,
        text=f"{item.title}\n{item.summary}\n{' '.join(item.tags)}\n{item.content}",
        keywords={
            "scope": [scope],
            "layer": [item.layer],
            "type": [item.type],
            "status": [status],
            "tags": sorted({tag.lower() for tag in item.tags}),
            "itemId": [item.id],
        },
    )


class Catalog:
    """Reads of the catalog records; writes happen in sync (mnemo.sync)."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records

    def get(self, scope: str, item_id: str) -> Item | None:
        """One item's record in a scope, or None."""
        return self._records.get(partition(scope), item_key(item_id))

    def in_layer(self, scope: str, *, consistent: bool = True) -> list[Item]:
        """Every item of one layer: one partition query, paged by the store (``consistent``: see RecordStore)."""
        return self._records.query(partition(scope), ITEM, limit=MAX_ITEMS_PER_LAYER, consistent=consistent)

    def find(self, context: RequestContext, item_id: str) -> Item | None:
        """The item with this id in the most specific layer the caller can see."""
        for layer in visible_layers(context):
            found = self.get(context.scope_key(layer), item_id)
            if found is not None:
                return found
        return None

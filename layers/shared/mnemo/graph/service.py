"""The memory graph: entities and facts scoped like memories, facts invalidated rather than forgotten.

One facade over the modules that each do one job:

- ``store``: the adjacency-list records (the truth), read by key and prefix only;
- ``scopes``: which partitions a caller may read or change, and finding ids and names in them;
- ``links``: add_memory_link (contradictions included) and invalidate_memory_link;
- ``objects``: get_memory_object (facts, neighbours) and update_memory_object;
- ``deletion``: delete_memory_object's confirmed, resumable erasure;
- ``search``: graph_search and memory_search's includeGraph;
- ``index``: the ``graph`` vector namespace, kept in line through the index outbox;
- ``temporal``: the two time axes (validAt/invalidAt, createdAt/expiredAt).
"""

from __future__ import annotations

from mnemo.context import Layer, RequestContext
from mnemo.graph.deletion import GraphDeletion
from mnemo.graph.index import NAMESPACE, GraphIndex
from mnemo.graph.links import LinkWriter
from mnemo.graph.models import (
    AddMemoryLinkInput,
    AddMemoryLinkOutput,
    DeleteMemoryObjectInput,
    DeleteMemoryObjectOutput,
    GetMemoryObjectInput,
    GetMemoryObjectOutput,
    GraphContext,
    GraphSearchInput,
    GraphSearchOutput,
    InvalidateMemoryLinkInput,
    InvalidateMemoryLinkOutput,
    UpdateMemoryObjectInput,
    UpdateMemoryObjectOutput,
)
from mnemo.graph.objects import EntityObjects
from mnemo.graph.scopes import GraphLookup, writable_scope
from mnemo.graph.search import GraphSearch
from mnemo.graph.store import GraphStore
from mnemo.graph.views import FactViews
from mnemo.outbox import IndexOutbox
from mnemo.ports import Embedder, RecordStore, VectorIndex

__all__ = ["NAMESPACE", "GraphService"]


class GraphService:
    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox) -> None:
        self._records = records
        self._store = GraphStore(records)
        #: The outbox family of the ``graph`` namespace (runtime registers it with the outbox).
        self.index = GraphIndex(records, index, embedder, outbox)
        lookup, views = GraphLookup(self._store), FactViews(self._store)
        self._links = LinkWriter(self._store, lookup, views, self.index)
        self._objects = EntityObjects(self._store, lookup, views, self.index)
        self._deletion = GraphDeletion(self._store, lookup, views, self.index)
        self._search = GraphSearch(self._store, views, index, embedder)

    writable_scope = staticmethod(writable_scope)

    def add_link(self, context: RequestContext, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
        """add_memory_link: store a fact between two entities (created by name when new), ending what it contradicts in
        the same write; the same open fact is stored once."""
        return self._links.add(context, request)

    def describe(self, context: RequestContext, layer: Layer, name: str, kind: str, summary: str) -> bool:
        """Make sure an entity exists and give it ``summary`` if it has none yet (build_memory_from_text's entities);
        True if it was created."""
        return self._links.describe(context, layer, name, kind, summary)

    def invalidate(self, context: RequestContext, request: InvalidateMemoryLinkInput) -> InvalidateMemoryLinkOutput:
        """invalidate_memory_link: end a fact (it stays in the history); an already ended fact is answered as such."""
        return self._links.invalidate(context, request)

    def get_object(self, context: RequestContext, request: GetMemoryObjectInput) -> GetMemoryObjectOutput:
        """get_memory_object: an entity with its facts and neighbours as of a moment, within the response budget."""
        return self._objects.get(context, request)

    def update_object(self, context: RequestContext, request: UpdateMemoryObjectInput) -> UpdateMemoryObjectOutput:
        """update_memory_object: rename, retype, re-describe or re-alias an entity, under its version; CONFLICT when a
        new name or alias is taken."""
        return self._objects.update(context, request)

    def delete_object(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput:
        """delete_memory_object: a preview with a confirmation token, then (with the token) erase the entity and its
        facts, or one fact."""
        return self._deletion.delete(context, request)

    def search(self, context: RequestContext, request: GraphSearchInput) -> GraphSearchOutput:
        """graph_search: entities and facts ranked by the hybrid score within the caller's readable layers."""
        return self._search.search(context, request)

    def context_for(self, context: RequestContext, query: str, layers: list[Layer] | None) -> GraphContext:
        """memory_search's includeGraph: the entities ``query`` finds with their current facts, and the facts it
        finds."""
        return self._search.context_for(context, query, layers)

    def reindex(self, batch: int = 64) -> int:
        """Rebuild the ``graph`` namespace from the records (maintenance: scans the table)."""
        return self.index.reindex(batch)

"""Which graph partitions a caller may read or change, and finding an entity or fact in them.

Entities and facts are scoped like memories: one partition per layer scope
(``GRAPH|{scope key}``), the scope key built from the caller's identity only.
An id or name resolves inside the caller's readable scopes, the most specific
layer first, so another scope's id is simply NOT_FOUND.
"""

from __future__ import annotations

from mnemo.context import SHARED_LAYERS, WRITER_ROLE, Layer, RequestContext
from mnemo.errors import InvalidInput, NotFound, Unauthorized
from mnemo.graph.models import ObjectSelector
from mnemo.graph.store import FACT, GraphStore, partition
from mnemo.ports import Item


def _require_ids(context: RequestContext, layer: Layer, field: str) -> None:
    missing = context.missing_ids(layer)
    if missing:
        raise InvalidInput(
            f"{field}: the {layer} layer needs a {missing[0]} id in the request context",
            {"field": field, "layer": layer, "missingIds": missing},
        )


def writable_scope(context: RequestContext, layer: Layer, field: str = "layer") -> str:
    """The scope key of a layer the caller may change: INVALID_INPUT without its ids, UNAUTHORIZED without the
    writer role on a shared layer."""
    _require_ids(context, layer, field)
    if layer in SHARED_LAYERS and WRITER_ROLE not in context.roles:
        raise Unauthorized(
            f"Changing the shared {layer} layer's graph needs the '{WRITER_ROLE}' role",
            {"field": field, "layer": layer, "requiredRole": WRITER_ROLE},
        )
    return context.scope_key(layer)


def readable_scopes(context: RequestContext, layer: Layer | None) -> list[tuple[Layer, str]]:
    """(layer, scope key) of ``layer``, or of every layer the caller can read, the most specific first."""
    if layer is not None:
        _require_ids(context, layer, "layer")
    layers = context.readable_layers([layer] if layer else None)
    return [(each, context.scope_key(each)) for each in layers]


class GraphLookup:
    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def entity(self, context: RequestContext, selector: ObjectSelector) -> tuple[Layer, str, Item]:
        """The entity a request names, from the most specific readable layer that has it."""
        for layer, scope in readable_scopes(context, selector.layer):
            pk = partition(scope)
            if selector.entity_id is not None:
                item = self._store.entity(pk, selector.entity_id)
            else:
                item = self._store.entity_by_name(pk, selector.name or "")
            if item is not None:
                return layer, scope, item
        field, value = ("entityId", selector.entity_id) if selector.entity_id else ("name", selector.name)
        raise NotFound(f"No entity {value!r} in the layers you can read", {"field": field, field: value})

    def fact(self, context: RequestContext, fact_id: str, field: str = "factId") -> tuple[Layer, str, Item]:
        """A fact by id, from the most specific readable layer that has it (one batched read)."""
        scopes = readable_scopes(context, None)
        keys = [(partition(scope), FACT + fact_id) for _, scope in scopes]
        found = {item.pk: item for item in self._store.records.batch_get(keys)}
        for layer, scope in scopes:
            item = found.get(partition(scope))
            if item is not None:
                return layer, scope, item
        raise NotFound(f"No fact '{fact_id}' in the layers you can read", {"field": field, field: fact_id})

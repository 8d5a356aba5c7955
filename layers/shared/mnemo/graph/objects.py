"""Reading an entity with its facts and neighbours (get_memory_object), and changing it (update_memory_object).

An entity's facts are one prefix read of its edges; the walk to neighbours
follows facts valid at the time asked about, one edge read per entity reached,
and stops at ``MAX_NEIGHBOURS``. Names and aliases are unique in a scope:
a rename or new alias claims its ``NAME`` record in the same write as the
entity, under the entity's version (CONFLICT on a stale one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemo.budget import fit_head
from mnemo.context import RequestContext
from mnemo.errors import Conflict, ConflictingRequest, invalid_field
from mnemo.graph.index import GraphIndex
from mnemo.graph.models import (
    MAX_ALIASES,
    GetMemoryObjectInput,
    GetMemoryObjectOutput,
    Neighbour,
    UpdateMemoryObjectInput,
    UpdateMemoryObjectOutput,
)
from mnemo.graph.names import name_key
from mnemo.graph.scopes import GraphLookup, writable_scope
from mnemo.graph.store import NAME, GraphStore, partition, versioned
from mnemo.graph.temporal import now, stamp, status_at
from mnemo.graph.views import FactViews, entity_view
from mnemo.ports import ConditionFailed, Delete, Item, Put

#: Entities get_memory_object walks to at most.
MAX_NEIGHBOURS = 100


class EntityObjects:
    def __init__(self, store: GraphStore, lookup: GraphLookup, views: FactViews, index: GraphIndex) -> None:
        self._store = store
        self._records = store.records
        self._lookup = lookup
        self._views = views
        self._index = index

    # ----------------------------------------------------- get_memory_object
    def get(self, context: RequestContext, request: GetMemoryObjectInput) -> GetMemoryObjectOutput:
        """get_memory_object: the entity, its facts valid at ``asOf`` (every one with history) newest first, and the
        neighbours reached within ``depth``, cut to the limit and response budget."""
        _, scope, entity = self._lookup.entity(context, request)
        pk = partition(scope)
        moment_time = request.as_of or now()
        moment = stamp(moment_time)

        def holds(edge: Item) -> bool:
            return request.include_history or status_at(edge.data, moment) == "valid"

        own_edges = [edge for edge in self._store.edges(pk, entity.data["entityId"]) if holds(edge)]
        own_edges.sort(key=lambda edge: edge.data["validAt"], reverse=True)
        neighbours, via_facts, truncated = self._walk(pk, entity.data["entityId"], request.depth, holds)
        fact_ids = list(dict.fromkeys([edge.data["factId"] for edge in own_edges] + via_facts))
        has_more = truncated or len(fact_ids) > request.limit
        facts = [versioned(item) for item in self._store.facts(pk, fact_ids[: request.limit])]
        order = {fact_id: rank for rank, fact_id in enumerate(fact_ids)}
        facts.sort(key=lambda fact: order[fact["factId"]])
        output = GetMemoryObjectOutput(
            entity=entity_view(versioned(entity)),
            facts=self._views(pk, facts, moment),
            neighbours=neighbours,
            as_of=moment_time,
        )
        # The entity's own facts come first: they are fitted as if there were no neighbours.
        kept_facts = fit_head(output.model_copy(update={"neighbours": []}), output.facts, context.response_budget)
        if len(kept_facts) < len(output.facts):
            output.facts, output.neighbours = kept_facts, []
            has_more = True
        else:
            kept = fit_head(output, output.neighbours, context.response_budget)
            has_more = has_more or len(kept) < len(output.neighbours)
            output.neighbours = kept
        output.has_more = has_more
        return output

    def _walk(
        self, pk: str, start: str, depth: int, holds: Callable[[Item], bool]
    ) -> tuple[list[Neighbour], list[str], bool]:
        """Entities within ``depth`` hops over the facts that ``holds`` keeps (valid at the time asked about, or
        any with the history), nearest first; the facts used past the first hop; whether the walk stopped at
        MAX_NEIGHBOURS."""
        seen = {start}
        frontier = [start]
        found: list[tuple[str, int, list[str]]] = []
        deeper_facts: list[str] = []
        for level in range(1, depth + 1):
            reached: dict[str, list[str]] = {}
            for entity_id in frontier:
                for edge in self._store.edges(pk, entity_id):
                    other = edge.data["otherId"]
                    if other in seen or not holds(edge):
                        continue
                    reached.setdefault(other, []).append(edge.data["factId"])
            for other, via in sorted(reached.items()):
                if len(found) >= MAX_NEIGHBOURS:
                    return self._neighbours(pk, found), deeper_facts, True
                seen.add(other)
                found.append((other, level, via))
                if level > 1:
                    deeper_facts += via
            frontier = list(reached)
        return self._neighbours(pk, found), deeper_facts, False

    def _neighbours(self, pk: str, found: list[tuple[str, int, list[str]]]) -> list[Neighbour]:
        entities = self._store.entities(pk, [entity_id for entity_id, _, _ in found])
        return [
            Neighbour(
                entity_id=entity_id,
                name=entities[entity_id]["name"],
                type=entities[entity_id]["type"],
                summary=entities[entity_id]["summary"],
                depth=level,
                via=via,
            )
            for entity_id, level, via in found
            if entity_id in entities
        ]

    # -------------------------------------------------- update_memory_object
    def update(self, context: RequestContext, request: UpdateMemoryObjectInput) -> UpdateMemoryObjectOutput:
        """update_memory_object: the entity's new name, type, summary or aliases under its version (``expectedVersion``
        when given). A rename keeps the old name as an alias and re-indexes the facts naming it; a taken name or alias
        is CONFLICT."""
        layer, scope, entity = self._lookup.entity(context, request)
        writable_scope(context, layer, "entityId" if request.entity_id else "name")
        if request.expected_version is not None and request.expected_version != entity.version:
            raise ConflictingRequest(
                f"Entity '{entity.data['name']}' is at version {entity.version}, not {request.expected_version}; "
                "read it and update again",
                {"field": "expectedVersion", "currentVersion": entity.version},
            )
        pk, data = partition(scope), entity.data
        name = request.new_name or data["name"]
        aliases = data["aliases"] if request.aliases is None else request.aliases
        if request.new_name and request.aliases is None and name_key(data["name"]) != name_key(name):
            aliases = [*aliases, data["name"]]  # the old name keeps finding the entity
        aliases = list({name_key(alias): alias for alias in aliases if name_key(alias) != name_key(name)}.values())
        if len(aliases) > MAX_ALIASES:
            raise invalid_field("aliases", f"an entity holds at most {MAX_ALIASES} aliases", limit=MAX_ALIASES)
        updated = {
            **data,
            "name": name,
            "type": request.type or data["type"],
            "summary": data["summary"] if request.summary is None else request.summary,
            "aliases": aliases,
            "updatedAt": stamp(now()),
            "updatedBy": context.user,
        }
        writes: list[Put | Delete] = [
            Put(Item(pk, entity.sk, updated, version=entity.version + 1), expect=entity.version)
        ]
        before = {name_key(each): each for each in [data["name"], *data["aliases"]]}
        after = {name_key(each): each for each in [name, *aliases]}
        writes += [Delete(pk, NAME + key) for key in before.keys() - after.keys()]
        writes += [
            Put(Item(pk, NAME + key, {"entityId": data["entityId"], "name": after[key]}), expect="absent")
            for key in after.keys() - before.keys()
        ]
        marker = self._index.marker(pk, entity.sk)
        try:
            self._records.write([*writes, marker])
        except ConditionFailed:
            raise self._update_conflict(pk, data, after.keys() - before.keys(), request) from None
        self._index.index_now([(marker, updated, entity.version + 1)])
        if name != data["name"]:
            self._index.requeue_facts(pk, data["entityId"])
        return UpdateMemoryObjectOutput(
            message=f"Entity '{name}' updated", entity=entity_view({**updated, "version": entity.version + 1})
        )

    def _update_conflict(
        self, pk: str, data: dict[str, Any], new_keys: set[str], request: UpdateMemoryObjectInput
    ) -> Conflict:
        for key in new_keys:
            holder = self._records.get(pk, NAME + key)
            if holder is not None and holder.data["entityId"] != data["entityId"]:
                field = "newName" if request.new_name and name_key(request.new_name) == key else "aliases"
                return ConflictingRequest(
                    f"The name '{holder.data['name']}' already belongs to another entity in this layer",
                    {"field": field, "entityId": holder.data["entityId"]},
                )
        return Conflict(
            f"Entity '{data['name']}' changed while it was being updated; read it and retry",
            {"field": "expectedVersion"},
        )

"""delete_memory_object: erasing an entity with its facts, or one fact, only after a confirmed preview.

The preview answers a token bound to the object's version and (for an entity)
its set of facts; the deletion happens only with that token, so anything that
changed since the preview needs a new one. An entity is first marked
(``deleting``: gone from every read at once, its names freed), then its facts
go in batches, then the entity; a call that stops midway is finished by
calling again with the entity's id.
"""

from __future__ import annotations

import hashlib

from mnemo.budget import fit_head
from mnemo.context import RequestContext
from mnemo.errors import Conflict, ConflictingRequest, NotFound
from mnemo.graph.index import GraphIndex
from mnemo.graph.models import DeleteMemoryObjectInput, DeleteMemoryObjectOutput, ObjectSelector
from mnemo.graph.names import name_key
from mnemo.graph.scopes import GraphLookup, readable_scopes, writable_scope
from mnemo.graph.store import ENTITY, MAX_EDGES, NAME, GraphStore, partition, versioned
from mnemo.graph.temporal import now, stamp
from mnemo.graph.views import FactViews, entity_view
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put

#: Facts deleted per transaction when an entity goes (each is up to four writes).
DELETE_BATCH = 20
#: Batches that may lose a race to a concurrent write before the deletion answers CONFLICT.
ATTEMPTS = 3
#: Fact batches one call erases at most (1,000 facts); a larger entity is finished by calling again.
MAX_BATCHES = 50


def confirmation_token(scope: str, object_id: str, version: int, fact_ids: list[str]) -> str:
    """The token a deletion preview answers: a digest of the scope, the object's id and version and its facts' ids, so
    any change since the preview makes it stale."""
    digest = hashlib.sha256("\n".join([scope, object_id, str(version), *fact_ids]).encode()).hexdigest()
    return "del_" + digest[:32]


class GraphDeletion:
    def __init__(self, store: GraphStore, lookup: GraphLookup, views: FactViews, index: GraphIndex) -> None:
        self._store = store
        self._records = store.records
        self._lookup = lookup
        self._views = views
        self._index = index

    def delete(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput:
        """delete_memory_object: without a token, a preview (what would go, and the token); with the preview's token,
        the deletion. An entity's erasure that stopped midway is finished by calling again with its id; a stale token is
        CONFLICT."""
        if request.fact_id is not None:
            return self._delete_fact(context, request)
        selector = ObjectSelector(entity_id=request.entity_id, name=request.name, layer=request.layer)
        try:
            layer, scope, entity = self._lookup.entity(context, selector)
        except NotFound:
            resumed = self._resume(context, request)
            if resumed is None:
                raise
            return resumed
        writable_scope(context, layer, "entityId" if request.entity_id else "name")
        pk = partition(scope)
        edges = self._store.edges(pk, entity.data["entityId"])
        counted_all = len(edges) < MAX_EDGES
        token = confirmation_token(
            scope, entity.data["entityId"], entity.version, sorted(e.data["factId"] for e in edges)
        )
        neighbours = sorted({edge.data["otherId"] for edge in edges} - {entity.data["entityId"]})
        names = self._store.entities(pk, neighbours)
        output = DeleteMemoryObjectOutput(
            message="",
            deleted=False,
            entity=entity_view(versioned(entity)),
            facts_affected=len(edges),
            neighbours_affected=[names[n]["name"] for n in neighbours if n in names],
        )
        kept = fit_head(output, output.neighbours_affected, context.response_budget)
        output.neighbours_affected = kept
        output.has_more = len(kept) < len(output.neighbours_affected) or not counted_all
        count = f"{len(edges)}" if counted_all else f"at least {len(edges)}"
        if request.confirmation_token is None:
            output.message = (
                f"Deleting '{entity.data['name']}' erases it and its {count} facts for good "
                "(invalidate_memory_link keeps history instead). Ask the user, then call again with confirmationToken"
            )
            output.confirmation_token = token
            return output
        if request.confirmation_token != token:
            raise ConflictingRequest(
                "The entity or its facts changed since the preview (or the token is not this entity's); preview again",
                {"field": "confirmationToken"},
            )
        data = {**entity.data, "deleting": True}
        name_keys = [name_key(each) for each in [entity.data["name"], *entity.data["aliases"]]]
        try:
            self._records.write(
                [
                    Put(Item(pk, entity.sk, data, version=entity.version + 1), expect=entity.version),
                    *[Delete(pk, NAME + key) for key in name_keys],
                ]
            )
        except ConditionFailed:
            raise ConflictingRequest(
                "The entity changed while it was being deleted; preview again", {"field": "entityId"}
            ) from None
        erased, finished = self.erase(pk, entity.data["entityId"])
        output.deleted, output.facts_affected = True, erased
        output.message = f"Entity '{entity.data['name']}' and {erased} facts deleted"
        if not finished:
            output.has_more = True
            output.message += "; it is gone from every read, and more facts remain: call again with its entityId"
        return output

    def _resume(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput | None:
        """Finish a deletion an earlier call began (it stopped after marking the entity): no new token needed."""
        if request.entity_id is None:
            return None
        for layer, scope in readable_scopes(context, request.layer):
            pk = partition(scope)
            item = self._records.get(pk, ENTITY + request.entity_id)
            if item is not None and item.data.get("deleting"):
                writable_scope(context, layer, "entityId")
                erased, finished = self.erase(pk, request.entity_id)
                message = (
                    f"Finished deleting entity '{item.data['name']}'"
                    if finished
                    else (f"Deleted {erased} more facts of entity '{item.data['name']}'; more remain: call again")
                )
                return DeleteMemoryObjectOutput(
                    message=message, deleted=True, facts_affected=erased, has_more=not finished
                )
        return None

    def erase(self, pk: str, entity_id: str) -> tuple[int, bool]:
        """Delete a marked entity's facts in batches, then the entity; safe to run again after a crash.

        At most MAX_BATCHES batches a call, so a request stays short: (facts erased, whether it finished).
        """
        erased, lost_races, batches = 0, 0, 0
        while edges := self._store.edges(pk, entity_id, limit=DELETE_BATCH):
            if batches >= MAX_BATCHES:
                return erased, False
            batches += 1
            facts = self._store.facts(pk, [edge.data["factId"] for edge in edges])
            markers = [self._index.marker(pk, fact.sk) for fact in facts]
            writes: list[Put | Delete] = self._store.link_release(pk, [fact.data for fact in facts])
            for fact in facts:
                writes += self._store.fact_deletes(pk, fact)
            gone = {fact.data["factId"] for fact in facts}
            writes += [Delete(pk, edge.sk) for edge in edges if edge.data["factId"] not in gone]  # dangling edges
            try:
                self._records.write([*writes, *markers])
            except ConditionFailed:
                lost_races += 1  # a fact moved meanwhile: read the batch again
                if lost_races > ATTEMPTS:
                    raise Conflict(
                        "The entity's facts kept changing while it was being deleted; call again to finish",
                        {"field": "entityId"},
                    ) from None
                continue
            self._index.settle(markers)
            erased += len(facts)
        while guards := self._store.exclusive_guards(pk, entity_id, limit=MAX_WRITE_OPERATIONS):
            self._records.write([Delete(pk, guard.sk) for guard in guards])
        marker = self._index.marker(pk, ENTITY + entity_id)
        self._records.write([Delete(pk, ENTITY + entity_id), marker])
        self._index.settle([marker])
        return erased, True

    def _delete_fact(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput:
        layer, scope, fact = self._lookup.fact(context, request.fact_id or "")
        writable_scope(context, layer, "factId")
        pk = partition(scope)
        token = confirmation_token(scope, fact.data["factId"], fact.version, [])
        view = self._views(pk, [versioned(fact)], stamp(now()))  # empty while an end is being deleted
        output = DeleteMemoryObjectOutput(
            message="",
            deleted=False,
            fact=view[0] if view else None,
            facts_affected=1,
            neighbours_affected=[v.subject for v in view] + [v.object for v in view],
        )
        if request.confirmation_token is None:
            output.message = (
                "Deleting a fact erases it from the history too (invalidate_memory_link keeps it). "
                "Ask the user, then call again with confirmationToken"
            )
            output.confirmation_token = token
            return output
        if request.confirmation_token != token:
            raise ConflictingRequest(
                "The fact changed since the preview; preview again", {"field": "confirmationToken"}
            )
        marker = self._index.marker(pk, fact.sk)
        try:
            self._records.write(
                [*self._store.link_release(pk, [fact.data]), *self._store.fact_deletes(pk, fact), marker]
            )
        except ConditionFailed:
            raise ConflictingRequest(
                "The fact changed while it was being deleted; preview again", {"field": "factId"}
            ) from None
        self._index.settle([marker])
        output.deleted, output.message = True, "Fact deleted"
        return output

"""Memory graph rules: entities and facts scoped like memories, facts invalidated rather than forgotten.

Records (``mnemo.graph.store``) are the truth. Entity and fact text is indexed
in the vector index (namespace ``graph``) through the index outbox, so a crash
or an index outage never leaves a new entity or fact unfindable; every search
hit is read back from the records and checked against the caller's scopes.

A fact's time: ``validAt`` (default: when it is added) and ``invalidAt`` say
when it held in the world; ``createdAt`` and ``expiredAt`` when Mnemo learned
it and learned its end (``mnemo.graph.temporal``). Invalidation sets the end and
keeps the fact, so ``asOf`` answers what was true at any time.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from mnemo.budget import fit_head
from mnemo.context import SHARED_LAYERS, WRITER_ROLE, Layer, RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError, NotFound, Unauthorized, invalid_field
from mnemo.graph.models import (
    MAX_ALIASES,
    MAX_INVALIDATES,
    AddMemoryLinkInput,
    AddMemoryLinkOutput,
    DeleteMemoryObjectInput,
    DeleteMemoryObjectOutput,
    EntityHit,
    EntityRef,
    EntityView,
    FactHit,
    FactSource,
    FactView,
    GetMemoryObjectInput,
    GetMemoryObjectOutput,
    GraphContext,
    GraphSearchInput,
    GraphSearchOutput,
    InvalidateMemoryLinkInput,
    InvalidateMemoryLinkOutput,
    Neighbour,
    ObjectSelector,
    UpdateMemoryObjectInput,
    UpdateMemoryObjectOutput,
)
from mnemo.graph.names import DEFAULT_TYPE, fact_sentence, name_key, predicate_key, type_key
from mnemo.graph.store import ENTITY, FACT, NAME, PARTITION, GraphStore, exclusive_sk, link_sk, partition
from mnemo.graph.temporal import now, stamp, status_at
from mnemo.hybrid import hybrid_hits
from mnemo.outbox import GONE, IndexOutbox, Reference
from mnemo.ports import ConditionFailed, Delete, Embedder, Filter, IndexDoc, Item, Put, RecordStore, VectorIndex

NAMESPACE = "graph"
#: Attempts of a write that lost a race (a name or link taken meanwhile) before CONFLICT.
ATTEMPTS = 3
#: Entities get_memory_object walks to at most.
MAX_NEIGHBOURS = 100
#: Facts deleted per transaction when an entity goes (each is up to four writes).
DELETE_BATCH = 20
CANDIDATES = 100

logger = logging.getLogger(__name__)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _unit(item: Item) -> dict[str, Any]:
    return {**item.data, "version": item.version}


class GraphService:
    #: The outbox family: entities and facts are indexed in the namespace of the same name.
    family = NAMESPACE

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox) -> None:
        self._store = GraphStore(records)
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox

    # ------------------------------------------------------------- scopes
    @staticmethod
    def writable_scope(context: RequestContext, layer: Layer, field: str = "layer") -> str:
        """The scope key of a layer the caller may change: INVALID_INPUT without its ids, UNAUTHORIZED without the
        writer role on a shared layer."""
        missing = context.missing_ids(layer)
        if missing:
            raise InvalidInput(
                f"{field}: the {layer} layer needs a {missing[0]} id in the request context",
                {"field": field, "layer": layer, "missingIds": missing},
            )
        if layer in SHARED_LAYERS and WRITER_ROLE not in context.roles:
            raise Unauthorized(
                f"Changing the shared {layer} layer's graph needs the '{WRITER_ROLE}' role",
                {"field": field, "layer": layer, "requiredRole": WRITER_ROLE},
            )
        return context.scope_key(layer)

    @staticmethod
    def _readable(context: RequestContext, layer: Layer | None) -> list[tuple[Layer, str]]:
        if layer is not None:
            missing = context.missing_ids(layer)
            if missing:
                raise InvalidInput(
                    f"layer: the {layer} layer needs a {missing[0]} id in the request context",
                    {"field": "layer", "layer": layer, "missingIds": missing},
                )
        layers = context.readable_layers([layer] if layer else None)
        return [(each, context.scope_key(each)) for each in layers]

    def _find_entity(self, context: RequestContext, selector: ObjectSelector) -> tuple[Layer, str, Item]:
        """The entity a request names, from the most specific readable layer that has it."""
        for layer, scope in self._readable(context, selector.layer):
            pk = partition(scope)
            if selector.entity_id is not None:
                item = self._store.entity(pk, selector.entity_id)
            else:
                item = self._store.entity_by_name(pk, selector.name or "")
            if item is not None:
                return layer, scope, item
        field, value = ("entityId", selector.entity_id) if selector.entity_id else ("name", selector.name)
        raise NotFound(f"No entity {value!r} in the layers you can read", {"field": field, field: value})

    def _find_fact(self, context: RequestContext, fact_id: str, field: str = "factId") -> tuple[Layer, str, Item]:
        scopes = self._readable(context, None)
        found = {item.pk: item for item in self._records.batch_get([(partition(s), FACT + fact_id) for _, s in scopes])}
        for layer, scope in scopes:
            item = found.get(partition(scope))
            if item is not None:
                return layer, scope, item
        raise NotFound(f"No fact '{fact_id}' in the layers you can read", {"field": field, field: fact_id})

    # -------------------------------------------------------------- views
    @staticmethod
    def _entity_view(data: dict[str, Any]) -> EntityView:
        return EntityView(
            entity_id=data["entityId"],
            name=data["name"],
            type=data["type"],
            summary=data["summary"],
            aliases=data["aliases"],
            layer=data["layer"],
            version=data["version"],
            created_at=data["createdAt"],
            updated_at=data["updatedAt"],
        )

    def _fact_views(
        self, pk: str, facts: Sequence[dict[str, Any]], moment: str, known: str | None = None
    ) -> list[FactView]:
        names = self._store.entities(pk, [f["subjectId"] for f in facts] + [f["objectId"] for f in facts])
        views = []
        for fact in facts:
            subject, obj = names.get(fact["subjectId"]), names.get(fact["objectId"])
            status = status_at(fact, moment, known)
            if subject is None or obj is None or status is None:  # an end being deleted, or not yet learned
                continue
            views.append(
                FactView(
                    fact_id=fact["factId"],
                    subject=subject["name"],
                    subject_id=fact["subjectId"],
                    predicate=fact["predicate"],
                    object=obj["name"],
                    object_id=fact["objectId"],
                    text=fact["text"],
                    valid_at=fact["validAt"],
                    invalid_at=fact.get("invalidAt"),
                    created_at=fact["createdAt"],
                    expired_at=fact.get("expiredAt"),
                    status=status,
                    invalidated_by=fact.get("invalidatedBy"),
                    reason=fact.get("reason"),
                    source=FactSource.model_validate(fact["source"]) if fact.get("source") else None,
                    layer=fact["layer"],
                )
            )
        return views

    # ------------------------------------------------------ add_memory_link
    def add_link(self, context: RequestContext, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
        scope = self.writable_scope(context, request.layer)
        for _ in range(ATTEMPTS):
            try:
                return self._add_once(context, scope, request)
            except ConditionFailed:
                continue  # a name, link or contradicted fact moved meanwhile: read again
        raise Conflict("The graph changed while the link was being added; retry", {"field": "subject"})

    def _resolve(
        self, pk: str, scope: str, layer: Layer, name: str, kind: str | None, context: RequestContext, at: str
    ) -> tuple[dict[str, Any], list[Put | Delete]]:
        """An entity by name or alias, or a new one with the writes that create it."""
        pointer = self._records.get(pk, NAME + name_key(name))
        if pointer is not None:
            existing = self._store.entity(pk, pointer.data["entityId"])
            if existing is not None:
                return {**_unit(existing), "created": False}, []
        entity: dict[str, Any] = {
            "entityId": _new_id("ent"),
            "name": name,
            "type": kind or DEFAULT_TYPE,
            "summary": "",
            "aliases": [],
            "layer": layer,
            "scope": scope,
            "createdAt": at,
            "updatedAt": at,
            "createdBy": context.user,
        }
        name_expect: Any = "absent" if pointer is None else pointer.version  # a stale pointer is taken over
        writes: list[Put | Delete] = [
            Put(Item(pk, ENTITY + entity["entityId"], entity), expect="absent"),
            Put(Item(pk, NAME + name_key(name), {"entityId": entity["entityId"], "name": name}), expect=name_expect),
        ]
        return {**entity, "version": 1, "created": True}, writes

    def _add_once(self, context: RequestContext, scope: str, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
        pk, layer = partition(scope), request.layer
        at = stamp(now())
        subject, writes = self._resolve(pk, scope, layer, request.subject, request.subject_type, context, at)
        if name_key(request.object) == name_key(request.subject):
            obj = subject
        else:
            obj, object_writes = self._resolve(pk, scope, layer, request.object, request.object_type, context, at)
            writes += object_writes
        predicate = predicate_key(request.predicate)
        valid_at = stamp(request.valid_at) if request.valid_at else at
        invalid_at = requested_end = stamp(request.invalid_at) if request.invalid_at else None
        if invalid_at is not None and invalid_at <= valid_at:  # validAt defaulted to now: the model could not check
            raise invalid_field("invalidAt", f"must be after validAt ({valid_at})")

        same = self._same_fact(pk, subject, obj, predicate, valid_at, invalid_at, request)
        if same is not None:
            view = self._fact_views(pk, [same], at)[0]
            return self._add_answer(view, subject, obj, created=False, invalidated=[])

        fact_id = _new_id("fct")
        guard = self._exclusive_guard(pk, subject, predicate, fact_id) if request.exclusive else []
        contradicted = self._contradicted(pk, subject, obj, predicate, request)
        closed: list[dict[str, Any]] = []
        for old in contradicted:
            if old["validAt"] <= valid_at:
                if old["validAt"] == valid_at:
                    raise invalid_field(
                        "validAt", f"fact '{old['factId']}' began at the same time; give the new fact a later validAt"
                    )
                closed.append({**old, "invalidAt": valid_at, "expiredAt": at, "invalidatedBy": fact_id})
            elif invalid_at is None or invalid_at > old["validAt"]:
                # The old fact began later: the new one is history that ended when the old one began.
                invalid_at = old["validAt"]
        if len(closed) > MAX_INVALIDATES:  # each is four writes of the one all-or-nothing write
            raise invalid_field(
                "exclusive" if request.exclusive else "invalidates",
                f"this fact would end {len(closed)} open facts, more than {MAX_INVALIDATES} at once; "
                "invalidate some of them first",
                limit=MAX_INVALIDATES,
            )
        if invalid_at != requested_end:
            # Stored as history (a later fact holds already): the same history may be stored from a retry.
            same = self._same_fact(pk, subject, obj, predicate, valid_at, invalid_at, request)
            if same is not None:
                view = self._fact_views(pk, [same], at)[0]
                return self._add_answer(view, subject, obj, created=False, invalidated=[])
        fact = {
            "factId": fact_id,
            "subjectId": subject["entityId"],
            "predicate": predicate,
            "objectId": obj["entityId"],
            "text": request.text or fact_sentence(subject["name"], predicate, obj["name"]),
            "validAt": valid_at,
            "invalidAt": invalid_at,
            "createdAt": at,
            "expiredAt": at if invalid_at is not None else None,
            "source": request.source.model_dump(mode="json", by_alias=True, exclude_none=True)
            if request.source
            else None,
            "layer": layer,
            "scope": scope,
            "createdBy": context.user,
            "subjectName": subject["name"],
            "objectName": obj["name"],
        }
        writes += self._store.fact_puts(pk, fact, 1, None) + guard
        if invalid_at is None:
            link = Item(pk, link_sk(subject["entityId"], predicate, obj["entityId"]), {"factId": fact_id})
            writes.append(Put(link, expect="absent"))
        writes += self._store.link_release(pk, closed)
        for old in closed:
            writes += self._store.fact_puts(pk, self._stored(old), old["version"] + 1, old["version"])
        pending = [(self._marker(pk, FACT + fact_id), fact, 1)]
        pending += [(self._marker(pk, ENTITY + e["entityId"]), e, 1) for e in (subject, obj) if e["created"]]
        pending = list({marker.item.sk: (marker, data, 1) for marker, data, _ in pending}.values())
        self._records.write([*writes, *(marker for marker, _, _ in pending)])
        self._index_now(pending)
        view = self._fact_views(pk, [fact], at)[0]
        return self._add_answer(view, subject, obj, created=True, invalidated=[old["factId"] for old in closed])

    def _exclusive_guard(self, pk: str, subject: dict[str, Any], predicate: str, fact_id: str) -> list[Put | Delete]:
        """The write that makes exclusive adds of one subject and predicate take turns: read before the subject's
        facts are, it fails (and the add reads again) if another exclusive add wrote meanwhile."""
        sk = exclusive_sk(subject["entityId"], predicate)
        current = None if subject["created"] else self._records.get(pk, sk)
        data = {"subjectId": subject["entityId"], "predicate": predicate, "factId": fact_id}
        if current is None:
            return [Put(Item(pk, sk, data), expect="absent")]
        return [Put(Item(pk, sk, data, version=current.version + 1), expect=current.version)]

    @staticmethod
    def _stored(unit: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in unit.items() if key not in ("version", "created")}

    def _same_fact(
        self,
        pk: str,
        subject: dict[str, Any],
        obj: dict[str, Any],
        predicate: str,
        valid_at: str,
        invalid_at: str | None,
        request: AddMemoryLinkInput,
    ) -> dict[str, Any] | None:
        """The stored fact this add repeats: the open fact of the triple, or an identical closed one."""
        if subject["created"] or obj["created"]:
            return None
        if invalid_at is None:
            link = self._store.link(pk, subject["entityId"], predicate, obj["entityId"])
            found = self._store.fact(pk, link.data["factId"]) if link is not None else None
            return _unit(found) if found is not None else None
        for edge in self._store.edges(pk, subject["entityId"], predicate):
            data = edge.data
            if (
                data["direction"] == "out"
                and data["otherId"] == obj["entityId"]
                and (data["validAt"], data["invalidAt"]) == (valid_at, invalid_at)
            ):
                found = self._store.fact(pk, data["factId"])
                return _unit(found) if found is not None else None
        return None

    def _contradicted(
        self, pk: str, subject: dict[str, Any], obj: dict[str, Any], predicate: str, request: AddMemoryLinkInput
    ) -> list[dict[str, Any]]:
        """Open facts the new one ends: those named in ``invalidates``, and with ``exclusive`` the subject's
        open facts of the same predicate with another object."""
        ids: list[str] = list(request.invalidates)
        if request.exclusive and not subject["created"]:
            ids += [
                edge.data["factId"]
                for edge in self._store.edges(pk, subject["entityId"], predicate)
                if edge.data["direction"] == "out"
                and edge.data["otherId"] != obj["entityId"]
                and edge.data["invalidAt"] is None
            ]
        found = {item.data["factId"]: item for item in self._store.facts(pk, ids)}
        for fact_id in request.invalidates:
            if fact_id not in found:
                raise NotFound(
                    f"No fact '{fact_id}' in the {request.layer} layer to invalidate",
                    {"field": "invalidates", "factId": fact_id},
                )
        return [_unit(found[fact_id]) for fact_id in dict.fromkeys(ids) if found[fact_id].data["invalidAt"] is None]

    def _add_answer(
        self,
        view: FactView,
        subject: dict[str, Any],
        obj: dict[str, Any],
        *,
        created: bool,
        invalidated: list[str],
    ) -> AddMemoryLinkOutput:
        if not created:
            message = "The same fact is already stored; nothing changed"
        elif invalidated:
            message = (
                f"Fact stored; it invalidated {len(invalidated)} earlier fact{'s' if len(invalidated) > 1 else ''}"
            )
        else:
            message = "Fact stored"
        return AddMemoryLinkOutput(
            message=message,
            fact_id=view.fact_id,
            created=created,
            subject=EntityRef(
                entity_id=subject["entityId"], name=subject["name"], type=subject["type"], created=subject["created"]
            ),
            object=EntityRef(entity_id=obj["entityId"], name=obj["name"], type=obj["type"], created=obj["created"]),
            fact=view,
            invalidated=invalidated,
        )

    # ----------------------------------------------------- get_memory_object
    def get_object(self, context: RequestContext, request: GetMemoryObjectInput) -> GetMemoryObjectOutput:
        _, scope, entity = self._find_entity(context, request)
        pk = partition(scope)
        moment_time = request.as_of or now()
        moment = stamp(moment_time)

        def holds(edge: Item) -> bool:
            return request.include_history or status_at(edge.data, moment) == "valid"

        own_edges = [edge for edge in self._store.edges(pk, entity.data["entityId"]) if holds(edge)]
        own_edges.sort(key=lambda edge: edge.data["validAt"], reverse=True)
        neighbours, via_facts, truncated = self._walk(pk, entity.data["entityId"], request.depth, moment)
        fact_ids = list(dict.fromkeys([edge.data["factId"] for edge in own_edges] + via_facts))
        has_more = truncated or len(fact_ids) > request.limit
        facts = [_unit(item) for item in self._store.facts(pk, fact_ids[: request.limit])]
        order = {fact_id: rank for rank, fact_id in enumerate(fact_ids)}
        facts.sort(key=lambda fact: order[fact["factId"]])
        output = GetMemoryObjectOutput(
            entity=self._entity_view(_unit(entity)),
            facts=self._fact_views(pk, facts, moment),
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

    def _walk(self, pk: str, start: str, depth: int, moment: str) -> tuple[list[Neighbour], list[str], bool]:
        """Entities within ``depth`` hops over facts valid at ``moment``, nearest first; the facts used past
        the first hop; whether the walk stopped at MAX_NEIGHBOURS."""
        seen = {start}
        frontier = [start]
        found: list[tuple[str, int, list[str]]] = []
        deeper_facts: list[str] = []
        for level in range(1, depth + 1):
            reached: dict[str, list[str]] = {}
            for entity_id in frontier:
                for edge in self._store.edges(pk, entity_id):
                    other = edge.data["otherId"]
                    if other in seen or status_at(edge.data, moment) != "valid":
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
    def update_object(self, context: RequestContext, request: UpdateMemoryObjectInput) -> UpdateMemoryObjectOutput:
        layer, scope, entity = self._find_entity(context, request)
        self.writable_scope(context, layer, "entityId" if request.entity_id else "name")
        if request.expected_version is not None and request.expected_version != entity.version:
            raise Conflict(
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
        marker = self._marker(pk, entity.sk)
        try:
            self._records.write([*writes, marker])
        except ConditionFailed:
            raise self._update_conflict(pk, data, after.keys() - before.keys(), request) from None
        self._index_now([(marker, updated, entity.version + 1)])
        return UpdateMemoryObjectOutput(
            message=f"Entity '{name}' updated", entity=self._entity_view({**updated, "version": entity.version + 1})
        )

    def _update_conflict(
        self, pk: str, data: dict[str, Any], new_keys: set[str], request: UpdateMemoryObjectInput
    ) -> Conflict:
        for key in new_keys:
            holder = self._records.get(pk, NAME + key)
            if holder is not None and holder.data["entityId"] != data["entityId"]:
                field = "newName" if request.new_name and name_key(request.new_name) == key else "aliases"
                return Conflict(
                    f"The name '{holder.data['name']}' already belongs to another entity in this layer",
                    {"field": field, "entityId": holder.data["entityId"]},
                )
        return Conflict(
            f"Entity '{data['name']}' changed while it was being updated; read it and retry",
            {"field": "expectedVersion"},
        )

    # ------------------------------------------------ invalidate_memory_link
    def invalidate(self, context: RequestContext, request: InvalidateMemoryLinkInput) -> InvalidateMemoryLinkOutput:
        layer, scope, fact = self._find_fact(context, request.fact_id)
        self.writable_scope(context, layer, "factId")
        pk, data = partition(scope), fact.data
        at = stamp(now())
        end = stamp(request.invalid_at) if request.invalid_at else at
        if end <= data["validAt"]:
            raise invalid_field("invalidAt", f"must be after the fact's validAt ({data['validAt']})")
        if data.get("invalidAt") is not None and data["invalidAt"] <= end:
            view = self._fact_views(pk, [_unit(fact)], at)[0]
            return InvalidateMemoryLinkOutput(message="The fact was already invalid", fact=view, already_invalid=True)
        closed = {**data, "invalidAt": end, "expiredAt": at, "reason": request.reason or data.get("reason")}
        writes = self._store.link_release(pk, [data]) + self._store.fact_puts(
            pk, closed, fact.version + 1, fact.version
        )
        try:
            self._records.write(writes)
        except ConditionFailed:
            raise Conflict("The fact changed while it was being invalidated; retry", {"field": "factId"}) from None
        view = self._fact_views(pk, [{**closed, "version": fact.version + 1}], at)[0]
        return InvalidateMemoryLinkOutput(message="Fact invalidated; it stays in the history", fact=view)

    # -------------------------------------------------- delete_memory_object
    def delete_object(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput:
        if request.fact_id is not None:
            return self._delete_fact(context, request)
        selector = ObjectSelector(entity_id=request.entity_id, name=request.name, layer=request.layer)
        try:
            layer, scope, entity = self._find_entity(context, selector)
        except NotFound:
            resumed = self._resume_delete(context, request)
            if resumed is None:
                raise
            return resumed
        self.writable_scope(context, layer, "entityId" if request.entity_id else "name")
        pk = partition(scope)
        edges = self._store.edges(pk, entity.data["entityId"])
        token = self._token(scope, entity.data["entityId"], entity.version, sorted(e.data["factId"] for e in edges))
        neighbours = sorted({edge.data["otherId"] for edge in edges} - {entity.data["entityId"]})
        names = self._store.entities(pk, neighbours)
        output = DeleteMemoryObjectOutput(
            message="",
            deleted=False,
            entity=self._entity_view(_unit(entity)),
            facts_affected=len(edges),
            neighbours_affected=[names[n]["name"] for n in neighbours if n in names],
        )
        kept = fit_head(output, output.neighbours_affected, context.response_budget)
        output.neighbours_affected, output.has_more = kept, len(kept) < len(output.neighbours_affected)
        if request.confirmation_token is None:
            output.message = (
                f"Deleting '{entity.data['name']}' erases it and its {len(edges)} facts for good "
                "(invalidate_memory_link keeps history instead). Ask the user, then call again with confirmationToken"
            )
            output.confirmation_token = token
            return output
        if request.confirmation_token != token:
            raise Conflict(
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
            raise Conflict(
                "The entity changed while it was being deleted; preview again", {"field": "entityId"}
            ) from None
        self._erase(pk, entity.data["entityId"])
        output.deleted, output.message = True, f"Entity '{entity.data['name']}' and {len(edges)} facts deleted"
        return output

    def _resume_delete(
        self, context: RequestContext, request: DeleteMemoryObjectInput
    ) -> DeleteMemoryObjectOutput | None:
        """Finish a deletion an earlier call began (it stopped after marking the entity): no new token needed."""
        if request.entity_id is None:
            return None
        for layer, scope in self._readable(context, request.layer):
            pk = partition(scope)
            item = self._records.get(pk, ENTITY + request.entity_id)
            if item is not None and item.data.get("deleting"):
                self.writable_scope(context, layer, "entityId")
                erased = self._erase(pk, request.entity_id)
                return DeleteMemoryObjectOutput(
                    message=f"Finished deleting entity '{item.data['name']}'", deleted=True, facts_affected=erased
                )
        return None

    def _erase(self, pk: str, entity_id: str) -> int:
        """Delete a marked entity's facts in batches, then the entity; safe to run again after a crash."""
        erased, lost_races = 0, 0
        while edges := self._store.edges(pk, entity_id, limit=DELETE_BATCH):
            facts = self._store.facts(pk, [edge.data["factId"] for edge in edges])
            markers = [self._marker(pk, fact.sk) for fact in facts]
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
            self._settle_all(markers)
            erased += len(facts)
        marker = self._marker(pk, ENTITY + entity_id)
        guards = [Delete(pk, guard.sk) for guard in self._store.exclusive_guards(pk, entity_id)]
        self._records.write([Delete(pk, ENTITY + entity_id), *guards, marker])
        self._settle_all([marker])
        return erased

    def _delete_fact(self, context: RequestContext, request: DeleteMemoryObjectInput) -> DeleteMemoryObjectOutput:
        layer, scope, fact = self._find_fact(context, request.fact_id or "")
        self.writable_scope(context, layer, "factId")
        pk = partition(scope)
        token = self._token(scope, fact.data["factId"], fact.version, [])
        view = self._fact_views(pk, [_unit(fact)], stamp(now()))
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
            raise Conflict("The fact changed since the preview; preview again", {"field": "confirmationToken"})
        marker = self._marker(pk, fact.sk)
        try:
            self._records.write(
                [*self._store.link_release(pk, [fact.data]), *self._store.fact_deletes(pk, fact), marker]
            )
        except ConditionFailed:
            raise Conflict("The fact changed while it was being deleted; preview again", {"field": "factId"}) from None
        self._settle_all([marker])
        output.deleted, output.message = True, "Fact deleted"
        return output

    @staticmethod
    def _token(scope: str, object_id: str, version: int, fact_ids: list[str]) -> str:
        digest = hashlib.sha256("\n".join([scope, object_id, str(version), *fact_ids]).encode()).hexdigest()
        return "del_" + digest[:32]

    # ---------------------------------------------------------- graph_search
    def search(self, context: RequestContext, request: GraphSearchInput) -> GraphSearchOutput:
        layers = context.readable_layers(list(request.layers) if request.layers else None)
        moment_time = request.as_of or now()
        output = GraphSearchOutput(entities=[], facts=[], as_of=moment_time, searched_layers=layers)
        if not layers:
            return output
        scopes = {context.scope_key(layer): layer for layer in layers}
        moment, known = stamp(moment_time), stamp(request.known_at) if request.known_at else None
        dense = True
        if request.kind in ("all", "entities"):
            flt: Filter = {"scope": list(scopes), "kind": ["entity"]}
            if request.types:
                flt["type"] = sorted({type_key(kind) for kind in request.types})
            hits, dense = hybrid_hits(self._index, self._embedder, NAMESPACE, request.query, flt, CANDIDATES)
            output.entities = self._entity_hits(hits, scopes, request.threshold, known)[: request.limit]
        if request.kind in ("all", "facts"):
            flt = {"scope": list(scopes), "kind": ["fact"]}
            hits, dense = hybrid_hits(self._index, self._embedder, NAMESPACE, request.query, flt, CANDIDATES)
            facts = self._fact_hits(hits, scopes, request, moment, known)
            output.facts = facts[: request.limit]
        output.retrieval = "hybrid" if dense else "lexical"
        kept_facts = fit_head(output, output.facts, context.response_budget)
        kept_entities = fit_head(
            output.model_copy(update={"facts": kept_facts}), output.entities, context.response_budget
        )
        output.has_more = len(kept_facts) < len(output.facts) or len(kept_entities) < len(output.entities)
        output.facts, output.entities = kept_facts, kept_entities
        return output

    def _read_hits(
        self, hits: list[tuple[Any, float]], scopes: dict[str, Layer], prefix: str, threshold: float
    ) -> list[tuple[Item, float]]:
        wanted = [
            (hit, score)
            for hit, score in hits
            if score >= threshold and (hit.keywords.get("scope") or [""])[0] in scopes
        ]
        keys = [(partition(hit.keywords["scope"][0]), prefix + hit.id) for hit, _ in wanted]
        found = {(item.pk, item.sk): item for item in self._records.batch_get(keys)}
        return [(found[key], score) for key, (_, score) in zip(keys, wanted, strict=True) if key in found]

    def _entity_hits(
        self, hits: list[tuple[Any, float]], scopes: dict[str, Layer], threshold: float, known: str | None
    ) -> list[EntityHit]:
        results = []
        for item, score in self._read_hits(hits, scopes, ENTITY, threshold):
            if item.data.get("deleting") or (known is not None and item.data["createdAt"] > known):
                continue
            view = self._entity_view(_unit(item))
            results.append(EntityHit(**view.model_dump(), score=score))
        return results

    def _fact_hits(
        self,
        hits: list[tuple[Any, float]],
        scopes: dict[str, Layer],
        request: GraphSearchInput,
        moment: str,
        known: str | None,
    ) -> list[FactHit]:
        by_partition: dict[str, list[tuple[dict[str, Any], float]]] = {}
        for item, score in self._read_hits(hits, scopes, FACT, request.threshold):
            by_partition.setdefault(item.pk, []).append((_unit(item), score))
        results: list[FactHit] = []
        for pk, scored in by_partition.items():
            score_of = {fact["factId"]: score for fact, score in scored}
            for view in self._fact_views(pk, [fact for fact, _ in scored], moment, known):
                if request.include_invalid or view.status == "valid":
                    results.append(FactHit(**view.model_dump(), score=score_of[view.fact_id]))
        results.sort(key=lambda hit: (-hit.score, hit.fact_id))
        return results

    def context_for(self, context: RequestContext, query: str, layers: list[Layer] | None) -> GraphContext:
        """memory_search's includeGraph: the entities a query finds, with their current facts and the facts it
        finds itself."""
        found = self.search(context, GraphSearchInput(query=query, layers=layers, limit=5))
        facts: dict[str, FactView] = {
            fact.fact_id: FactView(**fact.model_dump(exclude={"score"})) for fact in found.facts
        }
        moment = stamp(now())
        for entity in found.entities:
            pk = partition(context.scope_key(entity.layer))
            edges = [e for e in self._store.edges(pk, entity.entity_id) if status_at(e.data, moment) == "valid"]
            edges.sort(key=lambda edge: edge.data["validAt"], reverse=True)
            items = [_unit(item) for item in self._store.facts(pk, [edge.data["factId"] for edge in edges[:5]])]
            for view in self._fact_views(pk, items, moment):
                facts.setdefault(view.fact_id, view)
        return GraphContext(entities=[entity.name for entity in found.entities], facts=list(facts.values())[:20])

    # --------------------------------------------------------- vector index
    @staticmethod
    def _doc(data: dict[str, Any], vector: Sequence[float]) -> IndexDoc:
        scope = data["scope"]
        if "factId" in data:
            return IndexDoc(
                id=data["factId"],
                vector=vector,
                text=GraphService._text(data),
                keywords={
                    "scope": [scope],
                    "kind": ["fact"],
                    "entity": sorted({data["subjectId"], data["objectId"]}),
                    "predicate": [data["predicate"]],
                },
            )
        return IndexDoc(
            id=data["entityId"],
            vector=vector,
            text=GraphService._text(data),
            keywords={"scope": [scope], "kind": ["entity"], "type": [type_key(data["type"])]},
        )

    @staticmethod
    def _text(data: dict[str, Any]) -> str:
        if "factId" in data:
            sentence = fact_sentence(data["subjectName"], data["predicate"], data["objectName"])
            return data["text"] if data["text"] == sentence else f"{data['text']}\n{sentence}"
        return "\n".join([data["name"], data["type"], " ".join(data["aliases"]), data["summary"]]).strip()

    def _marker(self, pk: str, sk: str) -> Put:
        return self._outbox.marker(self.family, {"pk": pk, "sk": sk})

    def _index_now(self, pending: Sequence[tuple[Put, dict[str, Any], int]]) -> None:
        """Index records just written (marker, data, version) with one embedding call; if it fails, their
        markers wait for a drain."""
        try:
            vectors = self._embedder.embed([self._text(data) for _, data, _ in pending])
        except MnemoError as error:
            logger.warning("embedding failed; the graph records are stored and queued for indexing: %s", error.message)
            return
        for (marker, data, version), vector in zip(pending, vectors, strict=True):
            self._outbox.settle(marker, self, first=self._upsert(data, vector, str(version)))

    def _upsert(self, data: dict[str, Any], vector: Sequence[float], token: str) -> Callable[[], str]:
        def write() -> str:
            self._index.upsert(NAMESPACE, [self._doc(data, vector)])
            return token

        return write

    def _settle_all(self, markers: Sequence[Put]) -> None:
        for marker in markers:
            self._outbox.settle(marker, self)

    def version_token(self, ref: Reference) -> str:
        item = self._records.get(ref["pk"], ref["sk"])
        return GONE if item is None or item.data.get("deleting") else str(item.version)

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one entity or fact: upsert it, or remove it if it is gone."""
        item = self._records.get(ref["pk"], ref["sk"])
        if item is None or item.data.get("deleting"):
            self._index.delete(NAMESPACE, [ref["sk"].split("#", 1)[1]])
            return GONE
        vector = self._embedder.embed([self._text(item.data)])[0]
        self._index.upsert(NAMESPACE, [self._doc(item.data, vector)])
        return str(item.version)

    def reindex(self, batch: int = 64) -> int:
        """Rebuild the graph's vector index from the records (maintenance: scans the table)."""
        self._index.clear(NAMESPACE)
        pending: list[dict[str, Any]] = []
        total = 0

        def flush() -> None:
            vectors = self._embedder.embed([self._text(data) for data in pending])
            self._index.upsert(NAMESPACE, [self._doc(d, v) for d, v in zip(pending, vectors, strict=True)])
            pending.clear()

        for item in self._records.scan(PARTITION):
            if item.sk.startswith(FACT) or (item.sk.startswith(ENTITY) and not item.data.get("deleting")):
                pending.append(item.data)
                total += 1
                if len(pending) >= batch:
                    flush()
        if pending:
            flush()
        return total

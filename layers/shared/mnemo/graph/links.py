"""Facts in and out of force: add_memory_link (with its contradictions) and invalidate_memory_link.

A fact is never changed in place except to end it. Adding one resolves (or
creates) its two entities by name, stores the same open fact once (``LINK``),
and ends what it contradicts in the same all-or-nothing write: the facts named
in ``invalidates``, and with ``exclusive`` the subject's open facts of the
predicate with another object (``EXCL`` makes concurrent exclusive adds take
turns). A write that loses a race is tried again from fresh reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemo.context import Layer, RequestContext
from mnemo.errors import Conflict, NotFound, invalid_field
from mnemo.graph.index import GraphIndex
from mnemo.graph.models import (
    MAX_INVALIDATES,
    AddMemoryLinkInput,
    AddMemoryLinkOutput,
    EntityRef,
    FactView,
    InvalidateMemoryLinkInput,
    InvalidateMemoryLinkOutput,
)
from mnemo.graph.names import DEFAULT_TYPE, fact_sentence, name_key, predicate_key
from mnemo.graph.scopes import GraphLookup, writable_scope
from mnemo.graph.store import (
    ENTITY,
    FACT,
    NAME,
    GraphStore,
    exclusive_sk,
    link_sk,
    new_id,
    partition,
    versioned,
)
from mnemo.graph.temporal import now, stamp, status_at
from mnemo.graph.views import FactViews
from mnemo.ports import ConditionFailed, Delete, Item, Put

#: Attempts of a write that lost a race (a name or link taken meanwhile) before CONFLICT.
ATTEMPTS = 3
#: Later than any stored time: the end of a fact that has none.
_FOREVER = "9999-12-31T23:59:59.999999Z~"


def _stored(unit: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in unit.items() if key not in ("version", "created")}


class LinkWriter:
    def __init__(self, store: GraphStore, lookup: GraphLookup, views: FactViews, index: GraphIndex) -> None:
        self._store = store
        self._records = store.records
        self._lookup = lookup
        self._views = views
        self._index = index

    # ------------------------------------------------------ add_memory_link
    def add(self, context: RequestContext, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
        """add_memory_link in the caller's writable scope, tried again from fresh reads when it loses a race; CONFLICT
        after ``ATTEMPTS``."""
        scope = writable_scope(context, request.layer)
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
                return {**versioned(existing), "created": False}, []
        entity: dict[str, Any] = {
            "entityId": new_id("ent"),
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

    def describe(self, context: RequestContext, layer: Layer, name: str, kind: str, summary: str) -> bool:
        """Make sure an entity a text named exists, and give it ``summary`` if it has none yet; True if created.

        build_memory_from_text's entities: one that no fact mentions is still stored, and an extracted summary
        never overwrites one an agent or an earlier extraction wrote."""
        scope = writable_scope(context, layer)
        pk = partition(scope)
        for _ in range(ATTEMPTS):
            at = stamp(now())
            entity, writes = self._resolve(pk, scope, layer, name, kind or None, context, at)
            data, version = _stored(entity), entity["version"]
            sk = ENTITY + entity["entityId"]
            if summary and not entity["summary"]:
                data = {**data, "summary": summary, "updatedAt": at}
                if entity["created"]:
                    writes[0] = Put(Item(pk, sk, data), expect="absent")
                else:
                    version += 1
                    writes.append(Put(Item(pk, sk, data, version=version), expect=entity["version"]))
            if not writes:
                return False
            marker = self._index.marker(pk, sk)
            try:
                self._records.write([*writes, marker])
            except ConditionFailed:
                continue  # the name was taken or the entity changed meanwhile: read again
            self._index.index_now([(marker, data, version)])
            return bool(entity["created"])
        raise Conflict(f"Entity '{name}' kept changing while it was being described; retry", {"field": "content"})

    def _add_once(self, context: RequestContext, scope: str, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
        pk, layer = partition(scope), request.layer
        at = stamp(now())
        subject, writes = self._resolve(pk, scope, layer, request.subject, request.subject_type, context, at)
        if name_key(request.object) == name_key(request.subject):
            obj = subject
        else:
            obj, object_writes = self._resolve(pk, scope, layer, request.object, request.object_type, context, at)
            writes += object_writes
        writes += self._still_there(pk, subject, obj)
        predicate = predicate_key(request.predicate)
        valid_at = stamp(request.valid_at) if request.valid_at else at
        requested_end = stamp(request.invalid_at) if request.invalid_at else None
        if requested_end is not None and requested_end <= valid_at:  # validAt defaulted to now: unchecked so far
            raise invalid_field("invalidAt", f"must be after validAt ({valid_at})")

        # Read before any of the subject's facts are, so that racing exclusive adds take turns.
        guard = self._exclusive_guard(pk, subject, predicate) if request.exclusive else None
        same = self._same_fact(pk, subject, obj, predicate, valid_at, requested_end)
        fact_id = same["factId"] if same is not None else new_id("fct")
        start, end = (same["validAt"], same.get("invalidAt")) if same is not None else (valid_at, requested_end)
        closed, end = self._ends(pk, subject, obj, predicate, request, start, end, fact_id, at)
        ending = self._store.link_release(pk, closed) + (guard(fact_id) if guard is not None else [])
        for old in closed:
            ending += self._store.fact_puts(pk, _stored(old), old["version"] + 1, old["version"])
        invalidated = [old["factId"] for old in closed]
        if same is not None:  # stored already; what it contradicts may still need ending
            if closed:
                self._records.write([*writes, *ending])
            return self._answer(self._view(pk, same, at), subject, obj, created=False, invalidated=invalidated)
        if end != requested_end:
            # Stored as history (a later fact holds already): the same history may be stored from a retry.
            same = self._same_fact(pk, subject, obj, predicate, valid_at, end)
            if same is not None:
                return self._answer(self._view(pk, same, at), subject, obj, created=False, invalidated=[])
        fact = {
            "factId": fact_id,
            "subjectId": subject["entityId"],
            "predicate": predicate,
            "objectId": obj["entityId"],
            "text": request.text or fact_sentence(subject["name"], predicate, obj["name"]),
            "validAt": valid_at,
            "invalidAt": end,
            "createdAt": at,
            "expiredAt": at if end is not None else None,
            "source": request.source.model_dump(mode="json", by_alias=True, exclude_none=True)
            if request.source
            else None,
            "layer": layer,
            "scope": scope,
            "createdBy": context.user,
            "subjectName": subject["name"],
            "objectName": obj["name"],
        }
        writes += self._store.fact_puts(pk, fact, 1, None) + ending
        if end is None:
            link = Item(pk, link_sk(subject["entityId"], predicate, obj["entityId"]), {"factId": fact_id})
            writes.append(Put(link, expect="absent"))
        pending = [(self._index.marker(pk, FACT + fact_id), fact, 1)]
        pending += [(self._index.marker(pk, ENTITY + e["entityId"]), e, 1) for e in (subject, obj) if e["created"]]
        pending = list({marker.item.sk: (marker, data, 1) for marker, data, _ in pending}.values())
        self._records.write([*writes, *(marker for marker, _, _ in pending)])
        self._index.index_now(pending)
        return self._answer(self._view(pk, fact, at), subject, obj, created=True, invalidated=invalidated)

    def _still_there(self, pk: str, *entities: dict[str, Any]) -> list[Put | Delete]:
        """Writes that leave existing entities as they are, on condition they still are: a deletion or update
        that began meanwhile makes the add read again instead of linking a fact to a deleted entity."""
        unchanged = {e["entityId"]: e for e in entities if not e["created"]}
        return [
            Put(Item(pk, ENTITY + entity_id, _stored(entity), version=entity["version"]), expect=entity["version"])
            for entity_id, entity in unchanged.items()
        ]

    def _ends(
        self,
        pk: str,
        subject: dict[str, Any],
        obj: dict[str, Any],
        predicate: str,
        request: AddMemoryLinkInput,
        start: str,
        end: str | None,
        fact_id: str,
        at: str,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """What a fact holding over [start, end) contradicts: the facts it ends (each ends when it begins), and
        its own end (when a contradicted fact begins later, the new one ends there).

        Contradicted facts are those named in ``invalidates``, and with ``exclusive`` the subject's facts of the
        predicate with another object; only those whose time overlaps [start, end) are touched. A fact that began
        earlier and outlives a new fact that has already ended is refused: ending it would lose what follows.
        """
        overlapping = [
            fact
            for fact in self._contradicted(pk, subject, obj, predicate, request)
            if fact["factId"] != fact_id
            and fact["validAt"] < (end or _FOREVER)
            and (fact.get("invalidAt") or _FOREVER) > start
        ]
        field = "exclusive" if request.exclusive else "invalidates"
        for fact in overlapping:
            if fact["validAt"] == start:
                raise invalid_field(
                    "validAt", f"fact '{fact['factId']}' began at the same time; give the new fact a later validAt"
                )
            if fact["validAt"] < start and end is not None and (fact.get("invalidAt") or _FOREVER) > end:
                raise invalid_field(
                    field,
                    f"fact '{fact['factId']}' holds from {fact['validAt']} past this fact's end ({end}); ending it "
                    "would lose that time: invalidate it first, or add this fact without exclusive",
                )
        later = [fact["validAt"] for fact in overlapping if fact["validAt"] > start]
        if later:  # a later fact holds already: the new one is history that ends when that one began
            end = min([*later, end] if end is not None else later)
        closed = [
            {**fact, "invalidAt": start, "expiredAt": at, "invalidatedBy": fact_id}
            for fact in overlapping
            if fact["validAt"] < start
        ]
        if len(closed) > MAX_INVALIDATES:  # each is four writes of the one all-or-nothing write
            raise invalid_field(
                field,
                f"this fact would end {len(closed)} facts, more than {MAX_INVALIDATES} at once; "
                "invalidate some of them first",
                limit=MAX_INVALIDATES,
            )
        return closed, end

    def _view(self, pk: str, fact: dict[str, Any], at: str) -> FactView:
        """One fact as answered now; NOT_FOUND while one of its ends is being deleted."""
        views = self._views(pk, [fact], at)
        if not views:
            fact_id = fact["factId"]
            raise NotFound(
                f"Fact '{fact_id}' links an entity that is being deleted", {"field": "factId", "factId": fact_id}
            )
        return views[0]

    def _exclusive_guard(self, pk: str, subject: dict[str, Any], predicate: str) -> Callable[[str], list[Put | Delete]]:
        """The write that makes exclusive adds of one subject and predicate take turns, given the new fact's id:
        the version read here (before the subject's facts) must still be there when the add writes."""
        sk = exclusive_sk(subject["entityId"], predicate)
        current = None if subject["created"] else self._records.get(pk, sk)

        def write(fact_id: str) -> list[Put | Delete]:
            data = {"subjectId": subject["entityId"], "predicate": predicate, "factId": fact_id}
            if current is None:
                return [Put(Item(pk, sk, data), expect="absent")]
            return [Put(Item(pk, sk, data, version=current.version + 1), expect=current.version)]

        return write

    def _same_fact(
        self,
        pk: str,
        subject: dict[str, Any],
        obj: dict[str, Any],
        predicate: str,
        valid_at: str,
        invalid_at: str | None,
    ) -> dict[str, Any] | None:
        """The stored fact this add repeats: for an open fact, the triple's open fact, or one that holds at its
        validAt and has not ended yet (an end set for later does not make it another fact); for a closed one, an
        identical fact."""
        if subject["created"] or obj["created"]:
            return None
        if invalid_at is None:
            link = self._store.link(pk, subject["entityId"], predicate, obj["entityId"])
            found = self._store.fact(pk, link.data["factId"]) if link is not None else None
            if found is not None:
                return versioned(found)

        def repeats(edge: dict[str, Any]) -> bool:
            if invalid_at is None:
                return status_at(edge, valid_at) == "valid" and status_at(edge, stamp(now())) != "invalid"
            return (edge["validAt"], edge["invalidAt"]) == (valid_at, invalid_at)

        for edge in self._store.edges(pk, subject["entityId"], predicate):
            if edge.data["direction"] == "out" and edge.data["otherId"] == obj["entityId"] and repeats(edge.data):
                found = self._store.fact(pk, edge.data["factId"])
                return versioned(found) if found is not None else None
        return None

    def _contradicted(
        self, pk: str, subject: dict[str, Any], obj: dict[str, Any], predicate: str, request: AddMemoryLinkInput
    ) -> list[dict[str, Any]]:
        """The facts a new one may contradict: those named in ``invalidates``, and with ``exclusive`` the
        subject's facts of the same predicate with another object."""
        ids: list[str] = list(request.invalidates)
        if request.exclusive and not subject["created"]:
            ids += [
                edge.data["factId"]
                for edge in self._store.edges(pk, subject["entityId"], predicate)
                if edge.data["direction"] == "out" and edge.data["otherId"] != obj["entityId"]
            ]
        found = {item.data["factId"]: item for item in self._store.facts(pk, ids)}
        for fact_id in request.invalidates:
            if fact_id not in found:
                raise NotFound(
                    f"No fact '{fact_id}' in the {request.layer} layer to invalidate",
                    {"field": "invalidates", "factId": fact_id},
                )
        return [versioned(found[fact_id]) for fact_id in dict.fromkeys(ids)]

    @staticmethod
    def _answer(
        view: FactView, subject: dict[str, Any], obj: dict[str, Any], *, created: bool, invalidated: list[str]
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

    # ------------------------------------------------ invalidate_memory_link
    def invalidate(self, context: RequestContext, request: InvalidateMemoryLinkInput) -> InvalidateMemoryLinkOutput:
        """invalidate_memory_link: end the fact at ``invalidAt`` (now by default, after its validAt) and release its
        open-fact record; a fact already ended by then is answered unchanged."""
        layer, scope, fact = self._lookup.fact(context, request.fact_id)
        writable_scope(context, layer, "factId")
        pk, data = partition(scope), fact.data
        at = stamp(now())
        end = stamp(request.invalid_at) if request.invalid_at else at
        if end <= data["validAt"]:
            raise invalid_field("invalidAt", f"must be after the fact's validAt ({data['validAt']})")
        if data.get("invalidAt") is not None and data["invalidAt"] <= end:
            view = self._view(pk, versioned(fact), at)
            return InvalidateMemoryLinkOutput(message="The fact was already invalid", fact=view, already_invalid=True)
        closed = {**data, "invalidAt": end, "expiredAt": at, "reason": request.reason or data.get("reason")}
        writes = self._store.link_release(pk, [data]) + self._store.fact_puts(
            pk, closed, fact.version + 1, fact.version
        )
        try:
            self._records.write(writes)
        except ConditionFailed:
            raise Conflict("The fact changed while it was being invalidated; retry", {"field": "factId"}) from None
        view = self._view(pk, {**closed, "version": fact.version + 1}, at)
        return InvalidateMemoryLinkOutput(message="Fact invalidated; it stays in the history", fact=view)

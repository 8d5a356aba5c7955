"""Facts in and out of force: add_memory_link (with its contradictions) and invalidate_memory_link.

A fact is never changed in place except to end it. Adding one resolves (or
creates) its two entities by name, stores the same open fact once (``LINK``),
and ends what it contradicts in the same all-or-nothing write: the facts named
in ``invalidates``, and with ``exclusive`` the subject's open facts of the
predicate with another object (``EXCL`` makes concurrent exclusive adds take
turns). A write that loses a race is tried again from fresh reads.
"""

from __future__ import annotations

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
from mnemo.graph.temporal import now, stamp
from mnemo.graph.views import FactViews
from mnemo.ports import ConditionFailed, Delete, Item, Put

#: Attempts of a write that lost a race (a name or link taken meanwhile) before CONFLICT.
ATTEMPTS = 3


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
        predicate = predicate_key(request.predicate)
        valid_at = stamp(request.valid_at) if request.valid_at else at
        invalid_at = requested_end = stamp(request.invalid_at) if request.invalid_at else None
        if invalid_at is not None and invalid_at <= valid_at:  # validAt defaulted to now: the model could not check
            raise invalid_field("invalidAt", f"must be after validAt ({valid_at})")

        same = self._same_fact(pk, subject, obj, predicate, valid_at, invalid_at)
        if same is not None:
            return self._answer(self._views(pk, [same], at)[0], subject, obj, created=False, invalidated=[])

        fact_id = new_id("fct")
        guard = self._exclusive_guard(pk, subject, predicate, fact_id) if request.exclusive else []
        closed: list[dict[str, Any]] = []
        for old in self._contradicted(pk, subject, obj, predicate, request):
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
            same = self._same_fact(pk, subject, obj, predicate, valid_at, invalid_at)
            if same is not None:
                return self._answer(self._views(pk, [same], at)[0], subject, obj, created=False, invalidated=[])
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
            writes += self._store.fact_puts(pk, _stored(old), old["version"] + 1, old["version"])
        pending = [(self._index.marker(pk, FACT + fact_id), fact, 1)]
        pending += [(self._index.marker(pk, ENTITY + e["entityId"]), e, 1) for e in (subject, obj) if e["created"]]
        pending = list({marker.item.sk: (marker, data, 1) for marker, data, _ in pending}.values())
        self._records.write([*writes, *(marker for marker, _, _ in pending)])
        self._index.index_now(pending)
        view = self._views(pk, [fact], at)[0]
        return self._answer(view, subject, obj, created=True, invalidated=[old["factId"] for old in closed])

    def _exclusive_guard(self, pk: str, subject: dict[str, Any], predicate: str, fact_id: str) -> list[Put | Delete]:
        """The write that makes exclusive adds of one subject and predicate take turns: read before the subject's
        facts are, it fails (and the add reads again) if another exclusive add wrote meanwhile."""
        sk = exclusive_sk(subject["entityId"], predicate)
        current = None if subject["created"] else self._records.get(pk, sk)
        data = {"subjectId": subject["entityId"], "predicate": predicate, "factId": fact_id}
        if current is None:
            return [Put(Item(pk, sk, data), expect="absent")]
        return [Put(Item(pk, sk, data, version=current.version + 1), expect=current.version)]

    def _same_fact(
        self,
        pk: str,
        subject: dict[str, Any],
        obj: dict[str, Any],
        predicate: str,
        valid_at: str,
        invalid_at: str | None,
    ) -> dict[str, Any] | None:
        """The stored fact this add repeats: the open fact of the triple, or an identical closed one."""
        if subject["created"] or obj["created"]:
            return None
        if invalid_at is None:
            link = self._store.link(pk, subject["entityId"], predicate, obj["entityId"])
            found = self._store.fact(pk, link.data["factId"]) if link is not None else None
            return versioned(found) if found is not None else None
        for edge in self._store.edges(pk, subject["entityId"], predicate):
            data = edge.data
            if (
                data["direction"] == "out"
                and data["otherId"] == obj["entityId"]
                and (data["validAt"], data["invalidAt"]) == (valid_at, invalid_at)
            ):
                found = self._store.fact(pk, data["factId"])
                return versioned(found) if found is not None else None
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
        return [versioned(found[fact_id]) for fact_id in dict.fromkeys(ids) if found[fact_id].data["invalidAt"] is None]

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
        layer, scope, fact = self._lookup.fact(context, request.fact_id)
        writable_scope(context, layer, "factId")
        pk, data = partition(scope), fact.data
        at = stamp(now())
        end = stamp(request.invalid_at) if request.invalid_at else at
        if end <= data["validAt"]:
            raise invalid_field("invalidAt", f"must be after the fact's validAt ({data['validAt']})")
        if data.get("invalidAt") is not None and data["invalidAt"] <= end:
            view = self._views(pk, [versioned(fact)], at)[0]
            return InvalidateMemoryLinkOutput(message="The fact was already invalid", fact=view, already_invalid=True)
        closed = {**data, "invalidAt": end, "expiredAt": at, "reason": request.reason or data.get("reason")}
        writes = self._store.link_release(pk, [data]) + self._store.fact_puts(
            pk, closed, fact.version + 1, fact.version
        )
        try:
            self._records.write(writes)
        except ConditionFailed:
            raise Conflict("The fact changed while it was being invalidated; retry", {"field": "factId"}) from None
        view = self._views(pk, [{**closed, "version": fact.version + 1}], at)[0]
        return InvalidateMemoryLinkOutput(message="Fact invalidated; it stays in the history", fact=view)

"""The graph family (``GRAPH|{scope}``): what the cross-cutting parts know of it (``mnemo.families``).

Events: a fact's insert is graph.fact.added; a modify that newly sets ``expiredAt`` or changes
``invalidAt`` (to a time) is graph.fact.invalidated; a removal is graph.fact.deleted. The index mirrors
entities and facts (their ids are their document ids). Erased with the user's personal scopes, exported.
"""

from __future__ import annotations

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.families import IndexEntry, RecordFamily
from mnemo.graph.store import EDGE, ENTITY, EXCLUSIVE, FACT, LINK, NAME, NAMESPACE, PARTITION
from mnemo.ports import Item


def captures(sk: str) -> bool:
    return sk.startswith(FACT)


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """A fact's events (the module docstring); entities, names and edges give none."""
    if not change.sk.startswith(FACT):
        return []
    body = change.new if change.new is not None else change.old or {}
    subject = {"factId": change.sk.removeprefix(FACT)}
    names = ("predicate", "subjectId", "objectId", "validAt", "invalidAt")
    data = {name: body.get(name) for name in names}
    content = {"text": body.get("text"), "subjectName": body.get("subjectName"), "objectName": body.get("objectName")}
    if change.inserted:
        return [make_event(change, owner, "graph.fact.added", subject, data=data, content=content)]
    if change.removed:
        return [make_event(change, owner, "graph.fact.deleted", subject, data=data)]
    old, new = change.old or {}, change.new or {}
    ended = (new.get("expiredAt") and not old.get("expiredAt")) or (new.get("invalidAt") != old.get("invalidAt"))
    if ended and new.get("invalidAt"):
        return [make_event(change, owner, "graph.fact.invalidated", subject, data=data, content=content)]
    return []


def index(item: Item) -> IndexEntry | None:
    """An entity's or a fact's index document."""
    if not item.sk.startswith((ENTITY, FACT)):
        return None
    return IndexEntry(NAMESPACE, {"pk": item.pk, "sk": item.sk}, item.sk.partition("#")[2])


def count_as(sk: str) -> str:
    return "graphEntities" if sk.startswith(ENTITY) else "graphFacts" if sk.startswith(FACT) else "otherRecords"


FAMILY = RecordFamily(
    name="graph",
    partition=PARTITION,
    package="mnemo.graph",
    sort_keys=(ENTITY, NAME, FACT, EDGE, LINK, EXCLUSIVE),
    captures=captures,
    events=events,
    index=index,
    personal=True,
    erasure_order=90,
    count_as=count_as,
    exported_as="graph",
)

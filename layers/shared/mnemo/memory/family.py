"""The memory family (``MEM|{scope}``): what the cross-cutting parts know of it (``mnemo.families``).

Events: a record's insert is memory.added (memory_add, the batch path, sync's knowledge pointers and
extraction alike; ``data.source`` says which); a modify is memory.superseded when ``supersededBy`` is newly
set, else memory.updated (when the body changed); a removal is memory.deleted, or memory.expired when the
store removed it (TTL) or its ``expiresAt`` had passed. An EXPIRE history item's insert is memory.expired
too, with the same id, so a consumer deduplicating by id sees one expiry whichever change reports it.

Erasure: the user's personal scopes, and the memories they wrote into shared layers (``sharedMemories``)
with their history and the scope's LAST pointer when it names one (it keeps the end of its content);
knowledge pointers stay, as they are the organisation's knowledge, not the user's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.clock import parse_iso
from mnemo.context import SHARED_LAYERS, parse_scope
from mnemo.families import ErasurePage, ErasureScope, ErasureStep, IndexEntry, RecordFamily, paged
from mnemo.memory.records import HISTORY, IDEMPOTENCY, LAST, NAMESPACE, PARTITION, RECORD, SUBJECT, history_prefix
from mnemo.ports import Item


def captures(sk: str) -> bool:
    """A record's changes, and an EXPIRE history item's insert (no other history item gives an event)."""
    return sk.startswith(RECORD) or (sk.startswith(HISTORY) and "#EXPIRE#" in sk)


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_iso(value)
    except ValueError:
        return None


def _expired(change: RecordChange, owner: Owner, memory_id: str, body: dict[str, Any], **when: Any) -> ChangeEvent:
    """memory.expired: the same id, time, version and data whichever change reports it (the EXPIRE history item,
    the record's removal), so that a consumer deduplicating by id sees one."""
    data = {"contentHash": body.get("contentHash"), "reason": "expiresAt"}
    identity = (change.pk, memory_id)
    return make_event(change, owner, "memory.expired", {"memoryId": memory_id}, data=data, identity=identity, **when)


def _history_events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    body = change.new
    if not change.inserted or body is None or body.get("event") != "EXPIRE":
        return []
    # The EXPIRE item's sort key ends with the version of the record it stands for (memory.records).
    tail = change.sk.rsplit("#", 1)[-1]
    version = int(tail) if tail.isdigit() else None
    at = body.get("at") if isinstance(body.get("at"), str) and body.get("at") else None
    return [_expired(change, owner, str(body.get("memoryId")), body, time=at, version=version)]


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """The change events of one change of a memory record or history item (the module docstring)."""
    if change.sk.startswith(HISTORY):
        return _history_events(change, owner)
    if not change.sk.startswith(RECORD):
        return []
    memory_id = change.sk.removeprefix(RECORD)
    subject = {"memoryId": memory_id}
    body = change.new if change.new is not None else change.old or {}
    source = (body.get("metadata") or {}).get("source")
    data: dict[str, Any] = {
        "contentHash": body.get("contentHash"),
        "source": source if isinstance(source, str) else None,
    }
    content = {"text": body.get("content"), "tags": body.get("tags") or [], "metadata": body.get("metadata") or {}}
    if change.inserted:
        return [make_event(change, owner, "memory.added", subject, data=data, content=content)]
    if change.modified:
        old, new = change.old or {}, change.new or {}
        if new.get("supersededBy") and not old.get("supersededBy"):
            data["supersededBy"] = str(new["supersededBy"])
            return [make_event(change, owner, "memory.superseded", subject, data=data, content=content)]
        if new == old:
            return []
        return [make_event(change, owner, "memory.updated", subject, data=data, content=content)]
    expires, at = _when(body.get("expiresAt")), _when(change.at)
    if change.by_service or (expires is not None and at is not None and expires <= at):
        when = body.get("expiresAt") if isinstance(body.get("expiresAt"), str) else None
        return [_expired(change, owner, memory_id, body, time=when, version=change.old_version)]
    return [make_event(change, owner, "memory.deleted", subject, data=data)]


def index(item: Item) -> IndexEntry | None:
    """A memory record's index document (its id is the memory's)."""
    if not item.sk.startswith(RECORD):
        return None
    return IndexEntry(NAMESPACE, {"pk": item.pk, "sk": item.sk}, item.sk.removeprefix(RECORD))


def count_as(sk: str) -> str:
    """The receipt count an erased memory item adds to."""
    if sk.startswith(RECORD):
        return "memories"
    if sk.startswith(HISTORY):
        return "history"
    return "idempotency" if sk.startswith(IDEMPOTENCY) else "otherRecords"


def _shared_count(sk: str) -> str:
    return "sharedMemories" if sk.startswith(RECORD) else count_as(sk)


def _written_by(item: Item, tenant: str, user: str) -> bool:
    """Whether a shared layer's item is a memory the user wrote (not a knowledge pointer)."""
    scope = parse_scope(item.pk.removeprefix(PARTITION))
    return (
        scope is not None
        and scope.tenant == tenant
        and scope.layer in SHARED_LAYERS
        and item.sk.startswith(RECORD)
        and item.data.get("createdBy") == user
        and "knowledgePointer" not in (item.data.get("metadata") or {})
    )


def shared_memories(where: ErasureScope) -> Iterator[ErasurePage]:
    """The memories the user wrote into shared layers, each with its history items and the scope's LAST pointer
    when it names the memory (it keeps the end of its content); knowledge pointers stay."""
    found: list[Item] = []
    pointers: dict[str, Item] = {}  # partition -> its LAST pointer
    for layer in sorted(SHARED_LAYERS):
        for item in where.records.scan(f"{PARTITION}t={where.tenant}|{layer}"):
            if item.sk == LAST:
                pointers[item.pk] = item
            elif _written_by(item, where.tenant, where.user):
                found.append(item)
    for record in found:
        memory_id = record.sk.removeprefix(RECORD)
        history = where.records.query(record.pk, history_prefix(memory_id), limit=10_000)
        pointer = pointers.get(record.pk)
        named = [pointer] if pointer is not None and pointer.data.get("memoryId") == memory_id else []
        # The record last, in the page that takes it: a rerun finds a memory until its history is gone.
        yield from paged([*history, *named, record])


FAMILY = RecordFamily(
    name="memories",
    partition=PARTITION,
    package="mnemo.memory",
    sort_keys=(RECORD, HISTORY, IDEMPOTENCY, SUBJECT, LAST),
    captures=captures,
    events=events,
    index=index,
    personal=True,
    erasure_order=10,
    count_as=count_as,
    steps=(ErasureStep("sharedMemories", 120, shared_memories, count_as=_shared_count),),
    exported_as="memories",
)

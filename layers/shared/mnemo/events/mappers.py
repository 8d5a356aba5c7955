"""From one record change to its change events: one small mapper per family, which knows that family's keys.

=====================================  =============================================================
record (pk prefix, sk)                 events
=====================================  =============================================================
``MEM|`` ``MEM#{id}``                  inserted: memory.added (memory_add, the batch path, sync's
                                       knowledge pointers and extraction alike; ``data.source`` says
                                       which); modified: memory.superseded when ``supersededBy`` is
                                       newly set, else memory.updated (when the body changed);
                                       removed: memory.deleted, or memory.expired when the store
                                       removed it (TTL) or its ``expiresAt`` had passed
``MEM|`` ``HIST#...#EXPIRE#...``       inserted: memory.expired (the expiry's history item)
``GRAPH|`` ``FACT#{id}``               inserted: graph.fact.added; modified: graph.fact.invalidated when
                                       ``expiredAt`` or ``invalidAt`` is newly set; removed:
                                       graph.fact.deleted
``ASSET|``/``WS|`` ``F#{name}``        file.written / block.written (a StoredAsset under ``blocks/``)
                                       when a live head is written, file.deleted / block.deleted when
                                       it becomes a tombstone or is removed
``SYNC|t={tenant}`` ``STATE``          sync.completed when ``lastSyncAt`` moves
``LEARN|{stream}`` ``RUN#...``         inserted: extraction.completed (the run's record)
``ERASURE#t={tenant}`` (any sk)       user.erased when an erasure's receipt becomes ``completed``
                                       (``mnemo.portability.erasure``); it names the user by ``userHash``
                                       only, as the receipt does
=====================================  =============================================================

Every other record gives no event (history, idempotency records, outbox markers,
locks, ledger turns, ...). ``captured`` says which keys can give one, so the local
change log stores only those and the AWS stream filter passes only those.

The memory.expired of one memory has one id whichever change reports it (the
EXPIRE history item, the removal of the record, or both), so a consumer that
deduplicates by id sees one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from mnemo.events.changes import ChangeEvent, Owner, RecordChange, make_event, owner_of

#: The partition of a tenant's erasure receipts (``mnemo.portability.erasure.RECEIPT_PREFIX``, not imported: a
#: domain package does not import another's): a receipt's completing write is what makes user.erased.
ERASURE_PARTITION = "ERASURE#"

_MEMORY, _GRAPH, _ASSET, _WORKSPACE, _SYNC, _LEARN = "MEM|", "GRAPH|", "ASSET|", "WS|", "SYNC|", "LEARN|"

# The sort key prefixes that can give an event, per partition prefix (the AWS filter is built from the same).
CAPTURED: dict[str, tuple[str, ...]] = {
    _MEMORY: ("MEM#", "HIST#"),
    _GRAPH: ("FACT#",),
    _ASSET: ("F#",),
    _WORKSPACE: ("F#",),
    _SYNC: ("STATE",),
    _LEARN: ("RUN#",),
    ERASURE_PARTITION: ("",),
}


def captured(pk: str, sk: str) -> bool:
    """Whether a change of this record can give an event (else it need not be captured at all)."""
    for prefix, sort_prefixes in CAPTURED.items():
        if pk.startswith(prefix):
            if sk.startswith("HIST#"):
                return "#EXPIRE#" in sk
            return sk.startswith(sort_prefixes)
    return False


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _memory_content(body: dict[str, Any]) -> dict[str, Any]:
    return {"text": body.get("content"), "tags": body.get("tags") or [], "metadata": body.get("metadata") or {}}


def _expired(change: RecordChange, owner: Owner, memory_id: str, body: dict[str, Any], **when: Any) -> ChangeEvent:
    """memory.expired: the same id, time, version and data whichever change reports it (the EXPIRE history item,
    the record's removal), so that a consumer deduplicating by id sees one."""
    data = {"contentHash": body.get("contentHash"), "reason": "expiresAt"}
    identity = (change.pk, memory_id)
    return make_event(change, owner, "memory.expired", {"memoryId": memory_id}, data=data, identity=identity, **when)


def _memory(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    if change.sk.startswith("HIST#"):
        body = change.new
        if not change.inserted or body is None or body.get("event") != "EXPIRE":
            return []
        # The EXPIRE item's sort key ends with the version of the record it stands for (memory.records).
        tail = change.sk.rsplit("#", 1)[-1]
        version = int(tail) if tail.isdigit() else None
        at = body.get("at") if isinstance(body.get("at"), str) and body.get("at") else None
        return [_expired(change, owner, str(body.get("memoryId")), body, time=at, version=version)]
    if not change.sk.startswith("MEM#"):
        return []
    memory_id = change.sk.removeprefix("MEM#")
    subject = {"memoryId": memory_id}
    body = change.new if change.new is not None else change.old or {}
    source = (body.get("metadata") or {}).get("source")
    data: dict[str, Any] = {
        "contentHash": body.get("contentHash"),
        "source": source if isinstance(source, str) else None,
    }
    content = _memory_content(body)
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


def _graph(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    if not change.sk.startswith("FACT#"):
        return []
    body = change.new if change.new is not None else change.old or {}
    subject = {"factId": change.sk.removeprefix("FACT#")}
    data = {
        "predicate": body.get("predicate"),
        "subjectId": body.get("subjectId"),
        "objectId": body.get("objectId"),
        "validAt": body.get("validAt"),
        "invalidAt": body.get("invalidAt"),
    }
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


def _files(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    if not change.sk.startswith("F#"):
        return []
    name = change.sk.removeprefix("F#")
    family = "block" if change.pk.startswith(_ASSET) and name.startswith("blocks/") else "file"
    area = "workspace" if change.pk.startswith(_WORKSPACE) else "assets"
    old_live = change.old is not None and not change.old.get("deleted")
    new_live = change.new is not None and not change.new.get("deleted")
    subject = {"path": name}
    if new_live:
        new = change.new or {}
        if (
            old_live
            and (change.old or {}).get("sha256") == new.get("sha256")
            and change.old_version == change.new_version
        ):
            return []
        data = {"area": area, "sha256": new.get("sha256"), "bytes": new.get("bytes"), "tokens": new.get("tokens")}
        content = {"preview": new.get("preview")}
        return [make_event(change, owner, f"{family}.written", subject, data=data, content=content)]
    if old_live:
        return [make_event(change, owner, f"{family}.deleted", subject, data={"area": area})]
    return []


def _sync(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    new = change.new
    if change.sk != "STATE" or new is None:
        return []
    if change.old is not None and change.old.get("lastSyncAt") == new.get("lastSyncAt"):
        return []
    result = new.get("lastResult") or {}
    data = {key: result.get(key) for key in ("added", "updated", "deleted", "unchanged", "failed") if key in result}
    time = new.get("lastSyncAt") if isinstance(new.get("lastSyncAt"), str) else None
    return [make_event(change, owner, "sync.completed", {}, data={"counts": data}, time=time)]


def _learning(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    view = change.new
    if not change.sk.startswith("RUN#") or not change.inserted or view is None:
        return []
    decisions: dict[str, int] = {}
    failed = 0
    for part in view.get("strategies") or []:
        failed += 1 if part.get("failure") else 0
        for candidate in part.get("candidates") or []:
            decision = str(candidate.get("decision"))
            decisions[decision] = decisions.get(decision, 0) + 1
    run_id = str(view.get("runId") or change.sk.rsplit("#", 1)[-1])
    data = {
        "trigger": view.get("trigger"),
        "turns": len(view.get("turns") or []),
        "strategies": [str(part.get("strategy")) for part in view.get("strategies") or []],
        "failedStrategies": failed,
        "decisions": decisions,
    }
    return [make_event(change, owner, "extraction.completed", {"runId": run_id}, data=data)]


def _erasure(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    new, old = change.new, change.old or {}
    if new is None or new.get("status") != "completed" or old.get("status") == "completed":
        return []
    erased = Owner(owner.tenant, "user", {})
    subject = {"erasureId": str(new.get("erasureId") or change.sk.rsplit("#", 1)[-1])}
    counts = new.get("counts") if isinstance(new.get("counts"), dict) else {}
    data = {"userHash": new.get("userHash"), "counts": counts}
    completed = new.get("completedAt") if isinstance(new.get("completedAt"), str) else None
    return [make_event(change, erased, "user.erased", subject, data=data, time=completed)]


_MAPPERS: dict[str, Callable[[RecordChange, Owner], list[ChangeEvent]]] = {
    _MEMORY: _memory,
    _GRAPH: _graph,
    _ASSET: _files,
    _WORKSPACE: _files,
    _SYNC: _sync,
    _LEARN: _learning,
    ERASURE_PARTITION: _erasure,
}


def events_of(change: RecordChange) -> list[ChangeEvent]:
    """The change events of one record change (none for most records); their envelopes: ``ChangeEvent.envelope``."""
    for prefix, mapper in _MAPPERS.items():
        if change.pk.startswith(prefix):
            owner = owner_of(change.pk.removeprefix(prefix))
            return mapper(change, owner) if owner is not None else []
    return []

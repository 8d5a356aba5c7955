"""The memory family's record layout: its keys and the shape of its stored items, in one place.

Every memory lives in the partition of its scope (``RequestContext.scope_key``):

=========================================  ==============================================================
sk (partition ``MEM|{scope}``)             holds
=========================================  ==============================================================
``MEM#{memoryId}``                         the memory ``{memoryId, content, layer, scope, tags, metadata,
                                           createdAt, occurredAt, contentHash, embeddingModel,
                                           createdBy}``; ``after`` when it is linked to the dated memory
                                           before it, ``orphaned``/``orphanedAt`` when the knowledge item
                                           it mirrors is gone; ``added`` (memory_add and the batch
                                           path): its ADD history entry, folded in; ``expiresAt``
                                           when it expires (the item's ``expires_at`` too);
                                           ``requestHash`` when a keyed add stored it (its id is then
                                           derived from the key: ``keyed_memory_id``)
``HIST#{memoryId}#{at}#{event}#{rand}``    one history item per change ``{memoryId, event, at, actor}``
                                           (ADD, DEDUPE, DELETE, SYNC_ADD, SYNC_UPDATE, ORPHAN, EXPIRE);
                                           never expiring
``IDEM#{key}``                             an idempotency record ``{requestHash, response}``, kept a day:
                                           only for a keyed add answered as a near-duplicate, or whose
                                           key's memory is past its day (``mnemo.memory.keys``)
``LAST``                                   the dated memory added last in the scope ``{memoryId, day,
                                           tail}`` (``tail``: the end of its content the next pair holds;
                                           pointers written before it lack it); it expires with the memory
``SUBJ#{strategy}#{hash of subjectKey}``   the current extracted memory of one subject ``{strategy,
                                           subjectKey, memoryId, at}`` (``at``: the time that decides
                                           between two statements of it); written in the same all-or-
                                           nothing write as the memory, so a subject has one current
                                           memory (``mnemo.memory.extracted``); never expiring
=========================================  ==============================================================

The ADD entry of a memory added by memory_add (or the batch path) is folded into
its record (``added``: the random part of the history item's sort key; the rest
of that item is the record's ``createdAt``, ``createdBy`` and ``contentHash``),
so that the add is one write of one item. Readers of a history merge it
in at its sort key (``with_folded``), so memory_history shows it as before; the
delete of such a memory writes it out as its own history item (``unfolded``),
beside the DELETE, so the history outlives the record as it always did. Every
later change stays a history item of its own.

A memory sent with ``expiresAt`` keeps it in its body and, in epoch seconds, in
the item's ``expires_at`` (DynamoDB's TTL attribute), and every rewrite of the
record keeps both (``record_item``). Its ADD entry is folded like any other: once
the time has passed, every read takes the record for absent, days before DynamoDB
removes it, except the history reads, which read it with ``get(expired=True)``
and so keep showing the ADD meanwhile. When storage removes it (DynamoDB TTL, whose
stream REMOVE the indexer handles; the local sweeper) ``expired_writes`` writes the
folded ADD entry out and adds an EXPIRE item, at sort keys derived from the record
alone, so a second handling of the same removal finds them written and writes nothing
(``mnemo.memory.expiry``).

The service, the batch path, export and import and the stream indexer build
and read these keys and items through this module only.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mnemo.clock import iso, now
from mnemo.errors import Conflict, ConflictingRequest
from mnemo.ports import Item, Put

if TYPE_CHECKING:  # the layout is read by light modules (mnemo.memory.family): no pydantic model at import
    from mnemo.memory.models import MemoryAddInput, MemoryAddOutput

PARTITION = "MEM|"
#: The index namespace of memories (``mnemo.memory.indexing``).
NAMESPACE = "memory"
RECORD = "MEM#"
HISTORY = "HIST#"
IDEMPOTENCY = "IDEM#"
SUBJECT = "SUBJ#"
#: Sort key of each scope's pointer to the dated memory added last there: the next one links to it.
LAST = "LAST"
#: The record's field holding its folded ADD history entry (see the module docstring).
ADDED = "added"
#: The field of a memory stored by a keyed add: the hash of that request (``request_hash``, ``mnemo.memory.keys``).
REQUEST_HASH = "requestHash"
IDEMPOTENCY_TTL_SECONDS = 24 * 3600


# ------------------------------------------------------------------ values
def digest(text: str) -> str:
    """The SHA-256 of a text in hex: a memory's ``contentHash``, an idempotency record's ``requestHash``."""
    return hashlib.sha256(text.encode()).hexdigest()


def epoch_of(at: str | None) -> int | None:
    """A stored ISO 8601 time as epoch seconds (an item's ``expires_at``), or None."""
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()) if at else None


def day_of(occurred_at: str | None) -> str | None:
    """The UTC day a memory happened (``occurredAt`` is stored as UTC ISO 8601), or None."""
    return occurred_at[:10] if occurred_at else None


def request_hash(request: MemoryAddInput) -> str:
    """What an idempotency record remembers of a request: everything but the key (as ``add`` hashes it)."""
    return digest(request.model_dump_json(exclude={"idempotency_key"}))


# -------------------------------------------------------------------- keys
def partition_of(scope: str) -> str:
    """The partition key of a scope's memories (``RequestContext.scope_key``)."""
    return f"{PARTITION}{scope}"


def record_sk(memory_id: str) -> str:
    """The sort key of a memory's record."""
    return f"{RECORD}{memory_id}"


def is_record(sk: str) -> bool:
    """Whether a sort key is a memory's record (not its history, an idempotency record or LAST)."""
    return sk.startswith(RECORD)


def memory_id_of(sk: str) -> str:
    """The memory id of a record's sort key."""
    return sk.removeprefix(RECORD)


def history_prefix(memory_id: str) -> str:
    """The sort key prefix of every history item of one memory."""
    return f"{HISTORY}{memory_id}#"


def keyed_memory_id(partition: str, key: str) -> str:
    """The id of the memory a keyed add stores in ``partition``: derived from the scope and the key, shaped as a
    random id (``mem_`` and 24 hex digits), so a repeat of the add writes the same record key and its conditional
    put finds the first (``mnemo.memory.keys``). The scope is in it, so ids stay unique across scopes (the index
    holds one document per id)."""
    derived = hashlib.sha256(f"{partition}\n{key}".encode()).hexdigest()
    return f"mem_{derived[:24]}"


def idempotency_sk(key: str) -> str:
    """The sort key of the idempotency record of a key."""
    return f"{IDEMPOTENCY}{key}"


def idempotency_key_of(sk: str) -> str:
    """The idempotency key of an idempotency record's sort key."""
    return sk.removeprefix(IDEMPOTENCY)


def subject_sk(strategy: str, subject_key: str) -> str:
    """The sort key of the pointer to a subject's current extracted memory (a hash: subjects are free text)."""
    return f"{SUBJECT}{strategy}#{hashlib.sha256(subject_key.encode()).hexdigest()[:32]}"


def pointer_put(
    pk: str,
    strategy: str,
    subject_key: str,
    memory_id: str | None,
    at: str | None,
    pending: Sequence[str] = (),
    *,
    version: int | None,
) -> Put:
    """The write of a subject's pointer (``SUBJ#``) naming ``memory_id`` (stated ``at``), over the pointer read at
    ``version`` (None: there was none), keeping ``pending`` memory ids for a running memory's next rewrite."""
    data: dict[str, Any] = {"strategy": strategy, "subjectKey": subject_key, "memoryId": memory_id, "at": at}
    if pending:
        data["pending"] = list(pending)
    expect: int | Literal["absent"] = version if version is not None else "absent"
    return Put(Item(pk, subject_sk(strategy, subject_key), data, (version or 0) + 1), expect)


def head_of(sk: str) -> str | None:
    """The sort key of the memory record an item belongs to: its own for a record, its memory's for a history
    item; None for an item that stands alone (an idempotency record, the LAST pointer)."""
    kind, _, rest = sk.partition("#")
    if f"{kind}#" == RECORD:
        return sk
    if f"{kind}#" == HISTORY:
        return record_sk(rest.split("#", 1)[0])
    return None


# ------------------------------------------------------------------- items
def record_data(
    *,
    memory_id: str,
    content: str,
    layer: str,
    scope: str,
    tags: list[str],
    metadata: dict[str, Any],
    created_at: str,
    occurred_at: str | None,
    content_hash: str,
    embedding_model: str,
    created_by: str | None,
    after: str | None = None,
    expires_at: str | None = None,
    request_hash: str | None = None,
) -> dict[str, Any]:
    """A memory record's body; ``after`` is the id of the dated memory it is linked to, if any; ``expires_at``
    (ISO 8601 UTC) when it expires (``record_item`` puts it on the item too); ``request_hash`` the hash of the
    keyed add that stores it (``REQUEST_HASH``)."""
    data: dict[str, Any] = {
        "memoryId": memory_id,
        "content": content,
        "layer": layer,
        "scope": scope,
        "tags": tags,
        "metadata": metadata,
        "createdAt": created_at,
        "occurredAt": occurred_at,
        "contentHash": content_hash,
        "embeddingModel": embedding_model,
        "createdBy": created_by,
    }
    if after is not None:
        data["after"] = after
    if expires_at is not None:
        data["expiresAt"] = expires_at
    if request_hash is not None:
        data[REQUEST_HASH] = request_hash
    return data


def record_item(pk: str, data: dict[str, Any], version: int = 1) -> Item:
    """A memory record's item: its key from ``data``, and its ``expires_at`` from ``data["expiresAt"]``, so that
    no write of a record drops its expiry."""
    return Item(pk, record_sk(data["memoryId"]), data, version=version, expires_at=epoch_of(data.get("expiresAt")))


def outlives(stored: int | None, expires_at: int | None) -> bool:
    """Whether a stored memory expiring at ``stored`` lives at least as long as a new one expiring at
    ``expires_at`` (epoch seconds; None: never).

    Only such a memory may stand for the new one as its near-duplicate: a memory kept in place of another must
    not vanish before it would have (docs/lifecycle.md).
    """
    if stored is None:
        return True
    return expires_at is not None and stored >= expires_at


def orphaned(data: dict[str, Any]) -> dict[str, Any]:
    """A knowledge pointer's body once its knowledge item is gone."""
    return {**data, "orphaned": True, "orphanedAt": iso(now())}


def history_entry(scope: str, memory_id: str, event: str, actor: str | None, **extra: Any) -> Item:
    """The history item of one change to a memory (its key and body)."""
    at = iso(now())
    data = {"memoryId": memory_id, "event": event, "at": at, "actor": actor, **extra}
    sk = f"{HISTORY}{memory_id}#{at}#{event}#{secrets.token_hex(3)}"
    return Item(partition_of(scope), sk, data)


def history_item(scope: str, memory_id: str, event: str, actor: str | None, **extra: Any) -> Put:
    """The history item of one change to a memory, written with the change."""
    return Put(history_entry(scope, memory_id, event, actor, **extra), expect="absent")


def fold(data: dict[str, Any]) -> dict[str, Any]:
    """A new record's body with its ADD history entry folded in (``ADDED``).

    The entry is what ``history_item(scope, memoryId, "ADD", createdBy, contentHash=...)`` at ``createdAt``
    would hold, so the record keeps only the random part of that item's sort key: 14 bytes, not a second item.
    """
    return {**data, ADDED: secrets.token_hex(3)}


def folded(record: Item | None) -> Item | None:
    """The history item a record's folded ADD entry stands for (its key and body), or None."""
    if record is None or not isinstance(record.data.get(ADDED), str):
        return None
    data = record.data
    entry = {
        "memoryId": data["memoryId"],
        "event": "ADD",
        "at": data["createdAt"],
        "actor": data.get("createdBy"),
        "contentHash": data["contentHash"],
    }
    return Item(record.pk, f"{HISTORY}{data['memoryId']}#{data['createdAt']}#ADD#{data[ADDED]}", entry)


def unfolded(record: Item) -> list[Put]:
    """What a delete of ``record`` writes to keep its folded ADD entry: that history item (if any)."""
    entry = folded(record)
    return [Put(entry, expect="absent")] if entry is not None else []


def expire_entry(record: Item) -> Item:
    """The EXPIRE history item of an expired memory record: at its ``expiresAt``, at a sort key derived from the
    record alone (written once however often its removal is handled)."""
    data = record.data
    at = data.get("expiresAt") or (iso(datetime.fromtimestamp(record.expires_at, UTC)) if record.expires_at else "")
    entry = {"memoryId": data["memoryId"], "event": "EXPIRE", "at": at, "actor": None}
    entry["contentHash"] = data.get("contentHash")
    return Item(record.pk, f"{HISTORY}{data['memoryId']}#{at}#EXPIRE#{record.version}", entry)


def expired_writes(record: Item) -> list[Put]:
    """What the removal of an expired memory record writes to keep its history: the folded ADD entry (if any)
    and the EXPIRE item, each only if absent (a second handling of the removal fails on them: nothing to do)."""
    return [*unfolded(record), Put(expire_entry(record), expect="absent")]


def with_folded(items: list[Item], record: Item | None, low: str = "", high: str = "\U0010ffff") -> list[Item]:
    """History items (in sort key order) with the record's folded ADD entry merged in at its sort key, if
    that key falls in ``[low, high]`` and no item holds it already."""
    entry = folded(record)
    if entry is None or not low <= entry.sk <= high or any(item.sk == entry.sk for item in items):
        return items
    return sorted([*items, entry], key=lambda item: item.sk)


def last_pointer(
    pk: str,
    memory_id: str,
    occurred_at: str,
    last: Item | Literal["unread"] | None = "unread",
    *,
    tail: str | None = None,
    expires_at: int | None = None,
) -> Put:
    """The scope's LAST pointer moved to a dated memory: given the pointer as read (None: read as absent), only if
    it has not moved since; "unread" (the batch path, which writes it once per write): whatever it holds.

    ``tail``: the end of the memory's content that the next memory's pair can hold (``indexing.pair_tail``), so
    that the next add reads no record; the pointer then expires with the memory (``expires_at``), and goes with
    it when it is deleted (``MemoryWrites.delete``) or erased."""
    pointer = {"memoryId": memory_id, "day": day_of(occurred_at)}
    if tail is not None:
        pointer["tail"] = tail
    if last == "unread":
        return Put(Item(pk, LAST, pointer, expires_at=expires_at))
    version = last.version + 1 if last is not None else 1
    expect: int | Literal["absent"] = last.version if last is not None else "absent"
    return Put(Item(pk, LAST, pointer, version=version, expires_at=expires_at), expect=expect)


def key_reused() -> Conflict:
    """The answer to an idempotency key sent again with a different request."""
    return ConflictingRequest("idempotencyKey was already used for a different request", {"field": "idempotencyKey"})


def idempotency_item(pk: str, key: str, request_digest: str, output: MemoryAddOutput) -> Put:
    """The idempotency record of an add: the request's hash and its answer, kept for a day."""
    data = {"requestHash": request_digest, "response": output.model_dump(mode="json")}
    expires = int(time.time()) + IDEMPOTENCY_TTL_SECONDS
    return Put(Item(pk, idempotency_sk(key), data, expires_at=expires), expect="absent")


def replayed(stored: Item, request_digest: str) -> MemoryAddOutput:
    """The answer an idempotency record holds for the same request; CONFLICT for another request."""
    if stored.data["requestHash"] != request_digest:
        raise key_reused()
    from mnemo.memory.models import MemoryAddOutput

    return MemoryAddOutput.model_validate(stored.data["response"])

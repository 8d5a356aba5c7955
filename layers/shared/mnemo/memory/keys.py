"""Idempotency keys of memory_add: the first call writes its memory alone; a repeat finds the first answer.

**One conditional put.** A memory_add with an ``idempotencyKey`` stores its memory under an id derived from the
scope and the key (``keyed_memory_id``) and keeps the request's hash in the record (``requestHash``). The record is
written as any new memory's is, on the condition that its key holds no item at all (``Put(expect="new")``, which an
expired record not yet removed also fails): an undated keyed add is one PutItem, with no idempotency record, no
transaction and no read before it (a dated one writes the scope's ``LAST`` pointer with it, as every dated add).

**A repeat answers as the first call did** (``lookup``). Its put fails on the first call's record (or its
near-duplicate check names that memory first); the record is read: its ``requestHash`` is this request's, so
the answer is the first one (the same memoryId, "stored", not deduplicated), or another request's: CONFLICT.
Concurrent first calls race on the same put: one wins, the others read its record and answer as it did. Before
answering, the first call's index write is completed if it still waits in the outbox (``MemoryWrites.replay``).

**Idempotency records (``IDEM#{key}``, kept a day) remain for two cases:**

* a keyed add answered as a near-duplicate stores no memory: its answer (``deduplicated``, the existing memory's
  id) is kept in one, written with its DEDUPE history item in one all-or-nothing write. A repeat finds it after
  its own near-duplicate check names a memory, or, when that check could not run (embedder or index down),
  before it stores anything;
* a key binds its memory for a day from the record's ``createdAt`` (``IDEMPOTENCY_TTL_SECONDS``), as an
  idempotency record used to: afterwards the key is free again. A later add with it finds its derived id taken
  (``KeyLookup.taken``) and stores its memory under a random id with an idempotency record.

**What a repeat costs** (the rare path pays for the common one): it runs as a first call does until it finds
the first answer, so it embeds, runs the near-duplicate check, then reads the record and the memory's outbox
marker; one that reached its put (``dedupe`` false, or the first memory not indexed yet) has written the
memory's index document, which is rebuilt from the record before the answer. The batch path
(``mnemo.memory.batch``) reads every key's derived record and idempotency record in its one batch read, before
it writes anything.

``lookup`` reads the derived record first, then the idempotency record. Where a repeat's answer differs from what
an idempotency record alone gave: when the memory the first call named was deleted (or, for a near-duplicate's
answer, expired) before the repeat comes, the repeat stores its content again under the key's id and answers
"stored"; and an idempotency record written before this scheme is found only as described above (a repeat with
``dedupe`` false across the deploy may store its memory twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from mnemo.memory.models import MemoryAddOutput
from mnemo.memory.records import (
    IDEMPOTENCY_TTL_SECONDS,
    REQUEST_HASH,
    idempotency_sk,
    key_reused,
    keyed_memory_id,
    now,
    record_sk,
    replayed,
)
from mnemo.ports import Item, RecordStore

#: The answer a memory stored by a keyed add gives its repeats (the first call's: a new memory is "stored").
STORED_MESSAGE = "Memory stored successfully"


@dataclass(frozen=True)
class KeyLookup:
    """What a key holds: the answer to give (None: none stored), and whether its derived memory id is taken by a
    record that no longer answers for it (past its day): the add then stores under a random id."""

    output: MemoryAddOutput | None = None
    taken: bool = False


def binds(record: Item) -> bool:
    """Whether a record at a key's derived id answers for the key: a keyed add stored it less than a day ago."""
    created = record.data.get("createdAt")
    if not isinstance(record.data.get(REQUEST_HASH), str) or not isinstance(created, str):
        return False
    stored = datetime.fromisoformat(created.replace("Z", "+00:00"))
    return now() < stored + timedelta(seconds=IDEMPOTENCY_TTL_SECONDS)


def answered(record: Item | None, idempotency: Item | None, request_digest: str) -> KeyLookup:
    """What a key holds, given the record at its derived id and its idempotency record as read (None: absent).

    CONFLICT (``key_reused``) when the key answers for another request.
    """
    if record is not None and binds(record):
        if record.data[REQUEST_HASH] != request_digest:
            raise key_reused()
        output = MemoryAddOutput(memory_id=record.data["memoryId"], message=STORED_MESSAGE, layer=record.data["layer"])
        return KeyLookup(output, taken=True)
    if idempotency is not None:
        return KeyLookup(replayed(idempotency, request_digest), taken=record is not None)
    return KeyLookup(taken=record is not None)


def lookup(records: RecordStore, partition: str, key: str, request_digest: str) -> KeyLookup:
    """What ``key`` holds in ``partition``: the record at its derived id (an expired one too: it still holds the
    key), then its idempotency record, both read strongly consistent (they decide the answer and the write)."""
    record = records.get(partition, record_sk(keyed_memory_id(partition, key)), expired=True)
    if record is not None and binds(record):
        return answered(record, None, request_digest)
    return answered(record, records.get(partition, idempotency_sk(key)), request_digest)


def lookup_keys(partition: str, key: str) -> list[tuple[str, str]]:
    """The keys ``lookup`` reads for ``key`` (the batch path reads many keys' at once)."""
    return [(partition, record_sk(keyed_memory_id(partition, key))), (partition, idempotency_sk(key))]

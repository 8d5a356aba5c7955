"""A batch call's requests before anything is written: each one's scope checked, its hashes taken, its
idempotency key resolved (``mnemo.memory.batch``).

A refusal names the request's position in the call (``details.index``), and
nothing of the call is stored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError
from mnemo.memory.keys import answered, lookup_keys
from mnemo.memory.models import MemoryAddInput, MemoryAddOutput
from mnemo.memory.records import digest, key_reused, keyed_memory_id, partition_of, request_hash
from mnemo.memory.writes import writable_scope
from mnemo.ports import Delete, Item, Put, RecordStore

#: The most keys read in one batch read (a key's derived memory record and its idempotency record: two each).
_READ_CHUNK = 100


@dataclass(frozen=True)
class AddOutcome:
    """One request's answer, and whether it was replayed from an earlier request with the same key."""

    output: MemoryAddOutput
    replayed: bool = False


@dataclass
class Entry:
    """One request of the call, and what the batch path learns of it as it goes."""

    position: int
    request: MemoryAddInput
    scope: str
    partition: str
    request_hash: str
    content_hash: str
    #: An earlier entry of this call with the same idempotency key (and request).
    replay_of: Entry | None = None
    #: The memory id a keyed request stores under (``keyed_memory_id``; None: a random id, and a keyed request
    #: then writes an idempotency record, as when it is deduplicated).
    keyed_id: str | None = None
    #: The content's vector: the near-duplicate check compares content alone.
    vector: list[float] | None = None
    #: What the index holds: the content's vector, or for a dated memory linked to the one added before it
    #: (same scope, same day) the vector of the pair, as ``add`` embeds it.
    index_vector: list[float] | None = None
    previous_content: str | None = None
    outcome: AddOutcome | None = None
    operations: list[Put | Delete] = field(default_factory=list)
    #: The new record (None when deduplicated or replayed).
    data: dict[str, Any] | None = None
    marker: Put | None = None


def at_position(error: MnemoError, position: int) -> MnemoError:
    """The same error, naming the request's position in the batch."""
    error.details = {**error.details, "index": position}
    return error


def _unit(vector: Sequence[float], dimensions: int, position: int) -> list[float]:
    values = [float(v) for v in vector]
    norm = math.sqrt(sum(v * v for v in values))
    if len(values) != dimensions or not math.isfinite(norm) or norm == 0.0:
        raise InvalidInput(
            f"vectors[{position}]: needs {dimensions} finite values, not all zero (got {len(values)})",
            {"field": "vectors", "index": position},
        )
    return [v / norm for v in values]


def prepare(
    context: RequestContext,
    requests: Sequence[MemoryAddInput],
    vectors: Sequence[Sequence[float]] | None,
    dimensions: int,
) -> list[Entry]:
    """One entry per request, in order; ``vectors`` (if given) checked against the embedder's ``dimensions``."""
    entries: list[Entry] = []
    scopes: dict[str, str] = {}
    for position, request in enumerate(requests):
        scope = scopes.get(request.layer)
        if scope is None:
            try:
                scope = scopes[request.layer] = writable_scope(context, request.layer)
            except MnemoError as error:
                raise at_position(error, position) from None
        entry = Entry(
            position=position,
            request=request,
            scope=scope,
            partition=partition_of(scope),
            request_hash=request_hash(request),
            content_hash=digest(request.content),
        )
        if vectors is not None:
            entry.vector = _unit(vectors[position], dimensions, position)
        entries.append(entry)
    return entries


def resolve_idempotency(records: RecordStore, entries: list[Entry]) -> None:
    """Replays and conflicts, for every keyed request, before anything is written; the memory id each other
    keyed request stores under (``mnemo.memory.keys``: the key's derived id unless a memory past its day holds
    it)."""
    first: dict[tuple[str, str], Entry] = {}
    for entry in entries:
        key = entry.request.idempotency_key
        if key is None:
            continue
        earlier = first.get((entry.partition, key))
        if earlier is None:
            first[(entry.partition, key)] = entry
        elif earlier.request_hash != entry.request_hash:
            raise at_position(key_reused(), entry.position)
        else:
            entry.replay_of = earlier
    keys = [wanted for partition, key in first for wanted in lookup_keys(partition, key)]
    stored: dict[tuple[str, str], Item] = {}
    for start in range(0, len(keys), _READ_CHUNK):
        for item in records.batch_get(keys[start : start + _READ_CHUNK]):
            stored[(item.pk, item.sk)] = item
    for (partition, key), entry in first.items():
        record, idempotency = (stored.get(wanted) for wanted in lookup_keys(partition, key))
        try:
            found = answered(record, idempotency, entry.request_hash)
        except Conflict as error:
            raise at_position(error, entry.position) from None
        if found.output is not None:
            entry.outcome = AddOutcome(found.output, replayed=True)
        elif not found.taken:
            entry.keyed_id = keyed_memory_id(partition, key)

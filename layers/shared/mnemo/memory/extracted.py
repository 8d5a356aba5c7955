"""Memories that extraction writes: added, kept with their provenance extended, or superseding an older one.

Extraction (``mnemo.learning``) decides; this module writes, with the same record layout as ``memory_add``
(``mnemo.memory.records``) so that search, list, history, export and the index treat them alike. What is
particular to them:

* ``metadata.source`` is ``extraction`` (a caller cannot send that value, so an extracted memory is never
  passed off as typed), with ``metadata.provenance = {strategy, model, messageIds, extractedAt, runId}``
  and ``metadata.subjectKey`` (an index keyword, so memories about the same subject are found by filter);
* the memory id is given by the caller (derived from the candidate), and the record is written only if
  absent: a batch run twice writes nothing new;
* superseding never deletes. The old record gets ``supersededBy`` and ``supersededAt`` and a SUPERSEDE
  history item, the new one ``supersedes``, in one all-or-nothing write; search leaves a superseded
  memory out unless asked, and memory_history shows both;
* each subject (strategy and subject key) of a scope has a pointer to its one current memory
  (``SUBJ#...``, ``SubjectHead``), moved in the same all-or-nothing write that adds the memory, on the
  version it was read at: two runs writing one subject at once cannot both make theirs current;
* a statement older than the subject's current memory is written as history from the start
  (``outdated_by``): superseded by the newer one, never current.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from mnemo.context import Layer
from mnemo.memory.indexing import CONTENT_HASH, NAMESPACE
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.records import (
    digest,
    history_item,
    iso,
    now,
    partition_of,
    pointer_put,
    record_data,
    record_item,
    record_sk,
    subject_sk,
)
from mnemo.outbox import IndexOutbox
from mnemo.ports import ConditionFailed, Embedder, Item, Put, RecordStore, VectorIndex

#: The metadata.source of every extracted memory.
EXTRACTION_SOURCE = "extraction"
#: The index keyword (``meta_keywords``) holding an extracted memory's subject key.
SUBJECT_KEYWORD = "meta.subjectKey"


@dataclass(frozen=True)
class Neighbour:
    """A stored memory close to a candidate: its record and the cosine similarity of their vectors."""

    data: dict[str, Any]
    version: int
    similarity: float


@dataclass(frozen=True)
class SubjectHead:
    """A subject's pointer to its current extracted memory, as read: the memory id and its time (None when the
    subject has no pointer yet), and the item's version (None: absent)."""

    strategy: str
    key: str
    memory_id: str | None
    at: str | None
    version: int | None
    #: Memory ids a running memory (the profile) has yet to take in: left by a run whose model call failed.
    pending: tuple[str, ...] = ()


def standing(data: dict[str, Any]) -> bool:
    """Whether a memory record is current: neither superseded nor orphaned."""
    return not data.get("supersededBy") and not data.get("orphaned")


def time_of(data: dict[str, Any]) -> str | None:
    """The time that decides between two statements of a subject: when the newest of the turns that stated the
    memory was said (``metadata.statedAt``), or its ``occurredAt`` for a memory written before that was kept;
    None when unknown (then any new statement is newer)."""
    return (data.get("metadata") or {}).get("statedAt") or data.get("occurredAt")


def recency(data: dict[str, Any]) -> tuple[float, float, str]:
    """How recent a memory's statement is, to sort by (oldest first): its ``time_of``, then when it was written,
    then its id, so consolidation, repair and search agree on which of two statements is the newest."""
    return epoch(time_of(data)) or 0.0, epoch(data.get("createdAt")) or 0.0, data["memoryId"]


def epoch(at: str | None) -> float | None:
    """An ISO 8601 time as epoch seconds (compared as times: a fraction of a second sorts right), or None."""
    if not at:
        return None
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def subject_key(subject: str) -> str:
    """A subject as compared: lower case, spacing and punctuation at the ends ignored."""
    return " ".join(subject.lower().split()).strip(" .,:;!?'\"")[:200]


class ExtractedMemories:
    """Reads and writes of extracted memories over the memory family's ports (see the module docstring)."""

    def __init__(
        self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox, sync: MemoryIndexSync
    ) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox
        self._sync = sync

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, or [] when the embedder is down (consolidation then compares by hash only)."""
        return self._sync.try_embed(texts) if texts else []

    def get(self, scope: str, memory_id: str) -> Item | None:
        """The record of a memory of ``scope``, or None."""
        return self._records.get(partition_of(scope), record_sk(memory_id))

    def neighbours(
        self,
        scope: str,
        vector: Sequence[float] | None,
        content_hash: str,
        subject: str | None,
        k: int = 10,
        text: str = "",
    ) -> list[Neighbour]:
        """The standing (not superseded, not orphaned) memories of ``scope`` closest to a candidate: the same
        content by hash, the nearest vectors, and the nearest about the same subject; best first."""
        ids: dict[str, float] = {}
        same_content = {"scope": [scope], CONTENT_HASH: [content_hash]}
        # The same content is found by its hash whatever the stored vector holds, and without a vector
        # (the embedder down) by BM25 on the text under the same filter.
        if vector is not None:
            found = self._index.knn(NAMESPACE, vector, same_content, 1)
        else:
            found = self._index.lexical(NAMESPACE, text, same_content, 1) if text else []
        for hit in found:
            ids[hit.id] = 1.0
        if vector is not None:
            filters: list[dict[str, list[str]]] = [{"scope": [scope]}]
            if subject:
                # As meta_keywords writes it: the JSON of the value (non-ASCII and quotes escaped alike).
                filters.append({"scope": [scope], SUBJECT_KEYWORD: [json.dumps(subject_key(subject))]})
            for flt in filters:
                for hit in self._index.knn(NAMESPACE, vector, flt, k):
                    ids[hit.id] = max(ids.get(hit.id, -1.0), hit.score)
        if not ids:
            return []
        items = self._records.batch_get([(partition_of(scope), record_sk(memory_id)) for memory_id in ids])
        near = [Neighbour(item.data, item.version, ids[item.data["memoryId"]]) for item in items if standing(item.data)]
        return sorted(near, key=lambda neighbour: (-neighbour.similarity, neighbour.data["memoryId"]))

    def heads(self, scope: str, subjects: Sequence[tuple[str, str]]) -> dict[tuple[str, str], SubjectHead]:
        """The pointer of each (strategy, subject key) of ``scope`` to its current memory: one read for all; a
        subject with no pointer yet gets an empty one (version None)."""
        partition = partition_of(scope)
        wanted = list(dict.fromkeys(subjects))
        found = {item.sk: item for item in self._records.batch_get([(partition, subject_sk(s, k)) for s, k in wanted])}
        heads = {}
        for strategy, key in wanted:
            item = found.get(subject_sk(strategy, key))
            data = item.data if item else {}
            heads[(strategy, key)] = SubjectHead(
                strategy,
                key,
                data.get("memoryId"),
                data.get("at"),
                item.version if item else None,
                tuple(data.get("pending") or ()),
            )
        return heads

    def current_of(self, scope: str, strategy: str, subject: str) -> dict[str, Any] | None:
        """The current memory of one subject of ``scope`` (a running memory: the profile, a session's summary),
        by its pointer; None when it has none."""
        head = self.heads(scope, [(strategy, subject_key(subject))])[(strategy, subject_key(subject))]
        item = self.get(scope, head.memory_id) if head.memory_id else None
        return item.data if item is not None and standing(item.data) else None

    def contents(self, scope: str, memory_ids: Sequence[str]) -> dict[str, str]:
        """The content of each current memory of ``scope`` among ``memory_ids``, in their order (one read)."""
        keys = [(partition_of(scope), record_sk(memory_id)) for memory_id in dict.fromkeys(memory_ids)]
        items = self._records.batch_get(keys) if keys else []
        found = {item.data["memoryId"]: item.data["content"] for item in items if standing(item.data)}
        return {memory_id: found[memory_id] for memory_id in dict.fromkeys(memory_ids) if memory_id in found}

    def leave_pending(self, scope: str, head: SubjectHead, memory_ids: Sequence[str]) -> SubjectHead:
        """Keep ``memory_ids`` on a subject's pointer for its next rewrite (a failed profile call), on the version
        read; ConditionFailed when another run moved it meanwhile (that run took them in or kept its own)."""
        pending = list(dict.fromkeys([*head.pending, *memory_ids]))[-200:]
        put = pointer_put(
            partition_of(scope), head.strategy, head.key, head.memory_id, head.at, pending, version=head.version
        )
        self._records.write([put])
        return SubjectHead(head.strategy, head.key, head.memory_id, head.at, put.item.version, tuple(pending))

    def current(self, scope: str, head: SubjectHead, neighbours: Sequence[Neighbour]) -> list[Neighbour]:
        """The standing memories of a subject: the one its pointer names, and any other the index finds with the
        same strategy and subject key (written before pointers existed, or by a run that lost no race: none),
        newest first (``time_of``)."""
        similarity = {n.data["memoryId"]: n.similarity for n in neighbours}
        found: dict[str, Neighbour] = {}
        if head.memory_id is not None:
            item = self.get(scope, head.memory_id)
            if item is not None and standing(item.data):
                found[head.memory_id] = Neighbour(item.data, item.version, similarity.get(head.memory_id, 0.0))
        for neighbour in neighbours:
            metadata = neighbour.data.get("metadata") or {}
            if (
                metadata.get("source") == EXTRACTION_SOURCE
                and metadata.get("strategy") == head.strategy
                and metadata.get("subjectKey") == head.key
            ):
                found.setdefault(neighbour.data["memoryId"], neighbour)
        return sorted(found.values(), key=lambda n: recency(n.data), reverse=True)

    def add(
        self,
        *,
        scope: str,
        layer: Layer,
        memory_id: str,
        content: str,
        tags: list[str],
        metadata: dict[str, Any],
        occurred_at: str | None,
        actor: str | None,
        vector: Sequence[float] | None,
        supersedes: Sequence[Neighbour] = (),
        expires_at: str | None = None,
        head: SubjectHead | None = None,
        outdated_by: str | None = None,
        taken: Sequence[str] = (),
    ) -> bool:
        """Write a new extracted memory, all or none; False when a memory with this id is already stored (a batch
        run again). ConditionFailed when a memory it supersedes, or the subject's pointer, changed meanwhile (the
        caller looks again).

        * ``supersedes``: every current memory of its subject, each marked superseded by it;
        * ``head``: the subject's pointer as read, moved to the new memory (``metadata.statedAt`` is its time);
        * ``outdated_by``: the memory is history from the start, superseded by that newer current memory, and the
          pointer is left alone;
        * ``taken``: memory ids the new memory took in: no longer pending on the pointer (the others stay);
        * ``expires_at`` (ISO 8601 UTC): when it expires (its strategy's ``expiresAfterDays``); a superseded
          memory keeps its own expiry."""
        partition = partition_of(scope)
        content_hash = digest(content)
        data = record_data(
            memory_id=memory_id,
            content=content,
            layer=layer,
            scope=scope,
            tags=tags,
            metadata=metadata,
            created_at=iso(now()),
            occurred_at=occurred_at,
            content_hash=content_hash,
            embedding_model=self._embedder.name,
            created_by=actor,
            expires_at=expires_at,
        )
        marker = self._sync.marker(partition, memory_id, queued=vector is None)
        history = [
            history_item(
                scope, memory_id, "EXTRACT", actor, contentHash=content_hash, provenance=metadata.get("provenance")
            )
        ]
        operations: list[Put] = []
        if outdated_by is not None:
            data.update(supersededBy=outdated_by, supersededAt=data["createdAt"])
            history.append(
                history_item(
                    scope,
                    memory_id,
                    "SUPERSEDE",
                    actor,
                    contentHash=content_hash,
                    supersededBy=outdated_by,
                    reason="outdated",
                )
            )
        elif head is not None:
            left = [pending for pending in head.pending if pending not in set(taken)]
            at = metadata.get("statedAt")
            operations.append(
                pointer_put(partition, head.strategy, head.key, memory_id, at, left, version=head.version)
            )
        if supersedes:
            data["supersedes"] = supersedes[0].data["memoryId"]
        for old_one in supersedes:
            old = {**old_one.data, "supersededBy": memory_id, "supersededAt": data["createdAt"]}
            operations += [
                Put(record_item(partition, old, old_one.version + 1), expect=old_one.version),
                history_item(
                    scope, old["memoryId"], "SUPERSEDE", actor, contentHash=old["contentHash"], supersededBy=memory_id
                ),
            ]
        operations = [Put(record_item(partition, data), expect="absent"), *history, marker, *operations]
        try:
            self._records.write(operations)
        except ConditionFailed:
            if self.get(scope, memory_id) is not None:
                return False
            raise
        if vector is not None:
            self._outbox.settle(marker, self._sync, first=partial(self._sync.write_document, data, vector, 1), new=True)
        return True

    def extend(
        self,
        scope: str,
        neighbour: Neighbour,
        message_ids: list[str],
        actor: str | None,
        *,
        stated_at: str | None = None,
        head: SubjectHead | None = None,
    ) -> bool:
        """Add message ids to the provenance of a memory that states the same fact; False when they were all
        there already and nothing newer was said. ``stated_at``: when the candidate it stands for was said: a
        newer time becomes the memory's ``statedAt`` (and its subject pointer's, given ``head``), since it now
        stands for that statement. ConditionFailed when the memory or the pointer changed meanwhile."""
        data = neighbour.data
        metadata = dict(data.get("metadata") or {})
        provenance = dict(metadata.get("provenance") or {})
        known = list(provenance.get("messageIds") or [])
        added = [message_id for message_id in message_ids if message_id not in known]
        newer = stated_at is not None and (epoch(stated_at) or 0.0) > (epoch(time_of(data)) or float("-inf"))
        if not added and not newer:
            return False
        provenance["messageIds"] = known + added
        metadata["provenance"] = provenance
        if newer:
            metadata["statedAt"] = stated_at
        updated = {**data, "metadata": metadata}
        partition = partition_of(scope)
        operations = [
            Put(record_item(partition, updated, neighbour.version + 1), expect=neighbour.version),
            history_item(scope, data["memoryId"], "EXTEND", actor, contentHash=data["contentHash"], messageIds=added),
        ]
        if newer and head is not None and head.memory_id == data["memoryId"] and head.version is not None:
            operations.append(
                pointer_put(
                    partition, head.strategy, head.key, head.memory_id, stated_at, head.pending, version=head.version
                )
            )
        self._records.write(operations)
        return True

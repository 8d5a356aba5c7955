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
  memory out unless asked, and memory_history shows both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mnemo.context import Layer
from mnemo.memory.indexing import CONTENT_HASH, NAMESPACE
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.records import digest, history_item, iso, now, partition_of, record_data, record_item, record_sk
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
        k: int = 5,
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
        standing = [
            Neighbour(item.data, item.version, ids[item.data["memoryId"]])
            for item in items
            if not item.data.get("supersededBy") and not item.data.get("orphaned")
        ]
        return sorted(standing, key=lambda neighbour: (-neighbour.similarity, neighbour.data["memoryId"]))

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
        supersedes: Neighbour | None = None,
        expires_at: str | None = None,
    ) -> bool:
        """Write a new extracted memory (and mark the one it supersedes), all or none; False when a memory with
        this id is already stored (a batch run again). ConditionFailed when the superseded memory changed
        meanwhile (the caller looks again). ``expires_at`` (ISO 8601 UTC): when it expires (its strategy's
        ``expiresAfterDays``); a superseded memory keeps its own expiry."""
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
        operations: list[Put] = [
            Put(record_item(partition, data), expect="absent"),
            history_item(
                scope, memory_id, "EXTRACT", actor, contentHash=content_hash, provenance=metadata.get("provenance")
            ),
            marker,
        ]
        if supersedes is not None:
            data["supersedes"] = supersedes.data["memoryId"]
            old = {**supersedes.data, "supersededBy": memory_id, "supersededAt": data["createdAt"]}
            operations += [
                Put(record_item(partition, old, supersedes.version + 1), expect=supersedes.version),
                history_item(
                    scope, old["memoryId"], "SUPERSEDE", actor, contentHash=old["contentHash"], supersededBy=memory_id
                ),
            ]
        try:
            self._records.write(operations)
        except ConditionFailed:
            if self.get(scope, memory_id) is not None:
                return False
            raise
        if vector is not None:
            self._outbox.settle(marker, self._sync, first=self._sync.upsert(data, vector, version=1), new=True)
        return True

    def extend(self, scope: str, neighbour: Neighbour, message_ids: list[str], actor: str | None) -> bool:
        """Add message ids to the provenance of a memory that states the same fact; False when they were all
        there already. ConditionFailed when the memory changed meanwhile."""
        data = neighbour.data
        metadata = dict(data.get("metadata") or {})
        provenance = dict(metadata.get("provenance") or {})
        known = list(provenance.get("messageIds") or [])
        added = [message_id for message_id in message_ids if message_id not in known]
        if not added:
            return False
        provenance["messageIds"] = known + added
        metadata["provenance"] = provenance
        updated = {**data, "metadata": metadata}
        partition = partition_of(scope)
        self._records.write(
            [
                Put(record_item(partition, updated, neighbour.version + 1), expect=neighbour.version),
                history_item(
                    scope, data["memoryId"], "EXTEND", actor, contentHash=data["contentHash"], messageIds=added
                ),
            ]
        )
        return True

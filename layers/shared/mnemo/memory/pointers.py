"""Knowledge pointers: the memories that mirror knowledge items, written and orphaned by sync only.

A pointer's id is derived from its knowledge item, so a replayed sync rewrites
the same memory; a version check makes a concurrent edit a CONFLICT, not a lost
write. A pointer whose item is gone is kept, marked orphaned, and taken out of
search.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from mnemo.context import Layer
from mnemo.errors import Conflict
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.records import digest, history_item, iso, now, orphaned, partition_of, record_data, record_sk
from mnemo.outbox import IndexOutbox
from mnemo.ports import ConditionFailed, Embedder, Item, Put, RecordStore


def _says_the_same(stored: dict[str, Any], content: str, layer: str, tags: list[str], pointer: dict[str, Any]) -> bool:
    """Whether a stored knowledge pointer already says what sync would write, apart from when it synced."""
    before = stored.get("metadata", {}).get("knowledgePointer", {})
    return (
        not stored.get("orphaned")
        and (stored.get("content"), stored.get("layer"), stored.get("tags")) == (content, layer, tags)
        and _unsynced(before) == _unsynced(pointer)
    )


def _unsynced(pointer: dict[str, Any]) -> dict[str, Any]:
    """A pointer's fields apart from when it was synced."""
    return {key: value for key, value in pointer.items() if key != "syncedAt"}


class KnowledgePointers:
    """``put_pointer`` and ``orphan_pointer``: what sync (``mnemo.sync.service``) calls.

    It writes pointer records and their history, and settles their outbox markers against ``sync``.
    """

    def __init__(self, records: RecordStore, embedder: Embedder, outbox: IndexOutbox, sync: MemoryIndexSync) -> None:
        self._records = records
        self._embedder = embedder
        self._outbox = outbox
        self._sync = sync

    def put_pointer(
        self,
        scope: str,
        layer: Layer,
        memory_id: str,
        content: str,
        tags: list[str],
        pointer: dict[str, Any],
        actor: str,
    ) -> None:
        """Create or refresh the memory that mirrors a knowledge item (written by sync).

        The id is derived from the item, so a replayed sync rewrites the same
        memory; a version check makes a concurrent edit a CONFLICT, not a lost write.
        """
        partition = partition_of(scope)
        existing = self._records.get(partition, record_sk(memory_id))
        if existing is not None and _says_the_same(existing.data, content, layer, tags, pointer):
            # Only the sync time would change: no new version or history item. The index write stays (through
            # the outbox, as every index write), as a forced sync is how an operator repairs a pointer's entry.
            marker = self._sync.marker(partition, memory_id)
            self._records.write([marker])
            vectors = self._sync.try_embed([content])
            if vectors:  # without one, the marker waits for a drain
                first = partial(self._sync.write_document, existing.data, vectors[0], existing.version)
                self._outbox.settle(marker, self._sync, first=first)
            return
        data = record_data(
            memory_id=memory_id,
            content=content,
            layer=layer,
            scope=scope,
            tags=tags,
            metadata={"source": "knowledge_sync", "knowledgePointer": pointer},
            created_at=existing.data["createdAt"] if existing else iso(now()),
            occurred_at=None,
            content_hash=digest(content),
            embedding_model=self._embedder.name,
            created_by=actor,
        )
        event = "SYNC_UPDATE" if existing else "SYNC_ADD"
        version = existing.version + 1 if existing else 1
        expect: int | Literal["absent"] = existing.version if existing else "absent"
        put = Put(Item(partition, record_sk(memory_id), data, version=version), expect=expect)
        marker = self._sync.marker(partition, memory_id)
        try:
            self._records.write(
                [put, history_item(scope, memory_id, event, actor, contentHash=data["contentHash"]), marker]
            )
        except ConditionFailed:
            raise Conflict("The knowledge pointer changed while it was being written; retry") from None
        vectors = self._sync.try_embed([content])
        if vectors:  # without one, the marker waits for a drain
            self._outbox.settle(marker, self._sync, first=partial(self._sync.write_document, data, vectors[0], version))

    def orphan_pointer(self, scope: str, memory_id: str, actor: str) -> bool:
        """Mark a knowledge pointer orphaned (its item is gone) and take it out of search.

        The record is kept (with an ORPHAN history item); False when it is absent or already orphaned, so a
        replayed sync changes nothing. CONFLICT when the pointer changed meanwhile.
        """
        partition = partition_of(scope)
        existing = self._records.get(partition, record_sk(memory_id))
        if existing is None or existing.data.get("orphaned"):
            return False
        data = orphaned(existing.data)
        marker = self._sync.marker(partition, memory_id)
        try:
            self._records.write(
                [
                    Put(Item(partition, existing.sk, data, version=existing.version + 1), expect=existing.version),
                    history_item(scope, memory_id, "ORPHAN", actor, contentHash=data["contentHash"]),
                    marker,
                ]
            )
        except ConditionFailed:
            raise Conflict("The knowledge pointer changed while it was being orphaned; retry") from None
        self._outbox.settle(marker, self._sync, first=partial(self._sync.delete_document, memory_id))
        return True

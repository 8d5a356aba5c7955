"""Keeping the vector index in line with the memory records: outbox markers, index writes, re-syncs, reindex.

A memory_add indexes the new memory before it writes the record and writes a
(queued) outbox marker only when that index write failed (``try_insert``; the
reasons: ``mnemo.memory.writes``). Every other memory write carries an index
outbox marker (``mnemo.outbox``) in the same all-or-nothing write; the writing
request then indexes the record and settles its marker, and whatever it could
not index is taken up by the stream indexer or a drain (``sync_index``,
``sync_reference``), from the record as it is now. ``reindex`` rebuilds the
whole index from the records.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mnemo.errors import MnemoError
from mnemo.memory.indexing import NAMESPACE, embedding_text, index_doc
from mnemo.memory.records import PARTITION, is_record, memory_id_of, partition_of, record_sk
from mnemo.outbox import GONE, IndexOutbox, Reference
from mnemo.ports import Embedder, InsertingIndex, Item, Put, RecordStore, VectorIndex

logger = logging.getLogger(__name__)


def token_of(item: Item | None) -> str:
    """The outbox version token of a memory record as read: GONE once it is deleted or orphaned."""
    return GONE if item is None or item.data.get("orphaned") else str(item.version)


class MemoryIndexSync:
    """The memory family as the index outbox sees it, and the index writes every memory write settles with.

    It is the ``IndexedFamily`` the writes and pointers settle their markers against; the service
    answers for it to the outbox's drains and the stream indexer.
    """

    #: The outbox family: memories are indexed in the namespace of the same name.
    family = NAMESPACE

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox

    # ------------------------------------------------ what writers use
    def marker(self, pk: str, memory_id: str, *, queued: bool = False) -> Put:
        """The outbox marker to write with the memory record ``memory_id`` in partition ``pk``.

        ``queued``: the writer has no vector and will not index the record, so the stream indexer takes it.
        """
        return self._outbox.marker(self.family, {"pk": pk, "sk": record_sk(memory_id)}, queued=queued)

    def try_embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, or an empty list when the embedder fails (logged, never raised).

        A write goes on without vectors: its record is stored and its marker waits for the indexer.
        """
        try:
            return [list(vector) for vector in self._embedder.embed(texts)]
        except MnemoError as error:
            logger.warning("embedding failed; the memory is stored and queued for indexing: %s", error.message)
            return []

    def try_insert(self, data: dict[str, Any], vector: Sequence[float]) -> bool:
        """Index a memory whose record is not written yet (a new id); False, logged, when the index failed.

        An index that can write a never-held id without looking for earlier copies (``InsertingIndex``:
        OpenSearch Serverless) does so, within its short write timeout.
        """
        docs = [index_doc(data, vector)]
        try:
            if isinstance(self._index, InsertingIndex):
                self._index.insert(NAMESPACE, docs)
            else:
                self._index.upsert(NAMESPACE, docs)
        except Exception as error:  # any index failure or timeout: the record is written with a queued marker
            logger.warning("indexing memory %s failed; queued for the indexer: %s", data["memoryId"], error)
            return False
        return True

    def write_document(self, data: dict[str, Any], vector: Sequence[float], version: int) -> str:
        """Index a record just written at ``version``; its version token (a first write for ``IndexOutbox.settle``,
        which callers hand it as ``functools.partial(write_document, ...)``)."""
        self._index.upsert(NAMESPACE, [index_doc(data, vector)])
        return str(version)

    def delete_document(self, memory_id: str) -> str:
        """Remove the index document of a record just deleted or orphaned; ``GONE``."""
        self._index.delete(NAMESPACE, [memory_id])
        return GONE

    # --------------------------------------------- what the outbox calls
    def version_token(self, ref: Reference) -> str:
        """The memory record's current outbox version token (GONE when deleted or orphaned)."""
        return token_of(self._records.get(ref["pk"], ref["sk"]))

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one memory record: upsert it, or remove it if it is gone.

        Idempotent and order-free (it reads the current record), so stream
        redeliveries, drains and replays are harmless. Returns the version token indexed.
        """
        memory_id = memory_id_of(ref["sk"])
        item = self._records.get(ref["pk"], ref["sk"])
        if item is None or item.data.get("orphaned"):
            self._index.delete(NAMESPACE, [memory_id])
            return GONE
        vector = self._embedder.embed(self._embedding_texts([item.data]))[0]
        self._index.upsert(NAMESPACE, [index_doc(item.data, vector)])
        return token_of(item)

    @staticmethod
    def index_entry(ref: Reference) -> tuple[str, str]:
        """The index namespace and document id of a memory record (``IndexOutbox`` rechecks)."""
        return NAMESPACE, memory_id_of(ref["sk"])

    def sync_index(self, pk: str, sk: str, *, removed: bool = False) -> str:
        """The stream indexer's entry: each record version is indexed once (``IndexOutbox.on_stream``).

        "settled" when the write's own request indexed it, "pending" while that request is at it,
        "indexed" when it was left queued and is indexed now, "queued" when that failed. A removal
        (``removed``) that no marker covers, such as an item deleted outside Mnemo, still takes the memory
        out of the index when the record is gone: a delete costs no embedding, and an orphan would be found
        by searches until ``mnemo reindex``.
        """
        ref = {"pk": pk, "sk": sk}
        outcome = self._outbox.on_stream(self, ref)
        if removed and outcome == "settled" and self._records.get(pk, sk) is None:
            self._index.delete(NAMESPACE, [memory_id_of(sk)])
            return "removed"
        return outcome

    # ------------------------------------------------------------ reindex
    def reindex(self, batch: int = 64) -> int:
        """Rebuild the vector index from the records (the source of truth); the number of memories indexed.

        Clears the namespace first, so searches find less until it is done; orphaned pointers stay out.
        """
        self._index.clear(NAMESPACE)
        pending: list[dict[str, Any]] = []
        total = 0

        def flush() -> None:
            vectors = self._embedder.embed(self._embedding_texts(pending))
            self._index.upsert(NAMESPACE, [index_doc(d, v) for d, v in zip(pending, vectors, strict=True)])
            pending.clear()

        for item in self._records.scan(PARTITION):
            if is_record(item.sk) and not item.data.get("orphaned"):
                pending.append(item.data)
                total += 1
                if len(pending) >= batch:
                    flush()
        if pending:
            flush()
        return total

    def _embedding_texts(self, records: Sequence[dict[str, Any]]) -> list[str]:
        """What to embed for stored memories: each one's content, then its linked predecessor's if that exists."""
        linked = {(partition_of(data["scope"]), record_sk(data["after"])) for data in records if data.get("after")}
        before = {
            item.data["memoryId"]: item.data["content"]
            for item in self._records.batch_get(sorted(linked))
            if not item.data.get("orphaned")
        }
        return [embedding_text(data["content"], before.get(data.get("after") or "")) for data in records]

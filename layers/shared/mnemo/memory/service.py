"""Memory domain rules: layers, scope, dedupe, idempotency, hybrid ranking, history.

Records are the source of truth; the vector index only finds ids, and every
hit is read back from the records before it reaches a caller, so a stale or
foreign index entry can never leak.

``MemoryService`` is one facade over parts that each do one job and hold only the ports they use:

* ``mnemo.memory.writes``: ``add`` and ``delete`` (layer checks, near-duplicates, idempotency keys with
  ``mnemo.memory.keys``, history);
* ``mnemo.memory.batch_items``: ``add_batch`` and ``delete_batch`` (the same writes, one result per item);
* ``mnemo.memory.search``: ``search`` and ``history``;
* ``mnemo.memory.browse``: ``list_layer`` and ``history_page`` (the reads that take no query);
* ``mnemo.memory.pointers``: the knowledge pointers sync writes and orphans;
* ``mnemo.memory.extracted``: the memories extraction writes (kept, added, superseded);
* ``mnemo.memory.outbox_sync``: the index outbox family, the stream indexer's entry and ``reindex``;
* ``mnemo.memory.expiry``: expired memories removed, their history kept (``expiry``).

The records' keys and item shape are in ``mnemo.memory.records``, the index
documents in ``mnemo.memory.indexing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from mnemo.context import Layer, RequestContext
from mnemo.memory.batch_items import MemoryBatches
from mnemo.memory.batch_models import (
    MemoryAddBatchInput,
    MemoryAddBatchOutput,
    MemoryDeleteBatchInput,
    MemoryDeleteBatchOutput,
)
from mnemo.memory.browse import MemoryBrowse
from mnemo.memory.expiry import MemoryExpiry
from mnemo.memory.extracted import ExtractedMemories
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.models import (
    MemoryAddInput,
    MemoryAddOutput,
    MemoryDeleteInput,
    MemoryDeleteOutput,
    MemoryHistoryInput,
    MemoryHistoryOutput,
    MemoryListInput,
    MemoryListOutput,
    MemorySearchInput,
    MemorySearchOutput,
)
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.pointers import KnowledgePointers
from mnemo.memory.search import MemorySearch
from mnemo.memory.writes import MemoryWrites, NewMemory
from mnemo.outbox import IndexOutbox, Reference
from mnemo.ports import Embedder, Item, RecordStore, VectorIndex


class MemoryService:
    """The memory tools' service over one set of ports (records, vector index, embedder, index outbox).

    Every method hands the call to the part that owns it. The service is also the memory family the
    index outbox drains (``family``, ``version_token``, ``sync_reference``, ``index_entry``) and the
    stream indexer calls (``sync_index``).
    """

    #: The outbox family: memories are indexed in the namespace of the same name.
    family = NAMESPACE

    def __init__(
        self,
        records: RecordStore,
        index: VectorIndex,
        embedder: Embedder,
        outbox: IndexOutbox,
        *,
        dedupe_similarity: float = 0.95,
    ) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox
        self._dedupe_similarity = dedupe_similarity
        self._sync = MemoryIndexSync(records, index, embedder, outbox)
        self._writes = MemoryWrites(records, index, embedder, outbox, self._sync, dedupe_similarity=dedupe_similarity)
        self._search = MemorySearch(records, index, embedder)
        self._batches = MemoryBatches(self._writes, self._sync)
        self._browse = MemoryBrowse(records)
        self._pointers = KnowledgePointers(records, embedder, outbox, self._sync)
        #: The writes of extracted memories (mnemo.learning decides, this writes).
        self.extracted = ExtractedMemories(records, index, embedder, outbox, self._sync)
        #: Expired memories removed with their history kept (mnemo.memory.expiry; mnemo.expiry sweeps).
        self.expiry = MemoryExpiry(records, outbox, self._sync)

    # The batch path (mnemo.memory.batch) writes through the same ports with its own transactions.
    @property
    def records(self) -> RecordStore:
        """The record store, the source of truth."""
        return self._records

    @property
    def index(self) -> VectorIndex:
        """The vector index memories are found in (namespace ``memory``)."""
        return self._index

    @property
    def embedder(self) -> Embedder:
        """The embedder every memory vector comes from."""
        return self._embedder

    @property
    def outbox(self) -> IndexOutbox:
        """The index outbox each memory write carries a marker in."""
        return self._outbox

    @property
    def dedupe_similarity(self) -> float:
        """The similarity at or above which an added memory counts as a near-duplicate."""
        return self._dedupe_similarity

    # ------------------------------------------------------------ writes
    def add(self, context: RequestContext, request: MemoryAddInput) -> MemoryAddOutput:
        """Store a memory, or name the one it repeats (see ``MemoryWrites.add``)."""
        return self._writes.add(context, request)

    def delete(self, context: RequestContext, request: MemoryDeleteInput) -> MemoryDeleteOutput:
        """Delete a memory the caller may write (see ``MemoryWrites.delete``)."""
        return self._writes.delete(context, request)

    def add_batch(
        self, context: RequestContext, request: MemoryAddBatchInput, *, deadline: float | None = None
    ) -> MemoryAddBatchOutput:
        """Store up to 100 memories, one result per item (see ``MemoryBatches.add``)."""
        return self._batches.add(context, request, deadline=deadline)

    def delete_batch(
        self, context: RequestContext, request: MemoryDeleteBatchInput, *, deadline: float | None = None
    ) -> MemoryDeleteBatchOutput:
        """Delete up to 100 memories, one result per id (see ``MemoryBatches.delete``)."""
        return self._batches.delete(context, request, deadline=deadline)

    def new_record(
        self,
        context: RequestContext,
        request: MemoryAddInput,
        scope: str,
        previous: tuple[str, str] | None,
        content_hash: str | None = None,
        *,
        last: Item | Literal["unread"] | None = "unread",
        queued: bool = False,
        memory_id: str | None = None,
        request_digest: str | None = None,
    ) -> NewMemory:
        """The record of a new memory and its operations, not yet written (see ``MemoryWrites.new_record``)."""
        return self._writes.new_record(
            context,
            request,
            scope,
            previous,
            content_hash,
            last=last,
            queued=queued,
            memory_id=memory_id,
            request_digest=request_digest,
        )

    def repeat_candidates(
        self, scope: str, vector: Sequence[float], content_hash: str | None, floor: float | None = None
    ) -> list[str]:
        """Indexed memories this content may repeat, best first (see ``MemoryWrites.repeat_candidates``)."""
        return self._writes.repeat_candidates(scope, vector, content_hash, floor)

    def pointed(self, partition: str, last: Item | None) -> tuple[str, str | None, str] | None:
        """The id, day and content of the dated memory a scope's LAST pointer names (see ``MemoryWrites.pointed``)."""
        return self._writes.pointed(partition, last)

    def replay(self, partition: str, key: str, request_digest: str) -> MemoryAddOutput | None:
        """The answer stored for an idempotency key, if any (see ``MemoryWrites.replay``)."""
        return self._writes.replay(partition, key, request_digest)

    # ------------------------------------------------------------- reads
    def search(self, context: RequestContext, request: MemorySearchInput) -> MemorySearchOutput:
        """One page of the memories matching a query (see ``MemorySearch.search``)."""
        return self._search.search(context, request)

    def history(self, context: RequestContext, memory_id: str) -> list[dict[str, Any]]:
        """Every recorded change to a readable memory, oldest first (see ``MemorySearch.history``)."""
        return self._search.history(context, memory_id)

    def list_layer(self, context: RequestContext, request: MemoryListInput) -> MemoryListOutput:
        """One page of a layer's memories, newest first (see ``MemoryBrowse.list_layer``)."""
        return self._browse.list_layer(context, request)

    def history_page(self, context: RequestContext, request: MemoryHistoryInput) -> MemoryHistoryOutput:
        """One page of a memory's changes, oldest first (see ``MemoryBrowse.history_page``)."""
        return self._browse.history_page(context, request)

    # --------------------------------------------------------- pointers
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
        """Create or refresh the memory mirroring a knowledge item (see ``KnowledgePointers.put_pointer``)."""
        self._pointers.put_pointer(scope, layer, memory_id, content, tags, pointer, actor)

    def orphan_pointer(self, scope: str, memory_id: str, actor: str) -> bool:
        """Mark a knowledge pointer orphaned (see ``KnowledgePointers.orphan_pointer``)."""
        return self._pointers.orphan_pointer(scope, memory_id, actor)

    # ------------------------------------------------------ index outbox
    def version_token(self, ref: Reference) -> str:
        """The memory record's current outbox version token (see ``MemoryIndexSync.version_token``)."""
        return self._sync.version_token(ref)

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one memory record; idempotent (see ``MemoryIndexSync.sync_reference``)."""
        return self._sync.sync_reference(ref)

    index_entry = staticmethod(MemoryIndexSync.index_entry)

    def sync_index(self, pk: str, sk: str, *, removed: bool = False) -> str:
        """The stream indexer's entry for one record change (see ``MemoryIndexSync.sync_index``)."""
        return self._sync.sync_index(pk, sk, removed=removed)

    def reindex(self, batch: int = 64) -> int:
        """Rebuild the memory index from the records (see ``MemoryIndexSync.reindex``)."""
        return self._sync.reindex(batch)

"""Memory domain rules: layers, scope, dedupe, idempotency, hybrid ranking, history.

Records are the source of truth; the vector index only finds ids, and every
hit is read back from the records before it reaches a caller, so a stale or
foreign index entry can never leak.

``MemoryService`` is made of its parts, one module each:

* ``mnemo.memory.writes``: ``add`` and ``delete`` (layer checks, near-duplicates, idempotency, history);
* ``mnemo.memory.search``: ``search`` and ``history``;
* ``mnemo.memory.browse``: ``list_layer`` and ``history_page`` (the reads that take no query);
* ``mnemo.memory.pointers``: the knowledge pointers sync writes and orphans;
* ``mnemo.memory.outbox_sync``: the index outbox family, the stream indexer's entry and ``reindex``.

The records' keys and item shape are in ``mnemo.memory.records``, the index
documents in ``mnemo.memory.indexing``.
"""

from __future__ import annotations

from mnemo.memory.browse import MemoryBrowse
from mnemo.memory.pointers import KnowledgePointers
from mnemo.memory.search import MemorySearch
from mnemo.memory.writes import MemoryWrites
from mnemo.outbox import IndexOutbox
from mnemo.ports import Embedder, RecordStore, VectorIndex


class MemoryService(MemoryWrites, KnowledgePointers, MemorySearch, MemoryBrowse):
    """The memory tools' service over one set of ports (records, vector index, embedder, index outbox)."""

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

    # The batch path (mnemo.memory.batch) writes through the same ports with its own transactions.
    @property
    def records(self) -> RecordStore:
        return self._records

    @property
    def index(self) -> VectorIndex:
        return self._index

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def outbox(self) -> IndexOutbox:
        return self._outbox

    @property
    def dedupe_similarity(self) -> float:
        return self._dedupe_similarity

"""Adding many memories at once: the rules of ``MemoryService.add``, paid per batch instead of per memory.

One call takes any number of ``MemoryAddInput`` for one request context and
answers one ``MemoryAddOutput`` per request, in input order. The rules are
``add``'s:

* **Refused before anything is written.** Every request's layer is checked
  (ids in the context, the writer role for shared layers) and every
  idempotency key is looked up before the first write; a refusal names the
  request's position (``details.index``) and nothing is stored.
* **Idempotency.** A key already stored answers its stored response
  (``replayed``); the same key with a different request is CONFLICT. Within
  one call, a repeated key with the same request replays the first. A keyed
  request's memory takes the key's derived id, as ``add`` stores it
  (``mnemo.memory.keys``), so either path finds the other's keys.
* **Near-duplicates.** A memory whose vector is at least ``dedupe_similarity``
  from one already stored in its scope, or from one added earlier in the same
  call, is not stored: its answer names the existing memory with
  ``deduplicated: true`` and a DEDUPE history item is written, as ``add``
  does. Exact repeats of content in one scope are caught without a vector, so
  they are deduplicated even while the embedder is down. A request with
  ``dedupe`` false is stored whatever it repeats, in the scope or in the call.
* **Same-write outbox markers.** Each new record (its ADD history entry folded
  in) goes out with its index outbox marker in the same all-or-nothing write (a
  deduplicated keyed request's DEDUPE item with its idempotency record). Writes carry whole memories only, at most
  ``MAX_WRITE_OPERATIONS`` operations each.
* **Indexing, then settling.** After a batch is written, its documents go to
  the index in one upsert, their versions are read back in one batch read, and
  the markers are cleared in batched deletes. If the embedder or the index
  fails, the records stay stored and their markers stay queued for the outbox
  drain, exactly as after ``add``.

Embedding is one call per ``EMBED_BATCH`` texts. A caller that already holds
vectors from this service's embedder may pass them (``vectors``), which skips
the model entirely.

Retrying an import is safe through the near-duplicate check (a memory that
reached the index is found again with similarity 1.0) and, for a retry while
records still wait for their index write, through idempotency keys: ``mnemo
import`` derives a deterministic key for every line that does not carry one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError
from mnemo.memory.batch_requests import AddOutcome, Entry, at_position, prepare, resolve_idempotency
from mnemo.memory.batch_similarity import SIMILAR_CAP, InCallMemories, ScopeWindow
from mnemo.memory.indexing import NAMESPACE, embedding_text, index_doc
from mnemo.memory.models import MemoryAddInput, MemoryAddOutput
from mnemo.memory.outbox_sync import token_of
from mnemo.memory.records import LAST, day_of, epoch_of, idempotency_item, iso, outlives, record_sk, request_hash
from mnemo.memory.service import MemoryService
from mnemo.memory.writes import deduplicated
from mnemo.outbox import Reference
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Put

#: The batch path's names; ``request_hash`` (``mnemo.memory.records``) stays importable here for ``mnemo import``.
__all__ = [
    "DEFAULT_BATCH",
    "EMBED_BATCH",
    "AddOutcome",
    "BatchAdd",
    "Progress",
    "add_many",
    "add_many_outcomes",
    "request_hash",
]

#: Texts per embedder call.
EMBED_BATCH = 256
#: Memories embedded, checked, written and indexed together (the unit of progress).
DEFAULT_BATCH = 500

logger = logging.getLogger(__name__)


#: Told (memories done, memories in the call) after each batch.
Progress = Callable[[int, int], None]


class BatchAdd:
    """One batch import for one request context (see the module docstring)."""

    def __init__(
        self,
        service: MemoryService,
        context: RequestContext,
        *,
        batch: int = DEFAULT_BATCH,
        progress: Progress | None = None,
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self._service = service
        self._context = context
        self._batch = batch
        self._progress = progress
        self._records = service.records
        self._index = service.index
        self._embedder = service.embedder
        self._outbox = service.outbox
        self._threshold = service.dedupe_similarity
        #: (scope, content hash) -> memory id, for every memory stored in this call.
        self._by_content: dict[tuple[str, str], str] = {}
        #: Ids written in this call (they exist: no read needed to trust an index hit on them).
        self._written: set[str] = set()
        #: memory id -> its expires_at (epoch seconds, None: never), for every memory stored in this call.
        self._expires: dict[str, int | None] = {}
        self._similar = InCallMemories(SIMILAR_CAP, self._threshold)
        #: partition -> (memory id, day, content) of the dated memory added last there (None: none).
        self._last: dict[str, tuple[str, str | None, str] | None] = {}
        #: Memories stored in this call whose index write did not happen (embedder or index down): the drain's.
        self.queued = 0

    # ------------------------------------------------------------ entry
    def run(
        self, requests: Sequence[MemoryAddInput], vectors: Sequence[Sequence[float]] | None = None
    ) -> list[AddOutcome]:
        """Add ``requests`` (the module's rules), one outcome per request in input order.

        ``vectors``, if given, are one per request from this service's embedder. Refusals (INVALID_INPUT,
        UNAUTHORIZED, CONFLICT for a reused key) come before the first write and name the request's position;
        a CONFLICT raised later leaves the batches before it stored. Progress is told after each batch.
        """
        if vectors is not None and len(vectors) != len(requests):
            raise InvalidInput(f"vectors: {len(vectors)} given for {len(requests)} requests", {"field": "vectors"})
        entries = prepare(self._context, requests, vectors, self._embedder.dimensions)
        resolve_idempotency(self._records, entries)
        done = 0
        for start in range(0, len(entries), self._batch):
            window = entries[start : start + self._batch]
            self._add_window(window)
            done += len(window)
            if self._progress is not None:
                self._progress(done, len(entries))
        outcomes = [entry.outcome for entry in entries]
        assert all(outcome is not None for outcome in outcomes)
        return [outcome for outcome in outcomes if outcome is not None]

    # ------------------------------------------------------------ one batch
    def _add_window(self, window: list[Entry]) -> None:
        # Entries with an outcome are replays of stored keys; a replay_of waits for the entry it repeats.
        todo = [entry for entry in window if entry.outcome is None and entry.replay_of is None]
        self._embed(todo)
        self._check_duplicates(todo)
        self._embed_pairs(todo)
        written: list[Entry] = []
        for group in self._writes(window):
            written += self._write(group)
        self._answer_replays(window)
        stored = [entry for entry in written if entry.data is not None]
        self.queued += sum(entry.index_vector is None for entry in stored)
        self._index_written([entry for entry in stored if entry.index_vector is not None])

    def _embed(self, entries: list[Entry]) -> None:
        """One embedder call per EMBED_BATCH distinct texts; on failure those entries go without vectors.

        Every distinct text of the batch is embedded, even one this call already stored: a model whose
        vectors shift a little with their batch-mates (int8 bge) then gives a retried import the vectors
        it gave the first run, so near-duplicate decisions at the threshold come out the same.
        """
        needed: dict[str, list[Entry]] = {}
        for entry in entries:
            if entry.vector is None:
                needed.setdefault(entry.request.content, []).append(entry)
        texts = list(needed)
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = texts[start : start + EMBED_BATCH]
            try:
                vectors = self._embedder.embed(chunk)
            except MnemoError as error:
                logger.warning(
                    "embedding %d memories failed; they are stored and queued for indexing: %s",
                    len(chunk),
                    error.message,
                )
                continue
            for text, vector in zip(chunk, vectors, strict=True):
                for entry in needed[text]:
                    entry.vector = list(vector)

    def _check_duplicates(self, todo: list[Entry]) -> None:
        """Decide every entry in order, as one-by-one adds would: each sees the ones before it.

        The similarities to memories kept in ``InCallMemories`` and among the window's
        own entries come from one matrix product per scope; the store is asked
        (knn, top 3) per entry only in scopes that are not fresh.
        """
        by_scope: dict[str, list[Entry]] = {}
        for entry in todo:
            if entry.vector is not None:
                by_scope.setdefault(entry.scope, []).append(entry)
        windows: dict[str, ScopeWindow] = {}
        row_of: dict[int, int] = {}
        for scope, entries in by_scope.items():
            vectors = [entry.vector for entry in entries if entry.vector is not None]
            if scope not in self._similar.fresh:
                self._similar.fresh[scope] = not self._index.knn(NAMESPACE, vectors[0], {"scope": [scope]}, 1)
            windows[scope] = ScopeWindow(self._similar, scope, vectors)
            row_of.update((entry.position, row) for row, entry in enumerate(entries))
        for entry in todo:
            row = row_of.get(entry.position)
            window = windows.get(entry.scope)
            self._decide(entry, window.best(row) if window is not None and row is not None else None)
            if entry.data is not None and window is not None and row is not None:
                window.accept(row, entry.data["memoryId"])
                self._similar.add(entry.scope, entry.data["memoryId"], window.matrix[row])

    def _duplicate_of(self, entry: Entry, in_call: tuple[float, str] | None) -> str | None:
        """The memory this entry repeats: the same content added in this call, else the most similar memory
        at or above the threshold, stored (the index's top 3) or added in this call (``in_call``), that lives
        at least as long as the entry would (``outlives``: docs/lifecycle.md). None for ``dedupe`` false."""
        if not entry.request.dedupe:
            return None
        expires = epoch_of(iso(entry.request.expires_at)) if entry.request.expires_at else None
        in_call_repeat = self._by_content.get((entry.scope, entry.content_hash))
        if in_call_repeat is not None and outlives(self._expires.get(in_call_repeat), expires):
            return in_call_repeat
        if entry.vector is None:  # no vector: only exact repeats are caught (add skips the check entirely)
            return None
        floor = max(self._threshold, in_call[0]) if in_call is not None else self._threshold
        if not self._similar.fresh.get(entry.scope):
            for memory_id in self._service.repeat_candidates(entry.scope, entry.vector, entry.content_hash, floor):
                if memory_id in self._written:
                    if outlives(self._expires.get(memory_id), expires):
                        return memory_id
                    continue
                found = self._records.get(entry.partition, record_sk(memory_id))
                if found is not None and not found.data.get("orphaned") and outlives(found.expires_at, expires):
                    return memory_id
        if in_call is not None and in_call[0] >= self._threshold and outlives(self._expires.get(in_call[1]), expires):
            return in_call[1]
        return None

    def _decide(self, entry: Entry, in_call: tuple[float, str] | None) -> None:
        """Deduplicate or build the new record (as ``add`` does, with its builders); the operations that go out
        together."""
        service, request, scope = self._service, entry.request, entry.scope
        duplicate = self._duplicate_of(entry, in_call)
        if duplicate is not None:
            output, entry.operations = deduplicated(self._context, request, scope, duplicate, entry.content_hash)
        else:
            occurred_at = iso(request.occurred_at) if request.occurred_at else None
            previous = self._previous(entry.partition, occurred_at)
            new = service.new_record(
                self._context,
                request,
                scope,
                previous,
                entry.content_hash,
                memory_id=entry.keyed_id,
                request_digest=entry.request_hash if entry.keyed_id else None,
            )
            entry.data, entry.marker, entry.operations, output = new.data, new.marker, new.operations, new.output
            entry.previous_content = previous[1] if previous is not None else None
            if occurred_at:  # the next dated memory of this scope on this day links to this one
                self._last[entry.partition] = (new.data["memoryId"], day_of(occurred_at), request.content)
            self._by_content[(scope, entry.content_hash)] = new.data["memoryId"]
            self._expires[new.data["memoryId"]] = epoch_of(new.data.get("expiresAt"))
        if request.idempotency_key and (duplicate is not None or entry.keyed_id is None):
            entry.operations.append(
                idempotency_item(entry.partition, request.idempotency_key, entry.request_hash, output)
            )
        entry.outcome = AddOutcome(output)

    def _previous(self, partition: str, occurred_at: str | None) -> tuple[str, str] | None:
        """The id and content of the dated memory added last in this scope, if it happened the same day
        (``MemoryWrites._previous``, read from the store once per scope, then kept up to date here)."""
        if not occurred_at:
            return None
        if partition not in self._last:
            self._last[partition] = self._service.pointed(partition, self._records.get(partition, LAST))
        last_here = self._last[partition]
        if last_here is None or last_here[1] != day_of(occurred_at):
            return None
        return last_here[0], last_here[2]

    def _embed_pairs(self, todo: list[Entry]) -> None:
        """The index vectors: the content's own, or the pair's for a linked memory (embedded here, in batches)."""
        linked: list[Entry] = []
        for entry in todo:
            if entry.data is None or entry.vector is None:
                continue
            if entry.previous_content is None:
                entry.index_vector = entry.vector
            else:
                linked.append(entry)
        for start in range(0, len(linked), EMBED_BATCH):
            chunk = linked[start : start + EMBED_BATCH]
            texts = [embedding_text(entry.request.content, entry.previous_content) for entry in chunk]
            try:
                vectors = self._embedder.embed(texts)
            except MnemoError as error:  # stored all the same; the drain indexes them
                logger.warning(
                    "embedding %d linked memories failed; queued for indexing: %s", len(chunk), error.message
                )
                continue
            for entry, vector in zip(chunk, vectors, strict=True):
                entry.index_vector = list(vector)

    @staticmethod
    def _writes(window: list[Entry]) -> list[list[Entry]]:
        """Entries grouped into writes of whole memories, each at most MAX_WRITE_OPERATIONS operations."""
        groups: list[list[Entry]] = []
        current: list[Entry] = []
        size = 0
        for entry in window:
            if not entry.operations:
                continue
            if current and size + len(entry.operations) > MAX_WRITE_OPERATIONS:
                groups.append(current)
                current, size = [], 0
            current.append(entry)
            size += len(entry.operations)
        if current:
            groups.append(current)
        return groups

    def _write(self, group: list[Entry]) -> list[Entry]:
        """Write one group; on a lost condition (a concurrent retry), write its memories one by one."""
        operations: list[Put | Delete] = []
        last: dict[str, Put] = {}  # one pointer write per scope: a transaction names an item once
        for entry in group:
            for operation in entry.operations:
                if isinstance(operation, Put) and operation.item.sk == LAST:
                    last[operation.item.pk] = operation
                else:
                    operations.append(operation)
        try:
            self._records.write([*operations, *last.values()])
        except ConditionFailed:
            return [entry for entry in group if self._write_one(entry)]
        self._written.update(entry.data["memoryId"] for entry in group if entry.data is not None)
        return group

    def _write_one(self, entry: Entry) -> bool:
        try:
            self._records.write(entry.operations)
        except ConditionFailed:
            # A concurrent request with the same idempotency key won the race: answer as it did.
            key = entry.request.idempotency_key
            replay = self._service.replay(entry.partition, key, entry.request_hash) if key else None
            if replay is None:
                raise at_position(
                    Conflict("The memory changed while it was being written; retry"), entry.position
                ) from None
            entry.outcome = AddOutcome(replay, replayed=True)
            entry.data = None
            return False
        if entry.data is not None:
            self._written.add(entry.data["memoryId"])
        return True

    @staticmethod
    def _answer_replays(window: list[Entry]) -> None:
        for entry in window:
            source = entry.replay_of
            if source is not None and entry.outcome is None:
                assert source.outcome is not None  # the request it repeats came first
                entry.outcome = AddOutcome(source.outcome.output, replayed=True)

    # ------------------------------------------------------------ index
    def _index_written(self, entries: list[Entry]) -> None:
        """One upsert for the batch, one read to check versions, batched deletes to clear the markers
        (``IndexOutbox.settle_many``)."""
        if not entries:
            return
        service = self._service
        upserted = False

        def first() -> list[str]:
            nonlocal upserted
            docs = [
                index_doc(e.data, e.index_vector) for e in entries if e.data is not None and e.index_vector is not None
            ]
            self._index.upsert(NAMESPACE, docs)
            upserted = True
            return ["1"] * len(entries)  # each record was just written at version 1

        def current(refs: Sequence[Reference]) -> list[str]:
            keys = [(ref["pk"], ref["sk"]) for ref in refs]
            found = {(item.pk, item.sk): item for item in self._records.batch_get(keys)}
            return [token_of(found.get(key)) for key in keys]

        markers = [entry.marker for entry in entries if entry.marker is not None]
        self.queued += self._outbox.settle_many(markers, service, first, current, new=True)
        if upserted:
            self._similar.indexed({entry.data["memoryId"] for entry in entries if entry.data is not None})


def add_many_outcomes(
    service: MemoryService,
    context: RequestContext,
    requests: Sequence[MemoryAddInput],
    *,
    vectors: Sequence[Sequence[float]] | None = None,
    batch: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> list[AddOutcome]:
    """Add every request (see the module docstring); each answer with whether it was a replay, in input order.

    ``vectors``, when given, are one per request and must come from the service's
    embedder (the same model): they replace the embedder call.
    """
    return BatchAdd(service, context, batch=batch, progress=progress).run(requests, vectors)


def add_many(
    service: MemoryService,
    context: RequestContext,
    requests: Sequence[MemoryAddInput],
    *,
    vectors: Sequence[Sequence[float]] | None = None,
    batch: int = DEFAULT_BATCH,
) -> list[MemoryAddOutput]:
    """``MemoryService.add`` for many requests at once; the answers in input order."""
    return [outcome.output for outcome in add_many_outcomes(service, context, requests, vectors=vectors, batch=batch)]

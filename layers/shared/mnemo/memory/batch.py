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
  one call, a repeated key with the same request replays the first.
* **Near-duplicates.** A memory whose vector is at least ``dedupe_similarity``
  from one already stored in its scope, or from one added earlier in the same
  call, is not stored: its answer names the existing memory with
  ``deduplicated: true`` and a DEDUPE history item is written, as ``add``
  does. Exact repeats of content in one scope are caught without a vector, so
  they are deduplicated even while the embedder is down.
* **Same-write outbox markers.** Each new record goes out with its ADD history
  item, its index outbox marker and its idempotency record in the same
  all-or-nothing write. Writes carry whole memories only, at most
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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError
from mnemo.memory.indexing import NAMESPACE, embedding_text, index_doc
from mnemo.memory.models import MemoryAddInput, MemoryAddOutput
from mnemo.memory.outbox_sync import token_of
from mnemo.memory.records import (
    LAST,
    day_of,
    digest,
    idempotency_item,
    idempotency_key_of,
    idempotency_sk,
    iso,
    key_reused,
    partition_of,
    record_sk,
    replayed,
    request_hash,
)
from mnemo.memory.service import MemoryService
from mnemo.memory.writes import deduplicated, writable_scope
from mnemo.outbox import Reference
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put

#: Texts per embedder call.
EMBED_BATCH = 256
#: Memories embedded, checked, written and indexed together (the unit of progress).
DEFAULT_BATCH = 500
#: The most memories of one fresh scope kept for the in-call near-duplicate check (about 150 MB at 384 dimensions).
SIMILAR_CAP = 100_000
#: The most idempotency records read in one batch read.
_READ_CHUNK = 100
#: Kept memories of one scope from which the in-call check first bounds similarities in a few dimensions (below,
#: one plain product is cheap).
PRUNE_FROM = 8192
#: Dimensions of that bound (principal directions of the kept memories).
PRUNE_DIMENSIONS = 32
#: Kept rows bounded per product (the bounds of one window's memories against them stay in cache).
_BLOCK = 1024
#: Float32 rounding room for the bound: a pair is looked at exactly whenever its bound comes this close.
_ROOM = 1e-3


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AddOutcome:
    """One request's answer, and whether it was replayed from an earlier request with the same key."""

    output: MemoryAddOutput
    replayed: bool = False


#: Told (memories done, memories in the call) after each batch.
Progress = Callable[[int, int], None]


@dataclass
class _Entry:
    position: int
    request: MemoryAddInput
    scope: str
    partition: str
    request_hash: str
    content_hash: str
    #: An earlier entry of this call with the same idempotency key (and request).
    replay_of: _Entry | None = None
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


def _at(error: MnemoError, position: int) -> MnemoError:
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


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # a runtime without numpy (a Lambda layer): plain Python below
        return None
    return numpy


class _Bound:
    """A cheap upper bound on the similarities to one scope's kept memories, to skip most exact products.

    With ``P`` an orthonormal basis of a few principal directions of the kept memories, every vector ``a`` is
    ``P^T P a + a_perp``, so ``a . b = (P a) . (P b) + a_perp . b_perp <= (P a) . (P b) + |a_perp| |b_perp|``
    (Cauchy-Schwarz). That bound is one product of ``PRUNE_DIMENSIONS + 1`` columns, ``[P a, |a_perp|]`` against
    ``[P b, |b_perp|]``; only the pairs whose bound reaches the threshold are compared exactly, so the answer is
    the exact one, found for a fraction of the cost when the memories have structure (and the plain cost plus a
    little when they have none).
    """

    def __init__(self, np: Any, rows: Any) -> None:
        self.np = np
        # The principal directions of the rows kept so far, from their d x d second moments (any orthonormal
        # basis keeps the bound exact; these make it tight).
        moments = rows.T.astype(np.float64) @ rows.astype(np.float64)
        _, directions = np.linalg.eigh(moments)  # ascending eigenvalues
        self.basis = np.ascontiguousarray(directions[:, ::-1][:, :PRUNE_DIMENSIONS], dtype=np.float32)  # d x k
        self.reduced = np.zeros((0, PRUNE_DIMENSIONS + 1), dtype=np.float32)
        self.count = 0

    def project(self, vectors: Any) -> Any:
        np = self.np
        inside = vectors @ self.basis
        rest = vectors - inside @ self.basis.T
        return np.hstack([inside, np.sqrt(np.einsum("ij,ij->i", rest, rest))[:, None]]).astype(np.float32)

    def extend(self, rows: Any, count: int) -> None:
        """Bring the reduced rows up to the first ``count`` kept rows."""
        if count <= self.count:
            return
        if count > self.reduced.shape[0]:
            grown = self.np.zeros((max(2 * self.reduced.shape[0], count), self.reduced.shape[1]), dtype=self.np.float32)
            grown[: self.count] = self.reduced[: self.count]
            self.reduced = grown
        self.reduced[self.count : count] = self.project(rows[self.count : count])
        self.count = count

    def best(self, rows: Any, ids: list[str], matrix: Any, threshold: float) -> list[tuple[float, str] | None]:
        """For each row of ``matrix``, the most similar kept memory if it is at least ``threshold``, else None."""
        np = self.np
        self.extend(rows, len(ids))
        reduced = self.project(matrix)
        floor = threshold - _ROOM
        found_rows, found_columns = [], []
        # Blocks of kept rows small enough for the bounds to stay in cache (the product itself is cheap).
        for start in range(0, len(ids), _BLOCK):
            stop = min(start + _BLOCK, len(ids))
            hits = np.flatnonzero(reduced @ self.reduced[start:stop].T >= floor)  # far cheaper than a 2-d nonzero
            found_rows.append(hits // (stop - start))
            found_columns.append(hits % (stop - start) + start)
        near, columns = np.concatenate(found_rows), np.concatenate(found_columns)
        scores = np.einsum("ij,ij->i", matrix[near], rows[columns])
        keep = scores >= threshold
        near, columns, scores = near[keep], columns[keep], scores[keep]
        # The best per row, the first kept on a tie (as an argmax over every kept row would pick).
        best: dict[int, tuple[float, int]] = {}
        for n, column, score in zip(near.tolist(), columns.tolist(), scores.tolist(), strict=True):
            held = best.get(n)
            if held is None or score > held[0] or (score == held[0] and column < held[1]):
                best[n] = (score, column)
        found: list[tuple[float, str] | None] = [None] * len(matrix)
        for n, (score, column) in best.items():
            found[n] = (score, ids[column])
        return found


class _Similar:
    """Memories added in this call that the store check will not see, per scope: the in-batch near-duplicate check.

    A scope the index held nothing of when the call began is *fresh*: the
    index has nothing to find there but this call's own memories, so every one
    of them is kept here (up to ``cap``) and the per-memory knn is skipped.
    Elsewhere a memory is kept only until the index holds it. Rows live in a
    growing float32 matrix with numpy, in lists without. Once a scope keeps
    ``PRUNE_FROM`` memories, a ``_Bound`` spares most of the exact products.
    """

    def __init__(self, cap: int, threshold: float) -> None:
        self.np = _numpy()
        self._cap = cap
        self._threshold = threshold
        self._ids: dict[str, list[str]] = {}
        self._rows: dict[str, Any] = {}
        self._bounds: dict[str, _Bound] = {}
        #: scope -> True while the knn is skipped for it.
        self.fresh: dict[str, bool] = {}

    def add(self, scope: str, memory_id: str, vector: Any) -> None:
        ids = self._ids.setdefault(scope, [])
        if self.np is None:
            self._rows.setdefault(scope, []).append(vector)
        else:
            rows = self._rows.get(scope)
            if rows is None or len(ids) == rows.shape[0]:
                grown = self.np.zeros((max(64, 2 * len(ids)), len(vector)), dtype=self.np.float32)
                if rows is not None:
                    grown[: len(ids)] = rows[: len(ids)]
                rows = self._rows[scope] = grown
            rows[len(ids)] = vector
        ids.append(memory_id)

    def indexed(self, memory_ids: set[str]) -> None:
        """These memories are in the index now: knn finds them, so only fresh scopes keep them (up to the cap)."""
        for scope, ids in self._ids.items():
            if self.fresh.get(scope) and len(ids) <= self._cap:
                continue
            self.fresh[scope] = False
            keep = [n for n, memory_id in enumerate(ids) if memory_id not in memory_ids]
            if len(keep) < len(ids):
                rows = self._rows[scope]
                self._rows[scope] = [rows[n] for n in keep] if self.np is None else rows[keep]
                self._ids[scope] = [ids[n] for n in keep]
                self._bounds.pop(scope, None)  # its reduced rows no longer line up

    def best(self, scope: str, matrix: Any) -> list[tuple[float, str] | None]:
        """For each row of ``matrix``, the most similar memory kept for the scope (None, or any one below the
        threshold, when none reaches it: the caller only uses an answer at or above it)."""
        ids = self._ids.get(scope)
        if not ids:
            return [None] * len(matrix)
        rows = self._rows[scope]
        if self.np is not None and len(ids) >= PRUNE_FROM and matrix.shape[1] > 2 * PRUNE_DIMENSIONS:
            bound = self._bounds.get(scope)
            if bound is None:
                bound = self._bounds[scope] = _Bound(self.np, rows[: len(ids)])
            return bound.best(rows, ids, matrix, self._threshold)
        scores = _similarities(self.np, matrix, rows[: len(ids)])
        if self.np is None:
            tops = [max(range(len(row)), key=row.__getitem__) for row in scores]
            return [(scores[n][top], ids[top]) for n, top in enumerate(tops)]
        tops = self.np.argmax(scores, axis=1)
        return [(float(scores[n, top]), ids[top]) for n, top in enumerate(tops.tolist())]


class _ScopeWindow:
    """One scope's entries (those with vectors) of one window: similarities to the memories kept in
    ``_Similar`` and to each other, from two matrix products, so each entry can see those accepted before it."""

    def __init__(self, similar: _Similar, scope: str, vectors: list[list[float]]) -> None:
        self.np = np = similar.np
        self.matrix = vectors if np is None else np.asarray(vectors, dtype=np.float32)
        self._kept = similar.best(scope, self.matrix)
        self._within = _similarities(np, self.matrix, self.matrix)
        self._ids: list[str | None] = [None] * len(vectors)
        self._accepted = 0
        self._mask = None if np is None else np.zeros(len(vectors), dtype=bool)

    def best(self, row: int) -> tuple[float, str] | None:
        """The most similar memory kept from earlier or accepted earlier in this window."""
        found = self._kept[row]
        if not self._accepted:
            return found
        if self.np is None:
            scored = [(self._within[row][n], i) for n, i in enumerate(self._ids) if i is not None]
            here: tuple[float, str] = max(scored)
        else:
            scores = self.np.where(self._mask, self._within[row], -self.np.inf)
            top = int(self.np.argmax(scores))
            here = (float(scores[top]), self._ids[top] or "")
        return here if found is None or here[0] > found[0] else found

    def accept(self, row: int, memory_id: str) -> None:
        self._ids[row] = memory_id
        self._accepted += 1
        if self._mask is not None:
            self._mask[row] = True


def _similarities(np: Any, left: Any, right: Any) -> Any:
    """Cosine similarities of unit vectors: a len(left) x len(right) matrix."""
    if np is None:
        return [[sum(a * b for a, b in zip(x, y, strict=True)) for y in right] for x in left]
    return np.asarray(left, dtype=np.float32) @ np.asarray(right, dtype=np.float32).T


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
        self._records = service._records
        self._index = service._index
        self._embedder = service._embedder
        self._outbox = service._outbox
        self._threshold = service._dedupe_similarity
        #: (scope, content hash) -> memory id, for every memory stored in this call.
        self._by_content: dict[tuple[str, str], str] = {}
        #: Ids written in this call (they exist: no read needed to trust an index hit on them).
        self._written: set[str] = set()
        self._similar = _Similar(SIMILAR_CAP, self._threshold)
        #: partition -> (memory id, day, content) of the dated memory added last there (None: none).
        self._last: dict[str, tuple[str, str | None, str] | None] = {}
        #: Memories stored in this call whose index write did not happen (embedder or index down): the drain's.
        self.queued = 0

    # ------------------------------------------------------------ entry
    def run(
        self, requests: Sequence[MemoryAddInput], vectors: Sequence[Sequence[float]] | None = None
    ) -> list[AddOutcome]:
        if vectors is not None and len(vectors) != len(requests):
            raise InvalidInput(f"vectors: {len(vectors)} given for {len(requests)} requests", {"field": "vectors"})
        entries = self._prepare(requests, vectors)
        self._resolve_idempotency(entries)
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

    # ------------------------------------------------------- before writes
    def _prepare(self, requests: Sequence[MemoryAddInput], vectors: Sequence[Sequence[float]] | None) -> list[_Entry]:
        entries: list[_Entry] = []
        scopes: dict[str, str] = {}
        for position, request in enumerate(requests):
            scope = scopes.get(request.layer)
            if scope is None:
                try:
                    scope = scopes[request.layer] = writable_scope(self._context, request.layer)
                except MnemoError as error:
                    raise _at(error, position) from None
            entry = _Entry(
                position=position,
                request=request,
                scope=scope,
                partition=partition_of(scope),
                request_hash=request_hash(request),
                content_hash=digest(request.content),
            )
            if vectors is not None:
                entry.vector = _unit(vectors[position], self._embedder.dimensions, position)
            entries.append(entry)
        return entries

    def _resolve_idempotency(self, entries: list[_Entry]) -> None:
        """Replays and conflicts, for every keyed request, before anything is written."""
        first: dict[tuple[str, str], _Entry] = {}
        for entry in entries:
            key = entry.request.idempotency_key
            if key is None:
                continue
            earlier = first.get((entry.partition, key))
            if earlier is None:
                first[(entry.partition, key)] = entry
            elif earlier.request_hash != entry.request_hash:
                raise _at(key_reused(), entry.position)
            else:
                entry.replay_of = earlier
        keys = [(partition, idempotency_sk(key)) for partition, key in first]
        stored: dict[tuple[str, str], Item] = {}
        for start in range(0, len(keys), _READ_CHUNK):
            for item in self._records.batch_get(keys[start : start + _READ_CHUNK]):
                stored[(item.pk, idempotency_key_of(item.sk))] = item
        for (partition, key), entry in first.items():
            found = stored.get((partition, key))
            if found is None:
                continue
            try:
                output = replayed(found, entry.request_hash)
            except Conflict as error:
                raise _at(error, entry.position) from None
            entry.outcome = AddOutcome(output, replayed=True)

    # ------------------------------------------------------------ one batch
    def _add_window(self, window: list[_Entry]) -> None:
        # Entries with an outcome are replays of stored keys; a replay_of waits for the entry it repeats.
        todo = [entry for entry in window if entry.outcome is None and entry.replay_of is None]
        self._embed(todo)
        self._check_duplicates(todo)
        self._embed_pairs(todo)
        written: list[_Entry] = []
        for group in self._writes(window):
            written += self._write(group)
        self._answer_replays(window)
        stored = [entry for entry in written if entry.data is not None]
        self.queued += sum(entry.index_vector is None for entry in stored)
        self._index_written([entry for entry in stored if entry.index_vector is not None])

    def _embed(self, entries: list[_Entry]) -> None:
        """One embedder call per EMBED_BATCH distinct texts; on failure those entries go without vectors.

        Every distinct text of the batch is embedded, even one this call already stored: a model whose
        vectors shift a little with their batch-mates (int8 bge) then gives a retried import the vectors
        it gave the first run, so near-duplicate decisions at the threshold come out the same.
        """
        needed: dict[str, list[_Entry]] = {}
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

    def _check_duplicates(self, todo: list[_Entry]) -> None:
        """Decide every entry in order, as one-by-one adds would: each sees the ones before it.

        The similarities to memories kept in ``_Similar`` and among the window's
        own entries come from one matrix product per scope; the store is asked
        (knn, top 3) per entry only in scopes that are not fresh.
        """
        by_scope: dict[str, list[_Entry]] = {}
        for entry in todo:
            if entry.vector is not None:
                by_scope.setdefault(entry.scope, []).append(entry)
        windows: dict[str, _ScopeWindow] = {}
        row_of: dict[int, int] = {}
        for scope, entries in by_scope.items():
            vectors = [entry.vector for entry in entries if entry.vector is not None]
            if scope not in self._similar.fresh:
                self._similar.fresh[scope] = not self._index.knn(NAMESPACE, vectors[0], {"scope": [scope]}, 1)
            windows[scope] = _ScopeWindow(self._similar, scope, vectors)
            row_of.update((entry.position, row) for row, entry in enumerate(entries))
        for entry in todo:
            row = row_of.get(entry.position)
            window = windows.get(entry.scope)
            self._decide(entry, window.best(row) if window is not None and row is not None else None)
            if entry.data is not None and window is not None and row is not None:
                window.accept(row, entry.data["memoryId"])
                self._similar.add(entry.scope, entry.data["memoryId"], window.matrix[row])

    def _duplicate_of(self, entry: _Entry, in_call: tuple[float, str] | None) -> str | None:
        """The memory this entry repeats: the same content added in this call, else the most similar memory
        at or above the threshold, stored (the index's top 3) or added in this call (``in_call``)."""
        in_call_repeat = self._by_content.get((entry.scope, entry.content_hash))
        if in_call_repeat is not None:
            return in_call_repeat
        if entry.vector is None:  # no vector: only exact repeats are caught (add skips the check entirely)
            return None
        floor = max(self._threshold, in_call[0]) if in_call is not None else self._threshold
        if not self._similar.fresh.get(entry.scope):
            for memory_id in self._service.repeat_candidates(entry.scope, entry.vector, entry.content_hash, floor):
                if memory_id in self._written:
                    return memory_id
                found = self._records.get(entry.partition, record_sk(memory_id))
                if found is not None and not found.data.get("orphaned"):
                    return memory_id
        return in_call[1] if in_call is not None and in_call[0] >= self._threshold else None

    def _decide(self, entry: _Entry, in_call: tuple[float, str] | None) -> None:
        """Deduplicate or build the new record (as ``add`` does, with its builders); the operations that go out
        together."""
        service, request, scope = self._service, entry.request, entry.scope
        duplicate = self._duplicate_of(entry, in_call)
        if duplicate is not None:
            output, entry.operations = deduplicated(self._context, request, scope, duplicate, entry.content_hash)
        else:
            occurred_at = iso(request.occurred_at) if request.occurred_at else None
            previous = self._previous(entry.partition, occurred_at)
            new = service.new_record(self._context, request, scope, previous, entry.content_hash)
            entry.data, entry.marker, entry.operations, output = new.data, new.marker, new.operations, new.output
            entry.previous_content = previous[1] if previous is not None else None
            if occurred_at:  # the next dated memory of this scope on this day links to this one
                self._last[entry.partition] = (new.data["memoryId"], day_of(occurred_at), request.content)
            self._by_content[(scope, entry.content_hash)] = new.data["memoryId"]
        if request.idempotency_key:
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
            self._last[partition] = None
            last = self._records.get(partition, LAST)
            found = self._records.get(partition, record_sk(last.data["memoryId"])) if last is not None else None
            if last is not None and found is not None and not found.data.get("orphaned"):
                self._last[partition] = (found.data["memoryId"], last.data.get("day"), found.data["content"])
        last_here = self._last[partition]
        if last_here is None or last_here[1] != day_of(occurred_at):
            return None
        return last_here[0], last_here[2]

    def _embed_pairs(self, todo: list[_Entry]) -> None:
        """The index vectors: the content's own, or the pair's for a linked memory (embedded here, in batches)."""
        linked: list[_Entry] = []
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
    def _writes(window: list[_Entry]) -> list[list[_Entry]]:
        """Entries grouped into writes of whole memories, each at most MAX_WRITE_OPERATIONS operations."""
        groups: list[list[_Entry]] = []
        current: list[_Entry] = []
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

    def _write(self, group: list[_Entry]) -> list[_Entry]:
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

    def _write_one(self, entry: _Entry) -> bool:
        try:
            self._records.write(entry.operations)
        except ConditionFailed:
            # A concurrent request with the same idempotency key won the race: answer as it did.
            key = entry.request.idempotency_key
            replay = self._service.replay(entry.partition, key, entry.request_hash) if key else None
            if replay is None:
                raise _at(Conflict("The memory changed while it was being written; retry"), entry.position) from None
            entry.outcome = AddOutcome(replay, replayed=True)
            entry.data = None
            return False
        if entry.data is not None:
            self._written.add(entry.data["memoryId"])
        return True

    @staticmethod
    def _answer_replays(window: list[_Entry]) -> None:
        for entry in window:
            source = entry.replay_of
            if source is not None and entry.outcome is None:
                assert source.outcome is not None  # the request it repeats came first
                entry.outcome = AddOutcome(source.outcome.output, replayed=True)

    # ------------------------------------------------------------ index
    def _index_written(self, entries: list[_Entry]) -> None:
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

"""Adding and deleting memories: layer checks, near-duplicates, idempotency, the dated chain, history.

**memory_add writes the index first.** A new memory gets a fresh random id, or
with an idempotency key an id derived from the key that only a repeat of the
same add writes (``mnemo.memory.keys``), so no other writer can touch its record
or its index document before ``add`` returns. ``add`` therefore indexes it first
(a short-timeout write of a document for an id the index never held, or held
only for a repeat whose lost write re-indexes it from the record) and then
writes its record in one write:

- the index write succeeded: the record alone (its ADD history entry folded in,
  ``mnemo.memory.records``), one PutItem; a keyed add writes no idempotency
  record (its record's key and condition detect a repeat); no outbox marker, no
  marker delete, no version read-back;
- the index write failed or timed out (OpenSearch down, or waking from idle),
  or there is no vector (embedder down): the record and a **queued** outbox
  marker (``mnemo.outbox``) in one all-or-nothing write; the stream indexer,
  which has no API time limit, indexes it from the record at once, and the
  drains retry it.

A dated memory then moves the scope's LAST pointer to itself, in a conditional
PutItem of its own (1 WRU and 1 request, where one transaction with the record
was 4 WRU). Should the pointer have moved since it was read, the memory keeps
the predecessor it read: a racing dated add follows the same one (the chain
forks, and the next add follows the racer), and when the predecessor's delete
removed the pointer its link goes and its document is re-indexed from the
record, so no deleted content stays in its vector (``_move_last``).

An index document whose record write then fails, or never happens (the process
is killed in between), is harmless: it names a memory id no record holds, and
every reader hydrates from the records first (search drops a hit whose record
is missing, the near-duplicate check reads the candidate's record, a delete
re-indexes its followers from theirs). When the record write lost a race
(ConditionFailed: a retry with the same idempotency key won) a queued marker for
the abandoned id is written, so the indexer removes the stray document (or, for
a keyed id, re-indexes it from the record the repeat found); after a crash ``mnemo reindex`` removes it. A
timed-out index write that in fact landed is replaced by the indexer's
re-index from the record, and the copies checked again after the refresh
window (``IndexOutbox`` rechecks).

Concurrent writers and version order are unchanged: a new id is written once
(``expect="absent"``; a keyed id ``expect="new"``), and a delete
still writes its record removal, its DELETE history item, the folded ADD entry
written out as its own history item, and its outbox marker in one
all-or-nothing write, then settles the marker (``mnemo.memory.outbox_sync``).
The batch path (``mnemo.memory.batch``) builds its records with the same
builders and keeps its markers.

**One text embedded per add.** An undated memory, or a dated one that follows no
other that day, embeds its content; a dated memory that follows another embeds
only the pair the index holds ("content⏎previous", ``embedding_text``, at most
``PAIR_CHARACTERS`` long, so a long content alone), not its content alone as
well. The previous content is the tail the scope's LAST pointer keeps
(``pair_tail``): the add reads the pointer and no record. The index documents, and so every ranking, are unchanged.
Its near-duplicate check then looks for exact repeats only (by content hash,
whatever the vector: ``repeat_candidates``' ``exact``): the pair's vector is not
the content's, and a pair lies close to other exchanges of the same conversation
(checked with the pair's vector, LoCoMo dev with bge-small deduplicated 121 turns
instead of 15, distinct statements among them), so comparing it would drop
memories that repeat nothing.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from mnemo.context import SHARED_LAYERS, WRITER_ROLE, Layer, RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError, NotFound, Unauthorized
from mnemo.memory.indexing import CONTENT_HASH, NAMESPACE, embedding_text, pair_tail
from mnemo.memory.keys import STORED_MESSAGE, KeyLookup, lookup
from mnemo.memory.models import MemoryAddInput, MemoryAddOutput, MemoryDeleteInput, MemoryDeleteOutput
from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.records import (
    LAST,
    day_of,
    digest,
    epoch_of,
    fold,
    history_item,
    idempotency_item,
    iso,
    keyed_memory_id,
    last_pointer,
    now,
    outlives,
    partition_of,
    record_data,
    record_item,
    record_sk,
    request_hash,
    unfolded,
)
from mnemo.outbox import IndexOutbox
from mnemo.ports import BatchKnnIndex, ConditionFailed, Embedder, Item, Put, RecordStore, VectorIndex
from mnemo.ports import Delete as DeleteOp
from mnemo.retrieval.ranker import AFTER

#: Tries of a keyed add: its key's own id may turn out taken by a memory past its day (then a random id).
LINK_ATTEMPTS = 2
DUPLICATE_MESSAGE = "A near-identical memory already exists in this scope; kept the existing one"

logger = logging.getLogger(__name__)


def writable_scope(context: RequestContext, layer: Layer) -> str:
    """The scope key a write to ``layer`` goes to; INVALID_INPUT without its ids, UNAUTHORIZED without the role."""
    missing = context.missing_ids(layer)
    if missing:
        raise InvalidInput(
            f"layer: the {layer} layer needs a {missing[0]} id in the request context",
            {"field": "layer", "layer": layer, "missingIds": missing},
        )
    if layer in SHARED_LAYERS and WRITER_ROLE not in context.roles:
        raise Unauthorized(
            f"Writing to the shared {layer} layer needs the '{WRITER_ROLE}' role",
            {"field": "layer", "layer": layer, "requiredRole": WRITER_ROLE},
        )
    return context.scope_key(layer)


@dataclass(frozen=True)
class NewMemory:
    """A memory about to be added: its record, the answer, and the operations that go out in one write."""

    data: dict[str, Any]
    output: MemoryAddOutput
    #: The index outbox marker the batch path writes with the record (settled once the index holds it).
    marker: Put
    #: The record (its ADD history entry folded in) and, for a dated memory, the scope's LAST pointer.
    writes: list[Put | DeleteOp]

    @property
    def operations(self) -> list[Put | DeleteOp]:
        """The record, the marker and, for a dated memory, the scope's LAST pointer (the batch path's write)."""
        return [self.writes[0], self.marker, *self.writes[1:]]


def deduplicated(
    context: RequestContext, request: MemoryAddInput, scope: str, duplicate: str, content_hash: str
) -> tuple[MemoryAddOutput, list[Put | DeleteOp]]:
    """The answer naming the memory a request repeats, and the DEDUPE history item to write."""
    output = MemoryAddOutput(memory_id=duplicate, message=DUPLICATE_MESSAGE, deduplicated=True, layer=request.layer)
    return output, [history_item(scope, duplicate, "DEDUPE", context.user, contentHash=content_hash)]


class MemoryWrites:
    """``add`` and ``delete``, and the record builders, near-duplicate check and replays the batch path shares.

    It reads and writes the records, asks the index for near-duplicates and linked memories, and settles
    its outbox markers against ``sync`` (the memory family of the index outbox).
    """

    def __init__(
        self,
        records: RecordStore,
        index: VectorIndex,
        embedder: Embedder,
        outbox: IndexOutbox,
        sync: MemoryIndexSync,
        *,
        dedupe_similarity: float,
    ) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox
        self._sync = sync
        self._dedupe_similarity = dedupe_similarity

    # ---------------------------------------------------------------- add
    def add(
        self,
        context: RequestContext,
        request: MemoryAddInput,
        *,
        content_vector: Sequence[float] | Literal["embed"] | None = "embed",
        repeats: Sequence[str] = (),
    ) -> MemoryAddOutput:
        """Store one memory in the caller's scope of ``request.layer``, or name the one it repeats.

        The memory is indexed first, then its record (its ADD history entry folded in) is written, with a
        queued outbox marker only when the index write failed or timed out (the module docstring), and for a
        dated memory the scope's LAST pointer after it (``_move_last``); so the memory is stored even while the embedder
        or the index is down or waking from idle. With an idempotency key the memory's id derives from the key and
        a repeated call answers as the first call did, found on its rare path: the record's conditional put fails,
        or the near-duplicate check names a memory (``mnemo.memory.keys``; CONFLICT when the key was used for
        another request). Errors: INVALID_INPUT without the layer's ids, UNAUTHORIZED for a shared layer without
        the writer role, CONFLICT when a concurrent call with the same idempotency key left no answer to give.
        ``request.dedupe`` false stores it even beside a near-identical or identical memory (no near-duplicate
        check, no DEDUPE entry); the idempotency key works as ever.

        The batch tool (``mnemo.memory.batch_items``) embeds every undated item's content in one call and passes
        its ``content_vector`` (None: the embedder failed, store it unembedded and queued), and names in
        ``repeats`` the memories its earlier items stored with the same content in this layer: each whose
        record stands is taken as the memory this one repeats before the index is asked (which may not
        show them yet).
        """
        scope = writable_scope(context, request.layer)
        partition = partition_of(scope)
        request_digest = request_hash(request)
        key = request.idempotency_key
        #: Where a keyed add stores its memory: the key's derived id, or (once that id is taken by a memory past
        #: its day) a random one with an idempotency record.
        keyed_id = keyed_memory_id(partition, key) if key else None
        for _ in range(LINK_ATTEMPTS):
            try:
                return self._add_once(context, request, scope, request_digest, content_vector, repeats, keyed_id)
            except ConditionFailed:
                if key:  # a repeat, or a concurrent call with the same key, got there first: answer as it did
                    found = self._lookup(partition, key, request_digest, indexed=True)
                    if found.output is not None:
                        return found.output
                    if found.taken and keyed_id is not None:  # the key's memory is past its day: the key is free
                        keyed_id = None
                        continue
                break
        raise Conflict("The memory changed while it was being written; retry")

    def _add_once(
        self,
        context: RequestContext,
        request: MemoryAddInput,
        scope: str,
        request_digest: str,
        content_vector: Sequence[float] | Literal["embed"] | None = "embed",
        repeats: Sequence[str] = (),
        keyed_id: str | None = None,
    ) -> MemoryAddOutput:
        """One attempt of ``add``; ConditionFailed when its write lost a race. ``keyed_id``: the memory id a keyed
        add stores under (None: a random one, and a keyed add then writes an idempotency record)."""
        partition = partition_of(scope)
        key = request.idempotency_key
        occurred_at = iso(request.occurred_at) if request.occurred_at else None
        # Strongly consistent (the default), as every read here that decides the write: a stale LAST pointer
        # would only cost a lost race and a retry, but a missed predecessor would leave the memory unlinked.
        last = self._records.get(partition, LAST) if occurred_at else None
        previous = self._previous(partition, occurred_at, last)
        # One text is embedded (the module docstring): the content, or the pair the index holds when the memory
        # follows another; the near-duplicate check then finds exact repeats only (the pair is not the content).
        text = embedding_text(request.content, previous[1]) if previous else request.content
        paired = text != request.content  # a long content is embedded alone (``PAIR_CHARACTERS``)
        vector: Sequence[float] | None = None
        exact = False
        if isinstance(content_vector, str):  # "embed"
            vectors = self._sync.try_embed([text])
            content_vector = vector = vectors[0] if vectors else None
            exact = paired
        elif content_vector is not None:  # embedded by the caller: the content alone, in context only here
            in_context = self._sync.try_embed([text]) if paired else [content_vector]
            vector = in_context[0] if in_context else None
        content_hash = digest(request.content)
        # Without a vector (embedder down) the memory is still stored and queued for
        # indexing; only the near-duplicate check is skipped. ``dedupe`` false skips it too: neither the
        # batch's earlier items (``repeats``) nor the scope's memories stand for this one.
        # Only a memory living at least as long stands for this one (``outlives``, docs/lifecycle.md).
        expires = epoch_of(iso(request.expires_at)) if request.expires_at else None
        duplicate = self._standing(partition, repeats, expires) if request.dedupe else None
        checked = duplicate is not None or not request.dedupe
        if duplicate is None and content_vector is not None and request.dedupe:
            try:
                duplicate = self._find_duplicate(partition, scope, content_vector, content_hash, expires, exact=exact)
                checked = True
            except MnemoError as error:  # the index is down or waking: no check, and no inline index write
                logger.warning("near-duplicate check failed; the memory is stored and queued: %s", error.message)
                vector = None
        # A keyed add finds an earlier answer to its key here only on its rare paths: its near-duplicate check
        # named a memory (maybe the key's own), or could not run (the key may hold a near-duplicate's answer).
        if key and (duplicate is not None or not checked):
            found = self._lookup(partition, key, request_digest)
            if found.output is not None:
                return found.output
            keyed_id = None if found.taken else keyed_id
        if duplicate is not None:
            output, operations = deduplicated(context, request, scope, duplicate, content_hash)
            if key:
                operations.append(idempotency_item(partition, key, request_digest, output))
            self._records.write(operations)
            return output
        # The LAST pointer moves only if no other add or delete moved it since it was read: a racing
        # add would fork the chain, a racing delete would leave its content in this memory's vector.
        new = self.new_record(
            context,
            request,
            scope,
            previous,
            content_hash,
            last=last,
            memory_id=keyed_id,
            request_digest=request_digest if keyed_id else None,
        )
        memory_id = new.output.memory_id
        # The index first (the module docstring): a new id, so nothing else can write its document.
        attempted = vector is not None
        indexed = vector is not None and self._sync.try_insert(new.data, vector)
        # The scope's LAST pointer is written after the record, on its own (``_move_last``): 2 WRU, not the 4
        # of a two-item transaction.
        pointer = [op for op in new.writes if isinstance(op, Put) and op.item.sk == LAST]
        operations = [op for op in new.writes if op not in pointer]
        if not indexed:  # the stream indexer takes it from the record (no vector, or the index failed)
            operations.append(self._sync.marker(partition, memory_id, queued=True))
        if key and keyed_id is None:  # the key's own id is taken: the answer goes to an idempotency record
            operations.append(idempotency_item(partition, key, request_digest, new.output))
        try:
            self._records.write(operations)
        except ConditionFailed:
            # A lone record write (no idempotency record, no marker) has no token to make the SDK's retry of
            # it idempotent: a first attempt that was applied but whose answer was lost makes the retry fail
            # its "absent" condition. The record then holds this very memory: it is stored.
            if len(operations) == 1 and self._holds(partition, new.data):
                self._move_last(partition, pointer, new.data)
                return new.output
            if attempted:  # a document (even one whose write timed out but landed) its record does not hold
                self._abandon(partition, memory_id)
            raise
        except Exception:
            # Throttled, or the store is down: the record may not exist, and the document written first
            # must not outlive it (the marker goes to an outbox shard, not this scope's partition).
            if attempted:
                self._abandon(partition, memory_id)
            raise
        self._move_last(partition, pointer, new.data)
        return new.output

    def _move_last(self, partition: str, pointer: Sequence[Put], data: dict[str, Any]) -> None:
        """Move the scope's LAST pointer to the dated memory just stored (``data``), if it has not moved since
        it was read: its own conditional write, after the record's.

        Should it have moved, a racing dated add moved it (each memory keeps the predecessor it read: two
        follow the same one, and the next follows the racer), or the delete of this memory's predecessor
        removed it; then this memory must not keep the deleted content in its vector: its link goes and its
        document is re-indexed from its record (``_unlink``). A crash or a failure before the pointer moves
        leaves the same fork, and nothing lost: the memory is stored and indexed, the next add follows the
        memory before it.
        """
        if not pointer:
            return
        try:
            self._records.write(list(pointer))
            return
        except ConditionFailed:
            pass
        except Exception as error:  # the memory is stored: the next dated add links to the one before it
            logger.warning("could not move the LAST pointer to %s: %s", data["memoryId"], error)
            return
        after = data.get("after")
        if after and self._standing(partition, [after]) is None:
            self._unlink(partition, data["memoryId"])

    def _unlink(self, partition: str, memory_id: str) -> None:
        """Drop a stored memory's link to its deleted predecessor and queue its re-index from the record (its
        vector then holds its own content only), in one write; if the record changed meanwhile, only the
        re-index."""
        marker = self._sync.marker(partition, memory_id, queued=True)
        stored = self._records.get(partition, record_sk(memory_id))
        try:
            if stored is None or "after" not in stored.data:
                self._records.write([marker])
                return
            data = {name: value for name, value in stored.data.items() if name != "after"}
            self._records.write([Put(record_item(partition, data, stored.version + 1), expect=stored.version), marker])
        except ConditionFailed:
            self._records.write([marker])

    def _holds(self, partition: str, data: dict[str, Any]) -> bool:
        """Whether the record of ``data``'s memory id holds this very write (its content hash and creation)."""
        # Strongly consistent: it decides whether the add answers success.
        stored = self._records.get(partition, record_sk(data["memoryId"]))
        return stored is not None and all(
            stored.data.get(key) == data.get(key) for key in ("contentHash", "createdAt", "createdBy")
        )

    def _abandon(self, partition: str, memory_id: str) -> None:
        """Queue the removal of the index document of an add whose record write failed or lost its race.

        Harmless if the record was written after all: the indexer then indexes the record it finds.
        """
        try:
            self._records.write([self._sync.marker(partition, memory_id, queued=True)])
        except Exception as error:  # best effort: search drops a stray document; `mnemo reindex` removes it
            logger.warning("could not queue the removal of stray index document %s: %s", memory_id, error)

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
        """The record of a new memory and its operations (``add`` and the batch path build it here).

        ``previous`` is the (id, content) of the dated memory added just before it in its scope on the same
        day (see ``_previous``): the record is linked to it (``after``) and is embedded with it
        (``embedding_text``). A dated memory also moves the scope's LAST pointer to itself: given the
        ``last`` pointer as read (None: read as absent), only if it has not moved since; "unread" (the batch
        path, which writes it once per write): whatever it holds. ``queued``: the caller has no vector and
        will not index it (the stream indexer takes it at once). ``memory_id``: a keyed add's id
        (``keyed_memory_id``; default: a random one), whose record keeps ``request_digest`` and is written only
        where no item is, not even an expired one (``expect="new"``, ``mnemo.memory.keys``).
        """
        partition = partition_of(scope)
        keyed = memory_id is not None
        memory_id = memory_id or f"mem_{secrets.token_hex(12)}"
        occurred_at = iso(request.occurred_at) if request.occurred_at else None
        data = record_data(
            memory_id=memory_id,
            content=request.content,
            layer=request.layer,
            scope=scope,
            tags=request.tags,
            metadata={"source": "manual", **request.metadata},
            created_at=iso(now()),
            occurred_at=occurred_at,
            content_hash=content_hash or digest(request.content),
            embedding_model=self._embedder.name,
            created_by=context.user,
            after=previous[0] if previous is not None else None,
            expires_at=iso(request.expires_at) if request.expires_at else None,
            request_hash=request_digest,
        )
        output = MemoryAddOutput(memory_id=memory_id, message=STORED_MESSAGE, layer=request.layer)
        marker = self._sync.marker(partition, memory_id, queued=queued)
        # The ADD history entry is folded into the record: one item to write (mnemo.memory.records), an expiring
        # memory's too. Its history reads the record even once it has expired (``get(expired=True)``), until
        # storage removes it and the expiry writes the entry out (``expired_writes``).
        data = fold(data)
        writes: list[Put | DeleteOp] = [Put(record_item(partition, data), expect="new" if keyed else "absent")]
        if occurred_at:  # the next memory of this scope on this day links to this one, and pairs with its tail
            expires = epoch_of(data.get("expiresAt"))
            tail = pair_tail(request.content)
            writes.append(last_pointer(partition, memory_id, occurred_at, last, tail=tail, expires_at=expires))
        return NewMemory(data, output, marker, writes)

    # ------------------------------------------------------------- delete
    def delete(self, context: RequestContext, request: MemoryDeleteInput) -> MemoryDeleteOutput:
        """Delete a memory from the first readable layer that holds it; its history stays.

        The record goes in one all-or-nothing write with its DELETE history item and its outbox marker,
        plus markers re-indexing the dated memories whose vectors hold its content. Errors: NOT_FOUND when
        no readable layer holds it (as for another caller's memory), UNAUTHORIZED for a shared layer without
        the writer role, INVALID_INPUT for a knowledge pointer (sync owns it), CONFLICT when the memory
        changed meanwhile.
        """
        memory_id = request.memory_id
        for layer in context.readable_layers():
            scope = context.scope_key(layer)
            item = self._records.get(partition_of(scope), record_sk(memory_id))
            if item is None:
                continue
            if not context.can_write(layer):
                raise Unauthorized(
                    f"Deleting from the shared {layer} layer needs the '{WRITER_ROLE}' role",
                    {"field": "memoryId", "layer": layer, "requiredRole": WRITER_ROLE},
                )
            pointer = item.data["metadata"].get("knowledgePointer")
            if item.data["metadata"].get("source") == "knowledge_sync" and pointer:
                # Knowledge wins: sync would not bring a deleted pointer back while its item is unchanged.
                raise InvalidInput(
                    f"memoryId: this memory mirrors knowledge item '{pointer.get('sourceId')}'; "
                    "change or remove the knowledge file instead",
                    {"field": "memoryId", "knowledgeItemId": pointer.get("sourceId")},
                )
            marker = self._sync.marker(item.pk, memory_id)
            # The memories embedded after this one's content are re-indexed without it.
            dated = bool(item.data.get("occurredAt"))  # only dated memories are linked
            linked = self._followers(scope, memory_id) if dated else []
            followers = [self._sync.marker(item.pk, follower) for follower in linked]
            # A dated add that read the pointer to this memory must not keep its content: the pointer goes with
            # it, so such an add's conditional move of the pointer fails and it drops its link (``_move_last``).
            last = self._records.get(item.pk, LAST) if dated else None
            unlink = (
                [DeleteOp(item.pk, LAST, expect=last.version)]
                if last and last.data.get("memoryId") == memory_id
                else []
            )
            try:
                self._records.write(
                    [
                        DeleteOp(item.pk, item.sk, expect=item.version),
                        history_item(scope, memory_id, "DELETE", context.user, contentHash=item.data["contentHash"]),
                        *unfolded(item),  # its folded ADD entry outlives the record as its own item
                        marker,
                        *followers,
                        *unlink,
                    ]
                )
            except ConditionFailed:
                raise Conflict(
                    "The memory changed while it was being deleted; retry", {"memoryId": memory_id}
                ) from None
            self._outbox.settle(marker, self._sync, first=partial(self._sync.delete_document, memory_id))
            for follower in followers:
                self._outbox.settle(follower, self._sync)
            return MemoryDeleteOutput(message="Memory deleted successfully", memory_id=memory_id)
        raise NotFound(f"Memory '{memory_id}' not found", {"field": "memoryId", "memoryId": memory_id})

    # ------------------------------------------------------- dated chain
    def _previous(self, partition: str, occurred_at: str | None, last: Item | None) -> tuple[str, str] | None:
        """The id and content of the dated memory added last in this scope, if it happened the same day.

        ``last`` is the scope's LAST pointer as read (None: absent).
        """
        if not occurred_at or last is None or last.data.get("day") != day_of(occurred_at):
            return None
        named = self.pointed(partition, last)
        return (named[0], named[2]) if named is not None else None

    def pointed(self, partition: str, last: Item | None) -> tuple[str, str | None, str] | None:
        """The id, day and content of the dated memory the scope's LAST pointer (as read; None: absent) names.

        Its ``tail`` stands for the content: all of it a pair can hold (``pair_tail``), read with no request;
        only a pointer written before it had one names a record to read.
        """
        if last is None:
            return None
        if "tail" in last.data:
            return last.data["memoryId"], last.data.get("day"), last.data["tail"]
        found = self._records.get(partition, record_sk(last.data["memoryId"]))
        if found is None or found.data.get("orphaned"):
            return None
        return found.data["memoryId"], last.data.get("day"), found.data["content"]

    def _followers(self, scope: str, memory_id: str) -> list[str]:
        """The memories linked to this one as their predecessor (their vectors hold its content)."""
        probe = [1.0] + [0.0] * (self._embedder.dimensions - 1)  # any unit vector: the filter does the finding
        try:
            hits = self._index.knn(NAMESPACE, probe, {"scope": [scope], AFTER: [memory_id]}, 10)
        except MnemoError as error:
            logger.warning("could not look up the memories linked to %s: %s", memory_id, error.message)
            return []
        return [hit.id for hit in hits if hit.id != memory_id]

    # ------------------------------------------ near-duplicates, replays
    def _find_duplicate(
        self,
        partition: str,
        scope: str,
        vector: Sequence[float],
        content_hash: str | None = None,
        expires: int | None = None,
        *,
        exact: bool = False,
    ) -> str | None:
        """The stored memory of the scope this one repeats (see ``repeat_candidates``), if its record stands and
        it lives as long as a memory expiring at ``expires`` (None: never; ``outlives``).

        Read strongly consistent: a candidate deleted a moment ago must not be named as the memory kept.
        """
        candidates = self.repeat_candidates(scope, vector, content_hash, exact=exact)
        return self._standing(partition, candidates, expires)

    def _standing(self, partition: str, memory_ids: Sequence[str], expires: int | None = None) -> str | None:
        """The first of ``memory_ids`` whose record stands (exists, not orphaned) and outlives a memory expiring
        at ``expires`` (None: never), read strongly consistent."""
        for memory_id in memory_ids:
            found = self._records.get(partition, record_sk(memory_id))
            if found is not None and not found.data.get("orphaned") and outlives(found.expires_at, expires):
                return memory_id
        return None

    def repeat_candidates(
        self,
        scope: str,
        vector: Sequence[float],
        content_hash: str | None,
        floor: float | None = None,
        *,
        exact: bool = False,
    ) -> list[str]:
        """Indexed memories of the scope this content may repeat, best first: the same content (found by its
        hash, whatever the stored vector holds), then vectors at or above ``floor`` (default: the near-duplicate
        similarity). ``exact``: the same content only (``vector`` is not the content's own: a dated memory's pair,
        the module docstring), one k-NN search. The caller checks their records."""
        floor = self._dedupe_similarity if floor is None else floor
        queries: list[tuple[Sequence[float], dict[str, list[str]], int]] = (
            [] if exact else [(vector, {"scope": [scope]}, 3)]
        )
        if content_hash:
            queries.insert(0, (vector, {"scope": [scope], CONTENT_HASH: [content_hash]}, 1))
        if not queries:
            return []
        if isinstance(self._index, BatchKnnIndex):  # both in one request (OpenSearch _msearch), same answers
            answers = self._index.knn_many(NAMESPACE, queries)
        else:
            answers = [self._index.knn(NAMESPACE, *query) for query in queries]
        same, near = (answers[0], answers[1:]) if content_hash else ([], answers)
        close = [hit for found in near for hit in found if hit.score >= floor]
        return [hit.id for hit in (*same, *close)]

    def _lookup(self, partition: str, key: str, request_digest: str, *, indexed: bool = False) -> KeyLookup:
        """What an idempotency key holds (``mnemo.memory.keys.lookup``; CONFLICT when another request's).

        Before it answers, an index write still waiting in the outbox for the memory of the answer is done
        (``IndexOutbox.complete``): the resend then finds its memory by search at once. ``indexed``: this call
        wrote an index document under the key's memory id before its put failed; that id's re-index (queued by
        ``_abandon``) is done too, even before a CONFLICT, so the index holds what the record holds.
        """
        refs = [{"pk": partition, "sk": record_sk(keyed_memory_id(partition, key))}] if indexed else []
        try:
            found = lookup(self._records, partition, key, request_digest)
        except Conflict:
            self._complete(refs)
            raise
        if found.output is not None:
            # Read your own resend: the first call may have died (or given up on the index) after its record
            # reached the store but before its index write; a caller told "stored" must find it by search at once.
            refs.append({"pk": partition, "sk": record_sk(found.output.memory_id)})
        self._complete(refs)
        return found

    def _complete(self, refs: list[dict[str, str]]) -> None:
        """``IndexOutbox.complete`` for each distinct memory record named."""
        for pk, sk in dict.fromkeys((ref["pk"], ref["sk"]) for ref in refs):
            self._outbox.complete(self._sync, {"pk": pk, "sk": sk})

    def replay(self, partition: str, key: str, request_digest: str) -> MemoryAddOutput | None:
        """The answer stored for an idempotency key, if any (CONFLICT when it was another request's): from the
        record at the key's derived id, or its idempotency record (``_lookup``), read strongly consistent."""
        return self._lookup(partition, key, request_digest).output

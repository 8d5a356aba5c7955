"""Memory domain rules: layers, scope, dedupe, idempotency, hybrid ranking, history.

Records are the source of truth; the vector index only finds ids, and every
hit is read back from the records before it reaches a caller, so a stale or
foreign index entry can never leak.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from mnemo.budget import fit_head
from mnemo.context import MEMORY_LAYERS, SHARED_LAYERS, WRITER_ROLE, Layer, RequestContext
from mnemo.errors import Conflict, ConflictingRequest, InvalidInput, MnemoError, NotFound, Unauthorized
from mnemo.memory.models import (
    MemoryAddInput,
    MemoryAddOutput,
    MemoryDeleteInput,
    MemoryDeleteOutput,
    MemoryResult,
    MemorySearchInput,
    MemorySearchOutput,
)
from mnemo.outbox import GONE, IndexOutbox, Reference
from mnemo.paging import decode_cursor, encode_cursor, fingerprint
from mnemo.ports import ConditionFailed, Embedder, Filter, IndexDoc, Item, Put, RecordStore, VectorIndex
from mnemo.ports import Delete as DeleteOp
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT, hybrid_rank, subject_of

NAMESPACE = "memory"
#: Sort key of each scope's pointer to the dated memory added last there: the next one links to it.
LAST = "LAST"
#: Index keyword holding a memory's content hash: an exact repeat is found whatever its stored vector
#: holds (a dated memory's vector is embedded with its predecessor's content).
CONTENT_HASH = "contentHash"
#: Tries of an add whose write lost a race on the scope's LAST pointer (another dated add or a delete).
LINK_ATTEMPTS = 3
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
STORED_MESSAGE = "Memory stored successfully"
DUPLICATE_MESSAGE = "A near-identical memory already exists in this scope; kept the existing one"

logger = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _says_the_same(stored: dict[str, Any], content: str, layer: str, tags: list[str], pointer: dict[str, Any]) -> bool:
    """Whether a stored knowledge pointer already says what sync would write, apart from when it synced."""
    before = stored.get("metadata", {}).get("knowledgePointer", {})
    return (
        not stored.get("orphaned")
        and (stored.get("content"), stored.get("layer"), stored.get("tags")) == (content, layer, tags)
        and _unsynced(before) == _unsynced(pointer)
    )


def _unsynced(pointer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in pointer.items() if key != "syncedAt"}


def _partition(scope: str) -> str:
    return f"MEM|{scope}"


def _meta_keywords(metadata: dict[str, Any]) -> dict[str, list[str]]:
    return {
        f"meta.{key}": [json.dumps(value)]
        for key, value in metadata.items()
        if isinstance(value, str | int | float | bool)
    }


def _lexical_text(content: str, occurred_at: str | None) -> str:
    """What BM25 sees: the content and, when known, the date it happened in words."""
    if not occurred_at:
        return content
    moment = datetime.fromisoformat(occurred_at)
    return f"{content} {moment.day} {moment.strftime('%B %Y')}"


def key_reused() -> Conflict:
    """The answer to an idempotency key sent again with a different request."""
    return ConflictingRequest("idempotencyKey was already used for a different request", {"field": "idempotencyKey"})


def _day(occurred_at: str | None) -> str | None:
    """The UTC day a memory happened (``occurredAt`` is stored as UTC ISO 8601), or None."""
    return occurred_at[:10] if occurred_at else None


def _embedding_text(content: str, previous: str | None) -> str:
    """What is embedded: the content, then that of the memory added just before it (same scope, same day).

    A turn of a conversation often only makes sense with the one before it
    ("Yes, twice last summer"); embedding the pair lets a question about either find it.
    """
    return f"{content}\n{previous}" if previous else content


class _HasUser(Protocol):
    @property
    def user(self) -> str | None: ...


@dataclass(frozen=True)
class NewMemory:
    """A memory about to be added: its record, the answer, and the operations that go out in one write."""

    data: dict[str, Any]
    output: MemoryAddOutput
    #: The index outbox marker written with the record (settled once the index holds it).
    marker: Put
    #: The record, its ADD history item, the marker and, for a dated memory, the scope's LAST pointer.
    operations: list[Put | DeleteOp]


@dataclass(frozen=True)
class _Actor:
    """Who made a change that no tool call made (a sync run)."""

    user: str


class MemoryService:
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

    # ------------------------------------------------------------ helpers
    def _writable_scope(self, context: RequestContext, layer: Layer) -> str:
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

    def _index_doc(self, data: dict[str, Any], vector: Sequence[float]) -> IndexDoc:
        keywords = {
            "scope": [data["scope"]],
            "layer": [data["layer"]],
            "tags": sorted({tag.lower() for tag in data["tags"]}),
            **_meta_keywords(data["metadata"]),
            CONTENT_HASH: [data["contentHash"]],
        }
        # The context signals of the ranker (mnemo.retrieval.ranker): neighbour link, episode, subject.
        if data.get("after"):
            keywords[AFTER] = [data["after"]]
        day = _day(data.get("occurredAt"))
        if day:
            keywords[EPISODE] = [day]
        subject = subject_of(data["content"])
        if subject:
            keywords[SUBJECT] = [subject]
        return IndexDoc(
            id=data["memoryId"],
            vector=vector,
            text=_lexical_text(data["content"], data.get("occurredAt")),
            keywords=keywords,
        )

    def _history(self, scope: str, memory_id: str, event: str, context: _HasUser, **extra: Any) -> Put:
        at = _iso(_now())
        data = {"memoryId": memory_id, "event": event, "at": at, "actor": context.user, **extra}
        sk = f"HIST#{memory_id}#{at}#{event}#{secrets.token_hex(3)}"
        return Put(Item(_partition(scope), sk, data), expect="absent")

    def history(self, context: RequestContext, memory_id: str) -> list[dict[str, Any]]:
        """Every recorded change to a memory the caller can read, oldest first."""
        for layer in context.readable_layers():
            items = self._records.query(_partition(context.scope_key(layer)), f"HIST#{memory_id}#", limit=1000)
            if items:
                return [item.data for item in items]
        raise NotFound(f"Memory '{memory_id}' not found", {"field": "memoryId", "memoryId": memory_id})

    # ---------------------------------------------------------------- add
    def add(self, context: RequestContext, request: MemoryAddInput) -> MemoryAddOutput:
        scope = self._writable_scope(context, request.layer)
        partition = _partition(scope)
        request_hash = _hash(request.model_dump_json(exclude={"idempotency_key"}))
        if request.idempotency_key:
            replay = self._replay(partition, request.idempotency_key, request_hash)
            if replay is not None:
                return replay
        for _ in range(LINK_ATTEMPTS):
            try:
                return self._add_once(context, request, scope, request_hash)
            except ConditionFailed:
                # A concurrent retry with the same idempotency key won the race: answer as it did.
                if request.idempotency_key:
                    replay = self._replay(partition, request.idempotency_key, request_hash)
                    if replay is not None:
                        return replay
                if request.occurred_at is None:  # only a dated add can lose a race (on the LAST pointer)
                    break
        raise Conflict("The memory changed while it was being written; retry")

    def _add_once(
        self, context: RequestContext, request: MemoryAddInput, scope: str, request_hash: str
    ) -> MemoryAddOutput:
        """One attempt of ``add``; ConditionFailed when its write lost a race."""
        partition = _partition(scope)
        occurred_at = _iso(request.occurred_at) if request.occurred_at else None
        last = self._records.get(partition, LAST) if occurred_at else None
        previous = self._previous_of(partition, occurred_at, last)
        # The near-duplicate check compares the content alone; the index holds the content in context.
        texts = [request.content] + ([_embedding_text(request.content, previous[1])] if previous else [])
        vectors = self._try_embed_all(texts)
        content_vector, vector = (vectors[0], vectors[-1]) if vectors else (None, None)
        content_hash = _hash(request.content)
        # Without a vector (embedder down) the memory is still stored and queued for
        # indexing; only the near-duplicate check is skipped.
        duplicate = (
            self._find_duplicate(partition, scope, content_vector, content_hash) if content_vector is not None else None
        )
        if duplicate is not None:
            output, operations = self._deduplicated(context, request, scope, duplicate, content_hash)
        else:
            # The LAST pointer moves only if no other add or delete moved it since it was read: a racing
            # add would fork the chain, a racing delete would leave its content in this memory's vector.
            new = self._new_record(context, request, scope, previous, content_hash, last=last, queued=vector is None)
            data, output, marker, operations = new.data, new.output, new.marker, new.operations
        if request.idempotency_key:
            operations.append(self._idempotency_record(partition, request.idempotency_key, request_hash, output))
        self._records.write(operations)
        if duplicate is None and vector is not None:  # without a vector the marker is queued for the indexer
            self._outbox.settle(marker, self, first=self._upsert(data, vector, version=1), new=True)
        return output

    def _new_record(
        self,
        context: RequestContext,
        request: MemoryAddInput,
        scope: str,
        previous: tuple[str, str] | None,
        content_hash: str | None = None,
        *,
        last: Item | Literal["unread"] | None = "unread",
        queued: bool = False,
    ) -> NewMemory:
        """The record of a new memory and its operations (``add`` and the batch path build it here).

        ``previous`` is the (id, content) of the dated memory added just before it in its scope on the same
        day (see ``_previous``): the record is linked to it (``after``) and is embedded with it
        (``_embedding_text``). A dated memory also moves the scope's LAST pointer to itself: given the
        ``last`` pointer as read (None: read as absent), only if it has not moved since; "unread" (the batch
        path, which writes it once per write): whatever it holds. ``queued``: the caller has no vector and
        will not index it (the stream indexer takes it at once).
        """
        partition = _partition(scope)
        memory_id = f"mem_{secrets.token_hex(12)}"
        occurred_at = _iso(request.occurred_at) if request.occurred_at else None
        data: dict[str, Any] = {
            "memoryId": memory_id,
            "content": request.content,
            "layer": request.layer,
            "scope": scope,
            "tags": request.tags,
            "metadata": {"source": "manual", **request.metadata},
            "createdAt": _iso(_now()),
            "occurredAt": occurred_at,
            "contentHash": content_hash or _hash(request.content),
            "embeddingModel": self._embedder.name,
            "createdBy": context.user,
        }
        if previous is not None:
            data["after"] = previous[0]
        output = MemoryAddOutput(memory_id=memory_id, message=STORED_MESSAGE, layer=request.layer)
        marker = self._marker(partition, memory_id, queued=queued)
        operations: list[Put | DeleteOp] = [
            Put(Item(partition, f"MEM#{memory_id}", data), expect="absent"),
            self._history(scope, memory_id, "ADD", context, contentHash=data["contentHash"]),
            marker,
        ]
        if occurred_at:  # the next memory of this scope on this day links to this one
            pointer = {"memoryId": memory_id, "day": _day(occurred_at)}
            if last == "unread":
                operations.append(Put(Item(partition, LAST, pointer)))
            else:
                version = last.version + 1 if last is not None else 1
                expect: int | Literal["absent"] = last.version if last is not None else "absent"
                operations.append(Put(Item(partition, LAST, pointer, version=version), expect=expect))
        return NewMemory(data, output, marker, operations)

    def _deduplicated(
        self, context: RequestContext, request: MemoryAddInput, scope: str, duplicate: str, content_hash: str
    ) -> tuple[MemoryAddOutput, list[Put | DeleteOp]]:
        """The answer naming the memory a request repeats, and the DEDUPE history item to write."""
        output = MemoryAddOutput(memory_id=duplicate, message=DUPLICATE_MESSAGE, deduplicated=True, layer=request.layer)
        return output, [self._history(scope, duplicate, "DEDUPE", context, contentHash=content_hash)]

    # ------------------------------------------------- index outbox and sync
    def _previous(self, partition: str, occurred_at: str | None) -> tuple[str, str] | None:
        """The id and content of the dated memory added last in this scope, if it happened the same day."""
        return self._previous_of(partition, occurred_at, self._records.get(partition, LAST) if occurred_at else None)

    def _previous_of(self, partition: str, occurred_at: str | None, last: Item | None) -> tuple[str, str] | None:
        """``_previous`` from the scope's LAST pointer as read."""
        if not occurred_at:
            return None
        if last is None or last.data.get("day") != _day(occurred_at):
            return None
        found = self._records.get(partition, f"MEM#{last.data['memoryId']}")
        if found is None or found.data.get("orphaned"):
            return None
        return found.data["memoryId"], found.data["content"]

    def _followers(self, scope: str, memory_id: str) -> list[str]:
        """The memories linked to this one as their predecessor (their vectors hold its content)."""
        probe = [1.0] + [0.0] * (self._embedder.dimensions - 1)  # any unit vector: the filter does the finding
        try:
            hits = self._index.knn(NAMESPACE, probe, {"scope": [scope], AFTER: [memory_id]}, 10)
        except MnemoError as error:
            logger.warning("could not look up the memories linked to %s: %s", memory_id, error.message)
            return []
        return [hit.id for hit in hits if hit.id != memory_id]

    def _embedding_texts(self, records: Sequence[dict[str, Any]]) -> list[str]:
        """What to embed for stored memories: each one's content, then its linked predecessor's if that exists."""
        linked = {(_partition(data["scope"]), f"MEM#{data['after']}") for data in records if data.get("after")}
        before = {
            item.data["memoryId"]: item.data["content"]
            for item in self._records.batch_get(sorted(linked))
            if not item.data.get("orphaned")
        }
        return [_embedding_text(data["content"], before.get(data.get("after") or "")) for data in records]

    def _try_embed_all(self, texts: list[str]) -> list[list[float]]:
        try:
            return [list(vector) for vector in self._embedder.embed(texts)]
        except MnemoError as error:
            logger.warning("embedding failed; the memory is stored and queued for indexing: %s", error.message)
            return []

    def _marker(self, partition: str, memory_id: str, *, queued: bool = False) -> Put:
        return self._outbox.marker(self.family, {"pk": partition, "sk": f"MEM#{memory_id}"}, queued=queued)

    def _upsert(self, data: dict[str, Any], vector: Sequence[float], version: int) -> Callable[[], str]:
        """The first index write of a record just written at ``version``, for ``IndexOutbox.settle``."""

        def write() -> str:
            self._index.upsert(NAMESPACE, [self._index_doc(data, vector)])
            return str(version)

        return write

    def _remove(self, memory_id: str) -> Callable[[], str]:
        def write() -> str:
            self._index.delete(NAMESPACE, [memory_id])
            return GONE

        return write

    @staticmethod
    def _token(item: Item | None) -> str:
        return GONE if item is None or item.data.get("orphaned") else str(item.version)

    def version_token(self, ref: Reference) -> str:
        return self._token(self._records.get(ref["pk"], ref["sk"]))

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one memory record: upsert it, or remove it if it is gone.

        Idempotent and order-free (it reads the current record), so stream
        redeliveries, drains and replays are harmless. Returns the version token indexed.
        """
        memory_id = ref["sk"].removeprefix("MEM#")
        item = self._records.get(ref["pk"], ref["sk"])
        if item is None or item.data.get("orphaned"):
            self._index.delete(NAMESPACE, [memory_id])
            return GONE
        vector = self._embedder.embed(self._embedding_texts([item.data]))[0]
        self._index.upsert(NAMESPACE, [self._index_doc(item.data, vector)])
        return self._token(item)

    @staticmethod
    def index_entry(ref: Reference) -> tuple[str, str]:
        """The index namespace and document id of a memory record (``IndexOutbox`` rechecks)."""
        return NAMESPACE, ref["sk"].removeprefix("MEM#")

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
            self._index.delete(NAMESPACE, [sk.removeprefix("MEM#")])
            return "removed"
        return outcome

    def _find_duplicate(
        self, partition: str, scope: str, vector: Sequence[float], content_hash: str | None = None
    ) -> str | None:
        """The stored memory of the scope this one repeats (see ``_repeat_candidates``), if its record stands."""
        for memory_id in self._repeat_candidates(scope, vector, content_hash):
            found = self._records.get(partition, f"MEM#{memory_id}")
            if found is not None and not found.data.get("orphaned"):
                return memory_id
        return None

    def _repeat_candidates(
        self, scope: str, vector: Sequence[float], content_hash: str | None, floor: float | None = None
    ) -> list[str]:
        """Indexed memories of the scope this content may repeat, best first: the same content (found by its
        hash, whatever the stored vector holds), then vectors at or above ``floor`` (default: the near-duplicate
        similarity). The caller checks their records."""
        floor = self._dedupe_similarity if floor is None else floor
        same = (
            self._index.knn(NAMESPACE, vector, {"scope": [scope], CONTENT_HASH: [content_hash]}, 1)
            if content_hash
            else []
        )
        near = self._index.knn(NAMESPACE, vector, {"scope": [scope]}, 3)
        return [hit.id for hit in (*same, *(hit for hit in near if hit.score >= floor))]

    def _idempotency_record(self, partition: str, key: str, request_hash: str, output: MemoryAddOutput) -> Put:
        data = {"requestHash": request_hash, "response": output.model_dump(mode="json")}
        expires = int(time.time()) + IDEMPOTENCY_TTL_SECONDS
        return Put(Item(partition, f"IDEM#{key}", data, expires_at=expires), expect="absent")

    def _replay(self, partition: str, key: str, request_hash: str) -> MemoryAddOutput | None:
        stored = self._records.get(partition, f"IDEM#{key}")
        if stored is None:
            return None
        if stored.data["requestHash"] != request_hash:
            raise key_reused()
        return MemoryAddOutput.model_validate(stored.data["response"])

    # ------------------------------------------------------------- search
    def search(self, context: RequestContext, request: MemorySearchInput) -> MemorySearchOutput:
        layers = context.readable_layers(list(request.layers) if request.layers else None)
        if not layers:
            return MemorySearchOutput(results=[], total_count=0, searched_layers=[])
        scopes = {context.scope_key(layer): layer for layer in layers}
        flt: Filter = {"scope": list(scopes)}
        if request.tags:
            flt["tags"] = sorted({tag.lower() for tag in request.tags})
        for key, values in _meta_keywords(request.metadata or {}).items():
            flt[key] = values

        ranking = hybrid_rank(self._index, self._embedder, NAMESPACE, request.query, flt, context=True)
        precedence = {layer: rank for rank, layer in enumerate(MEMORY_LAYERS)}
        ranked: list[tuple[int, float, str, str]] = []
        for candidate in ranking.candidates:
            scope = (candidate.hit.keywords.get("scope") or [""])[0]
            if scope in scopes and candidate.score >= request.threshold:
                ranked.append((precedence[scopes[scope]], -candidate.score, candidate.id, scope))
        ranked.sort()

        owner = fingerprint(request.model_dump(mode="json", exclude={"cursor", "limit"}) | {"scopes": sorted(scopes)})
        offset = decode_cursor(request.cursor, owner)
        results, dropped = self._hydrate(ranked, offset + request.limit)
        page = results[offset:]
        output = MemorySearchOutput(
            results=page,
            total_count=len(ranked) - dropped,
            searched_layers=layers,
            retrieval=ranking.retrieval,
        )
        page = fit_head(output, page, context.response_budget)
        has_more = offset + len(page) < output.total_count
        output.results = page
        output.has_more = has_more
        output.next_cursor = encode_cursor(offset + len(page), owner) if has_more else None
        return output

    def _hydrate(self, ranked: list[tuple[int, float, str, str]], limit: int) -> tuple[list[MemoryResult], int]:
        """Read the best hits back from the records until ``limit`` results stand.

        Hits arrive in layer-precedence-then-score order. A hit with no record
        (a stale index entry) or repeating content already taken from a more
        specific layer is dropped; the count of those drops is returned so that
        totalCount stays honest about what was seen.
        """
        results: list[MemoryResult] = []
        seen_content: set[str] = set()
        dropped = 0
        position = 0
        while len(results) < limit and position < len(ranked):
            batch = ranked[position : position + max(limit * 2, 10)]
            position += len(batch)
            keys = [(_partition(scope), f"MEM#{memory_id}") for _, _, memory_id, scope in batch]
            # A read-back: a hit missing or a version behind for a second is dropped or shown as it was.
            found = {item.data["memoryId"]: item.data for item in self._records.batch_get(keys, consistent=False)}
            for _, negative_score, memory_id, scope in batch:
                data = found.get(memory_id)
                fingerprint = " ".join(data["content"].lower().split()) if data else ""
                if data is None or data["scope"] != scope or data.get("orphaned") or fingerprint in seen_content:
                    dropped += 1
                    continue
                seen_content.add(fingerprint)
                if len(results) < limit:
                    results.append(
                        MemoryResult(
                            content=data["content"],
                            layer=data["layer"],
                            score=round(-negative_score, 4),
                            memory_id=memory_id,
                            tags=data["tags"],
                            metadata=data["metadata"],
                            created_at=data["createdAt"],
                            occurred_at=data.get("occurredAt"),
                        )
                    )
        return results, dropped

    # ------------------------------------------------------------- delete
    def delete(self, context: RequestContext, request: MemoryDeleteInput) -> MemoryDeleteOutput:
        memory_id = request.memory_id
        for layer in context.readable_layers():
            scope = context.scope_key(layer)
            item = self._records.get(_partition(scope), f"MEM#{memory_id}")
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
            marker = self._marker(item.pk, memory_id)
            # The memories embedded after this one's content are re-indexed without it.
            dated = bool(item.data.get("occurredAt"))  # only dated memories are linked
            linked = self._followers(scope, memory_id) if dated else []
            followers = [self._marker(item.pk, follower) for follower in linked]
            # A dated add that read the pointer to this memory must not link to it: the pointer goes with it,
            # so such an add's conditional write fails and it tries again without this memory.
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
                        self._history(scope, memory_id, "DELETE", context, contentHash=item.data["contentHash"]),
                        marker,
                        *followers,
                        *unlink,
                    ]
                )
            except ConditionFailed:
                raise Conflict(
                    "The memory changed while it was being deleted; retry", {"memoryId": memory_id}
                ) from None
            self._outbox.settle(marker, self, first=self._remove(memory_id))
            for follower in followers:
                self._outbox.settle(follower, self)
            return MemoryDeleteOutput(message="Memory deleted successfully", memory_id=memory_id)
        raise NotFound(f"Memory '{memory_id}' not found", {"field": "memoryId", "memoryId": memory_id})

    # ------------------------------------------------- knowledge pointers
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
        partition = _partition(scope)
        existing = self._records.get(partition, f"MEM#{memory_id}")
        if existing is not None and _says_the_same(existing.data, content, layer, tags, pointer):
            # Only the sync time would change: no new version or history item. The index write stays (through
            # the outbox, as every index write), as a forced sync is how an operator repairs a pointer's entry.
            marker = self._marker(partition, memory_id)
            self._records.write([marker])
            vectors = self._try_embed_all([content])
            if vectors:  # without one, the marker waits for a drain
                self._outbox.settle(marker, self, first=self._upsert(existing.data, vectors[0], existing.version))
            return
        data = {
            "memoryId": memory_id,
            "content": content,
            "layer": layer,
            "scope": scope,
            "tags": tags,
            "metadata": {"source": "knowledge_sync", "knowledgePointer": pointer},
            "createdAt": existing.data["createdAt"] if existing else _iso(_now()),
            "occurredAt": None,
            "contentHash": _hash(content),
            "embeddingModel": self._embedder.name,
            "createdBy": actor,
        }
        event = "SYNC_UPDATE" if existing else "SYNC_ADD"
        version = existing.version + 1 if existing else 1
        expect: int | Literal["absent"] = existing.version if existing else "absent"
        put = Put(Item(partition, f"MEM#{memory_id}", data, version=version), expect=expect)
        marker = self._marker(partition, memory_id)
        try:
            self._records.write(
                [put, self._history(scope, memory_id, event, _Actor(actor), contentHash=data["contentHash"]), marker]
            )
        except ConditionFailed:
            raise Conflict("The knowledge pointer changed while it was being written; retry") from None
        vectors = self._try_embed_all([content])
        if vectors:  # without one, the marker waits for a drain
            self._outbox.settle(marker, self, first=self._upsert(data, vectors[0], version))

    def orphan_pointer(self, scope: str, memory_id: str, actor: str) -> bool:
        """Mark a knowledge pointer orphaned (its item is gone) and take it out of search."""
        partition = _partition(scope)
        existing = self._records.get(partition, f"MEM#{memory_id}")
        if existing is None or existing.data.get("orphaned"):
            return False
        data = {**existing.data, "orphaned": True, "orphanedAt": _iso(_now())}
        marker = self._marker(partition, memory_id)
        try:
            self._records.write(
                [
                    Put(Item(partition, existing.sk, data, version=existing.version + 1), expect=existing.version),
                    self._history(scope, memory_id, "ORPHAN", _Actor(actor), contentHash=data["contentHash"]),
                    marker,
                ]
            )
        except ConditionFailed:
            raise Conflict("The knowledge pointer changed while it was being orphaned; retry") from None
        self._outbox.settle(marker, self, first=self._remove(memory_id))
        return True

    # ------------------------------------------------------------ reindex
    def reindex(self, batch: int = 64) -> int:
        """Rebuild the vector index from the records (the source of truth)."""
        self._index.clear(NAMESPACE)
        pending: list[dict[str, Any]] = []
        total = 0

        def flush() -> None:
            vectors = self._embedder.embed(self._embedding_texts(pending))
            self._index.upsert(NAMESPACE, [self._index_doc(d, v) for d, v in zip(pending, vectors, strict=True)])
            pending.clear()

        for item in self._records.scan("MEM|"):
            if item.sk.startswith("MEM#") and not item.data.get("orphaned"):
                pending.append(item.data)
                total += 1
                if len(pending) >= batch:
                    flush()
        if pending:
            flush()
        return total

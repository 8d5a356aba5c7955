"""Erasing one user of one tenant (GDPR article 17): everything stored for them, in every family, and a receipt.

What goes (docs/security.md, "Erasing a user"):

* every record in the user's personal scopes (``RequestContext.scope_key`` of the ``user`` layer, and of every
  ``agent`` and ``session`` layer of that user), in every family whose partition is ``{PREFIX}{scope}``:
  memories with their history, idempotency records and ``LAST`` pointer (``MEM|``), conversations and
  executions (``CONV|``, ``EXEC|``), topics (``TOPIC|``), StoredAssets and skills (``ASSET|``), pinned contexts
  (``PINS|``), the personal workspace's files (``WS|``) and outlines (``OUTLINE|``), the graph (``GRAPH|``) and
  the extraction ledger (``LEARN|``: waiting turns, stream state, runs);
* the memories the user wrote into shared layers (project, team, org, company: ``createdBy`` is the user),
  with their history items, counted apart as ``sharedMemories``; knowledge pointers (``sync_now`` run by
  the user) stay, as they are the organisation's knowledge, not the user's;
* every version of the personal workspace's blobs (``BlobStore.purge``: a delete would keep the versions);
* the index document of every erased record, in its family's namespace (``memory``, ``conversations``,
  ``executions``, ``topics``, ``blocks``, ``graph``);
* the user's streams in the extraction queue (``LEARNQ|``) and the index outbox markers and dead letters
  naming one of the user's scopes;
* the user's pinner keys in the pinner lists (``P#{name}``) of the shared files they had pinned (a project's
  blocks), which stay.

**The receipt** is one record, ``ERASURE#t={tenant}`` / ``{userHash}#{startedAt}#{erasureId}``, holding
``{erasureId, tenant, userHash, startedAt, completedAt, status, runs, done, counts}``. ``userHash`` is the
SHA-256 of ``{tenant}\\n{user}``: the raw user id is never stored, and whoever knows it can find the receipt
again. It is written when the erasure starts (``status`` ``running``), again with every page of deletes,
and a last time with ``status`` ``completed`` and ``completedAt``; from then on it expires after
``RECEIPT_TTL_SECONDS`` (DynamoDB TTL). Its completing write is what the change stream reports as
``user.erased``.

**Resumable, with exact counts.** Each family is deleted in pages: a page's record deletes (at most
``PAGE`` of them) and the receipt's updated counts are one all-or-nothing write conditional on the receipt's
version, so the counts always say exactly what is gone, whatever stops the run. Before that write the page's
blobs are purged and its index documents deleted (both idempotent), so a crash can leave an index document
without its record only for a moment, never a record-less document nobody deletes: the next run deletes it
again with its record. A run that stops (a crash, a failing store, the request deadline) leaves the receipt
``running``; the next ``erase`` of the same user resumes it: finished families (``done``) are skipped and the
others are found again by their scans, which no longer see what is gone.

Writes the user makes while the erasure runs may survive it: stop the user's traffic first (revoke their
credentials), then erase. Erasure scans the table (``RecordStore.scan``, maintenance only): a few scans per
family on DynamoDB.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from mnemo.context import SHARED_LAYERS, parse_scope
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS
from mnemo.conversations.store import RECORD as CONVERSATION_RECORD
from mnemo.conversations.store import doc_id as conversation_doc_id
from mnemo.errors import Conflict
from mnemo.files.index import NAMESPACE as BLOCKS_NAMESPACE
from mnemo.files.index import doc_id as block_doc_id
from mnemo.files.pins import PINS_PREFIX
from mnemo.files.scopes import WORKSPACE_ROOT, workspace_location_of
from mnemo.files.store import ASSET_PREFIX, PINNERS, WORKSPACE_PREFIX, blob_prefix
from mnemo.files.store import HEAD as FILE_HEAD
from mnemo.graph.index import NAMESPACE as GRAPH_NAMESPACE
from mnemo.graph.store import ENTITY, FACT
from mnemo.graph.store import PARTITION as GRAPH_PARTITION
from mnemo.learning.ledger import PARTITION as LEARN_PARTITION
from mnemo.learning.ledger import queue_partitions
from mnemo.memory.indexing import NAMESPACE as MEMORY_NAMESPACE
from mnemo.memory.records import HISTORY, IDEMPOTENCY, LAST, RECORD, history_prefix
from mnemo.memory.records import PARTITION as MEMORY_PARTITION
from mnemo.models import ToolRequest, ToolResponse, WireModel
from mnemo.outbox import DEAD_PARTITION, OUTBOX_PREFIX
from mnemo.outline.index import OUTLINE_PREFIX
from mnemo.ports import MAX_WRITE_OPERATIONS, BlobStore, ConditionFailed, Delete, Item, Put, RecordStore, VectorIndex
from mnemo.topics.records import HEAD as TOPIC_HEAD
from mnemo.topics.records import PARTITION as TOPIC_PARTITION
from mnemo.topics.service import NAMESPACE as TOPICS_NAMESPACE
from mnemo.topics.service import TopicService

#: Partition of a tenant's erasure receipts.
RECEIPT_PREFIX = "ERASURE#"
#: How long a completed receipt is kept: a year, then DynamoDB's TTL (the local sweeper) removes it.
RECEIPT_TTL_SECONDS = 365 * 24 * 3600
#: Record deletes per write: the receipt's update takes the last of a write's operations.
PAGE = MAX_WRITE_OPERATIONS - 1
#: Layers whose scope key names the user first (``t={tenant}|{layer}|u={user}...``).
PERSONAL_LAYERS = ("user", "agent", "session")
#: The families of the personal scopes, as (step, partition prefix), in the order they are erased. Memories go
#: first, as they are what a read is most likely to find; the extraction ledger last but one, so no pending
#: turn of an erased conversation is left to extract.
PERSONAL_FAMILIES: tuple[tuple[str, str], ...] = (
    ("memories", MEMORY_PARTITION),
    ("conversations", CONVERSATIONS.partition_prefix),
    ("executions", EXECUTIONS.partition_prefix),
    ("topics", TOPIC_PARTITION),
    ("blocks", ASSET_PREFIX),
    ("pins", PINS_PREFIX),
    ("files", WORKSPACE_PREFIX),
    ("outlines", OUTLINE_PREFIX),
    ("graph", GRAPH_PARTITION),
    ("extraction", LEARN_PARTITION),
)
#: Every step of an erasure, in order (``done`` in the receipt lists those finished).
STEPS = (*(step for step, _ in PERSONAL_FAMILIES), "workspaceBlobs", "sharedMemories", "extractionQueue", "indexOutbox")

Status = Literal["running", "completed"]


# ------------------------------------------------------------------ models
class ErasureCounts(WireModel):
    """What an erasure removed, by family (records unless said otherwise)."""

    memories: int = Field(0, description="Memories of the user's own layers (user, agent, session).")
    shared_memories: int = Field(
        0, description="Memories the user wrote into shared layers (project, team, org, company)."
    )
    history: int = Field(0, description="History items of the erased memories.")
    idempotency: int = Field(0, description="Idempotency records of the user's memory_add calls.")
    conversations: int = Field(0, description="Conversation records.")
    executions: int = Field(0, description="Execution records.")
    topics: int = Field(0, description="Topics (the general section counts as one).")
    blocks: int = Field(0, description="StoredAssets and skills (mnemo:/// files).")
    pins: int = Field(0, description="Pinned-context sets.")
    files: int = Field(0, description="Files of the user's personal workspace.")
    blob_keys: int = Field(0, description="Workspace blobs purged with every version.")
    graph_entities: int = Field(0, description="Graph entities.")
    graph_facts: int = Field(0, description="Graph facts.")
    extraction: int = Field(0, description="Extraction state: waiting turns, stream state, runs, queue entries.")
    index_markers: int = Field(0, description="Index outbox markers and dead letters naming the user's scopes.")
    index_documents: int = Field(0, description="Index documents deleted with their records.")
    other_records: int = Field(
        0, description="Every other record of those families (time entries, versions, edges...)."
    )
    records: int = Field(0, description="Every record deleted, all families together.")


class EraseUserInput(ToolRequest):
    subject_user_id: str = Field(
        ...,
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9._@:+=,/\-]{1,256}$",
        description=(
            "The user of the caller's own tenant to erase (an id as identities use). Named `subjectUserId`, not "
            "`userId`: a body's `userId` only ever repeats the caller's own identity."
        ),
    )


class EraseUserOutput(ToolResponse):
    erasure_id: str = Field(description="This erasure's id (`era_...`); a resumed run keeps it.")
    tenant: str
    user_hash: str = Field(description="SHA-256 of `{tenant}\\n{user}` in hex: the receipt never holds the raw id.")
    started_at: str
    completed_at: str | None = Field(None, description="When the last family was erased; null while running.")
    status: Status = Field(description="`completed`, or `running` when the run stopped early: call again to resume.")
    runs: int = Field(description="Runs this erasure took (a resumed one counts again).")
    counts: ErasureCounts


# ------------------------------------------------------------------- keys
def user_hash(tenant: str, user: str) -> str:
    """What the receipt keeps of the user: the SHA-256 of ``{tenant}\\n{user}``, in hex."""
    return hashlib.sha256(f"{tenant}\n{user}".encode()).hexdigest()


def receipt_partition(tenant: str) -> str:
    """The partition of a tenant's erasure receipts: ``ERASURE#t={tenant}``."""
    return f"{RECEIPT_PREFIX}t={tenant}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def is_personal_scope(scope: str, tenant: str, user: str) -> bool:
    """Whether a scope key is one of the user's own: their user layer, or one of their agents or sessions."""
    found = parse_scope(scope)
    return (
        found is not None
        and found.tenant == tenant
        and found.layer in PERSONAL_LAYERS
        and found.ids.get("user") == user
    )


def personal_prefixes(prefix: str, tenant: str, user: str) -> list[str]:
    """Scan prefixes that cover every partition of ``prefix`` in the user's personal scopes (a prefix may
    also cover another user's, ``u=al`` before ``u=alice``: callers check each with ``is_personal_scope``)."""
    return [
        f"{prefix}t={tenant}|user|u={user}",
        f"{prefix}t={tenant}|agent|u={user}|",
        f"{prefix}t={tenant}|session|u={user}|",
    ]


# --------------------------------------------------- what a record counts as
def _count_key(step: str, sk: str) -> str:
    """The receipt count a deleted record of a personal family adds to."""
    if step in ("memories", "sharedMemories"):
        if sk.startswith(RECORD):
            return step
        if sk.startswith(HISTORY):
            return "history"
        return "idempotency" if sk.startswith(IDEMPOTENCY) else "otherRecords"
    heads = {
        "conversations": CONVERSATION_RECORD,
        "executions": CONVERSATION_RECORD,
        "topics": TOPIC_HEAD,
        "blocks": FILE_HEAD,
        "files": FILE_HEAD,
    }
    if step in heads:
        return step if sk.startswith(heads[step]) or (step == "topics" and sk == "GENERAL") else "otherRecords"
    if step == "pins":
        return "pins"
    if step == "graph":
        return "graphEntities" if sk.startswith(ENTITY) else "graphFacts" if sk.startswith(FACT) else "otherRecords"
    if step == "extraction":
        return "extraction"
    return "otherRecords"


def index_entry(step: str, item: Item) -> tuple[str, str] | None:
    """The namespace and id of the index document a record has, if it is an indexed record (counted as
    ``indexDocuments`` whether or not the index still held it: the count follows from the records alone, so a
    resumed erasure counts what an uninterrupted one would)."""
    scope = item.pk.partition("|")[2]
    if step in ("memories", "sharedMemories") and item.sk.startswith(RECORD):
        return MEMORY_NAMESPACE, item.sk.removeprefix(RECORD)
    if step in ("conversations", "executions") and item.sk.startswith(CONVERSATION_RECORD):
        kind = CONVERSATIONS if step == "conversations" else EXECUTIONS
        return kind.namespace, conversation_doc_id(scope, item.sk.removeprefix(CONVERSATION_RECORD))
    if step == "topics" and item.sk.startswith(TOPIC_HEAD):
        return TOPICS_NAMESPACE, TopicService.doc_id(scope, item.sk.removeprefix(TOPIC_HEAD))
    if step == "blocks" and item.sk.startswith(FILE_HEAD) and not item.data.get("deleted"):  # a delete unindexed it
        return BLOCKS_NAMESPACE, block_doc_id(item.pk, item.sk.removeprefix(FILE_HEAD))
    if step == "graph" and item.sk.startswith((ENTITY, FACT)):
        return GRAPH_NAMESPACE, item.sk.partition("#")[2]
    return None


def _names_user(value: Any, tenant: str, user: str) -> bool:
    """Whether a marker's reference names one of the user's scopes (as a scope key or a partition key)."""
    if isinstance(value, str):
        return any(is_personal_scope(text, tenant, user) for text in (value, value.partition("|")[2]))
    if isinstance(value, dict):
        return any(_names_user(each, tenant, user) for each in value.values())
    if isinstance(value, list):
        return any(_names_user(each, tenant, user) for each in value)
    return False


# ----------------------------------------------------------------- service
class Erasure:
    """One user's erasure over the records, the vector index and the blobs (the module docstring says what goes)."""

    def __init__(self, records: RecordStore, index: VectorIndex, blobs: BlobStore) -> None:
        self._records = records
        self._index = index
        self._blobs = blobs

    # -------------------------------------------------------------- receipts
    def receipts(self, tenant: str, user: str) -> list[EraseUserOutput]:
        """Every receipt kept of the user's erasures, oldest first."""
        items = self._records.query(receipt_partition(tenant), f"{user_hash(tenant, user)}#", limit=1000)
        return [EraseUserOutput.model_validate(item.data) for item in items]

    def _open(self, tenant: str, user: str) -> Item:
        """The user's running erasure (its run counted once more), or a new one; written before any delete."""
        digest = user_hash(tenant, user)
        latest = self._records.query(receipt_partition(tenant), f"{digest}#", limit=1, descending=True)
        if latest and latest[0].data["status"] == "running":
            item = latest[0]
            data = {**item.data, "runs": item.data["runs"] + 1}
            put = Put(Item(item.pk, item.sk, data, version=item.version + 1), expect=item.version)
        else:
            started = _now()
            erasure_id = f"era_{secrets.token_hex(12)}"
            data = {
                "erasureId": erasure_id,
                "tenant": tenant,
                "userHash": digest,
                "startedAt": started,
                "completedAt": None,
                "status": "running",
                "runs": 1,
                "done": [],
                "counts": ErasureCounts().model_dump(by_alias=True),
            }
            put = Put(Item(receipt_partition(tenant), f"{digest}#{started}#{erasure_id}", data), expect="absent")
        return self._write([put])

    def _write(self, operations: list[Delete | Put]) -> Item:
        """Write ``operations``, whose last is the receipt's put; the receipt as written.

        A lost condition is another run of this erasure, unless the receipt already holds exactly what this
        write puts: then it was this write, answered twice (a retried call whose first attempt went through).
        """
        put = operations[-1]
        assert isinstance(put, Put)
        try:
            self._records.write(operations)
        except ConditionFailed:
            stored = self._records.get(put.item.pk, put.item.sk)
            if stored is None or stored.version != put.item.version or stored.data != put.item.data:
                raise Conflict("Another run of this user's erasure is writing its receipt; try again") from None
        return put.item

    def _commit(self, receipt: Item, deletes: list[Delete], added: Counter[str], finished: str | None = None) -> Item:
        """Write the deletes and the receipt's new counts (and a finished step) all or none; the receipt as written."""
        counts = dict(receipt.data["counts"])
        for key, number in added.items():
            counts[key] = counts.get(key, 0) + number
        counts["records"] = counts.get("records", 0) + len(deletes)
        done = list(receipt.data["done"]) + ([finished] if finished and finished not in receipt.data["done"] else [])
        data = {**receipt.data, "counts": counts, "done": done}
        put = Put(Item(receipt.pk, receipt.sk, data, version=receipt.version + 1), expect=receipt.version)
        return self._write([*deletes, put])

    def _complete(self, receipt: Item) -> Item:
        completed = _now()
        data = {**receipt.data, "status": "completed", "completedAt": completed}
        expires = int(time.time()) + RECEIPT_TTL_SECONDS
        put = Put(
            Item(receipt.pk, receipt.sk, data, version=receipt.version + 1, expires_at=expires), expect=receipt.version
        )
        return self._write([put])

    # ----------------------------------------------------------------- erase
    def erase(self, tenant: str, user: str, *, deadline: float | None = None) -> EraseUserOutput:
        """Erase the user (or resume their running erasure) and answer the receipt.

        ``deadline`` (``time.monotonic()``): no page starts after it, and the receipt answers ``running``;
        the next call resumes. CONFLICT when another run of the same erasure writes its receipt meanwhile.
        """
        receipt = self._open(tenant, user)
        steps: dict[str, Callable[[Item], Iterator[tuple[list[Item], str]]]] = {
            **{step: self._personal(step, prefix, tenant, user) for step, prefix in PERSONAL_FAMILIES},
            "workspaceBlobs": self._workspace_blobs(tenant, user),
            "sharedMemories": self._shared_memories(tenant, user),
            "extractionQueue": self._queue_entries(tenant, user),
            "indexOutbox": self._markers(tenant, user),
        }
        for step in STEPS:
            if step in receipt.data["done"]:
                continue
            for page, counted_as in steps[step](receipt):
                if deadline is not None and time.monotonic() > deadline:
                    return EraseUserOutput.model_validate(receipt.data)
                receipt = self._erase_page(receipt, step, page, counted_as)
            receipt = self._commit(receipt, [], Counter(), finished=step)
        return EraseUserOutput.model_validate(self._complete(receipt).data)

    def _erase_page(self, receipt: Item, step: str, page: list[Item], counted_as: str) -> Item:
        """Purge the page's blobs, delete its index documents, then its records with the receipt's counts."""
        added: Counter[str] = Counter()
        if step == "files":
            for item in page:
                where = workspace_location_of(item.pk)
                if where is not None and item.sk.startswith(FILE_HEAD):
                    self._blobs.purge(where.blob_key(item.sk.removeprefix(FILE_HEAD)))
                    added["blobKeys"] += 1
        if step == "pins":
            for item in page:
                self._unlist_pinner(item)
        documents: dict[str, list[str]] = {}
        for item in page:
            entry = index_entry(step, item)
            if entry is not None:
                documents.setdefault(entry[0], []).append(entry[1])
        for namespace, ids in documents.items():
            self._index.delete(namespace, ids)
            added["indexDocuments"] += len(ids)
        for item in page:
            added[counted_as or _count_key(step, item.sk)] += 1
        return self._commit(receipt, [Delete(item.pk, item.sk) for item in page], added)

    def _unlist_pinner(self, pin_set: Item) -> None:
        """Take the pinner out of the pinner list (``P#{name}``) of every file its pin set holds outside the
        user's own scopes (a project's blocks), before the set goes: those lists would still name the user.
        Each list is rewritten on its own, conditional on the version read; a rerun finds nothing left to do."""
        pinner = pin_set.pk.removeprefix(PINS_PREFIX)
        for pin in pin_set.data.get("pins", []):
            for _ in range(3):  # a pin or write racing this one moves the list on: read it again
                listed = self._records.get(pin["pk"], PINNERS + pin["name"])
                if listed is None or pinner not in listed.data.get("pinnedBy", []):
                    break
                others = [each for each in listed.data["pinnedBy"] if each != pinner]
                data = {**listed.data, "pinnedBy": others}
                put = Put(Item(listed.pk, listed.sk, data, listed.version + 1), expect=listed.version)
                try:
                    self._records.write([put])
                    break
                except ConditionFailed:
                    continue
            else:
                raise Conflict("A pinned file kept changing while the user was taken off its pinners; try again")

    # ------------------------------------------------------- what each step finds
    def _personal(
        self, step: str, prefix: str, tenant: str, user: str
    ) -> Callable[[Item], Iterator[tuple[list[Item], str]]]:
        """Every record of the family in the user's personal scopes, partition by partition, a page at a time."""

        def pages(_: Item) -> Iterator[tuple[list[Item], str]]:
            partitions: dict[str, None] = {}
            for scan_prefix in personal_prefixes(prefix, tenant, user):
                for item in self._records.scan(scan_prefix):
                    if is_personal_scope(item.pk.removeprefix(prefix), tenant, user):
                        partitions[item.pk] = None
            for pk in partitions:
                while True:
                    # Each page is read again from the start: what the last one deleted is gone.
                    page = self._records.query(pk, limit=PAGE)
                    if not page:
                        break
                    yield page, ""

        return pages

    def _workspace_blobs(self, tenant: str, user: str) -> Callable[[Item], Iterator[tuple[list[Item], str]]]:
        """No records: the personal workspace's blobs no record named (a put whose head write failed)."""

        def pages(_: Item) -> Iterator[tuple[list[Item], str]]:
            for key in self._blobs.list_keys(WORKSPACE_ROOT + blob_prefix(tenant, "user", user)):
                self._blobs.purge(key)
            yield from ()

        return pages

    def _shared_memories(self, tenant: str, user: str) -> Callable[[Item], Iterator[tuple[list[Item], str]]]:
        """The memories the user wrote into shared layers, each with its history items and the scope's LAST pointer
        when it names the memory (it keeps the end of its content); knowledge pointers stay."""

        def pages(_: Item) -> Iterator[tuple[list[Item], str]]:
            found: list[Item] = []
            pointers: dict[str, Item] = {}  # partition -> its LAST pointer
            for layer in sorted(SHARED_LAYERS):
                for item in self._records.scan(f"{MEMORY_PARTITION}t={tenant}|{layer}"):
                    if item.sk == LAST:
                        pointers[item.pk] = item
                        continue
                    scope = parse_scope(item.pk.removeprefix(MEMORY_PARTITION))
                    if (
                        scope is not None
                        and scope.tenant == tenant
                        and scope.layer in SHARED_LAYERS
                        and item.sk.startswith(RECORD)
                        and item.data.get("createdBy") == user
                        and "knowledgePointer" not in (item.data.get("metadata") or {})
                    ):
                        found.append(item)
            for record in found:
                memory_id = record.sk.removeprefix(RECORD)
                history = self._records.query(record.pk, history_prefix(memory_id), limit=10_000)
                # The scope's pointer keeps the end of the memory's content when it names it (its ``tail``).
                pointer = pointers.get(record.pk)
                named = [pointer] if pointer is not None and pointer.data.get("memoryId") == memory_id else []
                # The record last, in the page that takes it: a rerun finds a memory until its history is gone.
                items = [*history, *named, record]
                for start in range(0, len(items), PAGE):
                    page = items[start : start + PAGE]
                    yield page, ""

        return pages

    def _queue_entries(self, tenant: str, user: str) -> Callable[[Item], Iterator[tuple[list[Item], str]]]:
        """The user's streams in the list of streams with waiting turns."""

        def pages(_: Item) -> Iterator[tuple[list[Item], str]]:
            found = [
                item
                for partition in queue_partitions()
                for scan_prefix in personal_prefixes("", tenant, user)
                for item in self._records.query(partition, scan_prefix, limit=10_000)
                if is_personal_scope(item.sk, tenant, user)
            ]
            yield from _paged(found, "extraction")

        return pages

    def _markers(self, tenant: str, user: str) -> Callable[[Item], Iterator[tuple[list[Item], str]]]:
        """Index outbox markers and dead letters whose reference names one of the user's scopes."""

        def pages(_: Item) -> Iterator[tuple[list[Item], str]]:
            found = [
                item
                for prefix in (OUTBOX_PREFIX, DEAD_PARTITION)
                for item in self._records.scan(prefix)
                if _names_user(item.data.get("ref"), tenant, user)
            ]
            yield from _paged(found, "indexMarkers")

        return pages


def _paged(items: Iterable[Item], counted_as: str) -> Iterator[tuple[list[Item], str]]:
    page: list[Item] = []
    for item in items:
        page.append(item)
        if len(page) == PAGE:
            yield page, counted_as
            page = []
    if page:
        yield page, counted_as

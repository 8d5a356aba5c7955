"""Erasing one user of one tenant (GDPR article 17): everything stored for them, in every family, and a receipt.

What goes (docs/security.md, "Erasing a user") is what the record families declare (``mnemo.families``), in
the order of their steps (``steps_of``):

* every record in the user's personal scopes (``RequestContext.scope_key`` of the ``user`` layer, and of every
  ``agent`` and ``session`` layer of that user) of every ``personal`` family: memories with their history,
  idempotency records and pointer, conversations and executions, topics, StoredAssets and skills, pinned
  contexts, the personal workspace's files and outlines, the graph and the extraction ledger; each page after
  what its family's ``before_erase`` takes first (every version of a workspace file's blob; the user's key in
  the pinner lists of the shared files a pin set held, which stay);
* the index document of every erased record (its family's ``index``);
* what the families' own steps find: the memories the user wrote into shared layers (``sharedMemories``;
  knowledge pointers stay, as they are the organisation's knowledge), the personal workspace's blobs no
  record named (``workspaceBlobs``), the user's streams in the extraction queue (``extractionQueue``);
* last, the index outbox markers and dead letters naming one of the user's scopes (``indexOutbox``).

**The receipt** is one record (``mnemo.portability.family``), ``{userHash}#{startedAt}#{erasureId}`` in the
tenant's receipt partition, holding
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
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import Field

from mnemo import clock
from mnemo.errors import Conflict
from mnemo.families import (
    ERASURE_PAGE,
    ErasurePage,
    ErasureScope,
    ErasureStep,
    Families,
    RecordFamily,
    is_personal_scope,
    paged,
    personal_prefixes,
)
from mnemo.models import ToolRequest, ToolResponse, WireModel
from mnemo.outbox import DEAD_PARTITION, OUTBOX_PREFIX
from mnemo.portability.family import PARTITION as RECEIPT_PREFIX
from mnemo.portability.family import partition_of as receipt_partition
from mnemo.ports import BlobStore, ConditionFailed, Delete, Item, Put, RecordStore, VectorIndex

__all__ = [
    "PAGE",
    "RECEIPT_PREFIX",
    "EraseUserInput",
    "EraseUserOutput",
    "Erasure",
    "ErasureCounts",
    "is_personal_scope",
    "receipt_partition",
    "steps_of",
    "user_hash",
]

#: How long a completed receipt is kept: a year, then DynamoDB's TTL (the local sweeper) removes it.
RECEIPT_TTL_SECONDS = 365 * 24 * 3600
#: Record deletes per write: the receipt's update takes the last of a write's operations.
PAGE = ERASURE_PAGE
#: The last step: the index outbox's markers and dead letters naming the user's scopes (the outbox is no family).
INDEX_OUTBOX_ORDER = 1000

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


# ------------------------------------------------------------------ steps
def _personal_step(family: RecordFamily) -> ErasureStep:
    """The step erasing every record of ``family`` in the user's personal scopes, partition by partition, a page
    at a time (each page read again from the start: what the last one deleted is gone)."""

    def pages(where: ErasureScope) -> Iterator[ErasurePage]:
        partitions: dict[str, None] = {}
        for scan_prefix in personal_prefixes(family.partition, where.tenant, where.user):
            for item in where.records.scan(scan_prefix):
                if is_personal_scope(family.scope_of(item.pk), where.tenant, where.user):
                    partitions[item.pk] = None
        for pk in partitions:
            while page := where.records.query(pk, limit=PAGE):
                yield page

    return ErasureStep(family.name, family.erasure_order, pages, family.count_as)


def _outbox_step() -> ErasureStep:
    """Index outbox markers and dead letters whose reference names one of the user's scopes."""

    def pages(where: ErasureScope) -> Iterator[ErasurePage]:
        found = [
            item
            for prefix in (OUTBOX_PREFIX, DEAD_PARTITION)
            for item in where.records.scan(prefix)
            if _names_user(item.data.get("ref"), where.tenant, where.user)
        ]
        yield from paged(found)

    return ErasureStep("indexOutbox", INDEX_OUTBOX_ORDER, pages, lambda sk: "indexMarkers")


def steps_of(families: Families) -> list[ErasureStep]:
    """Every step of an erasure, in order: each personal family's scopes at its ``erasure_order``, the steps the
    families add, and the index outbox last. Their names are the receipt's ``done`` list."""
    steps = [_personal_step(family) for family in families.personal]
    steps += [step for family in families for step in family.steps]
    steps.append(_outbox_step())
    names = [step.name for step in steps]
    if len(set(names)) != len(names):
        raise ValueError(f"two erasure steps share a name: {sorted(names)}")
    return sorted(steps, key=lambda step: step.order)


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

    def __init__(self, records: RecordStore, index: VectorIndex, blobs: BlobStore, *, families: Families) -> None:
        self._records = records
        self._index = index
        self._blobs = blobs
        self._families = families
        self._steps = steps_of(families)
        #: What must go before a personal family's records (blobs, pinner lists), by its step.
        self._before = {family.name: family.before_erase for family in families.personal if family.before_erase}

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
            started = clock.now_iso("microseconds")
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
        completed = clock.now_iso("microseconds")
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
        where = ErasureScope(self._records, self._blobs, tenant, user)
        for step in self._steps:
            if step.name in receipt.data["done"]:
                continue
            for page in step.pages(where):
                if deadline is not None and time.monotonic() > deadline:
                    return EraseUserOutput.model_validate(receipt.data)
                receipt = self._erase_page(receipt, step, page, where)
            receipt = self._commit(receipt, [], Counter(), finished=step.name)
        return EraseUserOutput.model_validate(self._complete(receipt).data)

    def _erase_page(self, receipt: Item, step: ErasureStep, page: list[Item], where: ErasureScope) -> Item:
        """What must go first (its family's ``before_erase``: blobs, pinner lists), then the page's index
        documents, then its records with the receipt's counts."""
        added: Counter[str] = Counter()
        before = self._before.get(step.name)
        if before is not None:
            added.update(before(where, page))
        documents: dict[str, list[str]] = {}
        for item in page:
            # Counted as ``indexDocuments`` whether or not the index still held it: the count follows from the
            # records alone, so a resumed erasure counts what an uninterrupted one would.
            entry = self._families.index_entry(item)
            if entry is not None:
                documents.setdefault(entry.family, []).append(entry.doc_id)
        for namespace, ids in documents.items():
            self._index.delete(namespace, ids)
            added["indexDocuments"] += len(ids)
        for item in page:
            added[step.count_as(item.sk)] += 1
        return self._commit(receipt, [Delete(item.pk, item.sk) for item in page], added)

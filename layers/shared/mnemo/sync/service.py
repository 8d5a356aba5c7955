"""Sync: mirror a tenant's knowledge files into the catalog, the index and memory.

Each accepted item becomes a pointer memory in its layer, so memory_search
surfaces the policies that apply. A run sorts every file in scope by a hash
of what it says plus what sync derives for it (effective status, supersededBy):

- added / updated: written to the catalog record, the index and the pointer;
- deleted: catalog record and index doc removed, pointer marked orphaned;
- unchanged: nothing written. A full run lists the files with their content tags (S3's ETag) and does not
  even read a file whose tag the sync state already holds, unless ``force`` or a failure says otherwise;
- failed: recorded with the error, the time and a retry count; the others go on.

Records (partition ``SYNC|t={tenant}``): ``STATE`` (last sync, stats),
``ITEM#{path}`` (what was synced from a file), ``FAIL#{path}`` and ``LOCK``.
Two runs of a tenant never interleave: a run holds ``LOCK``, renewing it each
minute; its expiry frees the tenant within minutes of a crashed run. A second run
gets CONFLICT.

Every write is idempotent (ids derive from the item, writes re-read first), so
a run that dies half-way is repaired by the next one; knowledge wins over an
edited pointer. Failures that may pass on a retry (an outage, throttling) are
retried in the run: 3 attempts, 1 s doubling, at most 30 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from mnemo import clock
from mnemo.errors import RETRYABLE, Conflict, InvalidInput, MnemoError
from mnemo.knowledge import catalog
from mnemo.knowledge.catalog import index_doc, scope_of
from mnemo.knowledge.documents import (
    DOCUMENT_FORMAT,
    DocumentError,
    is_knowledge_file,
    parse_document,
    place_of,
)
from mnemo.knowledge.models import KnowledgeItem
from mnemo.knowledge.repository import KnowledgeRepository
from mnemo.ports import ConditionFailed, Delete, Embedder, Item, Put, RecordStore, VectorIndex
from mnemo.sync.family import FAILURE, ITEM, LOCK, partition_of
from mnemo.sync.models import (
    FailedItem,
    SyncCounts,
    SyncNowInput,
    SyncNowOutput,
    SyncStats,
    SyncStatusOutput,
)

#: A run renews its lock every minute; a run that dies frees the tenant after this long. Longer
#: than the sync Lambda's timeout would be pointless, shorter than a minute's work would be unsafe.
LOCK_SECONDS = 330
LOCK_RENEW_SECONDS = 60
RETRY_ATTEMPTS = 3
RETRY_FIRST_DELAY = 1.0
RETRY_MAX_DELAY = 30.0
MAX_TRACKED = 100_000
TYPE_LABEL = {"adr": "ADR", "policy": "Policy", "pattern": "Pattern", "spec": "Spec"}

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _partition(tenant: str) -> str:
    return partition_of(tenant)


def pointer_id(scope: str, item_id: str) -> str:
    return "mem_k" + hashlib.sha256(f"{scope}#{item_id}".encode()).hexdigest()[:23]


def tag_of(etag: str) -> str:
    """What the sync state keeps of a file's content tag: the tag with the document format it was read with,
    so a Mnemo that reads the same bytes differently reads every file again. "" when the store gave none."""
    return f"{DOCUMENT_FORMAT}/{etag}" if etag else ""


def pointer_content(item: KnowledgeItem) -> str:
    return f"{TYPE_LABEL[item.type]} {item.id}: {item.title}. {item.summary}"


def since(moment: str | None, now: datetime) -> str:
    """'never', 'just now', '5 minutes ago', '3 hours ago', '2 days ago'."""
    if moment is None:
        return "never"
    seconds = max(0.0, (now - datetime.fromisoformat(moment)).total_seconds())
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


@dataclass
class _Plan:
    """What one run will do, decided before anything is written."""

    parsed: dict[str, KnowledgeItem] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    failed: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)  # path -> (id, error, field)
    #: Every file the store listed (a full run), whatever the filters: failures of others are stale.
    listed: set[str] = field(default_factory=set)
    #: The content tag of each file read, as the sync state keeps it (``tag_of``).
    tags: dict[str, str] = field(default_factory=dict)
    #: Files not read: their listed tag is the one the sync state holds (``_derive`` may still read one).
    kept: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Derived:
    """What a run derived for one file it applies: effective status, supersededBy, fingerprint, content tag."""

    status: str
    superseded_by: list[str]
    fingerprint: str
    tag: str


if TYPE_CHECKING:
    from mnemo.memory.service import MemoryService


class SyncService:
    def __init__(
        self,
        records: RecordStore,
        index: VectorIndex,
        embedder: Embedder,
        repository: KnowledgeRepository,
        memory: MemoryService | Callable[[], MemoryService],
        *,
        stale_after_seconds: float = 86400.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._repository = repository
        # A factory is called on the first pointer write: a run that changes nothing never loads the memory
        # service (sync_now's cold start, docs/benchmarks.md).
        self._memory_source = memory
        self._stale_after = stale_after_seconds
        self._sleep = sleep

    @property
    def _memory(self) -> MemoryService:
        """The memory service the pointers are written with (made on first use when given as a factory)."""
        if callable(self._memory_source):
            self._memory_source = self._memory_source()
        return self._memory_source

    # ---------------------------------------------------------------- lock
    def _acquire(self, tenant: str) -> str:
        token = secrets.token_hex(8)
        now = time.time()
        data = {"owner": token, "since": now, "expiresAt": now + LOCK_SECONDS}
        lock = Item(_partition(tenant), LOCK, data, expires_at=int(now + LOCK_SECONDS) + 3600)
        try:
            self._records.write([Put(lock, expect="absent")])
            return token
        except ConditionFailed:
            held = self._records.get(_partition(tenant), LOCK)
        if held is not None and float(held.data["expiresAt"]) > now:
            raise Conflict(
                "A sync of this tenant is already running; retry when it has finished",
                {"runningSince": clock.iso(datetime.fromtimestamp(float(held.data["since"]), UTC))},
            )
        # The holder died (its lock expired): take the lock over, unless another run just did.
        lock.version = held.version + 1 if held else 1
        try:
            self._records.write([Put(lock, expect=held.version if held else "absent")])
        except ConditionFailed:
            raise Conflict("A sync of this tenant is already running; retry when it has finished") from None
        return token

    def _release(self, tenant: str, token: str) -> None:
        held = self._records.get(_partition(tenant), LOCK)
        if held is not None and held.data.get("owner") == token:
            with contextlib.suppress(ConditionFailed):
                self._records.write([Delete(held.pk, held.sk, expect=held.version)])

    # -------------------------------------------------------------- retries
    def _retrying(self, what: str, operation: Callable[..., T], *args: Any) -> T:
        """Run ``operation``; retry what may pass on a second try (an outage, throttling, a lost race)."""
        delay = RETRY_FIRST_DELAY
        for attempt in range(1, RETRY_ATTEMPTS + 1):
            try:
                return operation(*args)
            except Exception as error:
                if attempt == RETRY_ATTEMPTS or not _transient(error):
                    raise
                logger.warning("sync: %s failed (attempt %d), retrying in %.0f s: %s", what, attempt, delay, error)
                self._sleep(min(delay, RETRY_MAX_DELAY))
                delay *= 2
        raise AssertionError("unreachable")

    def _keep_lock(self, tenant: str, token: str, renewed: list[float]) -> None:
        """Push the lock's expiry on while a long run is still working (at most once a minute)."""
        now = time.time()
        if now - renewed[0] < LOCK_RENEW_SECONDS:
            return
        held = self._records.get(_partition(tenant), LOCK)
        if held is None or held.data.get("owner") != token:
            raise Conflict("This sync lost its lock (it ran past the lock's expiry); the next sync goes on")
        data = {**held.data, "expiresAt": now + LOCK_SECONDS}
        lock = Item(held.pk, held.sk, data, version=held.version + 1, expires_at=int(now + LOCK_SECONDS) + 3600)
        self._records.write([Put(lock, expect=held.version)])
        renewed[0] = now

    # ----------------------------------------------------------------- run
    def sync(
        self,
        tenant: str,
        request: SyncNowInput,
        *,
        actor: str = "sync",
        paths: Sequence[str] | None = None,
        seconds: float | None = None,
    ) -> SyncNowOutput:
        """Sync the tenant's repository, or only ``paths`` (an S3 object event).

        With ``seconds``, no item is started after that many seconds: the rest is counted ``deferred`` and
        left as it was, so the next sync (called again, or the schedule) picks it up as still changed."""
        started = time.perf_counter()
        deadline = None if seconds is None else time.monotonic() + seconds
        token = self._acquire(tenant)
        renewed = [time.time()]
        try:
            counts, failures, deferred = self._run(
                tenant, request, actor, paths, lambda: self._keep_lock(tenant, token, renewed), deadline
            )
            duration = round((time.perf_counter() - started) * 1000, 1)
            self._record_run(tenant, counts, duration)
        finally:
            self._release(tenant, token)
        changed = counts.added + counts.updated + counts.deleted
        message = f"Synced {changed} changed item{'s' if changed != 1 else ''}, {counts.unchanged} unchanged"
        if counts.failures:
            message += f"; {counts.failures} failed (see failedItems)"
        if deferred:
            message += (
                f"; stopped at the time limit with {deferred} item(s) left: call sync_now again to go on "
                "(the scheduled sync also takes them up)"
            )
        return SyncNowOutput(
            result=counts, duration_ms=duration, message=message, failed_items=failures, deferred=deferred
        )

    def _state(self, tenant: str, prefix: str) -> dict[str, Item]:
        found = self._records.query(_partition(tenant), prefix, limit=MAX_TRACKED)
        return {item.sk.removeprefix(prefix): item for item in found}

    def _plan(
        self,
        tenant: str,
        request: SyncNowInput,
        paths: Sequence[str] | None,
        state: dict[str, Item],
        failures: dict[str, Item],
    ) -> _Plan:
        plan = _Plan()
        listing = self._retrying("listing", self._repository.listing, tenant) if paths is None else {}
        listed = list(listing) if paths is None else list(paths)
        for path in listed:
            if not is_knowledge_file(path):
                continue
            try:
                place = place_of(path)
            except DocumentError as error:
                plan.failed[path] = (path, error.message, error.field)
                continue
            if request.layers and place.layer not in request.layers:
                continue
            entry = state.get(path)
            listed_tag = tag_of(listing.get(path, ""))
            unread = not request.force and path not in failures
            if unread and entry is not None and listed_tag and entry.data.get("tag") == listed_tag:
                # The bytes it was synced from: nothing to read, parse or write.
                if not request.types or entry.data["type"] in request.types:
                    plan.kept.add(path)
                continue
            try:
                blob = self._retrying(f"reading {path}", self._repository.read, tenant, path)
            except InvalidInput:  # a key the store cannot hold names no file
                blob = None
            if blob is None:
                if path in state:
                    plan.gone.append(path)
                continue
            try:
                item = parse_document(path, blob.content, version=blob.version, modified_at=blob.modified_at)
            except DocumentError as error:
                plan.failed[path] = (path, error.message, error.field)
                continue
            if request.types and item.type not in request.types:
                continue
            plan.parsed[path] = item
            plan.tags[path] = tag_of(blob.etag)
        if paths is None:  # a full run: what was synced and is no longer listed is gone
            listed_set = plan.listed = set(listed)
            for path, entry in state.items():
                in_scope = (not request.layers or entry.data["layer"] in request.layers) and (
                    not request.types or entry.data["type"] in request.types
                )
                if path not in listed_set and in_scope:
                    plan.gone.append(path)
        self._refuse_duplicate_ids(tenant, plan, state)
        return plan

    def _refuse_duplicate_ids(self, tenant: str, plan: _Plan, state: dict[str, Item]) -> None:
        """Two files with one id in one layer: the one synced first keeps it, the other fails.

        Unless the first file is gone: a rename sends the new file's event before the old
        one's deletion may arrive, and the renamed file takes the id over (the old one is
        removed in the same run).
        """
        owners: dict[tuple[str, str], str] = {}
        for path, entry in state.items():
            if path not in plan.gone and path not in plan.parsed:
                owners[(entry.data["scope"], entry.data["itemId"])] = path
        for path, entry in state.items():  # files synced before keep their ids
            item = plan.parsed.get(path)
            if item is not None and entry.data["itemId"] == item.id:
                owners.setdefault((scope_of_item(tenant, item), item.id), path)
        for path in sorted(plan.parsed):
            item = plan.parsed[path]
            key = (scope_of_item(tenant, item), item.id)
            owner = owners.setdefault(key, path)
            if owner != path and owner in state and owner not in plan.parsed and self._vanished(tenant, owner):
                plan.gone.append(owner)
                owners[key] = path
            elif owner != path:
                plan.failed[path] = (item.id, f"id '{item.id}' is already used by {owner} in this layer", "id")
                del plan.parsed[path]

    def _vanished(self, tenant: str, path: str) -> bool:
        try:
            return self._retrying(f"reading {path}", self._repository.read, tenant, path) is None
        except InvalidInput:
            return True

    def _derive(self, tenant: str, plan: _Plan, state: dict[str, Item]) -> dict[str, tuple[str, list[str]]]:
        """Effective status and supersededBy of every current item, from every current file.

        Files whose derived values change although they were not re-read (an ADR
        newly superseded) are read and added to the plan, so they are rewritten.
        """
        # path -> (scope, id, declared status, supersedes); an item supersedes only within its own layer
        # scope, so no project can retire a company rule for everyone.
        current: dict[str, tuple[str, str, str, str | None]] = {}
        for path, entry in state.items():
            if path not in plan.gone:
                data = entry.data
                current[path] = (data["scope"], data["itemId"], data["declaredStatus"], data.get("supersedes"))
        for path, item in plan.parsed.items():
            current[path] = (scope_of_item(tenant, item), item.id, item.status, item.supersedes)
        edges = {
            (scope, item_id): target
            for scope, item_id, declared, target in current.values()
            if target and declared == "accepted"
        }
        superseded_by: dict[tuple[str, str], set[str]] = {}
        for (scope, item_id), target in edges.items():
            if not _in_cycle(edges, scope, item_id):  # a cycle of ADRs retires none of them
                superseded_by.setdefault((scope, target), set()).add(item_id)
        derived = {}
        for path, (scope, item_id, declared, _) in current.items():
            by = sorted(superseded_by.get((scope, item_id), ()))
            derived[path] = ("superseded" if by and declared == "accepted" else declared, by)
        for path, entry in state.items():
            if path in plan.parsed or path in plan.gone or path not in derived:
                continue
            if (entry.data["effectiveStatus"], entry.data.get("supersededBy", [])) != derived[path]:
                blob = self._retrying(f"reading {path}", self._repository.read, tenant, path)
                if blob is not None:
                    with contextlib.suppress(DocumentError):  # it parsed when it was synced
                        plan.parsed[path] = parse_document(
                            path, blob.content, version=blob.version, modified_at=blob.modified_at
                        )
                        plan.tags[path] = tag_of(blob.etag)
        return derived

    def _run(
        self,
        tenant: str,
        request: SyncNowInput,
        actor: str,
        paths: Sequence[str] | None,
        keep_lock: Callable[[], None],
        deadline: float | None = None,
    ) -> tuple[SyncCounts, list[FailedItem], int]:
        """The counts, the failures and how many items were left because ``deadline`` came first."""
        state = self._state(tenant, ITEM)
        previous_failures = self._state(tenant, FAILURE)
        plan = self._plan(tenant, request, paths, state, previous_failures)
        derived = self._derive(tenant, plan, state)
        counts, deferred = SyncCounts(unchanged=len(plan.kept - plan.parsed.keys())), 0
        work = sorted(plan.parsed)
        for done, path in enumerate(work):
            if deadline is not None and time.monotonic() >= deadline:
                deferred = len(work) - done  # the removals below stop at once too
                break
            keep_lock()
            item = plan.parsed[path]
            status, superseded_by = derived[path]
            fingerprint = hashlib.sha256(json.dumps([item.content_hash, status, superseded_by]).encode()).hexdigest()
            previous = state.get(path)
            if (
                previous is not None
                and previous.data["hash"] == fingerprint
                and not request.force
                and path not in previous_failures
            ):
                counts.unchanged += 1
                self._keep_tag(previous, plan.tags.get(path, ""))
                continue
            try:
                self._retrying(
                    f"applying {path}",
                    self._apply,
                    tenant,
                    item,
                    _Derived(status, superseded_by, fingerprint, plan.tags.get(path, "")),
                    previous,
                    actor,
                )
            except Exception as error:
                logger.exception("sync: %s failed", path)
                plan.failed[path] = (item.id, _reason(error), None)
                continue
            if previous is None:
                counts.added += 1
            else:
                counts.updated += 1
        for done, path in enumerate(plan.gone):
            if deadline is not None and time.monotonic() >= deadline:
                deferred += len(plan.gone) - done
                break
            keep_lock()
            entry = state[path]
            try:
                self._retrying(f"removing {path}", self._remove, tenant, entry, actor)
            except Exception as error:
                logger.exception("sync: removing %s failed", path)
                plan.failed[path] = (entry.data["itemId"], _reason(error), None)
                continue
            counts.deleted += 1
        failures = self._record_failures(tenant, plan, previous_failures, full=paths is None)
        counts.failures = len(failures)
        return counts, failures, deferred

    # --------------------------------------------------------------- writes
    def _keep_tag(self, entry: Item, tag: str) -> None:
        """Record the tag of an unchanged file read again (synced before tags were kept, or re-uploaded as the
        same bytes under a new tag), so the next full run skips reading it. A failure costs only that read."""
        if not tag or entry.data.get("tag") == tag:
            return
        try:
            self._retrying(
                f"tagging {entry.sk}", self._records.write, [Put(replace(entry, data={**entry.data, "tag": tag}))]
            )
        except Exception:
            logger.warning("sync: could not record the tag of %s", entry.sk, exc_info=True)

    def _apply(self, tenant: str, item: KnowledgeItem, derived: _Derived, previous: Item | None, actor: str) -> None:
        status, superseded_by = derived.status, derived.superseded_by
        scope = scope_of_item(tenant, item)
        now = clock.now_iso()
        existing = self._records.get(catalog.partition(scope), catalog.item_key(item.id))
        data = {
            "item": item.model_dump(mode="json"),
            "effectiveStatus": status,
            "supersededBy": superseded_by,
            "firstSyncedAt": existing.data.get("firstSyncedAt", now) if existing else now,
            "syncedAt": now,
            "path": item.path,
        }
        record = Item(catalog.partition(scope), catalog.item_key(item.id), data)
        record.version = existing.version + 1 if existing else 1
        try:
            self._records.write([Put(record, expect=existing.version if existing else "absent")])
        except ConditionFailed:
            raise Conflict(f"the catalog record of '{item.id}' changed during sync") from None
        vector = self._embedder.embed([catalog.embedding_text(item)])[0]
        self._index.upsert(catalog.NAMESPACE, [index_doc(item, scope, status, vector)])
        memory_id = self._mirror(scope, item, status, now, actor)
        if previous is not None and (previous.data["scope"], previous.data["itemId"]) != (scope, item.id):
            self._forget(previous.data["scope"], previous.data["itemId"], item.path, actor)
        entry = {
            "path": item.path,
            "itemId": item.id,
            "type": item.type,
            "layer": item.layer,
            "scope": scope,
            "declaredStatus": item.status,
            "effectiveStatus": status,
            "supersedes": item.supersedes,
            "supersededBy": superseded_by,
            "hash": derived.fingerprint,
            "tag": derived.tag,
            "contentHash": item.content_hash,
            "memoryId": memory_id,
            "syncedAt": now,
        }
        self._records.write(
            [
                Put(Item(_partition(tenant), f"{ITEM}{item.path}", entry)),
                Delete(_partition(tenant), f"{FAILURE}{item.path}"),
            ]
        )

    def _mirror(self, scope: str, item: KnowledgeItem, status: str, now: str, actor: str) -> str:
        """Mirror an item into memory: its pointer memory put while it is accepted, orphaned otherwise; its id."""
        memory_id = pointer_id(scope, item.id)
        if status != "accepted":
            self._memory.orphan_pointer(scope, memory_id, actor)
            return memory_id
        pointer = {
            "sourceType": item.type,
            "sourceId": item.id,
            "contentHash": item.content_hash,
            "syncedAt": now,
            "path": item.path,
        }
        tags = list(dict.fromkeys([*item.tags, "knowledge", item.type]))
        self._memory.put_pointer(scope, item.layer, memory_id, pointer_content(item), tags, pointer, actor)
        return memory_id

    def _forget(self, scope: str, item_id: str, path: str, actor: str) -> None:
        """Remove what a file put in the catalog, the index and memory (its pointer stays, orphaned)."""
        record = self._records.get(catalog.partition(scope), catalog.item_key(item_id))
        if record is not None and record.data.get("path") == path:
            with contextlib.suppress(ConditionFailed):  # rewritten meanwhile by another file: keep it
                self._records.write([Delete(record.pk, record.sk, expect=record.version)])
            self._index.delete(catalog.NAMESPACE, [catalog.doc_id(scope, item_id)])
            self._memory.orphan_pointer(scope, pointer_id(scope, item_id), actor)

    def _remove(self, tenant: str, entry: Item, actor: str) -> None:
        self._forget(entry.data["scope"], entry.data["itemId"], entry.data["path"], actor)
        self._records.write(
            [Delete(_partition(tenant), entry.sk), Delete(_partition(tenant), f"{FAILURE}{entry.data['path']}")]
        )

    def _record_failures(self, tenant: str, plan: _Plan, previous: dict[str, Item], *, full: bool) -> list[FailedItem]:
        now = clock.now_iso()
        failures = []
        writes: list[Put | Delete] = []
        for path, (knowledge_id, error, failed_field) in sorted(plan.failed.items()):
            before = previous.get(path)
            failure = FailedItem(
                knowledge_id=knowledge_id,
                path=path,
                error=error,
                field=failed_field,
                failed_at=now,
                retry_count=(before.data.get("retryCount", 0) + 1) if before else 0,
            )
            failures.append(failure)
            writes.append(Put(Item(_partition(tenant), f"{FAILURE}{path}", failure.model_dump(mode="json"))))
        if full:  # a file that failed before and is now gone fails no more
            writes += [Delete(_partition(tenant), f"{FAILURE}{path}") for path in previous if path not in plan.listed]
        for chunk in _chunks(writes, 25):
            self._records.write(chunk)
        return failures

    def _record_run(self, tenant: str, counts: SyncCounts, duration_ms: float) -> None:
        current = self._records.get(_partition(tenant), "STATE")
        stats = (
            dict(current.data["stats"]) if current else {"totalSyncs": 0, "totalItemsSynced": 0, "totalDurationMs": 0}
        )
        stats["totalSyncs"] += 1
        stats["totalItemsSynced"] += counts.added + counts.updated + counts.deleted
        stats["totalDurationMs"] += duration_ms
        data = {
            "lastSyncAt": clock.now_iso(),
            "stats": stats,
            "lastResult": counts.model_dump(mode="json"),
        }
        item = Item(_partition(tenant), "STATE", data, version=current.version + 1 if current else 1)
        self._records.write([Put(item, expect=current.version if current else "absent")])

    # --------------------------------------------------------------- status
    def status(self, tenant: str) -> SyncStatusOutput:
        now = clock.now()
        state = self._records.get(_partition(tenant), "STATE")
        failures = [
            FailedItem.model_validate(item.data)
            for item in self._records.query(_partition(tenant), FAILURE, limit=1000)
        ]
        lock = self._records.get(_partition(tenant), LOCK)
        running = lock is not None and float(lock.data["expiresAt"]) > time.time()
        last = state.data["lastSyncAt"] if state else None
        raw = state.data["stats"] if state else {"totalSyncs": 0, "totalItemsSynced": 0, "totalDurationMs": 0}
        stats = SyncStats(
            total_syncs=raw["totalSyncs"],
            total_items_synced=raw["totalItemsSynced"],
            avg_sync_duration_ms=round(raw["totalDurationMs"] / raw["totalSyncs"], 1) if raw["totalSyncs"] else 0.0,
        )
        fresh = last is not None and (now - datetime.fromisoformat(last)).total_seconds() <= self._stale_after
        return SyncStatusOutput(
            healthy=fresh and not failures,
            last_sync_at=last,
            time_since_sync=since(last, now),
            failed_items=len(failures),
            stats=stats,
            failures=failures,
            running=running,
        )


def _transient(error: Exception) -> bool:
    """Whether a failure may pass on a retry: not a bad file, not a bug, not a refusal."""
    if isinstance(error, MnemoError):
        return error.code in RETRYABLE
    return not isinstance(error, ValueError | TypeError | KeyError | AttributeError | AssertionError)


def _in_cycle(edges: dict[tuple[str, str], str], scope: str, start: str) -> bool:
    """Whether following ``supersedes`` from ``start`` within ``scope`` comes back to it."""
    node = edges.get((scope, start))
    for _ in range(len(edges)):
        if node is None:
            return False
        if node == start:
            return True
        node = edges.get((scope, node))
    return False


def scope_of_item(tenant: str, item: KnowledgeItem) -> str:
    return scope_of(tenant, item.layer, item.layer_id)


def _reason(error: BaseException) -> str:
    return error.message if isinstance(error, MnemoError) else f"{type(error).__name__}: {error}"


def _chunks(values: Sequence[Put | Delete], size: int) -> Iterable[Sequence[Put | Delete]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]

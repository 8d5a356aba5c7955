"""The index outbox: one mechanism that keeps every family's vector index in line with its records.

Records are the truth and the vector index only finds them, so an index write
must never be lost between the two stores. Every write of an indexed record
(memories, conversations, executions, topics) carries, in the same
all-or-nothing write, an outbox **marker** naming the record. After the write,
the caller indexes the record and clears the marker; if the process dies, the
embedder or the index fails, or the record moved on meanwhile, the marker
stays and a drain (the indexer's schedule on AWS, the local server's
background loop, ``mnemo reindex --pending``) brings the index in line later.

======================  ===================================  ===============================================
pk                      sk                                   holds
======================  ===================================  ===============================================
``INDEX-OUTBOX#{nn}``   ``{family}#{hash of the reference}``  ``{family, ref, attempts, queuedAt, lastError}``
``INDEX-DEAD``          the same                             a marker that failed ``MAX_ATTEMPTS`` drains
======================  ===================================  ===============================================

Markers are spread over ``SHARDS`` partitions so that no partition takes every
write of a busy tenant. Each marker is stored with a fresh version, so clearing
one (a delete that expects that version) never removes a marker queued again
after it was read. A marker that keeps failing is retried ``MAX_ATTEMPTS``
times, then moved to the dead letters, which ``mnemo reindex --pending``
reports; it can never hold the outbox up.

Concurrent writers of one record may finish their index writes out of order.
``settle`` therefore reads the record's version back after indexing and
indexes again until the index holds the version the records hold, so the last
index write for a record is never a stale one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put, RecordStore

OUTBOX_PREFIX = "INDEX-OUTBOX#"
DEAD_PARTITION = "INDEX-DEAD"
SHARDS = 16
#: Failed drains of one marker before it becomes a dead letter.
MAX_ATTEMPTS = 5
#: Times ``settle`` re-indexes a record that keeps moving while it is indexed.
VERIFY_ROUNDS = 3
#: What a record's version token is once the record is gone (the index must not hold it).
GONE = "gone"

logger = logging.getLogger(__name__)

#: Names one record of a family, e.g. ``{"pk": ..., "sk": ...}``; JSON-able strings.
Reference = Mapping[str, str]


class IndexedFamily(Protocol):
    """A family whose records the vector index mirrors."""

    #: The family's name in markers (its index namespace).
    family: str

    def sync_reference(self, ref: Reference) -> str:
        """Index the record as it is now (or remove it from the index if it is gone); its version token."""
        ...

    def version_token(self, ref: Reference) -> str:
        """The record's current version token (``GONE`` when it does not exist), read consistently."""
        ...


@dataclass
class DrainReport:
    indexed: int = 0
    failed: int = 0
    dead_lettered: int = 0
    by_family: dict[str, int] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _fresh_version() -> int:
    # Unique per write in practice: a marker read by a drain is never confused with one queued later.
    return time.time_ns() // 1000


def _sort_key(family: str, ref: Reference) -> str:
    digest = hashlib.sha256(json.dumps(dict(ref), sort_keys=True).encode()).hexdigest()[:32]
    return f"{family}#{digest}"


def _shard(sort_key: str) -> str:
    return f"{OUTBOX_PREFIX}{int(sort_key.rsplit('#', 1)[-1][:8], 16) % SHARDS:02d}"


class IndexOutbox:
    """Markers written with the records, settled at once when possible, drained otherwise."""

    def __init__(self, records: RecordStore, families: Callable[[], Mapping[str, IndexedFamily]]) -> None:
        self._records = records
        # Resolved at drain time: the families are services built lazily around this outbox.
        self._families = families

    # ------------------------------------------------------------ writing
    def marker(self, family: str, ref: Reference) -> Put:
        """The marker to write in the same all-or-nothing write as the record it names."""
        sk = _sort_key(family, ref)
        data = {"family": family, "ref": dict(ref), "attempts": 0, "queuedAt": _now()}
        return Put(Item(_shard(sk), sk, data, version=_fresh_version()))

    def settle(self, marker: Put, family: IndexedFamily, first: Callable[[], str] | None = None) -> bool:
        """Index the record a just-written marker names, check it, and clear the marker.

        ``first`` is the caller's own first index write (it already holds the
        vector), returning the version token it indexed. False when the index
        could not be brought in line now: the marker stays for a drain.
        """
        ref = marker.item.data["ref"]
        try:
            indexed = first() if first is not None else family.sync_reference(ref)
            if not self._verified(family, ref, indexed):
                return False
        except Exception as error:  # any embedder or index failure: the marker keeps the record queued
            logger.warning("indexing %s %s failed; queued: %s", family.family, ref, error)
            return False
        self._clear(marker.item.pk, marker.item.sk, marker.item.version)
        return True

    def settle_many(
        self,
        markers: Sequence[Put],
        family: IndexedFamily,
        first: Callable[[], Sequence[str]],
        current: Callable[[Sequence[Reference]], Sequence[str]] | None = None,
    ) -> int:
        """``settle`` for many just-written markers whose records the caller indexes in one write.

        ``first`` is that write, returning the version token indexed for each marker (in order); ``current``
        reads the records' tokens in one go (default: ``family.version_token`` one by one). A record whose
        token moved meanwhile is settled on its own as ``settle`` would; the markers of records the index
        holds as they are now are cleared in batched deletes. Returns how many markers stay for a drain
        (all of them if ``first`` fails).
        """
        if not markers:
            return 0
        refs = [marker.item.data["ref"] for marker in markers]
        try:
            indexed = list(first())
        except Exception as error:  # any embedder or index failure: the markers keep the records queued
            logger.warning("indexing %d %s records failed; queued: %s", len(markers), family.family, error)
            return len(markers)
        tokens = list(current(refs)) if current is not None else [family.version_token(ref) for ref in refs]
        clear: list[Delete] = []
        left = 0
        for marker, was, now in zip(markers, indexed, tokens, strict=True):
            if was == now:
                clear.append(Delete(marker.item.pk, marker.item.sk, expect=marker.item.version))
            elif not self.settle(marker, family):  # changed since it was written (or gone)
                left += 1
        for start in range(0, len(clear), MAX_WRITE_OPERATIONS):
            chunk = clear[start : start + MAX_WRITE_OPERATIONS]
            try:
                self._records.write(chunk)
            except ConditionFailed:  # one queued again meanwhile: clear the rest one by one
                for delete in chunk:
                    with contextlib.suppress(ConditionFailed):
                        self._records.write([delete])
        return left

    @staticmethod
    def _verified(family: IndexedFamily, ref: Reference, indexed: str) -> bool:
        """True once the index holds the version the records hold (re-indexing while they move)."""
        for _ in range(VERIFY_ROUNDS):
            if family.version_token(ref) == indexed:
                return True
            indexed = family.sync_reference(ref)
        return family.version_token(ref) == indexed

    def _clear(self, pk: str, sk: str, version: int) -> None:
        with contextlib.suppress(ConditionFailed):  # queued again meanwhile: a drain takes the new one
            self._records.write([Delete(pk, sk, expect=version)])

    # ------------------------------------------------------------ draining
    def drain(self, limit: int = 1000) -> DrainReport:
        """Bring the index in line for up to ``limit`` markers per shard; failures count towards the dead letters."""
        families = self._families()
        report = DrainReport()
        for shard in range(SHARDS):
            for marker in self._records.query(f"{OUTBOX_PREFIX}{shard:02d}", "", limit=limit):
                self._drain_one(marker, families, report)
        return report

    def _drain_one(self, marker: Item, families: Mapping[str, IndexedFamily], report: DrainReport) -> None:
        name, ref = marker.data["family"], marker.data["ref"]
        try:
            family = families[name]
            if not self._verified(family, ref, family.sync_reference(ref)):
                raise RuntimeError("the record kept changing while it was indexed")
        except Exception as error:  # counted; after MAX_ATTEMPTS the marker is a dead letter
            self._failed(marker, error, report)
            return
        self._clear(marker.pk, marker.sk, marker.version)
        report.indexed += 1
        report.by_family[name] = report.by_family.get(name, 0) + 1

    def _failed(self, marker: Item, error: Exception, report: DrainReport) -> None:
        attempts = int(marker.data.get("attempts", 0)) + 1
        data = {**marker.data, "attempts": attempts, "lastError": f"{type(error).__name__}: {error}"[:500]}
        logger.warning("index outbox: %s %s failed (attempt %d): %s", data["family"], data["ref"], attempts, error)
        if attempts >= MAX_ATTEMPTS:
            operations: list[Put | Delete] = [
                Put(Item(DEAD_PARTITION, marker.sk, {**data, "deadAt": _now()}, version=_fresh_version())),
                Delete(marker.pk, marker.sk, expect=marker.version),
            ]
            report.dead_lettered += 1
        else:
            operations = [Put(Item(marker.pk, marker.sk, data, version=_fresh_version()), expect=marker.version)]
            report.failed += 1
        with contextlib.suppress(ConditionFailed):  # settled or queued again meanwhile: nothing to count
            self._records.write(operations)

    # ------------------------------------------------------------ reporting
    def pending(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Markers waiting, up to ``limit`` per shard."""
        shards = (f"{OUTBOX_PREFIX}{shard:02d}" for shard in range(SHARDS))
        return [item.data for pk in shards for item in self._records.query(pk, "", limit=limit)]

    def dead_letters(self, limit: int = 1000) -> list[dict[str, Any]]:
        return [item.data for item in self._records.query(DEAD_PARTITION, "", limit=limit)]

    def retry_dead_letters(self, limit: int = 1000) -> int:
        """Queue the dead letters again (after the cause is fixed); returns how many."""
        moved = 0
        for item in self._records.query(DEAD_PARTITION, "", limit=limit):
            marker = self.marker(item.data["family"], item.data["ref"])
            with contextlib.suppress(ConditionFailed):
                self._records.write([marker, Delete(item.pk, item.sk, expect=item.version)])
                moved += 1
        return moved

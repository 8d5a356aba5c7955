"""The index outbox: one mechanism that keeps every family's vector index in line with its records.

Records are the truth and the vector index only finds them, so an index write
must never be lost between the two stores. Every write of an indexed record
(memories, conversations, executions, topics) carries, in the same
all-or-nothing write, an outbox **marker** naming the record. After the write,
the caller indexes the record and clears the marker; if the process dies, the
embedder or the index fails, or the record moved on meanwhile, the marker
stays and a drain (the indexer's schedule on AWS, the local server's
background loop, ``mnemo reindex --pending``) brings the index in line later.

One write needs no marker: memory_add of a new memory
(``mnemo.memory.writes``). Its id is fresh, so nobody else can write its record
or its document; it indexes first and then writes the record alone, and only
when that index write failed or timed out does it write the record with a
marker, already ``queued``. A crash between the two leaves an index document
whose record does not exist, which readers drop (they hydrate from the
records) and ``mnemo reindex`` removes; it never leaves a record the index
lacks without a marker.

The stream indexer sees only the marker writes labelled ``STREAM_LABEL``
(``Item.stream``; template.yaml's filter on its stream event): a marker as it
is queued, by ``marker(queued=True)`` or by ``settle`` giving up. It drains
that marker at once (``on_marker``). The write of a failed drain carries no
label, so a failing marker waits for the scheduled drains rather than coming
straight back through the stream.

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
index write for a record is never a stale one. A new record has no concurrent
writer before its write returns: memory_add writes no marker and reads
nothing back, and the batch path's ``settle_many(new=True)`` clears its
markers without waiting out the refresh window.

The scans of whole shards (``drain``, ``dead_letters``) read eventually
consistently: a marker written a moment ago and missed is the next drain's, and
one read just after it was settled is indexed again (idempotent) and its
clearing write, conditional on the version read, finds nothing. The reads of
one marker or record that decide a write stay strongly consistent.

Each record version is indexed once. A marker's ``state`` says who indexes it:

- none: the request that wrote it is settling it. The stream indexer leaves it
  alone (it would embed and write the same version a second time) unless it is
  older than ``SETTLE_GRACE``, when that request must have died.
- ``queued``: that request gave up (embedder or index down, or an index
  waking from idle) or never meant to index (no vector): the stream indexer
  (through its label) and every drain take it at once.
- ``recheck``: the index holds the version, but the index only shows a write to
  searches after a refresh window (``VectorIndex.refresh_window``, OpenSearch
  Serverless), so a delete or replacement made inside the window may have
  missed a copy written just before it. Once ``dueAt`` has passed, a drain
  removes what was missed (``VectorIndex.prune``, or the record's removal
  again) and clears the marker. A write of a new record id (``new=True``)
  cannot have missed anything and is cleared at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mnemo import clock
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put, RecordStore, VectorIndex

OUTBOX_PREFIX = "INDEX-OUTBOX#"
DEAD_PARTITION = "INDEX-DEAD"
SHARDS = 16
#: Failed drains of one marker before it becomes a dead letter.
MAX_ATTEMPTS = 5
#: Times ``settle`` re-indexes a record that keeps moving while it is indexed.
VERIFY_ROUNDS = 3
#: What a record's version token is once the record is gone (the index must not hold it).
GONE = "gone"
#: Marker states (see the module docstring); a marker without one is being settled by its writer.
QUEUED = "queued"
RECHECK = "recheck"
#: ``Item.stream`` of a marker write the stream indexer must see (a marker queued for it): template.yaml's
#: filter on the indexer's stream event passes these, and memory record removals, and nothing else.
STREAM_LABEL = "index"
#: Seconds a writing request may hold its marker before the stream indexer takes it over: above the
#: longest a tool Lambda runs (its timeout), so it never embeds a version its writer is still indexing.
SETTLE_GRACE = 900.0

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


@runtime_checkable
class PrunableFamily(IndexedFamily, Protocol):
    """An optional capability of an indexed family: naming a record's index document.

    A recheck (see the module docstring) of such a family's record asks the index to ``prune`` that
    document to its latest copy, with no new embedding; any other family's record is indexed again.
    ``IndexOutbox._recheck`` is the one place that checks for it.
    """

    def index_entry(self, ref: Reference) -> tuple[str, str]:
        """The index namespace and document id of the record ``ref`` names."""
        ...


@dataclass
class DrainReport:
    """What one drain did: markers indexed (in all and by family), failed, and moved to the dead letters."""

    indexed: int = 0
    failed: int = 0
    dead_lettered: int = 0
    by_family: dict[str, int] = field(default_factory=dict)


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

    def __init__(
        self,
        records: RecordStore,
        families: Callable[[], Mapping[str, IndexedFamily]],
        index: VectorIndex | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._records = records
        # Resolved at drain time: the families are services built lazily around this outbox.
        self._families = families
        #: The index the families write (for ``prune`` and its refresh window); None: writes are exact.
        self._index = index
        self._clock = clock

    @property
    def refresh_window(self) -> float:
        """The index's ``VectorIndex.refresh_window``: 0 when its deletes and replacements are exact at once."""
        return self._index.refresh_window if self._index is not None else 0.0

    # ------------------------------------------------------------ writing
    def marker(self, family: str, ref: Reference, *, queued: bool = False) -> Put:
        """The marker to write in the same all-or-nothing write as the record it names.

        ``queued``: the writer will not index the record itself (it has no vector), so the stream
        indexer takes it at once.
        """
        sk = _sort_key(family, ref)
        data: dict[str, Any] = {
            "family": family,
            "ref": dict(ref),
            "attempts": 0,
            "queuedAt": clock.iso_of_epoch(self._clock()),
        }
        if queued:
            data["state"] = QUEUED
        return Put(Item(_shard(sk), sk, data, version=_fresh_version(), stream=STREAM_LABEL if queued else None))

    def settle(
        self, marker: Put, family: IndexedFamily, first: Callable[[], str] | None = None, *, new: bool = False
    ) -> bool:
        """Index the record a just-written marker names, check it, and clear the marker.

        ``first`` is the caller's own first index write (it already holds the
        vector), returning the version token it indexed. ``new``: the record's id
        was never written before, so no earlier copy can be in the index and the
        marker is cleared even when the index has a refresh window (else it waits
        as a ``recheck``). False when the index could not be brought in line now:
        the marker is queued for the stream indexer and the drains.
        """
        ref = marker.item.data["ref"]
        try:
            indexed = first() if first is not None else family.sync_reference(ref)
            if not self._verified(family, ref, indexed):
                raise RuntimeError("the record kept changing while it was indexed")
        except Exception as error:  # any embedder or index failure: the marker keeps the record queued
            logger.warning("indexing %s %s failed; queued: %s", family.family, ref, error)
            self._queue(marker.item, error)
            return False
        self._done(marker.item, exact=new)
        return True

    def settle_many(
        self,
        markers: Sequence[Put],
        family: IndexedFamily,
        first: Callable[[], Sequence[str]],
        current: Callable[[Sequence[Reference]], Sequence[str]] | None = None,
        *,
        new: bool = False,
    ) -> int:
        """``settle`` for many just-written markers whose records the caller indexes in one write.

        ``first`` is that write, returning the version token indexed for each marker (in order); ``current``
        reads the records' tokens in one go (default: ``family.version_token`` one by one). A record whose
        token moved meanwhile is settled on its own as ``settle`` would; the markers of records the index
        holds as they are now are cleared in batched deletes (``new`` as in ``settle``: otherwise, with a
        refresh window, they wait as rechecks). Returns how many markers stay for a drain (all of them if
        ``first`` fails).
        """
        if not markers:
            return 0
        refs = [marker.item.data["ref"] for marker in markers]
        try:
            indexed = list(first())
        except Exception as error:  # any embedder or index failure: the markers keep the records queued
            logger.warning("indexing %d %s records failed; queued: %s", len(markers), family.family, error)
            for marker in markers:
                self._queue(marker.item, error)
            return len(markers)
        tokens = list(current(refs)) if current is not None else [family.version_token(ref) for ref in refs]
        clear: list[Put | Delete] = []
        left = 0
        for marker, was, now in zip(markers, indexed, tokens, strict=True):
            if was == now:
                clear.append(self._settled(marker.item, exact=new))
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

    def _settled(self, marker: Item, *, exact: bool) -> Put | Delete:
        """The write that settles a marker: its delete, or (refresh window, write not exact) a recheck."""
        window = self.refresh_window
        if exact or window <= 0:
            return Delete(marker.pk, marker.sk, expect=marker.version)
        data = {**marker.data, "state": RECHECK, "dueAt": clock.iso_of_epoch(self._clock() + window), "attempts": 0}
        data.pop("lastError", None)
        return Put(Item(marker.pk, marker.sk, data, version=_fresh_version()), expect=marker.version)

    def _done(self, marker: Item, *, exact: bool) -> None:
        with contextlib.suppress(ConditionFailed):  # queued again meanwhile: a drain takes the new one
            self._records.write([self._settled(marker, exact=exact)])

    def _queue(self, marker: Item, error: Exception) -> None:
        """Hand a marker its writer could not settle to the stream indexer and the drains."""
        if marker.data.get("state") == QUEUED:
            return
        data = {**marker.data, "state": QUEUED, "lastError": f"{type(error).__name__}: {error}"[:500]}
        queued = Item(marker.pk, marker.sk, data, version=_fresh_version(), stream=STREAM_LABEL)
        with contextlib.suppress(ConditionFailed):  # settled or queued again meanwhile
            self._records.write([Put(queued, expect=marker.version)])

    # ------------------------------------------------------------ draining
    def drain(self, limit: int = 1000, *, seconds: float | None = None) -> DrainReport:
        """Bring the index in line for up to ``limit`` markers per shard; failures count towards the dead letters.

        Rechecks not yet due are left for a later drain (and not counted). ``seconds``: start no marker once
        that long has passed (a server draining before it serves must not wait out a long outage); what
        is left is the next drain's.
        """
        families = self._families()
        report = DrainReport()
        stop = None if seconds is None else time.monotonic() + seconds
        for shard in range(SHARDS):
            # Eventually consistent: a marker written a moment ago and missed is the next drain's, and one read
            # after it was settled is indexed again harmlessly (idempotent) and its clearing write finds nothing.
            for marker in self._records.query(f"{OUTBOX_PREFIX}{shard:02d}", "", limit=limit, consistent=False):
                if stop is not None and time.monotonic() > stop:
                    return report
                if not self._waiting(marker):
                    self._drain_one(marker, families, report)
        return report

    def on_stream(self, family: IndexedFamily, ref: Reference) -> str:
        """The stream indexer's view of a record write: index it only if nobody else does.

        "settled" (no marker, or a recheck: the index holds this version), "pending" (its writer is
        settling it), else the marker is drained now: "indexed", or "queued" when that failed (the
        marker counts the attempt and the drains retry it).
        """
        sk = _sort_key(family.family, ref)
        marker = self._records.get(_shard(sk), sk)
        if marker is None or marker.data.get("state") == RECHECK:
            return "settled"
        if (
            marker.data.get("state") != QUEUED
            and self._clock() - clock.parse_iso(marker.data["queuedAt"]).timestamp() < SETTLE_GRACE
        ):
            return "pending"
        report = DrainReport()
        self._drain_one(marker, {family.family: family}, report)
        return "indexed" if report.indexed else "queued"

    def on_marker(self, pk: str, sk: str) -> str:
        """The stream indexer's view of a marker queued for it (``STREAM_LABEL``): drain it now.

        Reads the marker as it is now (the stream may be late or redeliver): "settled" when it is gone,
        "pending" when it is not queued (a writer settles it, or a recheck waits for a drain), else
        "indexed", or "queued" when that failed (the attempt is counted, the drains retry it, and the
        failed attempt's write carries no label, so the stream does not bring it straight back).
        """
        marker = self._records.get(pk, sk)
        if marker is None:
            return "settled"
        if marker.data.get("state") != QUEUED:
            return "pending"
        report = DrainReport()
        self._drain_one(marker, self._families(), report)
        return "indexed" if report.indexed else "queued"

    def complete(self, family: IndexedFamily, ref: Reference) -> bool:
        """Finish now the index write a record's marker still waits for, whoever wrote it; True when none waits.

        For a request that answers about a record written earlier, such as a resent memory_add
        answered from its idempotency record: the first attempt may have died (or given up) before
        its index write, and the caller must find the record by search as soon as it has the answer.
        Indexing a record its writer is still settling is harmless (idempotent). A recheck is left
        to the drains: the index already holds its version. False when the index write failed again:
        the marker is left exactly as it was, with no attempt counted, so resends during an outage
        never push it to the dead letters; the stream indexer and the drains still own it.
        """
        sk = _sort_key(family.family, ref)
        # Strongly consistent: it decides whether the caller may be told the record is searchable.
        marker = self._records.get(_shard(sk), sk)
        if marker is None or marker.data.get("state") == RECHECK:
            return True
        try:
            if not self._verified(family, ref, family.sync_reference(ref)):
                return False
        except Exception as error:  # the answer stands; the marker waits for the drains as it was
            logger.warning("completing %s %s failed; left queued: %s", family.family, dict(ref), error)
            return False
        self._done(marker, exact=False)
        return True

    def _waiting(self, marker: Item) -> bool:
        due = marker.data.get("dueAt")
        return (
            marker.data.get("state") == RECHECK
            and isinstance(due, str)
            and clock.parse_iso(due).timestamp() > self._clock()
        )

    def _drain_one(self, marker: Item, families: Mapping[str, IndexedFamily], report: DrainReport) -> None:
        name, ref = marker.data["family"], marker.data["ref"]
        recheck = marker.data.get("state") == RECHECK
        try:
            family = families[name]
            if recheck:
                self._recheck(family, ref)
            elif not self._verified(family, ref, family.sync_reference(ref)):
                raise RuntimeError("the record kept changing while it was indexed")
        except Exception as error:  # counted; after MAX_ATTEMPTS the marker is a dead letter
            self._failed(marker, error, report)
            return
        # A drain's own write may replace a copy written inside the refresh window: it is rechecked too.
        self._done(marker, exact=recheck)
        report.indexed += 1
        report.by_family[name] = report.by_family.get(name, 0) + 1

    def _recheck(self, family: IndexedFamily, ref: Reference) -> None:
        """Once every earlier write is visible: remove the copies a delete or replacement missed.

        A family that names its index entry (``PrunableFamily``) is pruned to the latest copy without a new
        embedding; any other is indexed again (which finds and replaces every earlier copy now).
        """
        if isinstance(family, PrunableFamily) and self._index is not None and family.version_token(ref) != GONE:
            namespace, doc_id = family.index_entry(ref)
            self._index.prune(namespace, [doc_id])
        elif not self._verified(family, ref, family.sync_reference(ref)):
            raise RuntimeError("the record kept changing while it was indexed")

    def _failed(self, marker: Item, error: Exception, report: DrainReport) -> None:
        attempts = int(marker.data.get("attempts", 0)) + 1
        data = {**marker.data, "attempts": attempts, "lastError": f"{type(error).__name__}: {error}"[:500]}
        if data.get("state") != RECHECK:
            data["state"] = QUEUED
        logger.warning("index outbox: %s %s failed (attempt %d): %s", data["family"], data["ref"], attempts, error)
        if attempts >= MAX_ATTEMPTS:
            operations: list[Put | Delete] = [
                Put(
                    Item(
                        DEAD_PARTITION,
                        marker.sk,
                        {**data, "deadAt": clock.now_iso()},
                        version=_fresh_version(),
                    )
                ),
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
        """Markers that failed ``MAX_ATTEMPTS`` drains, up to ``limit``."""
        # Eventually consistent: a report (and the dead-letter metric); a letter moved a moment ago shows next time.
        return [item.data for item in self._records.query(DEAD_PARTITION, "", limit=limit, consistent=False)]

    def retry_dead_letters(self, limit: int = 1000) -> int:
        """Queue the dead letters again (after the cause is fixed); returns how many."""
        moved = 0
        for item in self._records.query(DEAD_PARTITION, "", limit=limit):
            marker = self.marker(item.data["family"], item.data["ref"])
            with contextlib.suppress(ConditionFailed):
                self._records.write([marker, Delete(item.pk, item.sk, expect=item.version)])
                moved += 1
        return moved

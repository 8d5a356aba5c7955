"""Repair: each subject's current duplicates, left by the code before the subject pointer, merged into one.

Before consolidation kept one current memory per subject (``mnemo.learning.consolidation``), a batch could add
two memories about one subject, and a change supersede only one of them. ``repair`` reads every extracted
memory of every scope (one pass over the memory partitions), and for each subject (scope, strategy, subject
key) with more than one current memory keeps the newest (by ``statedAt`` or ``occurredAt``, then when it was
written) and supersedes the others by it, each with a SUPERSEDE history item whose ``reason`` is ``repair``,
in one all-or-nothing write with the subject's pointer. A subject with one current memory and no pointer
gets its pointer. Nothing is deleted.

Idempotent and resumable: a second pass finds nothing to do, and a pass cut short (``deadline``, a crash)
left every subject either done or untouched, so the next pass finishes. ``mnemo extract --repair`` runs it
locally; on AWS the extraction function runs it when invoked with ``{"mnemoRepair": {}}`` (docs/deploy.md).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from mnemo.memory.extracted import EXTRACTION_SOURCE, recency, standing, time_of
from mnemo.memory.records import PARTITION, history_item, is_record, iso, now, pointer_put, record_item, subject_sk
from mnemo.ports import ConditionFailed, Item, Put, RecordStore

logger = logging.getLogger(__name__)

#: The most duplicates one subject's write supersedes (a DynamoDB transaction holds 100 items; two each).
MAX_PER_WRITE = 40


@dataclass
class RepairReport:
    """What a pass did: memories read, subjects seen, duplicates superseded, pointers written, and whether it
    finished (False: cut short by its deadline; run it again)."""

    memories: int = 0
    subjects: int = 0
    duplicates: int = 0
    pointers: int = 0
    conflicts: int = 0
    done: bool = True

    def view(self) -> dict[str, Any]:
        """The report as the CLI and the extraction function answer it."""
        return asdict(self)


class Repair:
    """Merges each subject's current duplicates (see the module docstring)."""

    def __init__(self, records: RecordStore) -> None:
        self._records = records

    def run(self, *, deadline: float | None = None, clock: Any = time.monotonic) -> RepairReport:
        """One pass over every scope; ``deadline``: a ``clock`` time after which no further subject is begun."""
        report = RepairReport()
        subjects: dict[tuple[str, str, str], list[Item]] = {}
        for item in self._records.scan(PARTITION):
            metadata = item.data.get("metadata") or {} if is_record(item.sk) else {}
            if metadata.get("source") != EXTRACTION_SOURCE or not metadata.get("subjectKey"):
                continue
            report.memories += 1
            if standing(item.data):
                found = (item.pk, str(metadata.get("strategy")), str(metadata["subjectKey"]))
                subjects.setdefault(found, []).append(item)
        report.subjects = len(subjects)
        keys = [(pk, subject_sk(strategy, subject)) for pk, strategy, subject in subjects]
        heads = {(item.pk, item.sk): item for item in self._records.batch_get(keys)} if keys else {}
        for (pk, strategy, key), items in sorted(subjects.items()):
            if deadline is not None and clock() > deadline:
                report.done = False
                break
            head = heads.get((pk, subject_sk(strategy, key)))
            try:
                self._one(report, pk, strategy, key, sorted(items, key=lambda i: recency(i.data), reverse=True), head)
            except ConditionFailed:  # a run wrote this subject meanwhile: it is decided there, or next pass
                report.conflicts += 1
                report.done = False
        return report

    def _one(
        self, report: RepairReport, pk: str, strategy: str, key: str, items: list[Item], head: Item | None
    ) -> None:
        newest, extras = items[0], items[1 : 1 + MAX_PER_WRITE]
        named = head is not None and head.data.get("memoryId") == newest.data["memoryId"]
        if not extras and named:
            return
        # Read again, consistently, after the pointer: a run that superseded it since the scan has moved the
        # pointer too (one write), so either this read sees it superseded or the pointer's version check fails.
        fresh = self._records.get(pk, newest.sk)
        if fresh is None or not standing(fresh.data) or fresh.version != newest.version:
            raise ConditionFailed(f"{newest.data['memoryId']} changed since the scan")
        scope = newest.data["scope"]
        at = iso(now())
        operations: list[Put] = []
        for extra in extras:
            old = {**extra.data, "supersededBy": newest.data["memoryId"], "supersededAt": at}
            operations += [
                Put(record_item(pk, old, extra.version + 1), expect=extra.version),
                history_item(
                    scope,
                    old["memoryId"],
                    "SUPERSEDE",
                    "repair",
                    contentHash=old.get("contentHash"),
                    supersededBy=newest.data["memoryId"],
                    reason="repair",
                ),
            ]
        # On the pointer as read: a run that wrote the subject meanwhile fails this write (decided next pass).
        pending = (head.data.get("pending") or []) if head is not None else []
        operations.append(
            pointer_put(
                pk,
                strategy,
                key,
                newest.data["memoryId"],
                time_of(newest.data),
                pending,
                version=head.version if head is not None else None,
            )
        )
        self._records.write(operations)
        report.duplicates += len(extras)
        report.pointers += 1
        if len(items) - 1 > len(extras):
            report.done = False  # more than one write's worth: the next pass supersedes the rest
        logger.info("repaired %s %s: %d duplicates superseded", strategy, key, len(extras))

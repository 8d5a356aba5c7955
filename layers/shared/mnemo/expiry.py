"""The expiry sweeper: what DynamoDB's TTL does, for a store that does not do it itself (docs/lifecycle.md).

Every RecordStore reads an item past its ``expires_at`` as absent at once; DynamoDB then deletes it within
days and its stream tells the indexer (``mnemo.entry.indexer``). The embedded SQLite store deletes nothing,
so the local server's background maintenance (``mnemo serve``) and ``mnemo expire`` run ``sweep``: it reads
the items past their time (``RecordStore.expired``) and hands each to the family that owns its partition
(``ExpiringFamily``: memories keep their history and lose their index documents, turns lose their index
documents), and deletes the rest (idempotency records past their day, extraction runs past 30 days), each
with its index document when its record family's index mirrors it (``RecordFamily.index``, ``mnemo.families``).
Every delete is conditional on the item being expired still (``Delete(expect="expired")``), so an item written
again meanwhile stays. A second sweep finds nothing left to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mnemo.families import Families
from mnemo.ports import ConditionFailed, Delete, Item, RecordStore, VectorIndex

#: Items handed to a family (or deleted) at a time.
SWEEP_BATCH = 50


class ExpiringFamily(Protocol):
    """A family whose expired items need more than a delete (``MemoryExpiry``, ``ConversationService``)."""

    #: The partition key prefixes the family owns.
    expiring_prefixes: tuple[str, ...]

    def remove(self, items: Sequence[Item]) -> int:
        """Remove these expired items of its partitions, with whatever must outlive them; the records removed."""
        ...


def sweep(
    records: RecordStore,
    families: Sequence[ExpiringFamily],
    registry: Families | None = None,
    index: VectorIndex | None = None,
) -> dict[str, int]:
    """Remove every expired item the store still holds; how many went, by family prefix (``other`` for the
    items no expiring family owns, each with its index document when ``registry`` says the index mirrors it).
    Maintenance only: it scans."""
    counts: dict[str, int] = {}
    pending: dict[int, list[Item]] = {}
    others: list[Item] = []

    def flush(owner: int) -> None:
        family = families[owner]
        items, pending[owner] = pending.get(owner, []), []
        if items:
            name = family.expiring_prefixes[0]
            counts[name] = counts.get(name, 0) + family.remove(items)

    def flush_others() -> None:
        for item in others:
            try:  # one by one: an item written again, live, since the scan stays (and fails only itself)
                records.write([Delete(item.pk, item.sk, expect="expired")])
            except ConditionFailed:
                continue
            entry = registry.index_entry(item) if registry is not None and index is not None else None
            if entry is not None and index is not None:
                index.delete(entry.family, [entry.doc_id])
            counts["other"] = counts.get("other", 0) + 1
        others.clear()

    for item in records.expired():
        owner = next((at for at, family in enumerate(families) if item.pk.startswith(family.expiring_prefixes)), None)
        if owner is None:
            others.append(item)
            if len(others) >= SWEEP_BATCH:
                flush_others()
            continue
        pending.setdefault(owner, []).append(item)
        if len(pending[owner]) >= SWEEP_BATCH:
            flush(owner)
    for owner in list(pending):
        flush(owner)
    flush_others()
    return counts

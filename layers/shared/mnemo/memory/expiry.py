"""Memories that expire: their history kept and their index documents removed when storage removes them.

A memory sent with ``expiresAt`` (memory_add, the batch items, an extraction strategy's
``expiresAfterDays``) reads as absent from the moment it passes, everywhere (the RecordStore port's promise):
search hydrates from the records and drops it, memory_list, memory_history's record read, recall and export
leave it out. What happens when storage removes it:

* **AWS.** DynamoDB TTL deletes the record (within days of ``expires_at``); the table's stream delivers a
  REMOVE whose ``userIdentity`` is the DynamoDB service and whose ``OldImage`` is the record. The stream
  indexer hands that record to ``on_removed``.
* **Embedded.** Nothing removes it by itself: the local server's background maintenance (and
  ``mnemo expire``) runs ``mnemo.expiry.sweep``, which hands each expired record to ``remove``.

Both keep the memory's history as a delete does (``mnemo.memory.records.expired_writes``: the folded ADD entry
written out, and an EXPIRE item at the record's ``expiresAt``), at sort keys derived from the record alone
and written only if absent, so a stream redelivery or a second sweep writes nothing twice. History items
never expire. Then the memory's index document goes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

from mnemo.memory.outbox_sync import MemoryIndexSync
from mnemo.memory.records import PARTITION, expired_writes, is_record, memory_id_of
from mnemo.outbox import IndexOutbox
from mnemo.ports import ConditionFailed, Delete, Item, RecordStore

logger = logging.getLogger(__name__)


class MemoryExpiry:
    """The memory family's part in expiry (see the module docstring)."""

    #: The partitions whose expired items ``remove`` takes (``mnemo.expiry.ExpiringFamily``).
    expiring_prefixes: tuple[str, ...] = (PARTITION,)

    def __init__(self, records: RecordStore, outbox: IndexOutbox, sync: MemoryIndexSync) -> None:
        self._records = records
        self._outbox = outbox
        self._sync = sync

    def on_removed(self, record: Item) -> str:
        """A memory record storage removed as expired (the TTL REMOVE's old image): its history kept, its index
        document removed. "expired", or "repeat" when its history was written already (a redelivery).

        The index delete is idempotent; when it fails the error propagates, so the stream retries the record
        (and finds the history written).
        """
        try:
            self._records.write(expired_writes(record))
            outcome = "expired"
        except ConditionFailed:
            outcome = "repeat"
        self._sync.delete_document(memory_id_of(record.sk))
        return outcome

    def remove(self, items: Sequence[Item]) -> int:
        """Remove expired items of memory partitions (the embedded store's sweep): a record goes with its history
        kept and its outbox marker, whose settling removes its index document; any other expired item (an
        idempotency record past its day) simply goes. The number of memory records removed."""
        removed = 0
        for item in items:
            if not is_record(item.sk):
                self._delete(item)
                continue
            marker = self._sync.marker(item.pk, memory_id_of(item.sk))
            removal = Delete(item.pk, item.sk, expect="expired")
            try:
                self._records.write([removal, *expired_writes(item), marker])
            except ConditionFailed:
                try:  # its history is written already (a sweep cut short): the record and its document go
                    self._records.write([removal, marker])
                except ConditionFailed:  # written again, live, since the sweep looked: it stays
                    continue
            self._outbox.settle(marker, self._sync, first=partial(self._sync.delete_document, memory_id_of(item.sk)))
            removed += 1
        return removed

    def _delete(self, item: Item) -> None:
        try:
            self._records.write([Delete(item.pk, item.sk, expect="expired")])
        except ConditionFailed:  # written again, live, since the sweep looked: it stays
            logger.debug("expired item %s %s was written again; kept", item.pk, item.sk)

"""Where conversations and executions live in the record store, and the reads each query needs.

One partition per kind and user scope (``context.scope_key("user")``, which
carries the tenant), so every read is a key lookup or a bounded prefix query:

=========================  =====================================  =========================================
pk                         sk                                     holds
=========================  =====================================  =========================================
``CONV|{scope}``           ``MSG#{message_id}``                   the conversation (the truth)
``CONV|{scope}``           ``TS#{timestamp}#{message_id}``        a small time entry: message_id, timestamp
``EXEC|{scope}``           ``MSG#{message_id}``                   the execution (the truth)
``EXEC|{scope}``           ``TS#{timestamp}#{message_id}``        time entry + tools, success, error types
=========================  =====================================  =========================================

Timestamps in keys are fixed-width UTC (``2024-12-15T14:30:00.000000Z``), so
keys sort by time: "recent" walks the time entries newest first, a page of
``RECENT_PAGE`` per query, and a time range is a key range of that walk. The time entries
carry the execution filter fields, so the recent strategy filters them without
reading any record body. Records are written once, with their time entry and
their index outbox marker (``mnemo.outbox``), in one all-or-nothing write that
requires both keys to be new.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemo.ports import Item, Put, RecordStore

#: Sort key prefixes: a record (the truth) and its time entry.
RECORD = "MSG#"
TIME = "TS#"
#: Time entries read per query by the recent strategy.
RECENT_PAGE = 1000
#: Without a time range, the most time entries one retrieval walks to fill its page.
RECENT_WALK = 10_000
#: Sorts after every character a key holds: the top of an open-ended key range.
_TOP = "\U0010ffff"


@dataclass(frozen=True)
class Kind:
    name: str  # "conversation" or "execution"
    prefix: str  # partition prefix
    namespace: str  # vector index namespace

    @property
    def partition_prefix(self) -> str:
        """What the partition of every scope of this kind starts with."""
        return f"{self.prefix}|"


CONVERSATIONS = Kind("conversation", "CONV", "conversations")
EXECUTIONS = Kind("execution", "EXEC", "executions")


def key_time(moment: datetime) -> str:
    """A fixed-width UTC timestamp that sorts as text in time order."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_time(value: str) -> datetime:
    """A stored timestamp back as a datetime."""
    return datetime.fromisoformat(value)


def record_sk(message_id: str) -> str:
    """The sort key of a record: ``MSG#{message id}``."""
    return f"{RECORD}{message_id}"


def time_sk(timestamp: str, message_id: str) -> str:
    """The sort key of a record's time entry, ``TS#{timestamp}#{message id}``, so a scope's records read in time
    order."""
    return f"{TIME}{timestamp}#{message_id}"


def message_id_of(sk: str) -> str:
    """The message id of a record's sort key."""
    return sk.removeprefix(RECORD)


def head_of(sk: str) -> str | None:
    """The sort key of the record an item belongs to: its own for a record, its record's for a time entry."""
    kind, _, rest = sk.partition("#")
    if f"{kind}#" == RECORD:
        return sk
    if f"{kind}#" == TIME:
        return record_sk(rest.split("#", 1)[-1])
    return None


def doc_id(scope: str, message_id: str) -> str:
    """The index document id: message ids are the client's, so two users may share one."""
    return hashlib.sha256(f"{scope}\n{message_id}".encode()).hexdigest()[:40]


def new_message_id() -> str:
    """A fresh ``msg_`` id, for a conversation sent without one."""
    return f"msg_{os.urandom(12).hex()}"


class EntryStore:
    """The records of one kind (conversations or executions)."""

    def __init__(self, records: RecordStore, kind: Kind) -> None:
        self._records = records
        self.kind = kind

    def partition(self, scope: str) -> str:
        """The partition of this kind in a scope."""
        return f"{self.kind.partition_prefix}{scope}"

    def get(self, scope: str, message_id: str) -> dict[str, Any] | None:
        """One record's data, or None."""
        item = self._records.get(self.partition(scope), record_sk(message_id))
        return item.data if item is not None else None

    def get_many(self, scope: str, message_ids: Iterable[str], *, consistent: bool = True) -> dict[str, dict[str, Any]]:
        """The records among ``message_ids`` that exist, by message id (duplicates read once)."""
        keys = [(self.partition(scope), record_sk(message_id)) for message_id in dict.fromkeys(message_ids)]
        if not keys:
            return {}
        return {item.data["message_id"]: item.data for item in self._records.batch_get(keys, consistent=consistent)}

    def create(
        self,
        scope: str,
        data: dict[str, Any],
        time_entry: dict[str, Any],
        marker: Put,
        extra: Sequence[Put] = (),
        *,
        expires_at: int | None = None,
    ) -> None:
        """Write a new record, its time entry, its outbox marker and ``extra`` (the turn's extraction work), all
        or none; ConditionFailed if it exists. ``expires_at`` (epoch seconds): when the record and its time
        entry expire (add_messages' ``expiresAt``); the extraction work does not (a turn gone by then is
        left out of its run)."""
        partition, message_id = self.partition(scope), data["message_id"]
        self._records.write(
            [
                Put(Item(partition, record_sk(message_id), data, expires_at=expires_at), expect="absent"),
                Put(
                    Item(partition, time_sk(data["timestamp"], message_id), time_entry, expires_at=expires_at),
                    expect="absent",
                ),
                marker,
                *extra,
            ]
        )

    def recent(
        self, scope: str, low: str | None = None, high: str | None = None, *, consistent: bool = True
    ) -> Iterator[dict[str, Any]]:
        """Time entries within [low, high] (key_time strings, either open), newest first, page by page."""
        partition = self.partition(scope)
        bottom, top = f"{TIME}{low or ''}", f"{TIME}{high}#{_TOP}" if high else f"{TIME}{_TOP}"
        while True:
            page = self._records.query(
                partition, limit=RECENT_PAGE, descending=True, between=(bottom, top), consistent=consistent
            )
            fresh = [item for item in page if item.sk != top]  # the range is inclusive: the last seen comes again
            for item in fresh:
                yield item.data
            if len(page) < RECENT_PAGE or not fresh:
                return
            top = fresh[-1].sk

    def scan_all(self) -> Iterator[dict[str, Any]]:
        """Every record of this kind, in every scope: for reindexing, never for a user request."""
        for item in self._records.scan(self.kind.partition_prefix):
            if item.sk.startswith(RECORD):
                yield item.data

"""The conversation and execution families (``CONV|{scope}``, ``EXEC|{scope}``): what the cross-cutting parts
know of them (``mnemo.families``).

No change events (a turn is not what a user keeps). The index mirrors each record (``MSG#``), by scope and
message id; its time entry (``TS#``) is not indexed. Erased with the user's personal scopes, exported.
"""

from __future__ import annotations

from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS, RECORD, TIME, Kind, doc_id
from mnemo.families import IndexEntry, RecordFamily
from mnemo.ports import Item


def _family(kind: Kind, name: str, order: int) -> RecordFamily:
    def index(item: Item) -> IndexEntry | None:
        if not item.sk.startswith(RECORD):
            return None
        scope, message_id = item.pk.removeprefix(kind.partition_prefix), item.sk.removeprefix(RECORD)
        return IndexEntry(kind.namespace, {"scope": scope, "message_id": message_id}, doc_id(scope, message_id))

    def count_as(sk: str) -> str:
        return name if sk.startswith(RECORD) else "otherRecords"

    return RecordFamily(
        name=name,
        partition=kind.partition_prefix,
        package="mnemo.conversations",
        sort_keys=(RECORD, TIME),
        index=index,
        personal=True,
        erasure_order=order,
        count_as=count_as,
        exported_as=name,
    )


CONVERSATION_FAMILY = _family(CONVERSATIONS, "conversations", 20)
EXECUTION_FAMILY = _family(EXECUTIONS, "executions", 30)

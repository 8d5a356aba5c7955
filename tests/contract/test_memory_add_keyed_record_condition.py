"""The record condition a keyed memory_add writes with: ``Put(expect="new")``, on every RecordStore adapter.

"new" holds only where the key holds no item at all: not a live one, and not one past its ``expires_at`` that
the backend still holds (which reads as absent everywhere and which ``expect="absent"`` lets a put replace). A
keyed add's memory id derives from its key (``mnemo.memory.keys``), so this is what keeps a repeat from
replacing the record of a memory that expired but that storage has not removed yet (its history and its expiry
event come from that removal). Run on SQLite and on DynamoDB (the serial moto server, a table built from
template.yaml).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_fixtures import create_records_table, shared_moto_server

from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.ports import ConditionFailed, Item, Put, RecordStore

_tables = itertools.count()


@pytest.fixture(params=["sqlite", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param == "sqlite":
        yield SqliteRecordStore(tmp_path / "records.sqlite3")
        return
    client = shared_moto_server().client("dynamodb")
    name = f"keyed-condition-{next(_tables)}"
    create_records_table(client, name, stream=False)
    yield DynamoDbRecordStore(name, lambda: client)
    client.delete_table(TableName=name)


def test_new_writes_where_nothing_is_and_fails_on_a_live_item(store: RecordStore) -> None:
    store.write([Put(Item("P", "MEM#a", {"n": 1}), expect="new")])
    assert (item := store.get("P", "MEM#a")) is not None and item.data == {"n": 1}
    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "MEM#a", {"n": 2}), expect="new")])
    with pytest.raises(ConditionFailed):  # in a transaction too: nothing of it is applied
        store.write([Put(Item("P", "MEM#b", {"n": 3})), Put(Item("P", "MEM#a", {"n": 2}), expect="new")])
    assert store.get("P", "MEM#b") is None
    assert (item := store.get("P", "MEM#a")) is not None and item.data == {"n": 1}


def test_new_fails_on_an_expired_item_the_backend_still_holds_where_absent_would_replace_it(
    store: RecordStore,
) -> None:
    past = int(time.time()) - 3600
    store.write([Put(Item("P", "MEM#old", {"n": 1}, expires_at=past))])
    assert store.get("P", "MEM#old") is None  # reads as absent
    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "MEM#old", {"n": 2}), expect="new")])
    held = store.get("P", "MEM#old", expired=True)
    assert held is not None and held.data == {"n": 1}

    store.write([Put(Item("P", "MEM#old", {"n": 3}), expect="absent")])  # what "new" is there to prevent
    assert (item := store.get("P", "MEM#old")) is not None and item.data == {"n": 3}

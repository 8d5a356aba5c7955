"""Contract suite for the RecordStore port.

Every adapter of ``mnemo.ports.RecordStore`` must pass these tests unchanged.
Adapters are registered in ``BACKENDS``: each entry takes pytest's ``tmp_path``
and returns an *opener*, a callable that opens a new handle on one and the same
backing storage (calling it twice must give two handles that see each other's
writes, which is what the reopen test relies on).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, shared_moto_server

from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.ports import ConditionFailed, Delete, Item, Put, RecordStore

Opener = Callable[[], RecordStore]


def _sqlite_backend(tmp_path: Path, stack: ExitStack) -> Opener:
    path = tmp_path / "records.db"
    return lambda: SqliteRecordStore(path)


_table_counter = itertools.count()


def _dynamodb_backend(tmp_path: Path, stack: ExitStack) -> Opener:
    """DynamoDB on a one-request-at-a-time moto server, on a table built from template.yaml."""
    server = shared_moto_server()
    name = f"records-{next(_table_counter)}"
    client = server.client("dynamodb")
    create_records_table(client, name)
    stack.callback(client.delete_table, TableName=name)  # keeps the shared server small
    return lambda: DynamoDbRecordStore(name, lambda: server.client("dynamodb"))


#: Adapter name -> factory of an opener over fresh storage; every entry runs the whole suite.
BACKENDS: dict[str, Callable[[Path, ExitStack], Opener]] = {
    "sqlite": _sqlite_backend,
    "dynamodb": _dynamodb_backend,
}


@pytest.fixture(params=list(BACKENDS))
def store_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    with ExitStack() as stack:
        yield BACKENDS[request.param](tmp_path, stack)


@pytest.fixture
def store(store_opener: Opener) -> RecordStore:
    return store_opener()


def _now() -> int:
    return int(time.time())


def _put(store: RecordStore, pk: str, sk: str, data: dict | None = None, **kwargs) -> Item:
    item = Item(pk, sk, data if data is not None else {"sk": sk}, **kwargs)
    store.write([Put(item)])
    return item


def _keys(items: list[Item]) -> list[tuple[str, str]]:
    return [(item.pk, item.sk) for item in items]


# ------------------------------------------------------------- get / put ---
def test_put_then_get_round_trips_data_and_version(store: RecordStore) -> None:
    data = {"text": "héllo wörld", "tags": ["a", "b"], "count": 3, "nested": {"x": None, "f": 1.5, "ok": True}}
    store.write([Put(Item("t=acme|user|u=alice", "MEM#1", data, version=3))])

    got = store.get("t=acme|user|u=alice", "MEM#1")

    assert got is not None
    assert got.pk == "t=acme|user|u=alice"
    assert got.sk == "MEM#1"
    assert got.data == data
    assert got.version == 3


def test_get_of_missing_key_is_none(store: RecordStore) -> None:
    _put(store, "P", "A")

    assert store.get("P", "B") is None
    assert store.get("Q", "A") is None


def test_unconditional_put_replaces_the_item(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": "old"}, version=1)
    _put(store, "P", "A", {"v": "new"}, version=2)

    got = store.get("P", "A")
    assert got is not None
    assert got.data == {"v": "new"}
    assert got.version == 2
    assert len(store.query("P")) == 1


def test_put_expect_absent_succeeds_on_a_new_key(store: RecordStore) -> None:
    store.write([Put(Item("P", "A", {"v": 1}), expect="absent")])

    got = store.get("P", "A")
    assert got is not None
    assert got.data == {"v": 1}


def test_put_expect_absent_fails_when_the_key_exists(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": "first"})

    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "A", {"v": "second"}), expect="absent")])

    got = store.get("P", "A")
    assert got is not None
    assert got.data == {"v": "first"}


def test_put_expect_version_succeeds_when_it_matches(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": 1}, version=1)

    store.write([Put(Item("P", "A", {"v": 2}, version=2), expect=1)])

    got = store.get("P", "A")
    assert got is not None
    assert (got.version, got.data) == (2, {"v": 2})


def test_put_expect_version_fails_when_it_moved_on(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": 1}, version=1)
    store.write([Put(Item("P", "A", {"v": 2}, version=2), expect=1)])

    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "A", {"v": "stale"}, version=2), expect=1)])

    got = store.get("P", "A")
    assert got is not None
    assert (got.version, got.data) == (2, {"v": 2})


def test_put_expect_version_fails_on_a_missing_key(store: RecordStore) -> None:
    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "A", {"v": 2}, version=2), expect=1)])

    assert store.get("P", "A") is None


# ---------------------------------------------------------------- delete ---
def test_delete_removes_the_item(store: RecordStore) -> None:
    _put(store, "P", "A")
    _put(store, "P", "B")

    store.write([Delete("P", "A")])

    assert store.get("P", "A") is None
    assert store.get("P", "B") is not None


def test_delete_expect_present_succeeds_on_an_existing_key(store: RecordStore) -> None:
    _put(store, "P", "A")

    store.write([Delete("P", "A", expect="present")])

    assert store.get("P", "A") is None


def test_delete_expect_present_fails_on_a_missing_key(store: RecordStore) -> None:
    with pytest.raises(ConditionFailed):
        store.write([Delete("P", "missing", expect="present")])


def test_delete_expect_version(store: RecordStore) -> None:
    _put(store, "P", "A", version=4)

    with pytest.raises(ConditionFailed):
        store.write([Delete("P", "A", expect=3)])
    assert store.get("P", "A") is not None

    store.write([Delete("P", "A", expect=4)])
    assert store.get("P", "A") is None


# ----------------------------------------------------------- transactions ---
def test_write_applies_several_operations_together(store: RecordStore) -> None:
    _put(store, "P", "OLD")

    store.write(
        [
            Put(Item("P", "A", {"v": "a"}), expect="absent"),
            Put(Item("Q", "B", {"v": "b"}), expect="absent"),
            Delete("P", "OLD", expect="present"),
        ]
    )

    assert store.get("P", "A") is not None
    assert store.get("Q", "B") is not None
    assert store.get("P", "OLD") is None


def test_write_is_all_or_nothing_when_a_later_put_fails(store: RecordStore) -> None:
    _put(store, "P", "TAKEN", {"v": "original"}, version=1)

    with pytest.raises(ConditionFailed):
        store.write(
            [
                Put(Item("P", "NEW", {"v": "new"}), expect="absent"),
                Put(Item("P", "TAKEN", {"v": "overwritten"}, version=2), expect="absent"),
            ]
        )

    assert store.get("P", "NEW") is None
    taken = store.get("P", "TAKEN")
    assert taken is not None
    assert (taken.version, taken.data) == (1, {"v": "original"})


def test_write_is_all_or_nothing_when_a_later_delete_fails(store: RecordStore) -> None:
    _put(store, "P", "KEEP", {"v": "keep"})

    with pytest.raises(ConditionFailed):
        store.write(
            [
                Delete("P", "KEEP", expect="present"),
                Put(Item("P", "UPDATED", {"v": "u"}, version=2), expect=1),
            ]
        )

    kept = store.get("P", "KEEP")
    assert kept is not None
    assert kept.data == {"v": "keep"}
    assert store.get("P", "UPDATED") is None


def test_store_stays_usable_after_a_failed_write(store: RecordStore) -> None:
    _put(store, "P", "A")
    with pytest.raises(ConditionFailed):
        store.write([Put(Item("P", "A", {}), expect="absent")])

    store.write([Put(Item("P", "B", {"v": "b"}), expect="absent")])

    got = store.get("P", "B")
    assert got is not None
    assert got.data == {"v": "b"}


# ----------------------------------------------------------------- query ---
@pytest.fixture
def partition(store: RecordStore) -> RecordStore:
    for sk in ["MEM#2", "MEM#1", "MEM#3", "HIST#1#2", "HIST#1#1", "MEMO#1"]:
        _put(store, "P", sk)
    _put(store, "P2", "MEM#9")
    _put(store, "PX", "MEM#8")
    return store


def test_query_by_partition_returns_its_items_in_sort_key_order(partition: RecordStore) -> None:
    items = partition.query("P")

    assert _keys(items) == [
        ("P", "HIST#1#1"),
        ("P", "HIST#1#2"),
        ("P", "MEM#1"),
        ("P", "MEM#2"),
        ("P", "MEM#3"),
        ("P", "MEMO#1"),
    ]
    assert items[0].data == {"sk": "HIST#1#1"}


def test_query_by_sort_key_prefix(partition: RecordStore) -> None:
    assert [item.sk for item in partition.query("P", "MEM#")] == ["MEM#1", "MEM#2", "MEM#3"]
    assert [item.sk for item in partition.query("P", "HIST#1#")] == ["HIST#1#1", "HIST#1#2"]
    assert [item.sk for item in partition.query("P", "MEM#2")] == ["MEM#2"]
    assert partition.query("P", "NOPE#") == []


def test_query_descending(partition: RecordStore) -> None:
    assert [item.sk for item in partition.query("P", "MEM#", descending=True)] == ["MEM#3", "MEM#2", "MEM#1"]


def test_query_limit(partition: RecordStore) -> None:
    assert [item.sk for item in partition.query("P", "MEM#", limit=2)] == ["MEM#1", "MEM#2"]
    assert [item.sk for item in partition.query("P", "MEM#", limit=2, descending=True)] == ["MEM#3", "MEM#2"]
    assert len(partition.query("P", limit=1)) == 1


def test_query_between_bounds_inclusive_both_ways(partition: RecordStore) -> None:
    assert [item.sk for item in partition.query("P", between=("MEM#1", "MEM#3"))] == ["MEM#1", "MEM#2", "MEM#3"]
    assert [item.sk for item in partition.query("P", between=("MEM#15", "MEM#3"), descending=True)] == [
        "MEM#3",
        "MEM#2",
    ]
    assert [item.sk for item in partition.query("P", between=("HIST#", "MEM#1"), limit=2, descending=True)] == [
        "MEM#1",
        "HIST#1#2",
    ]
    assert partition.query("P", between=("MEM#4", "MEM#9")) == []
    with pytest.raises(ValueError):
        partition.query("P", "MEM#", between=("MEM#1", "MEM#3"))


def test_query_of_an_unknown_partition_is_empty(partition: RecordStore) -> None:
    assert partition.query("nobody") == []


# ------------------------------------------------------------- batch_get ---
def test_batch_get_returns_only_existing_items(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": "a"})
    _put(store, "Q", "B", {"v": "b"})

    items = store.batch_get([("P", "A"), ("P", "missing"), ("Q", "B"), ("nowhere", "A")])

    assert sorted(_keys(items)) == [("P", "A"), ("Q", "B")]
    assert {item.sk: item.data for item in items} == {"A": {"v": "a"}, "B": {"v": "b"}}


def test_batch_get_of_nothing_found_is_empty(store: RecordStore) -> None:
    assert store.batch_get([("P", "A"), ("Q", "B")]) == []


# ------------------------------------------------------------------ scan ---
def test_scan_with_prefix_returns_only_matching_partitions(store: RecordStore) -> None:
    _put(store, "t=acme|user|u=alice", "MEM#1")
    _put(store, "t=acme|user|u=alice", "MEM#2")
    _put(store, "t=acme|team|t=core", "MEM#3")
    _put(store, "t=other|user|u=alice", "MEM#4")

    assert sorted(_keys(list(store.scan("t=acme|")))) == [
        ("t=acme|team|t=core", "MEM#3"),
        ("t=acme|user|u=alice", "MEM#1"),
        ("t=acme|user|u=alice", "MEM#2"),
    ]
    assert _keys(list(store.scan("t=other|"))) == [("t=other|user|u=alice", "MEM#4")]
    assert list(store.scan("t=none|")) == []


def test_scan_without_prefix_returns_everything(store: RecordStore) -> None:
    _put(store, "A", "1")
    _put(store, "B", "2")
    _put(store, "C", "3")

    assert sorted(_keys(list(store.scan()))) == [("A", "1"), ("B", "2"), ("C", "3")]


# ---------------------------------------------------------------- expiry ---
def test_items_expiring_in_the_future_are_visible(store: RecordStore) -> None:
    _put(store, "P", "A", {"v": "live"}, expires_at=_now() + 3600)

    got = store.get("P", "A")
    assert got is not None
    assert got.data == {"v": "live"}
    assert got.expires_at is not None
    assert got.expires_at > _now()


def test_expired_items_are_invisible(store: RecordStore) -> None:
    _put(store, "P", "LIVE")
    _put(store, "P", "GONE", expires_at=_now() - 60)

    assert store.get("P", "GONE") is None
    assert [item.sk for item in store.query("P")] == ["LIVE"]
    assert [item.sk for item in store.query("P", "GONE")] == []
    assert _keys(store.batch_get([("P", "GONE"), ("P", "LIVE")])) == [("P", "LIVE")]
    assert _keys(list(store.scan("P"))) == [("P", "LIVE")]


def test_get_with_expired_reads_an_item_past_its_time_the_store_still_holds(store: RecordStore) -> None:
    _put(store, "P", "LIVE")
    _put(store, "P", "GONE", expires_at=_now() - 60)

    gone = store.get("P", "GONE", expired=True)
    assert gone is not None and gone.expires_at is not None and gone.expires_at < _now()
    live = store.get("P", "LIVE", expired=True)
    assert live is not None and live.expires_at is None
    assert store.get("P", "NEVER", expired=True) is None
    assert store.get("P", "GONE") is None  # only when asked


def test_expired_items_do_not_block_expect_absent(store: RecordStore) -> None:
    _put(store, "P", "IDEM#k", {"v": "old"}, expires_at=_now() - 60)

    store.write([Put(Item("P", "IDEM#k", {"v": "new"}, expires_at=_now() + 3600), expect="absent")])

    got = store.get("P", "IDEM#k")
    assert got is not None
    assert got.data == {"v": "new"}


def test_expired_items_count_as_missing_for_expect_present(store: RecordStore) -> None:
    _put(store, "P", "A", expires_at=_now() - 60)

    with pytest.raises(ConditionFailed):
        store.write([Delete("P", "A", expect="present")])


def test_expired_lists_only_the_items_past_their_time_with_their_data(store: RecordStore) -> None:
    _put(store, "MEM|a", "LIVE", expires_at=_now() + 3600)
    _put(store, "MEM|a", "FOREVER")
    _put(store, "MEM|a", "GONE", {"v": "old"}, version=3, expires_at=_now() - 60)
    _put(store, "CONV|a", "GONE", expires_at=_now() - 60)

    (gone,) = store.expired("MEM|")
    assert (gone.pk, gone.sk, gone.data, gone.version) == ("MEM|a", "GONE", {"v": "old"}, 3)
    assert gone.expires_at is not None and gone.expires_at <= _now()
    assert sorted(_keys(list(store.expired()))) == [("CONV|a", "GONE"), ("MEM|a", "GONE")]


def test_delete_expect_expired_removes_only_an_expired_item(store: RecordStore) -> None:
    _put(store, "P", "GONE", expires_at=_now() - 60)
    _put(store, "P", "LIVE", expires_at=_now() + 3600)

    store.write([Delete("P", "GONE", expect="expired")])
    assert list(store.expired("P")) == []
    for sk in ("LIVE", "GONE", "NEVER"):  # live, already removed, never written: each fails its condition
        with pytest.raises(ConditionFailed):
            store.write([Delete("P", sk, expect="expired")])
    assert store.get("P", "LIVE") is not None


# ----------------------------------------------------------- persistence ---
def test_data_survives_reopening_the_store(store_opener: Opener) -> None:
    first = store_opener()
    first.write([Put(Item("P", "A", {"v": "kept"}, version=5), expect="absent")])

    second = store_opener()

    got = second.get("P", "A")
    assert got is not None
    assert (got.version, got.data) == (5, {"v": "kept"})
    assert _keys(second.query("P")) == [("P", "A")]


def test_two_handles_see_each_others_writes(store_opener: Opener) -> None:
    first, second = store_opener(), store_opener()

    first.write([Put(Item("P", "A", {"v": 1}), expect="absent")])
    with pytest.raises(ConditionFailed):
        second.write([Put(Item("P", "A", {"v": 2}), expect="absent")])

    second.write([Delete("P", "A", expect="present")])
    assert first.get("P", "A") is None


# ----------------------------------------------------------- concurrency ---
def test_concurrent_expect_absent_writers_exactly_one_wins(store: RecordStore) -> None:
    writers = 8
    barrier = threading.Barrier(writers)
    winners: list[int] = []
    losers: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def attempt(n: int) -> None:
        barrier.wait()
        try:
            store.write([Put(Item("P", "LOCK", {"writer": n}), expect="absent")])
        except ConditionFailed:
            with lock:
                losers.append(n)
        except BaseException as error:
            with lock:
                errors.append(error)
        else:
            with lock:
                winners.append(n)

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    assert len(winners) == 1
    assert len(losers) == writers - 1
    got = store.get("P", "LOCK")
    assert got is not None
    assert got.data == {"writer": winners[0]}


def test_each_dynamodb_transaction_carries_its_own_request_token(tmp_path: Path) -> None:
    """A transaction whose answer is lost is retried by botocore with the same parameters; the token it carries
    lets DynamoDB answer that retry with success instead of failing the conditions the first attempt met
    (moto does not implement the token, so what is sent is checked against the documented parameter)."""
    server = shared_moto_server()
    name = f"tokens-{uuid.uuid4().hex[:8]}"
    create_records_table(server.client("dynamodb"), name)
    client = server.client("dynamodb")
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(dict(params))

    client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", record)
    try:
        store = DynamoDbRecordStore(name, lambda: client)
        for n in range(2):
            store.write([Put(Item("p", f"a{n}", {}), expect="absent"), Put(Item("p", f"b{n}", {}), expect="absent")])
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.TransactWriteItems", record)
        client.delete_table(TableName=name)
    tokens = [params["ClientRequestToken"] for params in sent]
    assert len(tokens) == 2
    assert len(set(tokens)) == 2
    assert all(1 <= len(token) <= 36 for token in tokens)  # the documented length of ClientRequestToken

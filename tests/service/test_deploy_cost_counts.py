"""bench/cost_meter.py counts what a stack sends, in DynamoDB's billing units, on a real moto server."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, shared_moto_server
from cost_meter import TITAN_CHARS_PER_TOKEN, Meter, item_size, read_units, write_units

from aws_events import FakeLambdaContext, rest_event
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

IAM_CALLER = {"sourceIp": "203.0.113.10", "userArn": "arn:aws:iam::123456789012:user/carol", "accountId": "1"}


def test_item_size_follows_dynamodbs_rules() -> None:
    item = {
        "pk": {"S": "abc"},  # 2 + 3
        "n": {"N": "0123.40"},  # 1 + (4 significant digits: 2 bytes) + 1
        "m": {"M": {"a": {"BOOL": True}}},  # 1 + 3 + (1 + 1 + 1)
        "l": {"L": [{"S": "xy"}]},  # 1 + 3 + (1 + 2)
        "é": {"S": "é"},  # 2 + 2 (UTF-8 bytes)
    }
    assert item_size(item) == 5 + 4 + 7 + 7 + 4
    assert item_size(None) == 0


def test_units_round_as_dynamodb_bills_them() -> None:
    assert write_units(1) == 1
    assert write_units(1024) == 1
    assert write_units(1025) == 2
    assert write_units(1025, transactional=True) == 4
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(4097, consistent=False) == 1
    assert read_units(100, consistent=False) == 0.5
    assert read_units(100, consistent=True, transactional=True) == 2
    assert read_units(0, consistent=True) == 1  # a read that finds nothing still costs the minimum


@pytest.fixture
def metered() -> Iterator[tuple[Meter, Any, str]]:
    server = shared_moto_server()
    plain = server.client("dynamodb")
    table = "cost-meter-counts"
    if table not in plain.list_tables()["TableNames"]:
        create_records_table(plain, table, stream=False)
    meter = Meter(lambda name, key: plain.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item"))
    client = meter.attach(server.client("dynamodb"))
    yield meter, client, table
    meter.detach()


def test_the_hook_counts_each_request_in_units_of_its_items(metered: tuple[Meter, Any, str]) -> None:
    meter, client, table = metered
    key = {"pk": {"S": "P"}, "sk": {"S": "big"}}
    big = {**key, "data": {"S": "x" * 3000}}  # 3 KB: 3 units to write, 1 to read
    small = {**key, "data": {"S": "y"}}
    with meter.attributed("put") as put:
        client.put_item(TableName=table, Item=big)
    assert put.requests == {"dynamodb:PutItem": 1}
    assert put.wru == 3
    assert put.rru == 0
    with meter.attributed("overwrite") as overwrite:
        client.put_item(TableName=table, Item=small)  # the larger of before (3 KB) and after counts
    assert overwrite.wru == 3
    with meter.attributed("reads") as reads:
        client.get_item(TableName=table, Key=key, ConsistentRead=True)
        client.get_item(TableName=table, Key=key)
        client.get_item(TableName=table, Key={"pk": {"S": "P"}, "sk": {"S": "none"}}, ConsistentRead=True)
    assert reads.requests == {"dynamodb:GetItem": 3}
    assert reads.rru == 1 + 0.5 + 1
    with meter.attributed("transaction") as transaction:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": {**key, "sk": {"S": "t1"}, "data": {"S": "z" * 1500}}}},
                {"Delete": {"TableName": table, "Key": key}},
            ]
        )
    assert transaction.wru == 2 * 2 + 2 * 1  # 1.5 KB put, 1-byte item deleted: two units per KB each
    assert meter.tallies["put"].item_bytes == [item_size(big)]


@contextmanager
def serving(meter: Meter, table: str, tmp_path: Path, **settings: Any) -> Iterator[Services]:
    """The tools served on the moto table, its DynamoDB client metered, as the handlers' services meanwhile."""
    services = Services(
        Settings(
            records="dynamodb",
            records_table=table,
            aws_endpoint=shared_moto_server().url,
            aws_region=REGION,
            data_dir=tmp_path,
            **settings,
        )
    )
    meter.attach(services.records.client)  # type: ignore[attr-defined]
    set_services(services)
    try:
        yield services
    finally:
        set_services(None)


def test_one_memory_add_on_moto_counts_its_write_and_its_titan_call(
    metered: tuple[Meter, Any, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.entry.apigw import tool_handler

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    meter, _, table = metered
    content = "The deploy checklist now includes a schema migration dry run."
    with serving(meter, table, tmp_path, embedder="titan", titan_dimensions=256) as services:
        meter.attach(services.embedder.client)  # type: ignore[attr-defined]
        with meter.attributed("memory_add") as tally:
            answer = tool_handler("memory_add")(
                rest_event("memory_add", {"content": content}, authorizer=None, identity=IAM_CALLER),
                FakeLambdaContext(),
            )
    assert answer["statusCode"] == 200, answer["body"]
    # Indexed first, so the record alone is written (its ADD history entry folded in): one PutItem of one
    # item under 1 KB, no transaction, no outbox marker or its delete, no read-back (mnemo.memory.writes).
    assert {name: n for name, n in tally.requests.items() if name.startswith("dynamodb:")} == {"dynamodb:PutItem": 1}
    assert (tally.wru, tally.rru) == (1, 0)
    assert tally.titan_calls >= 1
    assert tally.requests["bedrock-runtime:InvokeModel"] == tally.titan_calls
    assert tally.titan_tokens == tally.titan_calls * math.ceil(len(content) / TITAN_CHARS_PER_TOKEN)
    assert tally.converse_calls == 0


def test_memory_search_reads_back_limit_keys_eventually_consistent(
    metered: tuple[Meter, Any, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.entry.apigw import tool_handler

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    meter, _, table = metered
    caller = {**IAM_CALLER, "userArn": f"arn:aws:iam::123456789012:user/{tmp_path.name[-12:]}"}
    with serving(meter, table, tmp_path, embedder="hashing"):
        for n in range(12):
            body = {"content": f"Release note {n}: the gateway build {n} ships with the cache fix"}
            added = tool_handler("memory_add")(
                rest_event("memory_add", body, authorizer=None, identity=caller), FakeLambdaContext()
            )
            assert added["statusCode"] == 200, added["body"]
        with meter.attributed("memory_search") as tally:
            answer = tool_handler("memory_search")(
                rest_event("memory_search", {"query": "gateway build", "limit": 5, "threshold": 0}, identity=caller),
                FakeLambdaContext(),
            )
    assert answer["statusCode"] == 200, answer["body"]
    assert tally.requests == {"dynamodb:BatchGetItem": 1}
    assert (tally.rru, tally.rru_strong) == (5 * 0.5, 0)  # limit keys, each item under 4 KB, half a unit each

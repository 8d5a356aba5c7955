"""Expiry on DynamoDB (a serial moto server, a table built from template.yaml, TTL on ``expires_at``).

moto keeps the TTL setting but never deletes an item itself, so a test moves an item's ``expires_at`` into
the past (reads must hide it at once) and then deletes it as TTL would; the table's own stream record of
that removal, with the ``userIdentity`` AWS documents for TTL deletions, goes to the indexer Lambda.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from aws_events import FakeLambdaContext
from helpers import ctx
from mnemo.entry import indexer
from mnemo.memory.indexing import NAMESPACE
from mnemo.memory.records import epoch_of
from mnemo.ports import Delete, Item, Put
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice")
_tables = itertools.count()


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, str]]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = f"expiry-records-{next(_tables)}"
    dynamodb = server.client("dynamodb")
    create_records_table(dynamodb, table)
    services = Services(dynamodb_settings(server, table, tmp_path))
    set_services(services)
    try:
        yield services, table
    finally:
        set_services(None)
        dynamodb.delete_table(TableName=table)


def call(services: Services, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(name).invoke(services, ALICE, payload)


def later() -> str:
    return (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def stream_records(table: str) -> list[dict[str, Any]]:
    server = shared_moto_server()
    streams = server.client("dynamodbstreams")
    arn = server.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    found = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    for record in found:
        record["eventSourceARN"] = arn
        record["dynamodb"]["SequenceNumber"] = str(record["dynamodb"]["SequenceNumber"])
        record["dynamodb"].pop("ApproximateCreationDateTime", None)  # a datetime once boto3 parsed it
    return found


def test_an_expiring_memory_carries_the_ttl_attribute_and_hides_once_past(aws: tuple[Services, str]) -> None:
    services, table = aws
    when = later()
    added = call(services, "memory_add", {"content": "The audit room is B-204", "expiresAt": when})
    pk, sk = f"MEM|{ALICE.scope_key('user')}", f"MEM#{added['memoryId']}"
    raw = shared_moto_server().client("dynamodb").get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})
    assert raw["Item"]["expires_at"] == {"N": str(epoch_of(when))}, "the table's TTL attribute, epoch seconds"
    assert [m["expiresAt"] for m in call(services, "memory_list", {})["memories"]] == [when]

    item = services.records.get(pk, sk)
    assert item is not None
    past = int(time.time()) - 5
    services.records.write([Put(Item(pk, sk, item.data, item.version, expires_at=past))])
    assert services.records.get(pk, sk) is None
    assert call(services, "memory_list", {})["memories"] == []
    assert call(services, "memory_search", {"query": "audit room", "threshold": 0})["results"] == []


def test_the_tables_ttl_removal_writes_expire_once_through_the_indexer(aws: tuple[Services, str]) -> None:
    services, table = aws
    added = call(services, "memory_add", {"content": "The badge office opens at 8", "expiresAt": later()})
    pk, sk = f"MEM|{ALICE.scope_key('user')}", f"MEM#{added['memoryId']}"
    services.records.write([Delete(pk, sk)])  # what TTL does, once expires_at has passed
    removals = [r for r in stream_records(table) if r["eventName"] == "REMOVE"]
    (removal,) = [r for r in removals if r["dynamodb"]["Keys"]["sk"]["S"] == sk]
    assert removal["dynamodb"]["OldImage"]["expires_at"]["N"]
    removal["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}

    assert indexer.handler({"Records": [removal]}, FakeLambdaContext()) == {"batchItemFailures": []}
    assert indexer.handler({"Records": [removal]}, FakeLambdaContext()) == {"batchItemFailures": []}

    history = services.records.query(pk, f"HIST#{added['memoryId']}#")
    assert [item.data["event"] for item in history] == ["ADD", "EXPIRE"]
    assert all(item.expires_at is None for item in history), "history outlives the record"
    vector = services.embedder.embed(["badge office"])[0]
    assert added["memoryId"] not in {hit.id for hit in services.index.knn(NAMESPACE, vector, {}, 10)}

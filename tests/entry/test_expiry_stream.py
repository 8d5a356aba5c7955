"""The stream indexer on DynamoDB TTL removals, in the shape AWS documents them ("DynamoDB Streams and Time to
Live"): a REMOVE whose ``userIdentity`` is ``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``
and whose ``OldImage`` is the expired item, delivered to functions/indexer/app.py on the embedded stack.

An expired memory keeps its history (EXPIRE, written once however often the record is delivered) and loses
its index document; an expired turn loses its index document; a caller's delete (no such identity) writes no
EXPIRE.
"""

from __future__ import annotations

import importlib.util
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from aws_events import FakeLambdaContext
from helpers import ctx
from mnemo.conversations.store import doc_id
from mnemo.memory.indexing import NAMESPACE
from mnemo.ports import Delete, Item
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice")
ROOT = Path(__file__).resolve().parents[2]
STREAM_ARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/mnemo-records-dev/stream/2026-01-05T10:11:12.345"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def indexer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("indexer_app", ROOT / "functions" / "indexer" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def image(item: Item) -> dict[str, Any]:
    """An item as the records table holds it (mnemo.adapters.aws.dynamodb_records), in DynamoDB JSON."""
    attributes: dict[str, Any] = {
        "pk": {"S": item.pk},
        "sk": {"S": item.sk},
        "version": {"N": str(item.version)},
        "data": {"S": json.dumps(item.data, separators=(",", ":"))},
    }
    if item.expires_at is not None:
        attributes["expires_at"] = {"N": str(item.expires_at)}
    return attributes


def removal(sequence: str, item: Item, *, by_ttl: bool = True) -> dict[str, Any]:
    record: dict[str, Any] = {
        "eventID": f"a1b2c3d4e5f60718293a4b5c6d7e8f{sequence}",
        "eventName": "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-west-1",
        "dynamodb": {
            "ApproximateCreationDateTime": int(time.time()),
            "Keys": {"pk": {"S": item.pk}, "sk": {"S": item.sk}},
            "OldImage": image(item),
            "SequenceNumber": f"1110000000000000000{sequence}",
            "SizeBytes": 512,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "eventSourceARN": STREAM_ARN,
    }
    if by_ttl:
        record["userIdentity"] = TTL_IDENTITY
    return record


def call(services: Services, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(name).invoke(services, ALICE, payload)


def later() -> str:
    return (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def indexed(services: Services, namespace: str, doc: str) -> bool:
    vector = services.embedder.embed(["anything"])[0]
    return doc in {hit.id for hit in services.index.knn(namespace, vector, {}, 1000)}


def removed_by_ttl(services: Services, pk: str, sk: str) -> Item:
    """What TTL does to an item: it goes (the stream then carries its old image)."""
    item = services.records.get(pk, sk)
    assert item is not None
    services.records.write([Delete(pk, sk)])
    return item


def test_a_ttl_removal_of_a_memory_writes_expire_once_and_removes_its_document(services: Services) -> None:
    added = call(services, "memory_add", {"content": "The audit room is B-204", "expiresAt": later()})
    memory_id = added["memoryId"]
    assert indexed(services, NAMESPACE, memory_id)
    item = removed_by_ttl(services, f"MEM|{ALICE.scope_key('user')}", f"MEM#{memory_id}")
    handler = indexer().handler

    first = handler({"Records": [removal("1", item)]}, FakeLambdaContext())
    again = handler({"Records": [removal("1", item), removal("2", item)]}, FakeLambdaContext())  # redelivered

    assert first == again == {"batchItemFailures": []}
    assert not indexed(services, NAMESPACE, memory_id)
    changes = call(services, "memory_history", {"memoryId": memory_id})["changes"]
    assert [change["event"] for change in changes] == ["ADD", "EXPIRE"]
    assert changes[1]["at"] == item.data["expiresAt"]


def test_a_callers_delete_is_no_expiry(services: Services) -> None:
    added = call(services, "memory_add", {"content": "The badge office opens at 8", "expiresAt": later()})
    item = services.records.get(f"MEM|{ALICE.scope_key('user')}", f"MEM#{added['memoryId']}")
    assert item is not None
    call(services, "memory_delete", {"memoryId": added["memoryId"]})
    answer = indexer().handler({"Records": [removal("3", item, by_ttl=False)]}, FakeLambdaContext())
    assert answer == {"batchItemFailures": []}
    changes = call(services, "memory_history", {"memoryId": added["memoryId"]})["changes"]
    assert [change["event"] for change in changes] == ["ADD", "DELETE"]


def test_a_ttl_removal_of_a_turn_removes_its_document(services: Services) -> None:
    payload = {"messages": [{"role": "user", "content": "Gate 12 at noon", "id": "g1"}], "expiresAt": later()}
    call(services, "add_messages", payload)
    call(services, "add_messages", {"messages": [{"role": "user", "content": "Seat 3A", "id": "g2"}]})
    scope = ALICE.scope_key("user")
    assert indexed(services, "conversations", doc_id(scope, "g1"))
    item = removed_by_ttl(services, f"CONV|{scope}", "MSG#g1")

    answer = indexer().handler({"Records": [removal("4", item), removal("5", item)]}, FakeLambdaContext())

    assert answer == {"batchItemFailures": []}
    assert not indexed(services, "conversations", doc_id(scope, "g1"))
    assert indexed(services, "conversations", doc_id(scope, "g2"))

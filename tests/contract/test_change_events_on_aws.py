"""Change events on the AWS adapters: the records table's stream (moto) through ChangeEventsFunction's filter and
handler to EventBridge (moto), where a rule with an SQS target receives them; each is valid against its schema.

The stream records are the table's own (NEW_AND_OLD_IMAGES), read back from moto's stream; the removal DynamoDB's
TTL would make is the table's own REMOVE record with the ``userIdentity`` AWS documents for TTL deletions (moto
never expires an item itself). The filter is template.yaml's FilterCriteria, applied here as Lambda applies it.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, load_template, shared_moto_server
from event_schemas import subject, validate

from aws_events import FakeLambdaContext
from helpers import ctx
from mnemo.entry import change_events
from mnemo.learning import ledger
from mnemo.memory.records import expired_writes
from mnemo.ports import Item, Put
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", roles=("writer",))
_tables = itertools.count()


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, str, str]]:
    """A stack on a fresh table, publishing to moto's default bus, where a rule sends every mnemo event to a
    fresh queue; (services, table, queue URL)."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    n = next(_tables)
    table = f"change-events-{n}"
    dynamodb, sqs, events = server.client("dynamodb"), server.client("sqs"), server.client("events")
    create_records_table(dynamodb, table)
    queue = sqs.create_queue(QueueName=f"change-events-{n}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = f"mnemo-changes-{n}"
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["mnemo"]}), State="ENABLED")
    events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": queue_arn}])
    services = Services(dynamodb_settings(server, table, tmp_path, events="eventbridge", event_bus="default"))
    set_services(services)
    try:
        yield services, table, queue
    finally:
        set_services(None)
        events.remove_targets(Rule=rule, Ids=["queue"])
        events.delete_rule(Name=rule)
        sqs.delete_queue(QueueUrl=queue)
        dynamodb.delete_table(TableName=table)


def call(services: Services, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(name).invoke(services, ALICE, payload)


def stream_records(table: str) -> list[dict[str, Any]]:
    """Every record of the table's stream so far, as Lambda hands them over."""
    server = shared_moto_server()
    streams = server.client("dynamodbstreams")
    arn = server.client("dynamodb").describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    found = streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
    for record in found:
        record["eventSourceARN"] = arn
        record["dynamodb"]["SequenceNumber"] = str(record["dynamodb"]["SequenceNumber"])
        stamp = record["dynamodb"].get("ApproximateCreationDateTime")
        if isinstance(stamp, datetime):  # boto3 parsed it; Lambda hands over epoch seconds
            record["dynamodb"]["ApproximateCreationDateTime"] = int(stamp.timestamp())
    return found


def _matches(pattern: Any, value: Any) -> bool:
    """Lambda's event filtering, for what template.yaml uses: nested keys, lists of values or ``prefix``."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and _matches(p, value[k]) for k, p in pattern.items())
    return any(
        (isinstance(option, dict) and isinstance(value, str) and value.startswith(option["prefix"])) or option == value
        for option in pattern
    )


def filtered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records template.yaml's ChangeEventsFunction filter passes."""
    function = load_template()["Resources"]["ChangeEventsFunction"]["Properties"]
    filters = function["Events"]["RecordsStream"]["Properties"]["FilterCriteria"]["Filters"]
    patterns = [json.loads(entry["Pattern"]) for entry in filters]
    return [record for record in records if any(_matches(pattern, record) for pattern in patterns)]


def received(queue: str) -> list[dict[str, Any]]:
    """Every EventBridge event the rule's queue holds (removed from it)."""
    sqs = shared_moto_server().client("sqs")
    found: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])


def handle(records: list[dict[str, Any]]) -> dict[str, Any]:
    return change_events.handler({"Records": records}, FakeLambdaContext())


def test_each_change_reaches_an_eventbridge_rule_once_per_id_valid_against_its_schema(
    aws: tuple[Services, str, str],
) -> None:
    services, table, queue = aws
    kept = call(services, "memory_add", {"content": "The audit room is B-204"})["memoryId"]
    gone = call(services, "memory_add", {"content": "Lunch is at noon"})["memoryId"]
    call(services, "memory_delete", {"memoryId": gone})
    fact = call(services, "add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme"})
    call(services, "invalidate_memory_link", {"factId": fact["factId"]})
    other = call(services, "add_memory_link", {"subject": "Bob", "predicate": "likes", "object": "Tea"})
    preview = call(services, "delete_memory_object", {"name": "Bob"})
    call(services, "delete_memory_object", {"name": "Bob", "confirmationToken": preview["confirmationToken"]})
    call(services, "file_write", {"path": "mnemo:///blocks/persona.md", "content": "Be brief."})
    call(services, "file_delete", {"path": "mnemo:///blocks/persona.md"})
    call(services, "file_write", {"path": "mnemo:///skills/review.md", "content": "Check the tests."})
    # A later memory supersedes the kept one (what extraction writes), an extraction run and a sync run finish.
    record = services.records.get(f"MEM|{ALICE.scope_key('user')}", f"MEM#{kept}")
    assert record is not None
    newer = {**record.data, "supersededBy": "mem_newer", "supersededAt": record.data["createdAt"]}
    services.records.write([Put(Item(record.pk, record.sk, newer, version=record.version + 1), expect=record.version)])
    stream = ALICE.scope_key("user")
    view = {"runId": "run_1", "trigger": "turns", "turns": ["m1", "m2"], "strategies": [{"strategy": "facts"}]}
    services.records.write([ledger.run_item(stream, "2026-01-05T10:00:00Z", "run_1", view)])
    state = {"lastSyncAt": "2026-01-05T10:00:00Z", "stats": {}, "lastResult": {"added": 2, "failed": 0}}
    services.records.write([Put(Item("SYNC|t=acme", "STATE", state), expect="absent")])
    # An erasure's receipt (mnemo.portability.erasure): written running, then completed.
    receipt = {"erasureId": "era_1", "userHash": "ab" * 32, "status": "running", "counts": {}, "completedAt": None}
    key = ("ERASURE#t=acme", f"{'ab' * 32}#2026-01-05T10:00:00Z#era_1")
    services.records.write([Put(Item(*key, receipt), expect="absent")])
    done = {**receipt, "status": "completed", "completedAt": "2026-01-05T10:00:01Z", "counts": {"memories": 0}}
    services.records.write([Put(Item(*key, done, version=2), expect=1)])

    records = stream_records(table)
    passed = filtered(records)
    assert 0 < len(passed) < len(records), "the filter leaves out what gives no event (history, markers, ...)"
    assert handle(passed) == {"batchItemFailures": []}
    events = received(queue)
    for event in events:
        assert event["source"] == "mnemo" and event["detail-type"] == event["detail"]["kind"]
        validate(event["detail"])
        assert (event["detail"]["tenant"], event["detail"]["layer"] in (None, "user")) == ("acme", True)
        assert event["detail"]["user"] in ("alice", None)
    assert len({event["detail"]["id"] for event in events}) == len(events)
    expected = {
        ("memory.added", kept),
        ("memory.added", gone),
        ("memory.deleted", gone),
        ("memory.superseded", kept),
        ("graph.fact.added", fact["factId"]),
        ("graph.fact.invalidated", fact["factId"]),
        ("graph.fact.added", other["factId"]),
        ("graph.fact.deleted", other["factId"]),
        ("block.written", "blocks/persona.md"),
        ("block.deleted", "blocks/persona.md"),
        ("file.written", "skills/review.md"),
        ("extraction.completed", "run_1"),
        ("sync.completed", "acme"),
        ("user.erased", "era_1"),
    }
    assert sorted(subject(event["detail"]) for event in events) == sorted(expected)
    # No content unless the deployment opts in.
    assert all("content" not in event["detail"] for event in events)

    # Lambda retrying the same records: the same ids again (consumers deduplicate by id).
    handle(passed)
    assert sorted(event["detail"]["id"] for event in received(queue)) == sorted(e["detail"]["id"] for e in events)


def test_a_ttl_removal_and_the_expire_history_item_are_one_memory_expired(aws: tuple[Services, str, str]) -> None:
    services, table, queue = aws
    when = (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    memory_id = call(services, "memory_add", {"content": "The door code is 4711", "expiresAt": when})["memoryId"]
    pk, sk = f"MEM|{ALICE.scope_key('user')}", f"MEM#{memory_id}"
    record = services.records.get(pk, sk)
    assert record is not None
    before = len(stream_records(table))
    # As DynamoDB's TTL would: the item goes, and its stream record says the service removed it ...
    shared_moto_server().client("dynamodb").delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})
    # ... and the indexer keeps its history from that record's old image (an EXPIRE item).
    services.records.write(expired_writes(record))
    records = stream_records(table)[before:]
    for one in records:
        if one["eventName"] == "REMOVE":
            one["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert handle(filtered(records)) == {"batchItemFailures": []}
    events = [event["detail"] for event in received(queue)]
    for event in events:
        validate(event)
    assert [event["kind"] for event in events] == ["memory.expired", "memory.expired"]
    assert events[0] == events[1], "the removal and the EXPIRE item are one event: same id, time and body"
    assert events[0]["time"] == when and events[0]["ids"]["memoryId"] == memory_id


def test_content_is_in_the_events_only_when_the_deployment_opts_in(
    aws: tuple[Services, str, str], tmp_path: Path
) -> None:
    services, table, queue = aws
    call(services, "memory_add", {"content": "Prefers short answers", "tags": ["style"]})
    records = filtered(stream_records(table))
    handle(records)
    (plain,) = [event["detail"] for event in received(queue)]
    assert "content" not in plain and "Prefers" not in json.dumps(plain)
    opted = Services(services.settings.model_copy(update={"change_event_content": True}))
    set_services(opted)
    handle(records)
    (full,) = [event["detail"] for event in received(queue)]
    validate(full)
    assert full["content"]["text"] == "Prefers short answers" and full["content"]["tags"] == ["style"]
    assert full["id"] == plain["id"]

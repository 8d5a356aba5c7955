"""What a keyed memory_add sends to DynamoDB, counted on a real moto server by bench/cost_meter.py.

The Lambda handler serves memory_add over records on moto (Titan answered by the meter's stub, the local
vector index), as test_deploy_cost_counts.py does for a plain add. A keyed add is one PutItem whose condition is
on its own record's key (``attribute_not_exists(pk)``), no transaction, no read: the same request and units as an
add without a key. Its repeat reads (strongly consistent) and writes nothing. A keyed dated add writes its record,
then the scope's LAST pointer in a PutItem of its own, as every dated add, and reads only that pointer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, shared_moto_server
from cost_meter import WRITE_OPERATIONS, Meter, Tally

from aws_events import FakeLambdaContext, rest_event
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

CALLER = {"sourceIp": "203.0.113.10", "userArn": "arn:aws:iam::123456789012:user/keyed", "accountId": "1"}
TABLE = "keyed-add-counts"


class Sent:
    """Every DynamoDB request body a client sends (botocore's before-call event), in order."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.bodies.append((model.name, json.loads(params["body"] or b"{}")))

    def named(self, operation: str) -> list[dict[str, Any]]:
        return [body for name, body in self.bodies if name == operation]


@pytest.fixture
def metered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Meter, Sent, Services]]:
    """memory_add's services on a moto table, Titan stubbed: the DynamoDB and Bedrock clients metered."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    server = shared_moto_server()
    plain = server.client("dynamodb")
    table = f"{TABLE}-{tmp_path.name[-20:].replace('_', '-')}"
    create_records_table(plain, table, stream=False)
    meter = Meter(lambda name, key: plain.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item"))
    settings = Settings(
        records="dynamodb",
        records_table=table,
        aws_endpoint=server.url,
        aws_region=REGION,
        data_dir=tmp_path,
        embedder="titan",
        titan_dimensions=256,
    )
    services = Services(settings)
    client = services.records.client  # type: ignore[attr-defined]
    meter.attach(client)
    meter.attach(services.embedder.client)  # type: ignore[attr-defined]
    sent = Sent()
    client.meta.events.register("before-call.dynamodb", sent, unique_id="keyed-counts-sent")
    set_services(services)
    try:
        yield meter, sent, services
    finally:
        set_services(None)
        client.meta.events.unregister("before-call.dynamodb", unique_id="keyed-counts-sent")
        meter.detach()
        plain.delete_table(TableName=table)


@contextmanager
def call(meter: Meter, phase: str, body: dict[str, Any], answers: list[dict[str, Any]]) -> Iterator[Tally]:
    """memory_add through its Lambda handler, its requests tallied under ``phase``; its answer appended."""
    from mnemo.entry.apigw import tool_handler

    with meter.attributed(phase) as tally:
        answer = tool_handler("memory_add")(
            rest_event("memory_add", body, authorizer=None, identity=CALLER), FakeLambdaContext()
        )
        assert answer["statusCode"] == 200, answer["body"]
        answers.append(json.loads(answer["body"]))
        yield tally


def dynamodb(tally: Tally) -> dict[str, int]:
    return {name: n for name, n in tally.requests.items() if name.startswith("dynamodb:")}


def test_a_keyed_add_is_one_conditional_put_item_and_its_repeat_writes_nothing(
    metered: tuple[Meter, Sent, Services],
) -> None:
    meter, sent, _ = metered
    body = {"content": "The deploy checklist now includes a schema migration dry run.", "idempotencyKey": "d-1"}
    answers: list[dict[str, Any]] = []
    with call(meter, "first", body, answers) as first:
        pass
    assert dynamodb(first) == {"dynamodb:PutItem": 1}  # no TransactWriteItems, no GetItem
    [put] = sent.named("PutItem")
    assert put["ConditionExpression"] == "attribute_not_exists(pk)"  # the record's own key is the condition
    assert put["Item"]["sk"]["S"] == f"MEM#{answers[0]['memoryId']}"
    assert "requestHash" in json.loads(put["Item"]["data"]["S"])  # the request's hash rides in the record
    assert (first.wru, first.rru) == (1, 0)  # one item under 1 KB, as an add without a key
    assert first.titan_calls == 1

    with call(meter, "repeat", body, answers) as repeat:
        pass
    assert answers[1] == answers[0]
    assert not [name for name in dynamodb(repeat) if name.split(":")[1] in WRITE_OPERATIONS]
    assert dynamodb(repeat) and repeat.rru == repeat.rru_strong  # it reads, strongly consistent, and only reads


def test_a_keyed_dated_add_writes_its_record_then_the_scopes_pointer_with_no_transaction(
    metered: tuple[Meter, Sent, Services],
) -> None:
    meter, sent, _ = metered
    body = {"content": "Caroline went to the support group.", "occurredAt": "2023-05-08T13:56:00Z"}
    answers: list[dict[str, Any]] = []
    with call(meter, "dated", {**body, "idempotencyKey": "d-2"}, answers) as dated:
        pass
    assert dynamodb(dated) == {"dynamodb:GetItem": 1, "dynamodb:PutItem": 2}  # the LAST read
    record, pointer = sent.named("PutItem")
    assert (record["Item"]["sk"]["S"], pointer["Item"]["sk"]["S"]) == (f"MEM#{answers[0]['memoryId']}", "LAST")
    assert record["ConditionExpression"] == "attribute_not_exists(pk)"
    assert pointer["ConditionExpression"].startswith("attribute_not_exists(pk)")  # the scope had no pointer yet
    assert (dated.wru, dated.rru) == (2, 1)  # two items under 1 KB, one write each; one strong read
    assert dated.titan_calls == 1

"""S3 object events routed the way template.yaml routes them: a rule on the default bus with a function's
own EventBridgeRule pattern (read from the template), delivering to an SQS queue on moto.

moto (5.2) puts "Object Created" events on the bus for a bucket with EventBridge notifications on, but
sends no "Object Deleted" for a delete marker and stubs TestEventPattern; so documented S3 events are
also put on the bus with PutEvents, which moto then matches against the rule for real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from aws_fixtures import load_template


def _resolve(node: Any, refs: dict[str, str]) -> Any:
    """The template's pattern with each ``!Ref`` replaced; any other intrinsic is an error."""
    if isinstance(node, dict):
        if len(node) == 1 and "Ref" in node:
            return refs[node["Ref"]]
        if any(key.startswith("Fn::") or key in {"Sub", "GetAtt", "If", "Join"} for key in node):
            raise AssertionError(f"an intrinsic the test cannot resolve: {node}")
        return {key: _resolve(value, refs) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, refs) for value in node]
    return node


def template_pattern(bucket: str, function: str = "KnowledgeSyncFunction") -> dict[str, Any]:
    """The EventBridgeRule pattern of ``function`` in template.yaml, for ``bucket``."""
    events = load_template()["Resources"][function]["Properties"]["Events"]
    (rule,) = [event for event in events.values() if event["Type"] == "EventBridgeRule"]
    assert "EventBusName" not in rule["Properties"]  # the default bus, where S3 sends its events
    pattern: dict[str, Any] = _resolve(rule["Properties"]["Pattern"], {"KnowledgeBucket": bucket})
    return pattern


class Route:
    """A rule on the default bus with the template's pattern, delivering to an SQS queue."""

    def __init__(self, client: Callable[[str], Any], bucket: str, function: str = "KnowledgeSyncFunction") -> None:
        self.events = client("events")
        self.sqs = client("sqs")
        self.rule = f"{function.lower()}-{bucket}"
        self.queue = self.sqs.create_queue(QueueName=self.rule)["QueueUrl"]
        arn = self.sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]
        self.events.put_rule(Name=self.rule, EventPattern=json.dumps(template_pattern(bucket, function)))
        self.events.put_targets(Rule=self.rule, Targets=[{"Id": "sync", "Arn": arn["QueueArn"]}])

    def receive(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Exactly ``count`` events (polling up to ``timeout``), and no other one.

        moto delivers during the PutObject / PutEvents call, so once ``count``
        have arrived an empty receive means nothing else was routed.
        """
        received = self.drain()
        deadline = time.monotonic() + timeout
        while len(received) < count and time.monotonic() < deadline:
            received += self._take(wait=1)
        assert len(received) == count, received
        assert self.drain() == [], "an event the rule should not have routed"
        return received

    def drain(self) -> list[dict[str, Any]]:
        """Every event waiting now (a receive hands out at most 10)."""
        drained: list[dict[str, Any]] = []
        while batch := self._take(wait=0):
            drained += batch
        return drained

    def _take(self, wait: int) -> list[dict[str, Any]]:
        answer = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=wait)
        messages = answer.get("Messages", [])
        for message in messages:
            self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
        return [json.loads(message["Body"]) for message in messages]

    def put(self, detail_type: str, detail: dict[str, Any], bucket: str) -> None:
        """An S3 event as documented, put on the default bus (moto's S3 does not send every kind)."""
        entry = {
            "Source": "aws.s3",
            "DetailType": detail_type,
            "Detail": json.dumps(detail),
            "Resources": [f"arn:aws:s3:::{bucket}"],
        }
        assert self.events.put_events(Entries=[entry])["FailedEntryCount"] == 0

    def close(self) -> None:
        self.events.remove_targets(Rule=self.rule, Ids=["sync"])
        self.events.delete_rule(Name=self.rule)
        self.sqs.delete_queue(QueueUrl=self.queue)


def s3_detail(bucket: str, key: str, reason: str, **extra: Any) -> dict[str, Any]:
    """The ``detail`` of an S3 EventBridge event (AmazonS3/latest/userguide/ev-events.html)."""
    return {
        "version": "0",
        "bucket": {"name": bucket},
        "object": {"key": key, "version-id": "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF", "sequencer": "617f0837b476e463"},
        "request-id": "0BH729840619AG5K",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": reason,
        **extra,
    }

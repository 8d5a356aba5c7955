"""The outline index on the AWS adapters: workspace files in versioned S3, outlines in DynamoDB (moto), and the
S3 -> EventBridge -> OutlineSyncFunction path with the function's own event pattern from template.yaml."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server
from aws_routing import Route, s3_detail, template_pattern

from aws_events import FakeLambdaContext
from helpers import ctx
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.entry import outline_events
from mnemo.runtime import Services, set_services
from outline_support import call, push_shop, shop_files

PROJECT = ctx(tenant="acme", project="shop", roles=("writer",))
FUNCTION = "OutlineSyncFunction"
CODE = [path for path in shop_files() if not path.endswith(".mod")]
_names = itertools.count()


class Stack:
    def __init__(self, services: Services, bucket: str, table: str) -> None:
        self.services, self.bucket, self.table = services, bucket, table
        self.client = shared_moto_server().client

    def outline_keys(self) -> list[str]:
        pk = "OUTLINE|" + PROJECT.scope_key("project")
        answer = self.client("dynamodb").query(
            TableName=self.table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}}
        )
        return sorted(item["sk"]["S"] for item in answer["Items"])


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "1")
    server = shared_moto_server()
    number = next(_names)
    table, bucket = f"outline-records-{number}", f"outline-workspace-{number}"
    create_records_table(server.client("dynamodb"), table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    server.client("s3").put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    services = Services(dynamodb_settings(server, table, tmp_path, blobs="s3", blob_bucket=bucket))
    set_services(services)
    try:
        yield Stack(services, bucket, table)
    finally:
        set_services(None)
        server.client("dynamodb").delete_table(TableName=table)


@pytest.fixture
def route(aws: Stack) -> Iterator[Route]:
    built = Route(aws.client, aws.bucket, FUNCTION)
    try:
        yield built
    finally:
        built.close()


def test_the_templates_pattern_takes_object_events_of_the_workspace() -> None:
    assert template_pattern("the-bucket", FUNCTION) == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created", "Object Deleted"],
        "detail": {"bucket": {"name": ["the-bucket"]}, "object": {"key": [{"prefix": "workspace/"}]}},
    }


def test_pushed_files_reach_the_sync_job_which_outlines_each_one(aws: Stack, route: Route) -> None:
    assert push_shop(aws.services, PROJECT) == len(CODE) + 1
    events = route.receive(len(CODE) + 1)  # one Object Created per file moto's S3 stored

    results: dict[str, Any] = {}
    for event in events:
        answer = outline_events.handler(event, FakeLambdaContext())
        results.update(answer.get("results", {}))
        assert "ignored" in answer or event["detail"]["object"]["key"].endswith(tuple(CODE))
    assert sorted(results) == sorted(CODE)
    assert set(results.values()) == {"parsed"}
    assert len(aws.outline_keys()) == len(CODE)

    # the index is current: the tool parses nothing and answers from DynamoDB and S3
    answer = call(aws.services, PROJECT, "outline_symbol", {"symbol": "Reserve", "language": "go", "depth": 1})
    assert answer["parsed"] == 0
    assert answer["files"] == 3
    assert "calls inventory.Store.Get [method] inventory/store.go:13" in answer["text"]


def test_a_delete_event_removes_the_files_outline(aws: Stack, route: Route) -> None:
    push_shop(aws.services, PROJECT)
    call(aws.services, PROJECT, "outline_project", {"language": "python", "limit": 1})
    assert "F#python#shop/orders/service.py" in aws.outline_keys()
    route.drain()
    call(aws.services, PROJECT, "file_delete", {"path": "shop/orders/service.py"})
    key = f"workspace/{PROJECT.tenant}/project/shop/shop/orders/service.py"
    route.put("Object Deleted", s3_detail(aws.bucket, key, "DeleteObject"), aws.bucket)

    (event,) = route.receive(1)
    assert outline_events.handler(event, FakeLambdaContext()) == {
        "key": key,
        "results": {"shop/orders/service.py": "removed"},
    }
    assert "F#python#shop/orders/service.py" not in aws.outline_keys()


def test_the_rule_takes_no_other_bucket_and_no_other_prefix(aws: Stack, route: Route) -> None:
    key = f"workspace/{PROJECT.tenant}/project/shop/app.py"
    route.put("Object Created", s3_detail(aws.bucket, f"knowledge/{PROJECT.tenant}/a.md", "PutObject"), aws.bucket)
    route.put("Object Created", s3_detail(f"{aws.bucket}-other", key, "PutObject"), f"{aws.bucket}-other")
    route.put("Object Tags Added", s3_detail(aws.bucket, key, "PutObjectTagging"), aws.bucket)
    route.put("Object Created", s3_detail(aws.bucket, key, "PutObject"), aws.bucket)
    (event,) = route.receive(1)
    # the object is not in the workspace's table: nothing to outline, and nothing fails
    assert outline_events.handler(event, FakeLambdaContext()) == {"key": key, "results": {"app.py": "absent"}}


def test_events_the_handler_does_not_take_are_refused() -> None:
    with pytest.raises(ValueError):
        outline_events.handler({"source": "aws.events", "detail-type": "Scheduled Event"}, FakeLambdaContext())
    with pytest.raises(ValueError):
        outline_events.handler({"source": "aws.s3", "detail-type": "Object Created", "detail": {}}, FakeLambdaContext())

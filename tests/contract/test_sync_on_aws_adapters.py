"""Sync for real on the AWS adapters: DynamoDB records and versioned S3 blobs on moto.

The local vector index and the hashing embedder stand in for OpenSearch and
Titan. The last tests run the S3 -> EventBridge -> knowledge-sync path: the
bucket sends its object events to the default bus (EventBridgeConfiguration,
as template.yaml sets it), a rule with the KnowledgeSyncFunction's own event
pattern, read from template.yaml, routes them to an SQS queue, and what
arrives is handed to the Lambda handler.

moto (5.2) puts "Object Created" events on the bus for a bucket with EventBridge
notifications on, but sends no "Object Deleted" when a versioned bucket gets a
delete marker (real S3 does, with deletion-type "Delete Marker Created"), and its
TestEventPattern is a stub; so documented S3 events are put on the bus with
PutEvents to exercise the rule's pattern, which moto then matches for real.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server
from aws_routing import Route, s3_detail, template_pattern

from aws_events import FakeLambdaContext
from helpers import ctx
from knowledge_helpers import EXAMPLE_COUNT, doc, push_tree
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.entry import sync_events
from mnemo.errors import NotFound
from mnemo.knowledge.catalog import scope_of
from mnemo.knowledge.models import KnowledgeCheckInput, KnowledgeShowInput
from mnemo.runtime import Services, set_services
from mnemo.sync.models import SyncNowInput

TENANT = "acme"
ENGINEER = ctx(tenant=TENANT, org="engineering", team="payments", project="checkout-api")
ADR_042 = "adr-042-database-selection"
ADR_PATH = f"orgs/engineering/{ADR_042}.md"
NOTHING = {"added": 0, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 0}

_names = itertools.count()


class AwsStack:
    def __init__(self, services: Services, bucket: str, table: str) -> None:
        self.services = services
        self.bucket = bucket
        self.table = table
        self.server = shared_moto_server()

    def client(self, service: str) -> Any:
        return self.server.client(service)

    def sync(self, **options: Any) -> dict[str, int]:
        output = self.services.sync.sync(TENANT, SyncNowInput(**options))
        return dict(output.result.model_dump())


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsStack]:
    """A fresh table (built from template.yaml) and versioned bucket on the shared moto server."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server = shared_moto_server()
    number = next(_names)
    table, bucket = f"sync-records-{number}", f"sync-knowledge-{number}"
    dynamodb = server.client("dynamodb")
    # No stream: moto copies every table and stream on each transaction, and sync writes many.
    create_records_table(dynamodb, table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    settings = dynamodb_settings(server, table, tmp_path, blobs="s3", blob_bucket=bucket)
    services = Services(settings)
    set_services(services)
    try:
        yield AwsStack(services, bucket, table)
    finally:
        set_services(None)
        dynamodb.delete_table(TableName=table)  # keeps the shared server small


@pytest.fixture
def synced(aws: AwsStack) -> AwsStack:
    assert push_tree(aws.services, TENANT) == EXAMPLE_COUNT
    assert aws.sync() == {**NOTHING, "added": EXAMPLE_COUNT}
    return aws


def table_items(aws: AwsStack, pk: str) -> dict[str, dict[str, Any]]:
    """The table's items of one partition, by sort key, read with the raw DynamoDB API."""
    pages = (
        aws.client("dynamodb")
        .get_paginator("query")
        .paginate(TableName=aws.table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}})
    )
    return {item["sk"]["S"]: item for page in pages for item in page["Items"]}


# ------------------------------------------------------------------ sync ---
def test_sync_writes_to_dynamodb_from_s3_and_a_second_run_is_unchanged(synced: AwsStack) -> None:
    s3 = synced.client("s3")
    listed = s3.list_objects_v2(Bucket=synced.bucket, Prefix=f"knowledge/{TENANT}/")
    assert listed["KeyCount"] == EXAMPLE_COUNT
    state = table_items(synced, f"SYNC|t={TENANT}")
    assert len([sk for sk in state if sk.startswith("ITEM#")]) == EXAMPLE_COUNT
    assert "STATE" in state
    assert "LOCK" not in state
    assert not [sk for sk in state if sk.startswith("FAIL#")]
    entry = json.loads(state[f"ITEM#{ADR_PATH}"]["data"]["S"])
    scope = scope_of(TENANT, "org", "engineering")
    assert (entry["itemId"], entry["layer"], entry["scope"]) == (ADR_042, "org", scope)
    # The catalog record names the S3 object version it was synced from.
    record = json.loads(table_items(synced, f"KNOW|{scope}")[f"ITEM#{ADR_042}"]["data"]["S"])
    current = s3.head_object(Bucket=synced.bucket, Key=f"knowledge/{TENANT}/{ADR_PATH}")
    assert record["item"]["version"] == current["VersionId"]
    assert record["path"] == ADR_PATH

    assert synced.sync() == {**NOTHING, "unchanged": EXAMPLE_COUNT}
    status = synced.services.sync.status(TENANT)
    assert status.healthy is True
    assert status.stats.total_syncs == 2
    assert status.stats.total_items_synced == EXAMPLE_COUNT


def test_one_add_one_change_one_delete_are_counted_once_each(synced: AwsStack) -> None:
    services = synced.services
    services.repository.push(TENANT, "company/policy-new.md", doc("policy-new"), author="a", message="add")
    changed = services.repository.read(TENANT, ADR_PATH)
    assert changed is not None
    services.repository.push(TENANT, ADR_PATH, changed.content + b"\nRevisited.\n", author="a", message="edit")
    services.repository.remove(TENANT, "projects/checkout-api/spec-checkout-api.md")

    assert synced.sync() == {"added": 1, "updated": 1, "deleted": 1, "unchanged": EXAMPLE_COUNT - 2, "failures": 0}

    shown = services.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042))
    assert shown.item is not None
    assert shown.item.content.endswith("Revisited.")
    assert services.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-new")).item is not None
    with pytest.raises(NotFound):
        services.knowledge.show(ENGINEER, KnowledgeShowInput(id="spec-checkout-api"))
    state = table_items(synced, f"SYNC|t={TENANT}")
    assert "ITEM#projects/checkout-api/spec-checkout-api.md" not in state
    assert "ITEM#company/policy-new.md" in state
    # The removal is a delete marker: S3 keeps the file's history.
    versions = synced.client("s3").list_object_versions(
        Bucket=synced.bucket, Prefix=f"knowledge/{TENANT}/projects/checkout-api/spec-checkout-api.md"
    )
    assert len(versions["DeleteMarkers"]) == 1
    assert len(versions["Versions"]) == 1


def test_show_history_is_the_s3_versions_with_author_and_message(synced: AwsStack) -> None:
    services = synced.services
    blob = services.repository.read(TENANT, ADR_PATH)
    assert blob is not None
    message = "Révision: l'index (ADR) réécrit, 100%"
    services.repository.push(TENANT, ADR_PATH, blob.content + b"\nAddendum.\n", author="José", message=message)
    assert synced.sync() == {**NOTHING, "updated": 1, "unchanged": EXAMPLE_COUNT - 1}

    shown = services.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042, include_history=True))

    assert shown.history is not None
    assert [(h.author, h.message) for h in shown.history] == [("José", message), ("tester", "initial import")]
    s3 = synced.client("s3")
    key = f"knowledge/{TENANT}/{ADR_PATH}"
    versions = s3.list_object_versions(Bucket=synced.bucket, Prefix=key)["Versions"]
    latest = next(v["VersionId"] for v in versions if v["IsLatest"])
    assert [h.version for h in shown.history] == [latest] + [v["VersionId"] for v in versions if not v["IsLatest"]]
    # They really travelled as S3 object metadata, which is ASCII: percent-encoded.
    head = s3.head_object(Bucket=synced.bucket, Key=key, VersionId=latest)
    assert head["Metadata"]["author"] == "Jos%C3%A9"
    assert head["Metadata"]["author"].isascii()
    assert head["Metadata"]["message"].isascii()


def test_check_blocks_mysql2_for_the_engineering_org(synced: AwsStack) -> None:
    request = KnowledgeCheckInput.model_validate({"dependencies": [{"name": "mysql2", "version": "3.0.0"}]})

    engineering = synced.services.knowledge.check(ctx(tenant=TENANT, org="engineering"), request)

    assert engineering.passed is False
    (violation,) = [v for v in engineering.violations if v.severity == "block"]
    assert violation.knowledge_item_id == ADR_042
    assert violation.message == "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead."
    assert synced.services.knowledge.check(ctx(tenant=TENANT, org="marketing"), request).passed is True


# ------------------------------------------------- S3 -> EventBridge -> sync ---
@pytest.fixture
def route(aws: AwsStack) -> Iterator[Route]:
    aws.client("s3").put_bucket_notification_configuration(
        Bucket=aws.bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    built = Route(aws.client, aws.bucket)
    try:
        yield built
    finally:
        built.close()


def test_the_template_pattern_is_the_documented_one() -> None:
    assert template_pattern("the-bucket") == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created", "Object Deleted"],
        "detail": {"bucket": {"name": ["the-bucket"]}, "object": {"key": [{"prefix": "knowledge/"}]}},
    }


def test_a_put_to_the_bucket_reaches_sync_through_the_templates_rule(synced: AwsStack, route: Route) -> None:
    services = synced.services
    s3 = synced.client("s3")
    other = f"{synced.bucket}-other"
    ensure_bucket(s3, other, REGION)
    s3.put_bucket_notification_configuration(Bucket=other, NotificationConfiguration={"EventBridgeConfiguration": {}})

    services.repository.push(TENANT, "company/policy-new.md", doc("policy-new"), author="ana", message="add")
    s3.put_object(Bucket=synced.bucket, Key=f"drafts/{TENANT}/company/policy-draft.md", Body=doc("policy-draft"))
    s3.put_object(Bucket=other, Key=f"knowledge/{TENANT}/company/policy-elsewhere.md", Body=doc("policy-elsewhere"))

    (event,) = route.receive(1)  # not the draft outside knowledge/, nor the other bucket's object
    key = f"knowledge/{TENANT}/company/policy-new.md"
    assert (event["source"], event["detail-type"]) == ("aws.s3", "Object Created")
    assert event["detail"]["bucket"]["name"] == synced.bucket
    assert event["detail"]["object"]["key"] == key
    current = s3.head_object(Bucket=synced.bucket, Key=key)["VersionId"]
    assert event["detail"]["object"]["version-id"] == current

    result = sync_events.handler(event, FakeLambdaContext())

    assert result == {"tenant": TENANT, "path": "company/policy-new.md", "result": {**NOTHING, "added": 1}}
    shown = services.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-new", include_history=True))
    assert shown.item is not None
    assert shown.history is not None
    assert shown.history[0].author == "ana"
    assert "ITEM#company/policy-new.md" in table_items(synced, f"SYNC|t={TENANT}")
    assert synced.sync()["unchanged"] == EXAMPLE_COUNT + 1  # nothing left for the schedule to do


def test_a_delete_event_routed_by_the_templates_rule_deletes_the_item(synced: AwsStack, route: Route) -> None:
    synced.services.repository.remove(TENANT, ADR_PATH)
    route.drain()  # whatever moto itself sent for the delete marker (5.2 sends nothing)
    key = f"knowledge/{TENANT}/{ADR_PATH}"
    route.put(
        "Object Deleted",
        s3_detail(synced.bucket, key, "DeleteObject", **{"deletion-type": "Delete Marker Created"}),
        synced.bucket,
    )

    (event,) = route.receive(1)
    result = sync_events.handler(event, FakeLambdaContext())

    assert result == {"tenant": TENANT, "path": ADR_PATH, "result": {**NOTHING, "deleted": 1}}
    with pytest.raises(NotFound):
        synced.services.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042))
    assert f"ITEM#{ADR_PATH}" not in table_items(synced, f"SYNC|t={TENANT}")


def test_the_templates_rule_routes_only_object_events_of_knowledge_files(aws: AwsStack, route: Route) -> None:
    key = f"knowledge/{TENANT}/company/policy-a.md"
    routed = [
        ("Object Created", s3_detail(aws.bucket, key, "PutObject", object={"key": key, "size": 5}), aws.bucket),
        ("Object Deleted", s3_detail(aws.bucket, key, "Lifecycle Expiration"), aws.bucket),
    ]
    ignored = [
        ("Object Created", s3_detail(aws.bucket, f"drafts/{key}", "PutObject"), aws.bucket),
        ("Object Created", s3_detail(f"{aws.bucket}-other", key, "PutObject"), f"{aws.bucket}-other"),
        ("Object Restore Completed", s3_detail(aws.bucket, key, "RestoreObject"), aws.bucket),
        ("Object Tags Added", s3_detail(aws.bucket, key, "PutObjectTagging"), aws.bucket),
    ]
    for detail_type, detail, bucket in routed + ignored:
        route.put(detail_type, detail, bucket)

    received = route.receive(len(routed))

    assert sorted((e["detail-type"], e["detail"]["reason"]) for e in received) == [
        ("Object Created", "PutObject"),
        ("Object Deleted", "Lifecycle Expiration"),
    ]


def test_a_run_over_unchanged_files_lists_the_bucket_and_gets_no_object(synced: AwsStack) -> None:
    """A scheduled run's S3 bill: one ListObjectsV2 page, and a GetObject only for a file that changed."""
    sent: list[str] = []
    client = synced.services.blobs.client  # type: ignore[attr-defined]
    client.meta.events.register("before-call.s3", lambda model, **_: sent.append(model.name), unique_id="sync-s3")
    try:
        assert synced.sync() == {**NOTHING, "unchanged": EXAMPLE_COUNT}
        assert sent == ["ListObjectsV2"]
        blob = synced.services.repository.read(TENANT, ADR_PATH)
        assert blob is not None
        synced.services.repository.push(TENANT, ADR_PATH, blob.content + b"\nAgain.\n", author="a", message="edit")
        sent.clear()
        assert synced.sync() == {**NOTHING, "updated": 1, "unchanged": EXAMPLE_COUNT - 1}
        assert sent == ["ListObjectsV2", "GetObject"]
    finally:
        client.meta.events.unregister("before-call.s3", unique_id="sync-s3")
    state = table_items(synced, f"SYNC|t={TENANT}")
    current = synced.client("s3").head_object(Bucket=synced.bucket, Key=f"knowledge/{TENANT}/{ADR_PATH}")
    assert json.loads(state[f"ITEM#{ADR_PATH}"]["data"]["S"])["tag"].endswith("/" + current["ETag"])

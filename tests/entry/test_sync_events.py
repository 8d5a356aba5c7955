"""The knowledge-sync Lambda (mnemo.entry.sync_events) on EventBridge events shaped as AWS documents them.

Runs on the embedded stack with the hashing embedder; the ``services`` fixture
installs that stack as the process default, which is what the handler uses.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import pytest

from aws_events import FakeLambdaContext
from helpers import ctx
from knowledge_helpers import EXAMPLE_COUNT, doc, push_tree
from mnemo.entry.sync_events import handler
from mnemo.errors import Conflict, NotFound, ProviderError
from mnemo.knowledge.models import KnowledgeShowInput
from mnemo.knowledge.repository import KnowledgeRepository
from mnemo.ports import Blob, Delete, Item, Put
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput
from mnemo.sync.service import SyncService

TENANT = "acme"
ENGINEER = ctx(tenant=TENANT, org="engineering", team="payments", project="checkout-api")
ACCOUNT = "123456789012"
REGION = "eu-west-1"
BUCKET = "mnemo-dev-knowledgebucket-1x2y3z4w5v6u"  # a CloudFormation-generated name: the template sets none
ADR_PATH = "orgs/engineering/adr-042-database-selection.md"
NOTHING = {"added": 0, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 0}


class SyncContext(FakeLambdaContext):
    function_name = "mnemo-dev-knowledge-sync"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:mnemo-dev-knowledge-sync"


# ---------------------------------------------------------------- events ---
def _envelope(source: str, detail_type: str, resources: list[str], detail: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": "0",
        "id": "17793124-05d4-b198-2fde-7ededc63b103",
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": "2026-03-02T09:15:00Z",
        "region": REGION,
        "resources": resources,
        "detail": detail,
    }


def object_created(key: str, *, size: int = 812, bucket: str = BUCKET) -> dict[str, Any]:
    """https://docs.aws.amazon.com/AmazonS3/latest/userguide/ev-events.html (Object Created)."""
    detail = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": {
            "key": key,
            "size": size,
            "etag": "b1946ac92492d2347c6235b4d2611184",
            "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
            "sequencer": "617f08299329d189",
        },
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": ACCOUNT,
        "source-ip-address": "1.2.3.4",
        "reason": "PutObject",
    }
    return _envelope("aws.s3", "Object Created", [f"arn:aws:s3:::{bucket}"], detail)


def object_deleted(key: str, *, bucket: str = BUCKET) -> dict[str, Any]:
    """Object Deleted as a versioned bucket sends it for DeleteObject: a delete marker, no size or etag."""
    detail = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": {"key": key, "version-id": "1QW9g1Z99LUNbvaaYVpW9xDlOLU.qxgF", "sequencer": "617f0837b476e463"},
        "request-id": "0BH729840619AG5K",
        "requester": ACCOUNT,
        "source-ip-address": "1.2.3.4",
        "reason": "DeleteObject",
        "deletion-type": "Delete Marker Created",
    }
    return _envelope("aws.s3", "Object Deleted", [f"arn:aws:s3:::{bucket}"], detail)


def scheduled() -> dict[str, Any]:
    """https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-run-lambda-schedule.html."""
    rule = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/mnemo-dev-KnowledgeSyncFunctionSchedule-ABCDEF123456"
    return _envelope("aws.events", "Scheduled Event", [rule], {})


def invoke(event: dict[str, Any]) -> dict[str, Any]:
    result = handler(event, SyncContext())
    json.dumps(result)  # Lambda must be able to serialise what the handler returns
    return result


# --------------------------------------------------------------- helpers ---
def hold_lock(services: Services, tenant: str) -> None:
    """Another run's unexpired LOCK, as SyncService writes it."""
    now = time.time()
    lock = Item(f"SYNC|t={tenant}", "LOCK", {"owner": "other", "since": now, "expiresAt": now + 600})
    services.records.write([Put(lock, expect="absent")])


def release_lock(services: Services, tenant: str) -> None:
    services.records.write([Delete(f"SYNC|t={tenant}", "LOCK", expect="present")])


def snapshot(services: Services) -> list[tuple[str, str, int, str]]:
    """Every record, comparable across calls."""
    return sorted(
        (item.pk, item.sk, item.version, json.dumps(item.data, sort_keys=True)) for item in services.records.scan()
    )


def content_of(services: Services, item_id: str) -> str:
    shown = services.knowledge.show(ENGINEER, KnowledgeShowInput(id=item_id))
    assert shown.item is not None
    return shown.item.content


@pytest.fixture
def synced(services: Services) -> Services:
    push_tree(services, TENANT)
    assert services.sync.sync(TENANT, SyncNowInput()).result.added == EXAMPLE_COUNT
    return services


# -------------------------------------------------------------- schedule ---
def test_the_schedule_syncs_every_tenant_with_knowledge(services: Services) -> None:
    push_tree(services, "acme")
    push_tree(services, "globex")
    everything_added = {**NOTHING, "added": EXAMPLE_COUNT}

    first = invoke(scheduled())

    assert first == {"acme": everything_added, "globex": everything_added}
    for tenant in ("acme", "globex"):
        status = services.sync.status(tenant)
        assert status.healthy is True
        assert status.running is False
        assert status.failed_items == 0
        assert status.last_sync_at is not None
        assert (status.stats.total_syncs, status.stats.total_items_synced) == (1, EXAMPLE_COUNT)
    assert services.sync.status("initech").last_sync_at is None  # no knowledge, not synced
    globex = ctx(tenant="globex", org="engineering")
    shown = services.knowledge.show(globex, KnowledgeShowInput(id="adr-042-database-selection"))
    assert shown.item is not None
    assert shown.item.layer == "org"

    again = invoke(scheduled())
    assert again == {tenant: {**NOTHING, "unchanged": EXAMPLE_COUNT} for tenant in ("acme", "globex")}
    assert services.sync.status("acme").stats.total_syncs == 2


def test_the_schedule_skips_a_tenant_whose_sync_is_running(services: Services) -> None:
    push_tree(services, "acme")
    push_tree(services, "globex")
    hold_lock(services, "acme")

    result = invoke(scheduled())

    assert result["acme"] == "skipped: a sync is already running"
    assert result["globex"] == {**NOTHING, "added": EXAMPLE_COUNT}
    acme = services.sync.status("acme")
    assert acme.running is True
    assert acme.last_sync_at is None
    assert acme.stats.total_syncs == 0
    assert services.records.query("SYNC|t=acme", "ITEM#") == []
    assert services.sync.status("globex").stats.total_items_synced == EXAMPLE_COUNT


class FailingRepository(KnowledgeRepository):
    """The bucket answers for every tenant but one, whose listing fails every time."""

    def __init__(self, inner: KnowledgeRepository, broken: str) -> None:
        self._inner = inner
        self._broken = broken
        self.listed: list[str] = []

    def listing(self, tenant: str) -> dict[str, str]:
        self.listed.append(tenant)
        if tenant == self._broken:
            raise ConnectionError("S3 unavailable")
        return self._inner.listing(tenant)

    def tenants(self) -> list[str]:
        return self._inner.tenants()

    def read(self, tenant: str, path: str) -> Blob | None:
        return self._inner.read(tenant, path)


def test_a_tenant_failure_raises_after_the_other_tenants_synced(services: Services) -> None:
    for tenant in ("acme", "globex", "initech"):
        push_tree(services, tenant)
    slept: list[float] = []
    failing = FailingRepository(services.repository, broken="globex")
    services.__dict__["sync"] = SyncService(
        services.records, services.index, services.embedder, failing, services.memory, sleep=slept.append
    )

    with pytest.raises(ProviderError) as raised:
        invoke(scheduled())

    assert raised.value.details == {"tenants": ["globex"]}
    assert "1 tenant" in raised.value.message
    # globex was retried in its run (3 attempts); the schedule went on to the others (in a random order).
    assert sorted(failing.listed) == ["acme", "globex", "globex", "globex", "initech"]
    assert slept == [1.0, 2.0]
    assert "globex, globex, globex" in ", ".join(failing.listed)
    for tenant in ("acme", "initech"):
        status = services.sync.status(tenant)
        assert status.last_sync_at is not None
        assert status.stats.total_items_synced == EXAMPLE_COUNT
    globex = services.sync.status("globex")
    assert globex.last_sync_at is None
    assert globex.running is False  # its lock was released


# ------------------------------------------------------------ S3 objects ---
def test_an_object_created_event_updates_just_that_item(synced: Services) -> None:
    repository = synced.repository
    for path in (ADR_PATH, "teams/payments/policy-money-representation.md"):
        blob = repository.read(TENANT, path)
        assert blob is not None
        repository.push(TENANT, path, blob.content + b"\nRevisited in 2026.\n", author="dana", message="revisit")

    result = invoke(object_created(f"knowledge/{TENANT}/{ADR_PATH}"))

    assert result == {"tenant": TENANT, "path": ADR_PATH, "result": {**NOTHING, "updated": 1}}
    assert content_of(synced, "adr-042-database-selection").endswith("Revisited in 2026.")
    # The other changed file waits for its own event (or the schedule).
    assert not content_of(synced, "policy-money-representation").endswith("Revisited in 2026.")
    status = synced.sync.status(TENANT)
    assert status.stats.total_syncs == 2
    assert status.stats.total_items_synced == EXAMPLE_COUNT + 1
    assert synced.sync.sync(TENANT, SyncNowInput()).result.model_dump() == {
        **NOTHING,
        "updated": 1,
        "unchanged": EXAMPLE_COUNT - 1,
    }


def test_an_object_created_event_for_a_new_file_adds_it(synced: Services) -> None:
    synced.repository.push(TENANT, "company/policy-new.md", doc("policy-new"), author="a", message="add")

    result = invoke(object_created(f"knowledge/{TENANT}/company/policy-new.md"))

    assert result["result"] == {**NOTHING, "added": 1}
    assert content_of(synced, "policy-new") == "# policy-new\n\nBody of policy-new."


def test_an_object_deleted_event_deletes_the_item(synced: Services) -> None:
    synced.repository.remove(TENANT, ADR_PATH)

    result = invoke(object_deleted(f"knowledge/{TENANT}/{ADR_PATH}"))

    assert result == {"tenant": TENANT, "path": ADR_PATH, "result": {**NOTHING, "deleted": 1}}
    with pytest.raises(NotFound):
        synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-042-database-selection"))
    assert synced.records.get(f"SYNC|t={TENANT}", f"ITEM#{ADR_PATH}") is None
    # A redelivered event (EventBridge delivers at least once) changes nothing.
    assert invoke(object_deleted(f"knowledge/{TENANT}/{ADR_PATH}"))["result"] == NOTHING


@pytest.mark.parametrize(
    "key",
    [
        f"uploads/{TENANT}/company/policy-stray.md",  # outside knowledge/
        f"knowledge/{TENANT}/company/policy-stray.txt",  # not markdown
        f"knowledge/{TENANT}/README.md",  # not under a layer folder
        f"knowledge/{TENANT}/company/",  # a "folder" the S3 console creates
        "knowledge/policy-stray.md",  # no tenant
    ],
)
def test_keys_outside_the_knowledge_tree_are_ignored_and_write_nothing(synced: Services, key: str) -> None:
    if not key.endswith("/"):
        synced.blobs.put(key, doc("policy-stray"))
    before = snapshot(synced)
    documents = synced.index.count("knowledge")

    result = invoke(object_created(key))

    assert result == {"ignored": key}
    assert snapshot(synced) == before
    assert synced.index.count("knowledge") == documents
    with pytest.raises(NotFound):
        synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-stray"))


def test_an_object_event_while_the_tenant_syncs_raises_so_that_lambda_retries(synced: Services) -> None:
    blob = synced.repository.read(TENANT, ADR_PATH)
    assert blob is not None
    synced.repository.push(TENANT, ADR_PATH, blob.content + b"\nRevisited.\n", author="a", message="m")
    hold_lock(synced, TENANT)
    event = object_created(f"knowledge/{TENANT}/{ADR_PATH}")

    with pytest.raises(Conflict) as raised:
        invoke(event)

    assert raised.value.envelope()["retryable"] is True
    assert not content_of(synced, "adr-042-database-selection").endswith("Revisited.")
    assert synced.sync.status(TENANT).stats.total_syncs == 1
    # Lambda's retry, once the other run has finished, applies the change.
    release_lock(synced, TENANT)
    assert invoke(event)["result"] == {**NOTHING, "updated": 1}
    assert content_of(synced, "adr-042-database-selection").endswith("Revisited.")


def _without(event: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(event))
    node = copy
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return copy


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({}, "unexpected event"),
        (_without(object_created("knowledge/acme/company/a.md"), ["detail"]), "detail.object.key"),
        (_without(object_created("knowledge/acme/company/a.md"), ["detail", "object"]), "detail.object.key"),
        (_without(object_created("knowledge/acme/company/a.md"), ["detail", "object", "key"]), "detail.object.key"),
        ({**object_created("knowledge/acme/company/a.md"), "detail": "not an object"}, "detail.object.key"),
        ({**object_created("knowledge/acme/company/a.md"), "detail-type": "Object Restore Completed"}, "unexpected"),
        ({**object_created("knowledge/acme/company/a.md"), "source": "aws.events"}, "unexpected event"),
        ({**scheduled(), "detail-type": "Scheduled Events"}, "unexpected event"),
    ],
    ids=[
        "empty",
        "no-detail",
        "no-object",
        "no-key",
        "detail-not-an-object",
        "other-s3-detail-type",
        "s3-detail-type-other-source",
        "misspelt-schedule",
    ],
)
def test_a_malformed_event_raises_value_error_and_writes_nothing(
    services: Services, event: dict[str, Any], message: str
) -> None:
    push_tree(services, TENANT)
    with pytest.raises(ValueError, match=message):
        invoke(event)
    assert snapshot(services) == []


def test_a_url_encoded_key_reaches_the_file_it_names(services: Services) -> None:
    """S3 notifications URL-encode keys; an event carrying "a+b" or "%40" still syncs the stored file."""
    path = "teams/pay@ments/policy-c++.md"
    services.repository.push(TENANT, path, doc("policy-retry-budget"), author="a", message="m")
    encoded = f"knowledge/{TENANT}/teams/pay%40ments/policy-c%2B%2B.md"
    result = invoke(object_created(encoded))
    assert result["result"]["added"] == 1
    engineer = ctx(tenant=TENANT, team="pay@ments")
    assert services.knowledge.show(engineer, KnowledgeShowInput(id="policy-retry-budget")).item is not None

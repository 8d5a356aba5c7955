"""Sync: delta detection, failures, filters, supersession, pointers, the lock and the status."""

from __future__ import annotations

import time
from typing import Any

import pytest

from helpers import ctx
from knowledge_helpers import EXAMPLE_COUNT, doc, push_tree
from mnemo.errors import Conflict
from mnemo.knowledge.catalog import scope_of
from mnemo.knowledge.models import KnowledgeQueryInput, KnowledgeShowInput
from mnemo.memory.models import MemorySearchInput
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput
from mnemo.sync.service import pointer_id

TENANT = "acme"
ENGINEER = ctx(tenant=TENANT, org="engineering", team="payments", project="checkout-api")


def sync(services: Services, **options: Any) -> dict[str, Any]:
    output = services.sync.sync(TENANT, SyncNowInput(**options))
    return output.model_dump(mode="json", by_alias=True)


def counts(result: dict[str, Any]) -> dict[str, int]:
    return dict(result["result"])


@pytest.fixture
def synced(services: Services) -> Services:
    push_tree(services, TENANT)
    first = sync(services)
    assert counts(first) == {
        "added": EXAMPLE_COUNT,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
        "failures": 0,
    }, first
    return services


def test_a_second_sync_with_no_change_reports_only_unchanged(synced: Services) -> None:
    assert counts(sync(synced)) == {
        "added": 0,
        "updated": 0,
        "deleted": 0,
        "unchanged": EXAMPLE_COUNT,
        "failures": 0,
    }


def test_add_one_change_one_delete_one(synced: Services) -> None:
    repository = synced.repository
    repository.push(TENANT, "company/policy-new.md", doc("policy-new"), author="a", message="add")
    changed = repository.read(TENANT, "teams/payments/policy-money-representation.md")
    assert changed is not None
    repository.push(
        TENANT,
        "teams/payments/policy-money-representation.md",
        changed.content + b"\nOne more paragraph.\n",
        author="a",
        message="edit",
    )
    repository.remove(TENANT, "projects/checkout-api/spec-checkout-api.md")

    assert counts(sync(synced)) == {
        "added": 1,
        "updated": 1,
        "deleted": 1,
        "unchanged": EXAMPLE_COUNT - 2,
        "failures": 0,
    }
    with pytest.raises(Exception, match="not found"):
        synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="spec-checkout-api"))
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-money-representation"))
    assert shown.item is not None
    assert shown.item.content.endswith("One more paragraph.")


def test_a_deleted_item_leaves_an_orphaned_pointer_that_search_no_longer_finds(synced: Services) -> None:
    scope = scope_of(TENANT, "project", "checkout-api")
    memory_id = pointer_id(scope, "spec-checkout-api")
    search = MemorySearchInput(query="Checkout API specification", threshold=0.0, layers=["project"])
    found = synced.memory.search(ENGINEER, search)
    assert memory_id in [r.memory_id for r in found.results]

    synced.repository.remove(TENANT, "projects/checkout-api/spec-checkout-api.md")
    assert counts(sync(synced))["deleted"] == 1

    record = synced.records.get(f"MEM|{scope}", f"MEM#{memory_id}")
    assert record is not None
    assert record.data["orphaned"] is True
    assert memory_id not in [r.memory_id for r in synced.memory.search(ENGINEER, search).results]
    synced.memory.reindex()  # a rebuild from the records keeps it out too
    assert memory_id not in [r.memory_id for r in synced.memory.search(ENGINEER, search).results]


def test_a_malformed_file_is_a_failed_item_while_the_others_sync(services: Services) -> None:
    push_tree(services, TENANT)
    services.repository.push(
        TENANT,
        "company/broken.md",
        b"---\nid: broken\ntype: memo\ntitle: x\nsummary: y\n---\nbody\n",
        author="a",
        message="m",
    )
    result = sync(services)
    assert counts(result) == {"added": EXAMPLE_COUNT, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 1}
    (failed,) = result["failedItems"]
    assert failed["path"] == "company/broken.md"
    assert failed["field"] == "type"
    assert failed["retryCount"] == 0
    assert "'memo' must be one of" in failed["error"]

    again = sync(services)
    assert again["failedItems"][0]["retryCount"] == 1
    status = services.sync.status(TENANT)
    assert status.healthy is False
    assert status.failed_items == 1
    assert status.failures[0].path == "company/broken.md"

    services.repository.push(TENANT, "company/broken.md", doc("broken"), author="a", message="fix")
    fixed = sync(services)
    assert counts(fixed)["added"] == 1
    assert counts(fixed)["failures"] == 0
    assert services.sync.status(TENANT).failed_items == 0


def test_a_pattern_re2_rejects_is_reported_at_sync(services: Services) -> None:
    bad = doc(
        "policy-backref",
        extra="constraints:\n  - operator: must_not_match\n    target: code\n    pattern: '(a)\\1'\n",
    )
    services.repository.push(TENANT, "company/policy-backref.md", bad, author="a", message="m")
    (failed,) = sync(services)["failedItems"]
    assert failed["field"] == "constraints.0.pattern"
    assert "RE2" in failed["error"]


def test_same_id_twice_in_one_layer_fails_the_second_file(services: Services) -> None:
    services.repository.push(TENANT, "company/a.md", doc("policy-x"), author="a", message="m")
    services.repository.push(TENANT, "company/sub/b.md", doc("policy-x"), author="a", message="m")
    result = sync(services)
    assert counts(result)["added"] == 1
    assert counts(result)["failures"] == 1
    assert result["failedItems"][0]["path"] == "company/sub/b.md"
    assert result["failedItems"][0]["field"] == "id"


def test_force_reapplies_every_item(synced: Services) -> None:
    assert counts(sync(synced, force=True))["updated"] == EXAMPLE_COUNT


def test_layers_and_types_limit_what_is_synced(services: Services) -> None:
    push_tree(services, TENANT)
    org_only = counts(sync(services, layers=["org"]))
    assert org_only == {"added": 5, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 0}
    adrs = counts(sync(services, types=["adr"]))
    assert adrs["added"] == 1
    assert adrs["unchanged"] == 3  # adr-003 in the project; three org ADRs synced already
    # Deleting outside the filter is not seen by a filtered run.
    services.repository.remove(TENANT, "orgs/engineering/policy-python-services.md")
    assert counts(sync(services, types=["adr"]))["deleted"] == 0
    assert counts(sync(services, layers=["org"]))["deleted"] == 1


def test_a_superseded_adr_is_reported_superseded_and_leaves_memory(synced: Services) -> None:
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-017-message-queue"))
    assert shown.item is not None
    assert shown.item.status == "superseded"
    assert shown.item.superseded_by == ["adr-051-event-streaming"]
    newer = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-051-event-streaming"))
    assert newer.item is not None
    assert newer.item.supersedes == "adr-017-message-queue"
    listed = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(type="adr"))
    assert "adr-017-message-queue" not in [i.id for i in listed.items]
    scope = scope_of(TENANT, "org", "engineering")
    pointer = synced.records.get(f"MEM|{scope}", f"MEM#{pointer_id(scope, 'adr-017-message-queue')}")
    assert pointer is None or pointer.data.get("orphaned") is True

    # Removing the newer ADR restores the older one, and only those two change.
    synced.repository.remove(TENANT, "orgs/engineering/adr-051-event-streaming.md")
    result = counts(sync(synced))
    assert result["deleted"] == 1
    assert result["updated"] == 1
    restored = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-017-message-queue"))
    assert restored.item is not None
    assert restored.item.status == "accepted"
    assert restored.item.superseded_by == []


def test_an_object_event_syncs_just_that_file(synced: Services) -> None:
    path = "orgs/engineering/adr-042-database-selection.md"
    blob = synced.repository.read(TENANT, path)
    assert blob is not None
    synced.repository.push(TENANT, path, blob.content + b"\nRevisited.\n", author="a", message="m")
    one = synced.sync.sync(TENANT, SyncNowInput(), paths=[path])
    assert one.result.model_dump() == {"added": 0, "updated": 1, "deleted": 0, "unchanged": 0, "failures": 0}
    synced.repository.remove(TENANT, path)
    gone = synced.sync.sync(TENANT, SyncNowInput(), paths=[path])
    assert gone.result.deleted == 1


def test_tenants_never_see_each_others_knowledge(synced: Services) -> None:
    other = ctx(tenant="globex", org="engineering", team="payments", project="checkout-api")
    assert synced.knowledge.query(other, KnowledgeQueryInput()).total_count == 0
    assert synced.knowledge.query(other, KnowledgeQueryInput(query="database selection")).items == []
    with pytest.raises(Exception, match="not found"):
        synced.knowledge.show(other, KnowledgeShowInput(id="adr-042-database-selection"))
    assert synced.sync.status("globex").last_sync_at is None


# ------------------------------------------------------------------ the lock ---
def test_two_syncs_never_interleave(synced: Services) -> None:
    now = time.time()
    lock = Item(f"SYNC|t={TENANT}", "LOCK", {"owner": "other", "since": now, "expiresAt": now + 600})
    synced.records.write([Put(lock, expect="absent")])
    with pytest.raises(Conflict) as raised:
        sync(synced)
    assert raised.value.envelope()["retryable"] is True
    assert synced.sync.status(TENANT).running is True


def test_an_expired_lock_is_taken_over(synced: Services) -> None:
    then = time.time() - 3600
    lock = Item(f"SYNC|t={TENANT}", "LOCK", {"owner": "crashed", "since": then, "expiresAt": then + 900})
    synced.records.write([Put(lock, expect="absent")])
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert synced.records.get(f"SYNC|t={TENANT}", "LOCK") is None


# ------------------------------------------------------------------ retries ---
class FlakyIndex:
    """Wraps an index so that its next ``failures`` upserts raise."""

    def __init__(self, inner: Any, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    def upsert(self, namespace: str, docs: Any) -> None:
        if namespace == "knowledge" and self.failures > 0:
            self.failures -= 1
            raise ConnectionError("index unavailable")
        self.inner.upsert(namespace, docs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _flaky(services: Services, failures: int) -> list[float]:
    from mnemo.sync.service import SyncService

    slept: list[float] = []
    flaky = FlakyIndex(services.index, failures)
    services.__dict__["sync"] = SyncService(
        services.records, flaky, services.embedder, services.repository, services.memory, sleep=slept.append
    )
    return slept


def test_transient_failures_are_retried_with_backoff(services: Services) -> None:
    services.repository.push(TENANT, "company/policy-a.md", doc("policy-a"), author="a", message="m")
    slept = _flaky(services, failures=2)
    assert counts(sync(services)) == {"added": 1, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 0}
    assert slept == [1.0, 2.0]


def test_a_persistent_failure_is_recorded_and_retried_next_sync(services: Services) -> None:
    services.repository.push(TENANT, "company/policy-a.md", doc("policy-a"), author="a", message="m")
    services.repository.push(TENANT, "company/policy-b.md", doc("policy-b"), author="a", message="m")
    slept = _flaky(services, failures=3)
    result = sync(services)
    assert counts(result) == {"added": 1, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 1}
    assert "index unavailable" in result["failedItems"][0]["error"]
    assert slept == [1.0, 2.0]
    # The index is back: the next run applies what failed, and nothing else.
    assert counts(sync(services)) == {"added": 1, "updated": 0, "deleted": 0, "unchanged": 1, "failures": 0}


# ------------------------------------------------------------------- status ---
def test_status_before_and_after_syncs(services: Services) -> None:
    before = services.sync.status(TENANT)
    assert (before.healthy, before.last_sync_at, before.time_since_sync) == (False, None, "never")
    assert before.stats.total_syncs == 0
    push_tree(services, TENANT)
    sync(services)
    sync(services)
    after = services.sync.status(TENANT)
    assert after.healthy is True
    assert after.failed_items == 0
    assert after.running is False
    assert after.last_sync_at is not None
    assert after.time_since_sync in {"just now"} | {f"{n} second{'s' if n != 1 else ''} ago" for n in range(60)}
    assert after.stats.total_syncs == 2
    assert after.stats.total_items_synced == EXAMPLE_COUNT
    assert after.stats.avg_sync_duration_ms > 0


def test_pointer_memories_carry_the_knowledge_pointer(synced: Services) -> None:
    scope = scope_of(TENANT, "org", "engineering")
    record = synced.records.get(f"MEM|{scope}", f"MEM#{pointer_id(scope, 'adr-042-database-selection')}")
    assert record is not None
    data = record.data
    assert data["layer"] == "org"
    assert data["metadata"]["source"] == "knowledge_sync"
    pointer = data["metadata"]["knowledgePointer"]
    assert pointer["sourceType"] == "adr"
    assert pointer["sourceId"] == "adr-042-database-selection"
    assert len(pointer["contentHash"]) == 64
    assert pointer["syncedAt"].endswith("Z")
    assert "Database Selection for New Services" in data["content"]


def test_a_renamed_file_keeps_its_item_whatever_order_the_events_arrive_in(synced: Services) -> None:
    old, new = "company/policy-license-headers.md", "company/licensing/policy-license-headers.md"
    blob = synced.repository.read(TENANT, old)
    assert blob is not None
    synced.repository.push(TENANT, new, blob.content, author="a", message="move")
    synced.repository.remove(TENANT, old)
    created = synced.sync.sync(TENANT, SyncNowInput(), paths=[new])  # the new file's event first
    assert (created.result.added, created.result.deleted, created.result.failures) == (1, 1, 0)
    deleted = synced.sync.sync(TENANT, SyncNowInput(), paths=[old])  # then the old one's: nothing left to do
    assert deleted.result.model_dump() == {"added": 0, "updated": 0, "deleted": 0, "unchanged": 0, "failures": 0}
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-license-headers"))
    assert shown.item is not None
    scope = scope_of(TENANT, "company", None)
    pointer = synced.records.get(f"MEM|{scope}", f"MEM#{pointer_id(scope, 'policy-license-headers')}")
    assert pointer is not None
    assert not pointer.data.get("orphaned")


def test_a_project_cannot_supersede_a_company_rule(synced: Services) -> None:
    rogue = doc("adr-rogue", kind="adr", extra="supersedes: policy-secrets-handling\n")
    synced.repository.push(TENANT, "projects/rogue/adr-rogue.md", rogue, author="a", message="m")
    synced.sync.sync(TENANT, SyncNowInput())
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="policy-secrets-handling"))
    assert shown.item is not None
    assert shown.item.status == "accepted"
    assert shown.item.superseded_by == []


def test_self_and_circular_supersession_retire_nothing(services: Services) -> None:
    own = doc("adr-self", kind="adr", extra="supersedes: adr-self\n")
    services.repository.push(TENANT, "company/adr-self.md", own, author="a", message="m")
    services.repository.push(
        TENANT, "company/adr-a.md", doc("adr-a", kind="adr", extra="supersedes: adr-b\n"), author="a", message="m"
    )
    services.repository.push(
        TENANT, "company/adr-b.md", doc("adr-b", kind="adr", extra="supersedes: adr-a\n"), author="a", message="m"
    )
    result = sync(services)
    assert [(f["path"], f["field"]) for f in result["failedItems"]] == [("company/adr-self.md", "supersedes")]
    for item_id in ("adr-a", "adr-b"):
        shown = services.knowledge.show(ENGINEER, KnowledgeShowInput(id=item_id))
        assert shown.item is not None
        assert shown.item.status == "accepted"


def test_a_filtered_sync_keeps_the_failures_outside_its_filter(services: Services) -> None:
    services.repository.push(TENANT, "company/broken.md", b"---\nid: broken\n---\n", author="a", message="m")
    services.repository.push(TENANT, "orgs/engineering/ok.md", doc("ok"), author="a", message="m")
    assert sync(services)["result"]["failures"] == 1
    assert sync(services, layers=["org"])["result"]["failures"] == 0
    assert sync(services, types=["policy"])["result"]["failures"] == 1  # the broken file has no type: it is tried
    assert services.sync.status(TENANT).failed_items == 1


def test_a_metadata_mapping_with_a_number_for_a_key_fails_only_that_file(services: Services) -> None:
    services.repository.push(
        TENANT, "company/odd.md", doc("odd", extra="metadata:\n  1: one\n"), author="a", message="m"
    )
    services.repository.push(TENANT, "company/fine.md", doc("fine"), author="a", message="m")
    result = sync(services)
    assert result["result"]["added"] == 1
    assert [(f["path"], f["field"]) for f in result["failedItems"]] == [("company/odd.md", "metadata")]


def test_failures_are_shown_only_to_callers_of_their_layer(services: Services) -> None:
    from mnemo.tools.registry import get_tool

    services.repository.push(TENANT, "orgs/secret/broken.md", b"---\nid: x\n---\n", author="a", message="m")
    sync(services)
    outsider = ctx(tenant=TENANT, org="engineering")
    insider = ctx(tenant=TENANT, org="secret")
    status = get_tool("sync_status")
    assert status.invoke(services, outsider, {})["failures"] == []
    assert status.invoke(services, outsider, {})["failedItems"] == 1
    assert [f["path"] for f in status.invoke(services, insider, {})["failures"]] == ["orgs/secret/broken.md"]
    now = get_tool("sync_now")
    assert now.invoke(services, outsider, {})["failedItems"] == []
    with pytest.raises(Exception, match="writer"):
        now.invoke(services, outsider, {"force": True})
    assert now.invoke(services, ctx(tenant=TENANT, roles=("writer",)), {"force": True})["result"]["failures"] == 1


def test_a_long_run_renews_its_lock(synced: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    import mnemo.sync.service as sync_module

    monkeypatch.setattr(sync_module, "LOCK_RENEW_SECONDS", 0)  # renew before every item
    seen: list[float] = []
    original = synced.records.write

    def spy(operations: Any) -> None:
        for operation in operations:
            if isinstance(operation, Put) and operation.item.sk == "LOCK" and operation.expect != "absent":
                seen.append(operation.item.data["expiresAt"])
        original(operations)

    monkeypatch.setattr(synced.records, "write", spy)
    assert counts(sync(synced, force=True))["updated"] == EXAMPLE_COUNT
    assert len(seen) >= EXAMPLE_COUNT
    assert seen == sorted(seen)


def test_a_bug_is_not_retried(services: Services) -> None:
    services.repository.push(TENANT, "company/policy-a.md", doc("policy-a"), author="a", message="m")
    slept: list[float] = []

    class BrokenIndex(FlakyIndex):
        def upsert(self, namespace: str, docs: Any) -> None:
            raise KeyError("a bug, not an outage")

    from mnemo.sync.service import SyncService

    services.__dict__["sync"] = SyncService(
        services.records,
        BrokenIndex(services.index, 0),
        services.embedder,
        services.repository,
        services.memory,
        sleep=slept.append,
    )
    result = sync(services)
    assert result["result"]["failures"] == 1
    assert slept == []


def test_a_pointer_memory_cannot_be_deleted_by_hand(synced: Services) -> None:
    from mnemo.errors import InvalidInput
    from mnemo.memory.models import MemoryDeleteInput

    scope = scope_of(TENANT, "org", "engineering")
    memory_id = pointer_id(scope, "adr-042-database-selection")
    writer = ctx(tenant=TENANT, org="engineering", roles=("writer",))
    with pytest.raises(InvalidInput) as raised:
        synced.memory.delete(writer, MemoryDeleteInput(memory_id=memory_id))
    assert raised.value.details == {"field": "memoryId", "knowledgeItemId": "adr-042-database-selection"}
    assert synced.records.get(f"MEM|{scope}", f"MEM#{memory_id}") is not None


# ------------------------------------------------------- unread when unchanged ---
class Reads:
    """The paths the sync service reads from the repository, in order."""

    def __init__(self, services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        repository = services.repository
        inner = repository.read

        def read(tenant: str, path: str) -> Any:
            self.paths.append(path)
            return inner(tenant, path)

        monkeypatch.setattr(repository, "read", read)

    def taken(self) -> list[str]:
        taken, self.paths = self.paths, []
        return taken


def sync_entries(services: Services) -> dict[str, Item]:
    return {item.sk.removeprefix("ITEM#"): item for item in services.records.query(f"SYNC|t={TENANT}", "ITEM#")}


def test_a_full_run_reads_only_the_files_whose_tag_changed(synced: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(synced, monkeypatch)
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert reads.taken() == []

    path = "teams/payments/policy-money-representation.md"
    blob = synced.repository.read(TENANT, path)
    assert blob is not None
    synced.repository.push(TENANT, path, blob.content + b"\nMore.\n", author="a", message="edit")
    reads.taken()
    assert counts(sync(synced)) == {
        "added": 0,
        "updated": 1,
        "deleted": 0,
        "unchanged": EXAMPLE_COUNT - 1,
        "failures": 0,
    }
    assert reads.taken() == [path]
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert reads.taken() == []


def test_force_and_a_recorded_failure_read_the_file_again(synced: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(synced, monkeypatch)
    assert counts(sync(synced, force=True))["updated"] == EXAMPLE_COUNT
    assert len(reads.taken()) == EXAMPLE_COUNT

    path = "orgs/engineering/adr-042-database-selection.md"
    failure = {"knowledgeId": "adr-042", "path": path, "error": "S3 unavailable", "failedAt": "2026-12-01T00:00:00Z"}
    synced.records.write([Put(Item(f"SYNC|t={TENANT}", f"FAIL#{path}", {**failure, "retryCount": 0}))])
    result = sync(synced)
    assert counts(result)["updated"] == 1
    assert result["failedItems"] == []
    assert reads.taken() == [path]


def test_state_synced_before_tags_is_read_once_more_then_skipped(
    synced: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    untagged = []
    for entry in sync_entries(synced).values():
        entry.data.pop("tag")
        untagged.append(Put(entry))
    synced.records.write(untagged)
    reads = Reads(synced, monkeypatch)

    # Nothing changed, so nothing is written but each entry's tag.
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert len(reads.taken()) == EXAMPLE_COUNT
    assert all(entry.data["tag"] for entry in sync_entries(synced).values())
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert reads.taken() == []


def test_a_new_document_format_reads_every_file_again(synced: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(synced, monkeypatch)
    monkeypatch.setattr("mnemo.sync.service.DOCUMENT_FORMAT", "2")

    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert len(reads.taken()) == EXAMPLE_COUNT
    assert {entry.data["tag"].split("/")[0] for entry in sync_entries(synced).values()} == {"2"}
    assert counts(sync(synced))["unchanged"] == EXAMPLE_COUNT
    assert reads.taken() == []


def test_an_unread_file_newly_superseded_is_read_and_retired(synced: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = Reads(synced, monkeypatch)
    newer = "orgs/engineering/adr-060-new-database.md"
    text = doc("adr-060-new-database", kind="adr", extra="status: accepted\nsupersedes: adr-042-database-selection\n")
    synced.repository.push(TENANT, newer, text, author="a", message="supersede")
    reads.taken()

    assert counts(sync(synced)) == {
        "added": 1,
        "updated": 1,
        "deleted": 0,
        "unchanged": EXAMPLE_COUNT - 1,
        "failures": 0,
    }
    assert sorted(reads.taken()) == sorted([newer, "orgs/engineering/adr-042-database-selection.md"])
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-042-database-selection"))
    assert shown.item is not None
    assert (shown.item.status, shown.item.superseded_by) == ("superseded", ["adr-060-new-database"])


def test_a_filtered_run_counts_only_the_unread_files_in_its_filter(
    synced: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = Reads(synced, monkeypatch)
    adrs = counts(sync(synced, types=["adr"]))
    assert adrs == {"added": 0, "updated": 0, "deleted": 0, "unchanged": 4, "failures": 0}
    assert reads.taken() == []

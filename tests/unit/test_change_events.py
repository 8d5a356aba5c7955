"""Change events on the embedded default: record changes to events (mnemo.events), the SQLite change log written
with each change, and the webhook worker (signed POSTs, retries with backoff, the delivery log, leases), each
event valid against its JSON Schema in docs/events/."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from event_schemas import SCHEMAS, subject, validate

from helpers import ctx
from mnemo.adapters.local.change_log import SqliteChangeLog
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.events import KINDS, ChangeEvent, RecordChange
from mnemo.events import events_of as mapped
from mnemo.events.delivery import MAX_ATTEMPTS, WebhookDelivery, backoff
from mnemo.events.signing import sign, verify
from mnemo.ports import ConditionFailed, Delete, Item, Put
from mnemo.runtime import Services, record_families, set_services
from mnemo.settings import Settings, Webhook
from mnemo.tools.registry import load_catalog


def events_of(change: RecordChange) -> list[ChangeEvent]:
    """The events of a change, as the registered record families map it."""
    return mapped(change, record_families())


def captured(pk: str, sk: str) -> bool:
    return record_families().captured(pk, sk)


ALICE = ctx("alice", roles=("writer",))
SECRET = "whsec-test-0123456789"
MEM = f"MEM|{ALICE.scope_key('user')}"
AT = "2026-01-05T10:00:00.000001Z"


def change(sk: str, old: dict[str, Any] | None, new: dict[str, Any] | None, **extra: Any) -> RecordChange:
    return RecordChange(MEM, sk, old, new, extra.pop("at", AT), **extra)


def memory(memory_id: str = "mem_1", **fields: Any) -> dict[str, Any]:
    return {"memoryId": memory_id, "content": "Tea, no sugar", "contentHash": "h1", "metadata": {"source": "manual"}}


class Receiver:
    """A webhook stand-in: answers each POST with the next of ``statuses`` (then 200), keeps what came."""

    def __init__(self, *statuses: int | None) -> None:
        self.statuses = list(statuses)
        self.posts: list[tuple[str, dict[str, str], bytes]] = []

    def __call__(self, url: str, headers: dict[str, str], body: bytes, timeout: float) -> tuple[int | None, str | None]:
        self.posts.append((url, headers, body))
        status = self.statuses.pop(0) if self.statuses else 200
        return (status, None) if status is not None else (None, "ConnectionRefusedError: refused")


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_600_000.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------------- mapping
def test_every_kind_has_a_draft_2020_12_schema_and_nothing_else_is_there() -> None:
    assert sorted(path.name.removesuffix(".schema.json") for path in SCHEMAS.glob("*.schema.json")) == sorted(KINDS)
    for kind in KINDS:
        schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["properties"]["kind"] == {"const": kind}


def test_memory_changes_map_to_added_updated_superseded_deleted() -> None:
    added = events_of(change("MEM#mem_1", None, memory(), new_version=1))
    updated = events_of(change("MEM#mem_1", memory(), {**memory(), "tags": ["x"]}, old_version=1, new_version=2))
    superseded = events_of(
        change("MEM#mem_1", memory(), {**memory(), "supersededBy": "mem_2"}, old_version=1, new_version=2)
    )
    same = events_of(change("MEM#mem_1", memory(), memory(), old_version=1, new_version=2))
    deleted = events_of(change("MEM#mem_1", memory(), None, old_version=2))
    assert [e.kind for e in added + updated + superseded + same + deleted] == [
        "memory.added",
        "memory.updated",
        "memory.superseded",
        "memory.deleted",
    ]
    assert superseded[0].data["supersededBy"] == "mem_2"
    (event,) = added
    assert (event.tenant, event.layer, event.user, event.ids) == (
        "acme",
        "user",
        "alice",
        {"user": "alice", "memoryId": "mem_1"},
    )
    for one in added + updated + superseded + deleted:
        validate(one.envelope())
        validate(one.envelope(include_content=True))


def test_identity_comes_from_the_partition_never_from_the_body() -> None:
    forged = {**memory(), "scope": "t=globex|user|u=mallory", "createdBy": "mallory", "tenant": "globex"}
    (event,) = events_of(change("MEM#mem_1", None, forged, new_version=1))
    assert (event.tenant, event.user) == ("acme", "alice")
    agent = RecordChange(f"MEM|{ctx('bob', agent='a1').scope_key('agent')}", "MEM#m", None, memory(), AT, None, 1)
    (event,) = events_of(agent)
    assert (event.layer, event.user, event.ids) == ("agent", "bob", {"user": "bob", "agent": "a1", "memoryId": "m"})
    assert events_of(RecordChange("MEM|not-a-scope", "MEM#m", None, memory(), AT)) == []


def test_content_is_in_the_envelope_only_when_asked_for() -> None:
    (event,) = events_of(change("MEM#mem_1", None, memory(), new_version=1))
    assert "content" not in event.envelope() and "Tea" not in json.dumps(event.envelope())
    assert event.envelope(include_content=True)["content"]["text"] == "Tea, no sugar"


def test_an_expiry_is_one_event_whichever_change_reports_it() -> None:
    body = {**memory(), "expiresAt": "2026-01-04T00:00:00Z"}
    by_ttl = events_of(change("MEM#mem_1", body, None, old_version=3, by_service=True))
    by_sweep = events_of(change("MEM#mem_1", body, None, old_version=3))  # a removal after expiresAt
    history = {"memoryId": "mem_1", "event": "EXPIRE", "at": "2026-01-04T00:00:00Z", "contentHash": "h1"}
    by_history = events_of(change("HIST#mem_1#2026-01-04T00:00:00Z#EXPIRE#3", None, history, new_version=1))
    assert by_ttl == by_sweep == by_history and by_ttl[0].kind == "memory.expired"
    validate(by_ttl[0].envelope())
    # A removal before expiresAt is a delete; other history items give nothing.
    early = {**memory(), "expiresAt": "2027-01-01T00:00:00Z"}
    assert [e.kind for e in events_of(change("MEM#mem_1", early, None, old_version=1))] == ["memory.deleted"]
    assert events_of(change("HIST#mem_1#x#DELETE#abc", None, {"event": "DELETE"}, new_version=1)) == []


def test_event_ids_are_deterministic_per_change_and_differ_between_changes() -> None:
    first = events_of(change("MEM#mem_1", None, memory(), new_version=1))
    again = events_of(change("MEM#mem_1", None, memory(), new_version=1))
    later = events_of(change("MEM#mem_1", memory(), {**memory(), "tags": ["t"]}, old_version=1, new_version=2))
    assert first[0].id == again[0].id != later[0].id


def test_graph_files_sync_extraction_and_erasure_changes() -> None:
    graph = f"GRAPH|{ALICE.scope_key('user')}"
    fact = {"factId": "fct_1", "predicate": "works_at", "subjectId": "e1", "objectId": "e2", "validAt": AT, "text": "x"}
    ended = {**fact, "invalidAt": AT, "expiredAt": AT}
    asset = f"ASSET|{ALICE.scope_key('user')}"
    head = {"name": "blocks/a.md", "sha256": "s", "bytes": 1, "tokens": 1, "preview": "a"}
    receipt = {"erasureId": "era_1", "userHash": "0" * 64, "status": "running", "counts": {"memories": 2}}
    cases = [
        (RecordChange(graph, "FACT#fct_1", None, fact, AT, None, 1), ["graph.fact.added"]),
        (RecordChange(graph, "FACT#fct_1", fact, ended, AT, 1, 2), ["graph.fact.invalidated"]),
        (RecordChange(graph, "FACT#fct_1", ended, None, AT, 2, None), ["graph.fact.deleted"]),
        (RecordChange(graph, "ENT#e1", None, {"name": "Alice"}, AT, None, 1), []),
        (RecordChange(asset, "F#blocks/a.md", None, head, AT, None, 1), ["block.written"]),
        (
            RecordChange(asset, "F#blocks/a.md", head, {"name": "blocks/a.md", "deleted": True}, AT, 1, 2),
            ["block.deleted"],
        ),
        (RecordChange(asset, "F#skills/s.md", None, {**head, "name": "skills/s.md"}, AT, None, 1), ["file.written"]),
        (RecordChange(f"WS|{ALICE.scope_key('user')}", "F#notes.md", head, None, AT, 1, None), ["file.deleted"]),
        (RecordChange(asset, "V#blocks/a.md#0000000001#000", None, {"text": "a"}, AT, None, 1), []),
        (
            RecordChange("SYNC|t=acme", "STATE", None, {"lastSyncAt": AT, "lastResult": {"added": 1}}, AT, None, 1),
            ["sync.completed"],
        ),
        (RecordChange("SYNC|t=acme", "LOCK", None, {}, AT, None, 1), []),
        (
            RecordChange(f"LEARN|{ALICE.scope_key('user')}", "RUN#x#run_1", None, {"runId": "run_1"}, AT, None, 1),
            ["extraction.completed"],
        ),
        (RecordChange("ERASURE#t=acme", f"{'0' * 64}#{AT}#era_1", None, receipt, AT, None, 1), []),
        (
            RecordChange(
                "ERASURE#t=acme",
                f"{'0' * 64}#{AT}#era_1",
                receipt,
                {**receipt, "status": "completed", "completedAt": AT},
                AT,
                3,
                4,
            ),
            ["user.erased"],
        ),
        (RecordChange("INDEX-OUTBOX#01", "m", None, {}, AT, None, 1), []),
    ]
    for one, kinds in cases:
        found = events_of(one)
        assert [e.kind for e in found] == kinds, one
        assert captured(one.pk, one.sk) or not kinds, one
        for event in found:
            validate(event.envelope(include_content=True))
    assert not captured(MEM, "IDEM#k") and not captured(MEM, "LAST") and not captured(MEM, "HIST#m#t#ADD#abc")
    assert captured(MEM, "HIST#m#t#EXPIRE#3")


# ------------------------------------------------------------------------------------- the change log
def test_the_store_logs_captured_changes_in_the_same_transaction_and_nothing_without_capture(tmp_path: Path) -> None:
    plain = SqliteRecordStore(tmp_path / "plain.sqlite3")
    plain.write([Put(Item(MEM, "MEM#m", memory()))])
    tables = sqlite3.connect(tmp_path / "plain.sqlite3").execute("SELECT name FROM sqlite_master").fetchall()
    assert ("changes",) not in tables, "no webhook: no change log, nothing paid"

    store = SqliteRecordStore(tmp_path / "m.sqlite3", capture=captured)
    store.write([Put(Item(MEM, "MEM#m", memory())), Put(Item(MEM, "IDEM#k", {"x": 1}))])
    store.write([Put(Item(MEM, "MEM#m", {**memory(), "tags": ["t"]}, version=2), expect=1)])
    with pytest.raises(ConditionFailed):  # a failed condition rolls back the change and its log row together
        store.write([Delete(MEM, "MEM#m"), Put(Item(MEM, "MEM#m2", memory()), expect=7)])
    store.write([Delete(MEM, "MEM#m"), Delete(MEM, "MEM#never")])
    log = SqliteChangeLog(tmp_path / "m.sqlite3")
    rows = log.lease_changes("w1", 100, 60)
    assert [(r.sk, r.old_version, r.new_version) for r in rows] == [
        ("MEM#m", None, 1),
        ("MEM#m", 1, 2),
        ("MEM#m", 2, None),
    ]
    assert rows[1].old == memory() and rows[1].new == {**memory(), "tags": ["t"]} and rows[2].new is None
    assert log.lease_changes("w2", 100, 60) == [], "another worker does not get rows held by w1"


# ------------------------------------------------------------------------------------- the worker
@pytest.fixture
def stack(tmp_path: Path) -> Any:
    settings = Settings(
        data_dir=tmp_path, embedder="hashing", webhooks=(Webhook(url="http://127.0.0.1:9/h", secret=SECRET),)
    )
    services = Services(settings)
    set_services(services)
    yield services
    set_services(None)


def call(services: Services, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    return load_catalog()[tool].invoke(services, ALICE, body)


def worker(services: Services, receiver: Receiver, clock: Clock, **options: Any) -> WebhookDelivery:
    log = SqliteChangeLog(services.settings.sqlite_path)
    targets = services.settings.webhook_targets
    return WebhookDelivery(log, receiver, targets, families=record_families(), clock=clock, **options)


def test_tool_calls_reach_the_webhook_signed_valid_and_once(stack: Services) -> None:
    kept = call(stack, "memory_add", {"content": "The audit room is B-204"})["memoryId"]
    gone = call(stack, "memory_add", {"content": "Lunch is at noon"})["memoryId"]
    call(stack, "memory_delete", {"memoryId": gone})
    fact = call(stack, "add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme"})["factId"]
    call(stack, "invalidate_memory_link", {"factId": fact})
    call(stack, "file_write", {"path": "mnemo:///blocks/notes.md", "content": "hello"})
    call(stack, "file_delete", {"path": "mnemo:///blocks/notes.md"})
    receiver, clock = Receiver(), Clock()
    report = worker(stack, receiver, clock).run_once()
    assert report.delivered == len(receiver.posts) == 7 and report.failed == report.retrying == 0
    envelopes = []
    for url, headers, body in receiver.posts:
        assert url == "http://127.0.0.1:9/h" and headers["Content-Type"] == "application/json"
        assert verify(SECRET, headers["Mnemo-Signature"], body, now=clock.now)
        assert not verify("another-secret", headers["Mnemo-Signature"], body, now=clock.now)
        envelope = json.loads(body)
        assert headers["Mnemo-Event-Id"] == envelope["id"] and headers["Mnemo-Event-Kind"] == envelope["kind"]
        validate(envelope)
        envelopes.append(envelope)
    assert [subject(e) for e in envelopes] == [
        ("memory.added", kept),
        ("memory.added", gone),
        ("memory.deleted", gone),
        ("graph.fact.added", fact),
        ("graph.fact.invalidated", fact),
        ("block.written", "blocks/notes.md"),
        ("block.deleted", "blocks/notes.md"),
    ]
    assert worker(stack, receiver, clock).run_once().delivered == 0, "delivered once"


def test_a_failed_post_is_retried_with_backoff_with_the_same_id_and_body(stack: Services) -> None:
    call(stack, "memory_add", {"content": "Tea, no sugar"})
    receiver, clock = Receiver(503, None, 200), Clock()
    delivery = worker(stack, receiver, clock)
    assert delivery.run_once().retrying == 1
    assert delivery.run_once().delivered == 0, "not due yet: the backoff holds it"
    clock.now += backoff(1)
    assert delivery.run_once().retrying == 1  # no answer at all this time
    log = SqliteChangeLog(stack.settings.sqlite_path)
    (failing,) = log.deliveries(10, failed_only=True)
    assert (failing.attempts, failing.last_error) == (2, "ConnectionRefusedError: refused")
    clock.now += backoff(2)
    assert delivery.run_once().delivered == 1
    assert len({headers["Mnemo-Event-Id"] for _, headers, _ in receiver.posts}) == 1
    assert len({body for _, _, body in receiver.posts}) == 1
    assert [headers["Mnemo-Delivery-Attempt"] for _, headers, _ in receiver.posts] == ["1", "2", "3"]
    assert log.deliveries(10, failed_only=True) == []
    assert [(d.status, d.attempts, d.last_status) for d in log.deliveries(10)] == [("delivered", 3, 200)]


def test_a_delivery_is_given_up_after_the_last_attempt(stack: Services) -> None:
    call(stack, "memory_add", {"content": "Tea, no sugar"})
    receiver, clock = Receiver(*[500] * MAX_ATTEMPTS), Clock()
    delivery = worker(stack, receiver, clock)
    for _ in range(MAX_ATTEMPTS):
        delivery.run_once()
        clock.now += 3600
    (given_up,) = SqliteChangeLog(stack.settings.sqlite_path).deliveries(10, failed_only=True)
    assert (given_up.status, given_up.attempts, given_up.last_status) == ("failed", MAX_ATTEMPTS, 500)
    assert delivery.run_once().delivered == 0 and len(receiver.posts) == MAX_ATTEMPTS
    assert [backoff(n) for n in (1, 2, 3, 12)] == [1.0, 2.0, 4.0, 600.0]


def test_two_workers_never_post_one_delivery_twice(stack: Services) -> None:
    for n in range(5):
        call(stack, "memory_add", {"content": f"Fact number {n}"})
    clock = Clock()
    first, second = Receiver(), Receiver()
    one, two = worker(stack, first, clock), worker(stack, second, clock)
    log = SqliteChangeLog(stack.settings.sqlite_path)
    held = log.lease_changes("someone-else", 2, 60)  # a worker of another process holds two, then dies
    assert len(held) == 2
    one.run_once()
    two.run_once()
    assert len(first.posts) == 3 and second.posts == []
    # Once the dead worker's lease runs out (leases are on the real clock: here, as if it had), its rows are
    # taken over.
    log._connection().execute("UPDATE changes SET leased_until = 0")
    two.run_once()
    assert len(second.posts) == 2
    ids = [h["Mnemo-Event-Id"] for _, h, _ in first.posts + second.posts]
    assert len(set(ids)) == 5


def test_webhooks_want_only_their_kinds_and_urls_are_http_only(tmp_path: Path) -> None:
    hooks = (
        Webhook(url="http://127.0.0.1:9/all", secret=SECRET),
        Webhook(url="https://example.com/deleted", secret=SECRET, kinds=("memory.deleted",)),
    )
    services = Services(Settings(data_dir=tmp_path, embedder="hashing", webhooks=hooks))
    memory_id = call(services, "memory_add", {"content": "Tea"})["memoryId"]
    call(services, "memory_delete", {"memoryId": memory_id})
    receiver = Receiver()
    worker(services, receiver, Clock()).run_once()
    assert sorted((url, json.loads(body)["kind"]) for url, _, body in receiver.posts) == [
        ("http://127.0.0.1:9/all", "memory.added"),
        ("http://127.0.0.1:9/all", "memory.deleted"),
        ("https://example.com/deleted", "memory.deleted"),
    ]
    for bad in ("file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)", "http://"):
        with pytest.raises(ValueError):
            Webhook(url=bad, secret=SECRET)
    env = {"MNEMO_WEBHOOK_URL": "http://127.0.0.1:9/one", "MNEMO_WEBHOOK_SECRET": SECRET}
    assert [w.url for w in Settings.from_env(env).webhook_targets] == ["http://127.0.0.1:9/one"]
    listed = {
        "MNEMO_WEBHOOKS": json.dumps([{"url": "http://127.0.0.1:9/a", "secret": SECRET, "kinds": ["memory.added"]}])
    }
    assert Settings.from_env(listed).webhook_targets[0].kinds == ("memory.added",)
    assert Services(Settings(data_dir=tmp_path / "none", embedder="hashing")).change_delivery is None


def test_the_signature_is_the_hmac_of_the_timestamp_and_the_body() -> None:
    header = sign(SECRET, b'{"a":1}', 1_767_600_000)
    assert header.startswith("t=1767600000,v1=") and len(header.split("v1=")[1]) == 64
    assert verify(SECRET, header, b'{"a":1}', now=1_767_600_100)
    assert not verify(SECRET, header, b'{"a":2}', now=1_767_600_100), "another body"
    assert not verify(SECRET, header, b'{"a":1}', now=1_767_600_000 + 301), "too old: a replay"
    assert not verify(SECRET, "garbage", b'{"a":1}', now=1_767_600_000)


def test_the_leases_of_a_killed_process_are_taken_over_at_once(stack: Services) -> None:
    import socket
    import subprocess
    import sys

    call(stack, "memory_add", {"content": "Tea, no sugar"})
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = f"w-dead@{socket.gethostname()}:{int(gone.stdout)}"
    log = SqliteChangeLog(stack.settings.sqlite_path)
    log._connection().execute("UPDATE changes SET leased_by = ?, leased_until = 9e12", (dead,))
    receiver = Receiver()
    assert worker(stack, receiver, Clock()).run_once().delivered == 1, "the dead process's lease did not hold it"
    # A live holder's lease (this process's, another worker) does hold.
    call(stack, "memory_add", {"content": "Coffee, black"})
    assert len(log.lease_changes("another-worker", 10, 60)) == 1
    assert worker(stack, receiver, Clock()).run_once().delivered == 0

"""Which DynamoDB reads are strongly consistent, seen on the wire (botocore's ``before-parameter-build``
event on the real client, against a serial moto server; the table is built from template.yaml).

Reads whose answer decides a write (versions, idempotency and dedupe checks, an outbox marker) send
``ConsistentRead: true``. Search read-backs and listings send ``false``: half the read units, at the
price of missing, for about a second, an item written just before. moto is always consistent, so
what is checked is what the code asks DynamoDB for, not what a replica would answer.

The local vector index and the hashing embedder stand in for OpenSearch and Titan.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from knowledge_helpers import push_tree
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.context import RequestContext
from mnemo.memory.records import keyed_memory_id, partition_of
from mnemo.runtime import Services, set_services
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import get_tool

WRITER = ctx(tenant="acme", agent="bot", project="checkout", roles=("writer",))
READS = ("GetItem", "BatchGetItem", "Query")
_names = itertools.count()


@dataclass
class Read:
    operation: str
    #: The ConsistentRead sent; None when absent (DynamoDB then reads eventually consistently).
    consistent: bool | None
    #: The (pk, sk) keys a GetItem or BatchGetItem names; empty for a Query.
    keys: tuple[tuple[str, str], ...]


class Wire:
    """The reads of one table, as botocore is about to send them."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.reads: list[Read] = []

    def hook(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in ("GetItem", "Query") and params.get("TableName") == self.table:
            keys = ((params["Key"]["pk"]["S"], params["Key"]["sk"]["S"]),) if model.name == "GetItem" else ()
            self.reads.append(Read(model.name, params.get("ConsistentRead"), keys))
        elif model.name == "BatchGetItem" and self.table in params.get("RequestItems", {}):
            request = params["RequestItems"][self.table]
            keys = tuple((key["pk"]["S"], key["sk"]["S"]) for key in request["Keys"])
            self.reads.append(Read(model.name, request.get("ConsistentRead"), keys))

    def during(self, run: Callable[[], Any]) -> list[Read]:
        self.reads.clear()
        run()
        return list(self.reads)


@dataclass
class Stack:
    services: Services
    wire: Wire

    def call(self, tool: str, payload: dict[str, Any], context: RequestContext = WRITER) -> dict[str, Any]:
        return get_tool(tool).invoke(self.services, context, payload)


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    number = next(_names)
    table = bucket = f"read-consistency-{number}"
    create_records_table(server.client("dynamodb"), table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    services = Services(dynamodb_settings(server, table, tmp_path, blobs="s3", blob_bucket=bucket))
    set_services(services)
    wire = Wire(table)
    events = services.records.client.meta.events  # the cached client every stack on this server shares
    events.register("before-parameter-build.dynamodb", wire.hook)
    try:
        yield Stack(services, wire)
    finally:
        events.unregister("before-parameter-build.dynamodb", wire.hook)


def strong(reads: list[Read]) -> list[Read]:
    return [read for read in reads if read.consistent is True]


def eventual(reads: list[Read]) -> list[Read]:
    return [read for read in reads if not read.consistent]


# ------------------------------------------------------------------ memory
def test_memory_search_reads_its_hits_back_eventually(aws: Stack) -> None:
    aws.call("memory_add", {"content": "Orders live in PostgreSQL 16."})
    aws.call("memory_add", {"content": "Releases go out on Tuesdays."})
    reads = aws.wire.during(lambda: aws.call("memory_search", {"query": "Where do orders live?"}))
    read_backs = [read for read in reads if read.operation == "BatchGetItem"]
    assert read_backs
    assert all(sk.startswith("MEM#") for read in read_backs for _, sk in read.keys)
    assert [read.consistent for read in read_backs] == [False] * len(read_backs)
    assert strong(reads) == []


def test_memory_add_reads_what_decides_its_write_consistently(aws: Stack) -> None:
    add = {"content": "Orders live in PostgreSQL 16.", "idempotencyKey": "k-1"}
    first = aws.wire.during(lambda: aws.call("memory_add", add))
    replay = aws.wire.during(lambda: aws.call("memory_add", add))
    duplicate = aws.wire.during(lambda: aws.call("memory_add", {"content": "Orders live in PostgreSQL 16."}))
    assert first == []  # a keyed add reads nothing: its one conditional put finds a repeat (mnemo.memory.keys)
    for reads in (replay, duplicate):
        assert reads
        assert eventual(reads) == []
    keyed = f"MEM#{keyed_memory_id(partition_of(WRITER.scope_key('user')), 'k-1')}"
    assert any(sk == keyed for read in replay for _, sk in read.keys)  # the key's memory record
    assert any(sk.startswith("MEM#") for read in duplicate for _, sk in read.keys)  # the duplicate's record


def test_the_outbox_reads_consistently_where_a_stale_read_would_matter(aws: Stack) -> None:
    aws.call("memory_add", {"content": "Orders live in PostgreSQL 16."})
    outbox = aws.services.outbox
    # A drain's and a report's scans of the outbox may be stale (mnemo.outbox: a marker missed is the next
    # drain's, one already settled is indexed again harmlessly); the reads that decide a write are not.
    scans = aws.wire.during(lambda: (outbox.pending(), outbox.dead_letters(), outbox.drain()))
    assert scans
    assert eventual(scans) and all(read.operation == "Query" for read in eventual(scans))
    queued = aws.services.outbox.marker("memory", {"pk": f"MEM|{WRITER.scope_key('user')}", "sk": "MEM#x"}, queued=True)
    aws.services.records.write([queued])
    decides = aws.wire.during(lambda: outbox.on_marker(queued.item.pk, queued.item.sk))
    assert decides
    assert eventual(decides) == []


# -------------------------------------------------------- every search tool
def _memories(aws: Stack) -> None:
    aws.call("memory_add", {"content": "Orders live in PostgreSQL 16."})


def _knowledge(aws: Stack) -> None:
    push_tree(aws.services, "acme")
    aws.services.sync.sync("acme", SyncNowInput())


def _topics(aws: Stack) -> None:
    aws.call(
        "memorize_new_topic",
        {"topic": "deployment", "tags": ["deploy"], "summary": "How releases go out.", "content": "On Tuesdays."},
    )


def _conversations(aws: Stack) -> None:
    aws.call(
        "add_conversation",
        {"message_id": "m1", "explanation": "x", "user_input": "Weather in Paris?", "agent_response": "Rain."},
    )
    aws.call(
        "add_execution",
        {
            "message_id": "m1",
            "explanation": "x",
            "execution_summary": "Asked the weather API",
            "tools_used": ["weather_api"],
            "errors": [],
            "observations": "",
            "success": True,
        },
    )


def _files(aws: Stack) -> None:
    aws.call("file_write", {"path": "mnemo:///blocks/decisions.md", "content": "# Decisions\nOrders in PostgreSQL.\n"})
    aws.call("block_pin", {"path": "mnemo:///blocks/decisions.md"})


def _graph(aws: Stack) -> None:
    aws.call("add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme"})


#: tool, what the stack holds first, the call, and the keys it may still read consistently, by partition or
#: sort key prefix: the caller's own pin set (a pin just made shows), the general topic (answered with its
#: version, which a refine then expects).
#: The search and listing tools are picked by hand: once the catalog declares each tool's rights (index
#: access, records read), this list can be checked against it.
SEARCHES: list[tuple[str, Callable[[Stack], None], dict[str, Any], tuple[str, ...]]] = [
    ("memory_search", _memories, {"query": "orders"}, ()),
    ("knowledge_query", _knowledge, {"query": "database"}, ()),
    ("knowledge_query", _knowledge, {}, ()),
    ("search_memories", _topics, {"query": "releases"}, ()),
    ("search_memories", _topics, {"tags": ["deploy"]}, ()),
    ("list_memories", _topics, {}, ()),
    ("recall_general_memory", _topics, {}, ("GENERAL",)),
    ("retrieve_conversation", _conversations, {"query": "weather", "explanation": "x"}, ()),
    (
        "retrieve_conversation",
        _conversations,
        {"query": "weather", "explanation": "x", "retrieval_strategy": "recent"},
        (),
    ),
    ("retrieve_execution", _conversations, {"query": "weather API", "explanation": "x"}, ()),
    ("file_search", _files, {"query": "PostgreSQL"}, ("PINS|",)),
    ("file_list", _files, {"path": "mnemo:///blocks/"}, ("PINS|",)),
    ("pinned_context", _files, {}, ("PINS|",)),
    ("graph_search", _graph, {"query": "Where does Alice work?"}, ()),
]


@pytest.mark.parametrize(
    ("tool", "setup", "payload", "allowed"), SEARCHES, ids=lambda v: v if isinstance(v, str) else ""
)
def test_search_tools_read_back_eventually(
    aws: Stack, tool: str, setup: Callable[[Stack], None], payload: dict[str, Any], allowed: tuple[str, ...]
) -> None:
    setup(aws)
    reads = aws.wire.during(lambda: aws.call(tool, payload))
    assert eventual(reads), f"{tool} read nothing eventually consistently"
    unexpected = [
        read
        for read in strong(reads)
        if not read.keys or not all(pk.startswith(allowed) or sk.startswith(allowed) for pk, sk in read.keys)
    ]
    assert unexpected == [], f"{tool} read strongly consistently: {unexpected}"

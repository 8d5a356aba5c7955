"""The file tools on DynamoDB records and a versioned S3 bucket (a serial moto server; the table is built
from template.yaml): the records' layout, content in several chunks, history kept and pruned, the
seed's block workflow with the budget, and a workspace file whose losing writer's blob landed last.

The local vector index and the hashing embedder stand in for OpenSearch and Titan.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.files.store import CHUNK_JSON_BYTES
from mnemo.files.tokens import count_tokens
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

WRITER = ctx(tenant="acme", agent="bot", project="checkout", roles=("writer",))
AGENT_PK = "ASSET|t=acme|agent|u=alice|a=bot"
PROJECT_PK = "ASSET|t=acme|project|p=checkout"
WORKSPACE_PK = "WS|t=acme|project|p=checkout"
_names = itertools.count()


class Aws:
    def __init__(self, services: Services, table: str, bucket: str) -> None:
        self.services, self.table, self.bucket = services, table, bucket
        self.server = shared_moto_server()

    def items(self, pk: str) -> dict[str, dict[str, Any]]:
        pages = (
            self.server.client("dynamodb")
            .get_paginator("query")
            .paginate(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": pk}},
            )
        )
        return {item["sk"]["S"]: item for page in pages for item in page["Items"]}

    def data(self, pk: str, sk: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.items(pk)[sk]["data"]["S"])
        return loaded


def build(tmp_path: Path, budget: int) -> Aws:
    server = shared_moto_server()
    number = next(_names)
    table, bucket = f"files-contract-{number}", f"files-contract-{number}"
    create_records_table(server.client("dynamodb"), table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    settings = dynamodb_settings(
        server, table, tmp_path / str(number), blobs="s3", blob_bucket=bucket, block_budget_tokens=budget
    )
    services = Services(settings)
    set_services(services)
    return Aws(services, table, bucket)


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    stack = build(tmp_path, 400)
    try:
        yield stack
    finally:
        set_services(None)
        stack.server.client("dynamodb").delete_table(TableName=stack.table)


def call(services: Services, tool: str, payload: dict[str, Any], context: RequestContext = WRITER) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def failed(services: Services, tool: str, payload: dict[str, Any], context: RequestContext = WRITER) -> MnemoError:
    with pytest.raises(MnemoError) as raised:
        call(services, tool, payload, context)
    return raised.value


def read_all(services: Services, path: str, **extra: Any) -> str:
    """A file's whole content, read in pages of at most 10,000 lines."""
    parts, offset = [], 0
    while True:
        page = call(services, "file_read", {"path": path, "offset": offset, "limit": 10_000, **extra})
        parts.append(page["content"])
        if not page["hasMore"]:
            return "".join(parts)
        offset = page["nextOffset"]


def words(n: int) -> str:
    return " ".join(["word"] * n)


# ------------------------------------------------------------------ layout ---
def test_records_layout_of_a_pinned_block_on_dynamodb(aws: Aws) -> None:
    services = aws.services
    call(services, "file_write", {"path": "mnemo:///blocks/decisions.md", "content": "# Decisions\n[END]\n"})
    call(services, "file_edit", {"path": "mnemo:///blocks/decisions.md", "old": "[END]", "new": "- PG 16\n[END]"})
    call(services, "block_pin", {"path": "mnemo:///blocks/decisions.md"})
    items = aws.items(AGENT_PK)
    assert set(items) == {
        "F#blocks/decisions.md",
        "H#blocks/decisions.md#0000000001",
        "H#blocks/decisions.md#0000000002",
        "V#blocks/decisions.md#0000000001#000",
        "V#blocks/decisions.md#0000000002#000",
        "P#blocks/decisions.md",
    }
    head = json.loads(items["F#blocks/decisions.md"]["data"]["S"])
    assert items["F#blocks/decisions.md"]["version"]["N"] == "2"
    assert head["tokens"] == count_tokens("# Decisions\n- PG 16\n[END]\n")
    assert head["chunks"] == 1
    assert head["kept"] == [[1, 1], [2, 1]]
    assert head["updatedBy"] == "alice"
    assert json.loads(items["V#blocks/decisions.md#0000000002#000"]["data"]["S"]) == {
        "text": "# Decisions\n- PG 16\n[END]\n"
    }
    assert json.loads(items["P#blocks/decisions.md"]["data"]["S"])["pinnedBy"] == ["t=acme|agent|u=alice|a=bot"]
    pins = aws.data("PINS|t=acme|agent|u=alice|a=bot", "SET")
    assert pins["total"] == head["tokens"]
    assert pins["pins"] == [{"pk": AGENT_PK, "name": "blocks/decisions.md", "tokens": head["tokens"]}]
    call(services, "file_delete", {"path": "mnemo:///blocks/decisions.md"})
    assert aws.data("PINS|t=acme|agent|u=alice|a=bot", "SET")["pins"] == []
    assert "P#blocks/decisions.md" not in aws.items(AGENT_PK)
    assert json.loads(aws.items(AGENT_PK)["F#blocks/decisions.md"]["data"]["S"])["deleted"] is True


def test_a_workspace_file_is_an_s3_object_version_named_by_its_head(aws: Aws) -> None:
    services = aws.services
    call(services, "file_write", {"path": "src/auth.py", "content": "v1\n"})
    call(services, "file_write", {"path": "src/auth.py", "content": "v2\n"})
    s3 = aws.server.client("s3")
    key = "workspace/acme/project/checkout/src/auth.py"
    versions = [v for v in s3.list_object_versions(Bucket=aws.bucket, Prefix=key)["Versions"] if v["Key"] == key]
    assert len(versions) == 2
    head = aws.data(WORKSPACE_PK, "F#src/auth.py")
    latest = s3.get_object(Bucket=aws.bucket, Key=key, VersionId=head["blobVersion"])
    assert latest["Body"].read() == b"v2\n"
    assert latest["Metadata"]["mnemo-version"] == "2"
    assert latest["Metadata"]["author"] == "alice"
    assert not any(sk.startswith("V#") for sk in aws.items(WORKSPACE_PK))  # content lives in S3 only
    call(services, "file_delete", {"path": "src/auth.py"})
    listed = s3.list_object_versions(Bucket=aws.bucket, Prefix=key)
    assert any(marker["IsLatest"] for marker in listed.get("DeleteMarkers", []))
    call(services, "file_write", {"path": "src/auth.py", "content": "v4\n"})
    assert call(services, "file_read", {"path": "src/auth.py", "version": 1})["content"] == "v1\n"
    assert call(services, "file_read", {"path": "src/auth.py"})["content"] == "v4\n"


# ------------------------------------------------------------ large content ---
LARGE_ASCII = "".join(f"{n:07d} the orders service keeps its data in PostgreSQL 16.\n" for n in range(16_000))
LARGE_UNICODE = "".join(("é" * 40 + "中文" * 5 + "😀" * 5 + "\n") for _ in range(3_000))


@pytest.mark.parametrize(
    ("content", "least_chunks"),
    [(LARGE_ASCII[:900_000], 3), (LARGE_UNICODE, 2)],
    ids=["900k-ascii", "150k-non-ascii"],
)
def test_large_blocks_take_several_chunks_and_read_back_whole(aws: Aws, content: str, least_chunks: int) -> None:
    services = aws.services
    path = "mnemo://project/blocks/large.md"
    content += "[END]\n"
    written = call(services, "file_write", {"path": path, "content": content})
    assert written["tokens"] == count_tokens(content)
    assert written["bytes"] == len(content.encode())
    chunks = {sk: item for sk, item in aws.items(PROJECT_PK).items() if sk.startswith("V#blocks/large.md#0000000001#")}
    assert len(chunks) >= least_chunks
    for item in chunks.values():
        assert len(item["data"]["S"].encode()) <= CHUNK_JSON_BYTES + 64  # each well under DynamoDB's 400 KB
    assert read_all(services, path) == content
    edited = call(services, "file_edit", {"path": path, "old": "[END]", "new": "appended\n[END]"})
    assert edited["version"] == 2
    assert read_all(services, path) == content.replace("[END]", "appended\n[END]")
    assert read_all(services, path, version=1) == content
    lines, offset = [], 0
    while True:  # and in pages of 1,000 lines
        page = call(services, "file_read", {"path": path, "offset": offset, "limit": 1000})
        lines.append(page["content"])
        if not page["hasMore"]:
            break
        offset = page["nextOffset"]
    assert "".join(lines) == content.replace("[END]", "appended\n[END]")
    assert len(lines) >= 3


def test_a_block_too_large_to_store_is_refused_before_anything_is_written(aws: Aws) -> None:
    error = failed(aws.services, "file_write", {"path": "mnemo:///blocks/huge.md", "content": "😀" * 200_000})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "content"
    assert aws.items(AGENT_PK) == {}


def test_a_large_workspace_file_round_trips_through_s3(aws: Aws) -> None:
    services = aws.services
    content = LARGE_ASCII[:450_000] + LARGE_UNICODE
    call(services, "file_write", {"path": "docs/big.md", "content": content})
    assert read_all(services, "docs/big.md") == content


def test_old_content_versions_are_pruned_from_the_table(aws: Aws) -> None:
    services = aws.services
    path = "mnemo:///blocks/many.md"
    for n in range(1, 24):
        call(services, "file_write", {"path": path, "content": f"version {n}\n" + "x" * 10})
    items = aws.items(AGENT_PK)
    kept = sorted(int(sk.split("#")[2]) for sk in items if sk.startswith("V#blocks/many.md#"))
    assert kept == list(range(4, 24))
    assert len([sk for sk in items if sk.startswith("H#blocks/many.md#")]) == 23  # history entries all stay
    assert failed(services, "file_read", {"path": path, "version": 3}).code == "NOT_FOUND"
    assert call(services, "file_read", {"path": path, "version": 4})["content"].startswith("version 4\n")


# ------------------------------------------------------------ the workflow ---
def test_the_seed_block_workflow_with_the_budget_on_dynamodb(aws: Aws) -> None:
    services = aws.services
    block, large = "mnemo:///blocks/decisions.md", "mnemo:///blocks/large-doc.md"
    call(services, "file_write", {"path": block, "content": "# Decisions\n\n- Orders in PostgreSQL 16.\n[END]\n"})
    call(services, "block_pin", {"path": block})
    appended = call(services, "file_edit", {"path": block, "old": "[END]", "new": words(150) + "\n[END]"})
    assert appended["pinned"] is True
    assert appended["pinnedTokens"] == appended["tokens"]
    call(services, "file_write", {"path": large, "content": "# Large doc\n"})
    call(services, "block_pin", {"path": large})
    before = aws.items(AGENT_PK)
    error = failed(services, "file_write", {"path": large, "content": "# Large doc\n" + words(300)})
    assert error.code == "CONFLICT"
    assert error.details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    current = appended["tokens"] + count_tokens("# Large doc\n")
    size = count_tokens("# Large doc\n" + words(300))
    assert (error.details["current"], error.details["limit"], error.details["size"]) == (current, 400, size)
    assert error.details["wouldBe"] == appended["tokens"] + size
    assert error.details["yours"] is True
    assert aws.items(AGENT_PK) == before  # nothing written
    compacted = call(services, "file_write", {"path": block, "content": "# Decisions\n- PG 16.\n[END]\n"})
    assert compacted["tokens"] < appended["tokens"]
    retried = call(services, "file_write", {"path": large, "content": "# Large doc\n" + words(300)})
    assert retried["pinnedTokens"] == compacted["tokens"] + size <= 400
    call(services, "block_unpin", {"path": block})
    context = call(services, "pinned_context", {})
    assert [b["path"] for b in context["blocks"]] == [large]
    assert context["totalTokens"] == size


# ------------------------------------------------------------- lost race ---
def test_the_head_decides_the_workspace_version_after_a_lost_race(aws: Aws) -> None:
    """The loser's S3 object version lands after the winner's, so it is S3's latest; reads follow the head."""
    services = aws.services
    path, key = "src/race.py", "workspace/acme/project/checkout/src/race.py"
    call(services, "file_write", {"path": path, "content": "start\n"})
    blobs = services.blobs
    real_put = blobs.put
    armed = [True]

    def put(blob_key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        if armed[0]:
            armed[0] = False  # the winner writes in full between the loser's head read and its blob put
            call(services, "file_write", {"path": path, "content": "winner\n"})
        return real_put(blob_key, content, metadata)

    setattr(blobs, "put", put)  # noqa: B010 (an instance attribute over the method, removed after)
    try:
        lost = failed(services, "file_write", {"path": path, "content": "loser\n"})
    finally:
        delattr(blobs, "put")
    assert lost.code == "CONFLICT"
    s3 = aws.server.client("s3")
    assert s3.get_object(Bucket=aws.bucket, Key=key)["Body"].read() == b"loser\n"  # S3's latest is the loser's
    answer = call(services, "file_read", {"path": path})
    assert answer["content"] == "winner\n"
    assert answer["version"] == 2
    assert call(services, "file_read", {"path": path, "version": 1})["content"] == "start\n"
    listed = call(services, "file_list", {"path": "src/"})["entries"]
    assert [(e["path"], e["version"]) for e in listed] == [("src/race.py", 2)]
    third = call(services, "file_write", {"path": path, "content": "third\n", "expectedVersion": 2})
    assert third["version"] == 3
    assert call(services, "file_read", {"path": path})["content"] == "third\n"

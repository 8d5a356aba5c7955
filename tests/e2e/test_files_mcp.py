"""The seed's block workflow through MCP with the official SDK client: `mnemo mcp` over stdio and
`mnemo serve`'s /mcp over Streamable HTTP, on the embedded default and on DynamoDB + S3 in moto.

A tool's answer is ``structuredContent`` (checked against the tool's declared output schema);
a failure is an ``isError`` result carrying the Mnemo envelope, as tests/e2e/test_mcp.py checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import mcp_support
import pytest
from aws_fixtures import SerialMotoServer
from mcp import ClientSession
from mcp_support import Caller, http_session

from helpers import local_server
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import load_catalog

#: Every tool of the files family (file tools, pinned blocks), from the catalog.
FILE_TOOLS = {name for name, tool in load_catalog().items() if tool.family == "files"}
BUDGET = 400
TABLE = "records-files-mcp"
BUCKET = "mnemo-files-mcp"

DECISIONS = "mnemo:///blocks/decisions.md"
LARGE = "mnemo:///blocks/large-doc.md"
FIRST = "# Decisions\n\n- Decision 1: the orders service 1 keeps its data in PostgreSQL 16, backed up nightly.\n[END]\n"
APPENDED = "".join(
    f"- Decision {n}: the orders service {n} keeps its data in PostgreSQL 16, backed up nightly.\n" for n in range(2, 9)
)
COMPACTED = "# Decisions\n\n" + "".join(f"- D{n}: orders {n} in PostgreSQL 16.\n" for n in range(1, 9)) + "[END]\n"
LARGE_SMALL = "# Large doc\n\nTo be written.\n"
LARGE_BIG = "# Large doc\n\n" + " ".join(f"word{n % 10}" for n in range(170)) + "\n"

Opener = Callable[[dict[str, str]], AbstractAsyncContextManager[ClientSession]]


# ---------------------------------------------------------------- sessions ---
def stdio_session(env: dict[str, str], identity: dict[str, str]) -> AbstractAsyncContextManager[ClientSession]:
    return mcp_support.stdio_session({"MNEMO_BLOCK_BUDGET_TOKENS": str(BUDGET), **env}, identity)


@pytest.fixture(scope="module")
def moto_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], SerialMotoServer]]:
    data_dir = tmp_path_factory.mktemp("files-mcp-moto")
    yield from mcp_support.moto_stack(data_dir, TABLE, BUCKET, {"MNEMO_BLOCK_BUDGET_TOKENS": str(BUDGET)})


async def caller(session: ClientSession) -> Caller:
    mcp = await mcp_support.caller(session)
    assert set(mcp.schemas) >= FILE_TOOLS, "every tool of the files family is listed"
    return mcp


def budget_error(answer: dict[str, Any], *, field: str, path: str, current: int, size: int) -> None:
    assert answer["retryable"] is False, answer
    details = answer["details"]
    assert details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert details["field"] == field
    assert details["path"] == path
    assert (details["current"], details["limit"], details["size"]) == (current, BUDGET, size), details
    advice = details["advice"].lower()
    assert details["wouldBe"] > BUDGET
    assert "compact" in advice
    assert "unpin" in advice


# ---------------------------------------------------------------- workflow ---
async def seed_workflow(open_session: Opener, tenant: str) -> None:
    me = {"tenant": tenant, "user": "alice", "agent": "coder", "project": "checkout", "roles": "writer"}
    async with open_session(me) as session:
        mcp = await caller(session)
        created = await mcp.ok("file_write", {"path": DECISIONS, "content": FIRST, "expectedVersion": 0})
        assert (created["version"], created["created"], created["pinned"], created["budgetTokens"]) == (
            1,
            True,
            False,
            BUDGET,
        )
        appended = await mcp.ok("file_edit", {"path": DECISIONS, "old": "[END]", "new": APPENDED + "[END]"})
        grown = appended["tokens"]
        assert (appended["version"], appended["replacements"]) == (2, 1)
        assert grown > created["tokens"]
        read = await mcp.ok("file_read", {"path": DECISIONS})
        assert read["content"] == FIRST.replace("[END]", APPENDED + "[END]")
        assert read["tokens"] == grown

        assert (await mcp.ok("block_pin", {"path": DECISIONS}))["pinnedTokens"] == grown
        small = (await mcp.ok("file_write", {"path": LARGE, "content": LARGE_SMALL}))["tokens"]
        front = await mcp.ok("block_pin", {"path": LARGE, "position": 0})
        assert (front["position"], front["pinnedTokens"]) == (0, grown + small)

        compacted = await mcp.ok("file_write", {"path": DECISIONS, "content": COMPACTED, "expectedVersion": 2})
        compact = compacted["tokens"]
        assert compact < grown
        assert compacted["pinnedTokens"] == compact + small
        assert compacted["version"] == 3

        refused = await mcp.error("file_write", {"path": LARGE, "content": LARGE_BIG}, "CONFLICT")
        big = refused["details"]["size"]
        assert big <= BUDGET < compact + big, f"test data: {big} tokens must fit alone but not beside {compact}"
        budget_error(refused, field="content", path=LARGE, current=compact + small, size=big)
        assert refused["details"]["wouldBe"] == compact + big
        unchanged = await mcp.ok("file_read", {"path": LARGE})
        assert (unchanged["version"], unchanged["content"]) == (1, LARGE_SMALL)
        context = await mcp.ok("pinned_context", {})
        assert [b["path"] for b in context["blocks"]] == [LARGE, DECISIONS]
        assert context["totalTokens"] == compact + small
        assert COMPACTED.rstrip("\n") in context["context"]

        unpinned = await mcp.ok("block_unpin", {"path": DECISIONS})
        assert (unpinned["changed"], unpinned["pinnedTokens"]) == (True, small)
        retried = await mcp.ok("file_write", {"path": LARGE, "content": LARGE_BIG})
        assert (retried["version"], retried["tokens"], retried["pinnedTokens"]) == (2, big, big)
        refused_pin = await mcp.error("block_pin", {"path": DECISIONS}, "CONFLICT")
        budget_error(refused_pin, field="path", path=DECISIONS, current=big, size=compact)

        # The workspace and expansion through the same session.
        await mcp.ok("file_write", {"path": "docs/api.md", "content": "one\ntwo\nthree\n"})
        page = await mcp.ok("file_read", {"path": "docs/api.md", "offset": 1, "limit": 1})
        assert (page["content"], page["hasMore"], page["nextOffset"], page["totalLines"]) == ("two\n", True, 2, 3)
        expanded = await mcp.ok("expand_prompt", {"text": "Use @@decisions and @docs/api.md"})
        assert expanded["text"] == (
            f'Use <file path="{DECISIONS}" version="3">\n{COMPACTED.rstrip()}\n</file> and '
            '<file path="docs/api.md" version="1">\none\ntwo\nthree\n</file>'
        )
        missing = await mcp.error("expand_prompt", {"text": "Use @@nowhere"}, "NOT_FOUND")
        assert missing["details"]["field"] == "text"
        assert missing["details"]["marker"] == "@@nowhere"
        for escape in ("../x", "/etc/passwd", "mnemo:///blocks/../../x", "s3://bucket/x", "mnemo://other/blocks/x"):
            bad = await mcp.error("file_read", {"path": escape}, "INVALID_INPUT")
            assert bad["details"]["field"] == "path", bad
        claim = await mcp.error("file_read", {"path": DECISIONS, "userId": "bob"}, "UNAUTHORIZED")
        assert "bob" not in json.dumps(claim["details"].get("path", ""))

    # Another user of the same project: the workspace is shared, the blocks and pins are not.
    bob = {**me, "user": "bob"}
    async with open_session(bob) as session:
        mcp = await caller(session)
        await mcp.error("file_read", {"path": DECISIONS}, "NOT_FOUND")
        assert (await mcp.ok("file_read", {"path": "docs/api.md"}))["content"] == "one\ntwo\nthree\n"
        context = await mcp.ok("pinned_context", {})
        assert context["blocks"] == []
        assert context["context"] == ""
        found = await mcp.ok("file_search", {"query": "orders PostgreSQL decisions", "threshold": 0})
        assert found["results"] == []
        assert (await mcp.ok("file_list", {"path": "mnemo:///"}))["entries"] == []


# ------------------------------------------------------------------- tests ---
def test_stdio_embedded(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path)}
    anyio.run(seed_workflow, lambda identity: stdio_session(env, identity), "acme")


@pytest.fixture
def embedded_url(tmp_path: Path) -> Iterator[str]:
    with local_server(Services(Settings(data_dir=tmp_path, embedder="hashing", block_budget_tokens=BUDGET))) as url:
        yield url


def test_streamable_http_embedded(embedded_url: str) -> None:
    anyio.run(seed_workflow, lambda identity: http_session(embedded_url, identity), "acme")


def _stored_on_aws(moto: SerialMotoServer, tenant: str) -> None:
    items = moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    heads = {
        i["sk"]["S"] for i in items if i["pk"]["S"].startswith(("ASSET|", "WS|")) and f"t={tenant}|" in i["pk"]["S"]
    }
    assert {"F#blocks/decisions.md", "F#blocks/large-doc.md", "F#docs/api.md"} <= heads, heads
    keys = [o["Key"] for o in moto.client("s3").list_objects_v2(Bucket=BUCKET, Prefix="workspace/").get("Contents", [])]
    assert any(tenant in key and key.endswith("/docs/api.md") for key in keys), keys


def test_stdio_on_dynamodb_and_s3(moto_stack: tuple[str, dict[str, str], SerialMotoServer]) -> None:
    _, env, moto = moto_stack
    anyio.run(seed_workflow, lambda identity: stdio_session(env, identity), "stdio-aws")
    _stored_on_aws(moto, "stdio-aws")


def test_streamable_http_on_dynamodb_and_s3(moto_stack: tuple[str, dict[str, str], SerialMotoServer]) -> None:
    url, _, moto = moto_stack
    anyio.run(seed_workflow, lambda identity: http_session(url, identity), "http-aws")
    _stored_on_aws(moto, "http-aws")

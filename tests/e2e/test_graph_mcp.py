"""The memory graph's core scenario through MCP with the official SDK client: `mnemo mcp` over stdio and
`mnemo serve`'s /mcp over Streamable HTTP, on the embedded default and on DynamoDB in moto.

A tool's answer is ``structuredContent`` (checked against the tool's listed output schema); a failure
is an ``isError`` result carrying the Mnemo envelope, as tests/e2e/test_files_mcp.py checks.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from aws_fixtures import SerialMotoServer
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from helpers import local_server, serve_process
from mnemo.runtime import Services
from mnemo.settings import Settings

ENVELOPE = {"success", "errorCode", "message", "details", "retryable"}
TABLE = "records-graph-mcp"
BUCKET = "mnemo-graph-mcp"
REGION = "eu-west-1"
GRAPH_TOOLS = {
    "add_memory_link",
    "get_memory_object",
    "update_memory_object",
    "graph_search",
    "invalidate_memory_link",
    "delete_memory_object",
    "build_memory_from_text",
}
ACME = {
    "subject": "Alice",
    "predicate": "works_at",
    "object": "Acme",
    "subjectType": "person",
    "objectType": "organization",
    "text": "Alice works at Acme as a data engineer.",
    "validAt": "2024-03-01T00:00:00Z",
}
GLOBEX = {
    "subject": "Alice",
    "predicate": "works_at",
    "object": "Globex",
    "validAt": "2025-07-01T00:00:00Z",
    "exclusive": True,
}
BEFORE = "2025-01-01T00:00:00Z"

Opener = Callable[[dict[str, str]], AbstractAsyncContextManager[ClientSession]]


# ---------------------------------------------------------------- sessions ---
@asynccontextmanager
async def stdio_session(env: dict[str, str], identity: dict[str, str]) -> AsyncIterator[ClientSession]:
    wire = {f"MNEMO_{key.upper()}": value for key, value in identity.items()}
    full = {**os.environ, "MNEMO_EMBEDDER": "hashing", **env, **wire}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo.cli", "mcp"], env=full)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, identity: dict[str, str]) -> AsyncIterator[ClientSession]:
    headers = {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def moto_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], SerialMotoServer]]:
    """`mnemo serve --aws-endpoint` on a moto server (which creates the table): its URL, and the environment
    that points `mnemo mcp` at the same DynamoDB table."""
    moto = SerialMotoServer()
    aws = {"MNEMO_RECORDS_TABLE": TABLE, "MNEMO_BLOB_BUCKET": BUCKET, "AWS_REGION": REGION}
    data_dir = tmp_path_factory.mktemp("graph-mcp-moto")
    process, url = serve_process(data_dir, {"MNEMO_EMBEDDER": "hashing", **aws}, ["--aws-endpoint", moto.url])
    stdio_env = {
        **aws,
        "MNEMO_RECORDS": "dynamodb",
        "MNEMO_BLOBS": "s3",
        "MNEMO_EVENTS": "eventbridge",
        "MNEMO_AWS_ENDPOINT": moto.url,
        "MNEMO_AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "MNEMO_DATA_DIR": str(data_dir / "stdio"),
    }
    try:
        yield url, stdio_env, moto
    finally:
        process.terminate()
        process.wait(timeout=10)
        moto.close()


# ----------------------------------------------------------------- answers ---
def payload(result: Any) -> dict[str, Any]:
    found = result.structured_content or json.loads(result.content[0].text)
    assert json.loads(result.content[0].text) == found, "the text and the structured content differ"
    return dict(found)


class Caller:
    """Calls through one MCP session, checking each answer against the tool's listed output schema."""

    def __init__(self, session: ClientSession, schemas: dict[str, Any]) -> None:
        self.session = session
        self.schemas = schemas

    async def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        answer = payload(result)
        assert not result.is_error, f"{tool} {arguments}: {answer}"
        Draft202012Validator(self.schemas[tool]).validate(answer)
        return answer

    async def error(self, tool: str, arguments: dict[str, Any], code: str) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        answer = payload(result)
        assert result.is_error, f"{tool} {arguments} succeeded: {answer}"
        assert set(answer) == ENVELOPE and answer["success"] is False and answer["errorCode"] == code, answer
        return answer


async def caller(session: ClientSession) -> Caller:
    listed = await session.list_tools()
    schemas = {tool.name: tool.output_schema for tool in listed.tools}
    assert set(schemas) >= GRAPH_TOOLS, sorted(schemas)
    inputs = {tool.name: tool.input_schema for tool in listed.tools}
    assert {"subject", "predicate", "object"} <= set(inputs["add_memory_link"]["required"])
    return Caller(session, schemas)


def ids_of(facts: list[dict[str, Any]]) -> set[str]:
    return {fact["factId"] for fact in facts}


# ---------------------------------------------------------------- scenario ---
async def graph_scenario(open_session: Opener, tenant: str) -> None:
    me = {"tenant": tenant, "user": "alice", "roles": "writer"}
    async with open_session(me) as session:
        mcp = await caller(session)
        added = await mcp.ok("add_memory_link", ACME)
        f1, alice_id, acme_id = added["factId"], added["subject"]["entityId"], added["object"]["entityId"]
        assert added["created"] is True and added["fact"]["validAt"] == ACME["validAt"]
        again = await mcp.ok("add_memory_link", {**ACME, "subject": "ALICE", "predicate": "works at"})
        assert (again["created"], again["factId"], again["subject"]["entityId"]) == (False, f1, alice_id)
        f2 = (await mcp.ok("add_memory_link", {"subject": "Acme", "predicate": "located_in", "object": "Berlin"}))[
            "factId"
        ]

        one = await mcp.ok("get_memory_object", {"name": "Alice", "depth": 1})
        assert one["entity"]["entityId"] == alice_id and ids_of(one["facts"]) == {f1}
        assert [(n["entityId"], n["depth"], n["via"]) for n in one["neighbours"]] == [(acme_id, 1, [f1])]
        two = await mcp.ok("get_memory_object", {"entityId": alice_id, "depth": 2})
        assert [(n["name"], n["depth"]) for n in two["neighbours"]] == [("Acme", 1), ("Berlin", 2)]
        assert ids_of(two["facts"]) == {f1, f2}

        moved = await mcp.ok("add_memory_link", GLOBEX)
        f3 = moved["factId"]
        assert moved["invalidated"] == [f1]
        history = await mcp.ok("get_memory_object", {"name": "Alice", "includeHistory": True, "depth": 0})
        old = {f["factId"]: f for f in history["facts"]}[f1]
        assert (old["invalidAt"], old["invalidatedBy"], old["status"]) == (GLOBEX["validAt"], f3, "invalid")

        query = {"query": "Where does Alice work?", "kind": "facts"}
        before = await mcp.ok("graph_search", {**query, "asOf": BEFORE})
        assert [(f["factId"], f["object"]) for f in before["facts"]] == [(f1, "Acme")]
        now = await mcp.ok("graph_search", query)
        assert [(f["factId"], f["object"]) for f in now["facts"] if f["predicate"] == "works_at"] == [(f3, "Globex")]
        every = await mcp.ok("graph_search", {**query, "includeInvalid": True, "threshold": 0})
        assert {f["factId"]: f["status"] for f in every["facts"]} == {f1: "invalid", f2: "valid", f3: "valid"}
        known = await mcp.ok("graph_search", {**query, "knownAt": added["fact"]["createdAt"], "threshold": 0})
        assert [(f["factId"], f["status"]) for f in known["facts"]] == [(f1, "valid")]

        missing = await mcp.error("add_memory_link", {"subject": "Alice", "object": "Acme"}, "INVALID_INPUT")
        assert missing["details"]["field"] == "predicate"
        await mcp.ok("update_memory_object", {"name": "Alice", "summary": "Data engineer.", "expectedVersion": 1})
        stale = await mcp.error(
            "update_memory_object", {"name": "Alice", "summary": "x", "expectedVersion": 1}, "CONFLICT"
        )
        assert stale["details"]["field"] == "expectedVersion" and stale["details"]["currentVersion"] == 2

        ended = await mcp.ok("invalidate_memory_link", {"factId": f2, "reason": "Acme moved."})
        assert ended["fact"]["status"] == "invalid" and ended["alreadyInvalid"] is False
        assert (await mcp.ok("invalidate_memory_link", {"factId": f2}))["alreadyInvalid"] is True

        context = await mcp.ok("memory_search", {"query": "Alice", "threshold": 0, "includeGraph": True})
        assert "Alice" in context["graph"]["entities"] and f3 in ids_of(context["graph"]["facts"])

        preview = await mcp.ok("delete_memory_object", {"name": "Acme"})
        assert (preview["deleted"], preview["factsAffected"]) == (False, 2)
        wrong = await mcp.error("delete_memory_object", {"name": "Acme", "confirmationToken": "del_0"}, "CONFLICT")
        assert wrong["details"]["field"] == "confirmationToken"
        done = await mcp.ok("delete_memory_object", {"name": "Acme", "confirmationToken": preview["confirmationToken"]})
        assert done["deleted"] is True
        await mcp.error("get_memory_object", {"name": "Acme"}, "NOT_FOUND")
        after = await mcp.ok("get_memory_object", {"name": "Alice", "includeHistory": True, "depth": 0})
        assert ids_of(after["facts"]) == {f3}

        unconfigured = await mcp.error("build_memory_from_text", {"content": "Bob works at Initech."}, "PROVIDER_ERROR")
        assert unconfigured["retryable"] is False and "MNEMO_OPENAI_BASE_URL" in unconfigured["message"]

    # Another user, and the same user in another tenant, see none of it.
    for other in ({**me, "user": "bob"}, {**me, "tenant": tenant + "-other"}):
        async with open_session(other) as session:
            mcp = await caller(session)
            await mcp.error("get_memory_object", {"entityId": alice_id}, "NOT_FOUND")
            await mcp.error("get_memory_object", {"name": "Alice"}, "NOT_FOUND")
            await mcp.error("invalidate_memory_link", {"factId": f3}, "NOT_FOUND")
            await mcp.error("update_memory_object", {"name": "Alice", "summary": "x"}, "NOT_FOUND")
            await mcp.error("delete_memory_object", {"factId": f3}, "NOT_FOUND")
            found = await mcp.ok("graph_search", {"query": "Alice Globex", "threshold": 0, "includeInvalid": True})
            assert found["entities"] == [] and found["facts"] == []


# ------------------------------------------------------------------- tests ---
def test_stdio_embedded(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path)}
    anyio.run(graph_scenario, lambda identity: stdio_session(env, identity), "acme")


@pytest.fixture
def embedded_url(tmp_path: Path) -> Iterator[str]:
    with local_server(Services(Settings(data_dir=tmp_path, embedder="hashing"))) as url:
        yield url


def test_streamable_http_embedded(embedded_url: str) -> None:
    anyio.run(graph_scenario, lambda identity: http_session(embedded_url, identity), "acme")


def _graph_on_dynamodb(moto: SerialMotoServer, tenant: str) -> None:
    items = moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    partitions = {i["pk"]["S"] for i in items if i["pk"]["S"].startswith("GRAPH|")}
    assert f"GRAPH|t={tenant}|user|u=alice" in partitions, partitions


def test_stdio_on_dynamodb(moto_stack: tuple[str, dict[str, str], SerialMotoServer]) -> None:
    _, env, moto = moto_stack
    anyio.run(graph_scenario, lambda identity: stdio_session(env, identity), "stdio-aws")
    _graph_on_dynamodb(moto, "stdio-aws")


def test_streamable_http_on_dynamodb(moto_stack: tuple[str, dict[str, str], SerialMotoServer]) -> None:
    url, _, moto = moto_stack
    anyio.run(graph_scenario, lambda identity: http_session(url, identity), "http-aws")
    _graph_on_dynamodb(moto, "http-aws")

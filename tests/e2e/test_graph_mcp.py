"""The memory graph's core scenario through MCP with the official SDK client: `mnemo mcp` over stdio and
`mnemo serve`'s /mcp over Streamable HTTP, on the embedded default and on DynamoDB in moto.

A tool's answer is ``structuredContent`` (checked against the tool's listed output schema); a failure
is an ``isError`` result carrying the Mnemo envelope, as tests/e2e/test_files_mcp.py checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import mcp_support
import pytest
from aws_fixtures import SerialMotoServer
from mcp import ClientSession
from mcp_support import Caller, http_session, stdio_session

from helpers import local_server
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import load_catalog

TABLE = "records-graph-mcp"
BUCKET = "mnemo-graph-mcp"
#: Every tool of the graph family, from the catalog.
GRAPH_TOOLS = {name for name, tool in load_catalog().items() if tool.family == "graph"}
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
@pytest.fixture(scope="module")
def moto_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], SerialMotoServer]]:
    yield from mcp_support.moto_stack(tmp_path_factory.mktemp("graph-mcp-moto"), TABLE, BUCKET)


async def caller(session: ClientSession) -> Caller:
    mcp = await mcp_support.caller(session)
    assert set(mcp.schemas) >= GRAPH_TOOLS, sorted(mcp.schemas)
    assert {"subject", "predicate", "object"} <= set(mcp.inputs["add_memory_link"]["required"])
    return mcp


def ids_of(facts: list[dict[str, Any]]) -> set[str]:
    return {fact["factId"] for fact in facts}


# ---------------------------------------------------------------- scenario ---
async def graph_scenario(open_session: Opener, tenant: str) -> None:
    me = {"tenant": tenant, "user": "alice", "roles": "writer"}
    async with open_session(me) as session:
        mcp = await caller(session)
        added = await mcp.ok("add_memory_link", ACME)
        f1, alice_id, acme_id = added["factId"], added["subject"]["entityId"], added["object"]["entityId"]
        assert added["created"] is True
        assert added["fact"]["validAt"] == ACME["validAt"]
        again = await mcp.ok("add_memory_link", {**ACME, "subject": "ALICE", "predicate": "works at"})
        assert (again["created"], again["factId"], again["subject"]["entityId"]) == (False, f1, alice_id)
        f2 = (await mcp.ok("add_memory_link", {"subject": "Acme", "predicate": "located_in", "object": "Berlin"}))[
            "factId"
        ]

        one = await mcp.ok("get_memory_object", {"name": "Alice", "depth": 1})
        assert one["entity"]["entityId"] == alice_id
        assert ids_of(one["facts"]) == {f1}
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
        assert stale["details"]["field"] == "expectedVersion"
        assert stale["details"]["currentVersion"] == 2

        ended = await mcp.ok("invalidate_memory_link", {"factId": f2, "reason": "Acme moved."})
        assert ended["fact"]["status"] == "invalid"
        assert ended["alreadyInvalid"] is False
        assert (await mcp.ok("invalidate_memory_link", {"factId": f2}))["alreadyInvalid"] is True

        context = await mcp.ok("memory_search", {"query": "Alice", "threshold": 0, "includeGraph": True})
        assert "Alice" in context["graph"]["entities"]
        assert f3 in ids_of(context["graph"]["facts"])

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
        assert unconfigured["retryable"] is False
        assert "MNEMO_OPENAI_BASE_URL" in unconfigured["message"]

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
            assert found["entities"] == []
            assert found["facts"] == []


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

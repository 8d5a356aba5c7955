"""The official MCP SDK client against `mnemo mcp` (stdio) and `mnemo serve`'s /mcp (Streamable HTTP)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import INVALID_PARAMS

from helpers import local_server
from knowledge_helpers import EXAMPLE_COUNT, push_tree
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

CATALOG = set(load_catalog())


@asynccontextmanager
async def stdio_session(data_dir: Path, user: str) -> AsyncIterator[ClientSession]:
    env = {**os.environ, "MNEMO_DATA_DIR": str(data_dir), "MNEMO_EMBEDDER": "hashing", "MEMORY_USER_ID": user}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo.cli", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, user: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"X-Mnemo-User": user}, timeout=30) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _payload(result: Any) -> dict[str, Any]:
    """The text block: an answer (equal to its ``structuredContent``) or the envelope (with none)."""
    found = json.loads(result.content[0].text)
    assert result.structured_content == (None if result.is_error else found)
    return dict(found)


async def _round_trip(open_session: Any, first: str, second: str) -> None:
    async with open_session(first) as session:
        listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == CATALOG
        for tool in listed.tools:
            assert tool.description
            assert tool.input_schema["type"] == "object"
        added = await session.call_tool("memory_add", {"content": "The user likes dark roast coffee"})
        assert not added.is_error
        memory_id = _payload(added)["memoryId"]
        found = await session.call_tool("memory_search", {"query": "dark roast coffee", "threshold": 0})
        assert [r["memoryId"] for r in _payload(found)["results"]] == [memory_id]

        bad = await session.call_tool("memory_search", {"query": "x", "limit": 0})
        assert bad.is_error
        assert _payload(bad)["errorCode"] == "INVALID_INPUT"
        assert _payload(bad)["details"]["field"] == "limit"
        claim = await session.call_tool("memory_search", {"query": "coffee", "userId": second})
        assert claim.is_error
        assert _payload(claim)["errorCode"] == "UNAUTHORIZED"
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("no_such_tool", {})
        assert unknown.value.code == INVALID_PARAMS
        assert "no_such_tool" in unknown.value.message

    async with open_session(second) as session:
        other = await session.call_tool("memory_search", {"query": "dark roast coffee", "threshold": 0})
        assert _payload(other)["results"] == []
        denied = await session.call_tool("memory_delete", {"memoryId": memory_id})
        assert denied.is_error
        assert _payload(denied)["errorCode"] == "NOT_FOUND"


def test_stdio(tmp_path: Path) -> None:
    anyio.run(_round_trip, lambda user: stdio_session(tmp_path, user), "mcp-alice", "mcp-bob")


@pytest.fixture
def server_url(services: Services) -> Iterator[str]:
    with local_server(services) as url:
        yield url


def test_streamable_http(server_url: str) -> None:
    anyio.run(_round_trip, lambda user: http_session(server_url, user), "http-alice", "http-bob")


def test_http_rejects_a_foreign_host_header(server_url: str) -> None:
    """DNS rebinding protection on the local server: only loopback Host headers are served."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx2.post(
        f"{server_url}/mcp",
        json=body,
        headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code in (400, 403, 421)


async def _knowledge_round_trip(data_dir: Path) -> None:
    env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(data_dir),
        "MNEMO_EMBEDDER": "hashing",
        "MEMORY_USER_ID": "mcp-carol",
        "MNEMO_ORG": "engineering",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo.cli", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        synced = await session.call_tool("sync_now", {})
        assert not synced.is_error
        assert _payload(synced)["result"]["added"] == EXAMPLE_COUNT
        found = await session.call_tool("knowledge_query", {"query": "database selection", "type": "adr"})
        assert _payload(found)["items"][0]["id"] == "adr-042-database-selection"
        checked = await session.call_tool("knowledge_check", {"dependencies": [{"name": "mysql2", "version": "3.0.0"}]})
        assert not checked.is_error
        assert _payload(checked)["passed"] is False
        assert _payload(checked)["summary"]["block"] == 1
        missing = await session.call_tool("knowledge_show", {"id": "adr-999"})
        assert missing.is_error
        assert _payload(missing)["errorCode"] == "NOT_FOUND"
        status = await session.call_tool("sync_status", {})
        assert _payload(status)["healthy"] is True


def test_knowledge_tools_over_stdio(tmp_path: Path) -> None:
    from mnemo.runtime import Services
    from mnemo.settings import Settings

    push_tree(Services(Settings(data_dir=tmp_path, embedder="hashing")), "local")
    anyio.run(_knowledge_round_trip, tmp_path)

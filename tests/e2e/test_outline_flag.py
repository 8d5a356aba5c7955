"""The experimental setting, both ways, at every front door: off, the outline tools are absent from the
catalog, the HTTP listing and routes, MCP (Streamable HTTP and stdio), Bedrock's action groups and the CLI;
on (`mnemo serve --experimental`, `mnemo mcp --experimental`, MNEMO_EXPERIMENTAL=1), they answer for real."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS
from mcp_support import http_session, payload, stdio_session

from helpers import http_call, http_request, serve_process
from mnemo.entry.bedrock import action_groups
from mnemo.errors import NotFound
from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, get_tool, load_catalog
from outline_support import shop_files

#: The tools served with the setting on and off, from the catalog; OUTLINE is every experimental tool.
SERVED = {True: set(load_catalog(experimental=True)), False: set(load_catalog(experimental=False))}
OUTLINE = {tool.name for tool in load_catalog(experimental=True).values() if tool.family in EXPERIMENTAL_FAMILIES}
IDENTITY = {"user": "alice", "project": "shop", "roles": "writer"}


def test_the_catalog_holds_the_outline_tools_only_when_the_setting_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_EXPERIMENTAL", raising=False)
    off = load_catalog()
    assert OUTLINE, "the experimental families serve tools"
    assert set(off) == SERVED[False] == SERVED[True] - OUTLINE
    assert "outline" not in action_groups(off.values())
    with pytest.raises(NotFound):
        get_tool("outline_symbol")
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "0")
    assert not OUTLINE & set(load_catalog())
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "1")
    on = load_catalog()
    assert set(on) == SERVED[True]
    assert set(list(on)[len(off) :]) == OUTLINE, "the experimental tools are listed after the others"
    assert {tool.name for tool in action_groups(on.values())["outline"]} == OUTLINE
    assert get_tool("outline_file").family == "outline"


@pytest.fixture(params=[False, True], ids=["off", "on"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, bool]]:
    experimental: bool = request.param
    env = {"MNEMO_EMBEDDER": "hashing", "MNEMO_EXPERIMENTAL": ""}
    process, url = serve_process(tmp_path / "data", env, ["--experimental"] if experimental else [])
    try:
        for path, content in shop_files().items():
            status, _ = http_call(url, "file_write", {"path": path, "content": content}, **IDENTITY)
            assert status == 200
        yield url, experimental
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_http_listing_and_routes_follow_the_flag(server: tuple[str, bool]) -> None:
    url, experimental = server
    _, listing = http_request(url, "GET", "/v1/tools", None, {})
    names = {tool["name"] for tool in listing["tools"]}
    _, health = http_request(url, "GET", "/health", None, {})
    _, openapi = http_request(url, "GET", "/v1/openapi.json", None, {})
    status, answer = http_call(url, "outline_symbol", {"symbol": "Reserve", "language": "go", "depth": 1}, **IDENTITY)
    if experimental:
        assert names == SERVED[True]
        assert health["tools"] == len(names)
        assert "/v1/tools/outline_project" in openapi["paths"]
        assert status == 200
        assert answer["text"].startswith("inventory.(*Manager).Reserve [method] inventory/stock.go")
    else:
        assert names == SERVED[False]
        assert health["tools"] == len(names)
        assert "/v1/tools/outline_project" not in openapi["paths"]
        assert status == 404
        assert answer["success"] is False
        assert answer["errorCode"] == "NOT_FOUND"


def test_mcp_over_http_follows_the_flag(server: tuple[str, bool]) -> None:
    url, experimental = server

    async def scenario() -> None:
        async with http_session(url, IDENTITY) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            arguments = {"file": "shop/orders/models.py", "language": "python"}
            if experimental:
                result = await session.call_tool("outline_file", arguments)
                assert listed >= OUTLINE
                assert not result.is_error
                assert payload(result)["text"].startswith("shop.orders.models [module] shop/orders/models.py:1")
            else:
                assert not OUTLINE & listed
                with pytest.raises(MCPError) as unknown:  # an unlisted tool is a protocol error
                    await session.call_tool("outline_file", arguments)
                assert unknown.value.code == INVALID_PARAMS

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("setting", "args", "experimental"),
    [("", [], False), ("1", [], True), ("", ["--experimental"], True)],
    ids=["off", "MNEMO_EXPERIMENTAL", "--experimental"],
)
def test_mcp_over_stdio_follows_the_flag(tmp_path: Path, setting: str, args: list[str], experimental: bool) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EXPERIMENTAL": setting}

    async def scenario() -> None:
        async with stdio_session(env, {"user": "alice"}, args) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            assert (listed >= OUTLINE) is experimental
            assert (not OUTLINE & listed) is (not experimental)

    anyio.run(scenario)


@pytest.mark.parametrize("flag", [[], ["--experimental"]], ids=["off", "on"])
def test_the_cli_lists_the_outline_tools_with_the_flag(flag: list[str]) -> None:
    env = {**os.environ, "MNEMO_EXPERIMENTAL": ""}
    listed = subprocess.run(
        [sys.executable, "-m", "mnemo.cli", "tools", *flag], capture_output=True, text=True, env=env, check=True
    ).stdout
    names = {line.split()[0] for line in listed.splitlines() if line.strip()}
    assert (names >= OUTLINE) is bool(flag)
    assert (not OUTLINE & names) is (not flag)

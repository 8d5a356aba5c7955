"""MCP clients Mnemo did not write, against `mnemo mcp` (stdio) and a real `mnemo serve`'s /mcp (Streamable HTTP):
the MCP Inspector CLI and the MCP TypeScript SDK's own ``Client``, pinned in tests/mcp_clients/package.json and
its package-lock.json (``make mcp-clients`` runs ``npm ci`` there; ``make test`` depends on it).

Each lists the tools, makes a call that succeeds, sees a failed call's envelope (INVALID_INPUT naming the field)
as the text of an ``isError`` result, and sees an unknown tool answered with the JSON-RPC protocol error -32602.
The TypeScript client validates ``structuredContent`` against the tool's outputSchema even on errors, so an
envelope sent there makes it throw instead of showing the error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from helpers import serve_process
from mnemo.tools.registry import load_catalog

CLIENTS = Path(__file__).resolve().parents[1] / "mcp_clients"
INSPECTOR = CLIENTS / "node_modules" / ".bin" / "mcp-inspector"
SDK_SCRIPT = CLIENTS / "sdk_client.mjs"
ENVELOPE = {"success", "errorCode", "message", "details", "retryable"}
MNEMO_MCP = [sys.executable, "-m", "mnemo.cli", "mcp"]
USER = "ts-client-alice"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    assert found, "node (20 or later) must be on PATH for the MCP client checks"
    assert INSPECTOR.exists(), "the pinned MCP clients are not installed: run `make mcp-clients`"
    return found


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What `mnemo mcp` runs with: its own data directory, the caller in MEMORY_USER_ID."""
    data = tmp_path_factory.mktemp("stdio")
    return {**os.environ, "MNEMO_DATA_DIR": str(data), "MNEMO_EMBEDDER": "hashing", "MEMORY_USER_ID": USER}


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, url = serve_process(tmp_path_factory.mktemp("serve"), {"MNEMO_EMBEDDER": "hashing"})
    try:
        yield f"{url}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _run(command: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, env=env, timeout=60, cwd=CLIENTS)


def _inspector_target(transport: str, url: str) -> list[str]:
    if transport == "stdio":
        return [str(INSPECTOR), "--cli", *MNEMO_MCP]
    return [str(INSPECTOR), "--cli", url, "--transport", "http", "--header", f"X-Mnemo-User: {USER}"]


def _envelope(texts: Sequence[str]) -> dict[str, Any]:
    (text,) = texts
    envelope = json.loads(text)
    assert set(envelope) == ENVELOPE, envelope
    assert envelope["success"] is False, envelope
    return dict(envelope)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_inspector_cli(node: str, environment: dict[str, str], mcp_url: str, transport: str) -> None:
    target = _inspector_target(transport, mcp_url)

    listed = _run([*target, "--method", "tools/list"], environment)
    assert listed.returncode == 0, listed.stderr
    assert {tool["name"] for tool in json.loads(listed.stdout)["tools"]} == set(load_catalog())

    call = [*target, "--method", "tools/call", "--tool-name"]
    added = _run([*call, "memory_add", "--tool-arg", "content=The Inspector stored this"], environment)
    assert added.returncode == 0, added.stderr
    answer = json.loads(added.stdout)
    assert answer["isError"] is False
    assert answer["structuredContent"]["memoryId"].startswith("mem_")
    assert json.loads(answer["content"][0]["text"]) == answer["structuredContent"]

    bad = _run([*call, "memory_search", "--tool-arg", "query=x", "--tool-arg", "limit=0"], environment)
    assert bad.returncode == 0, bad.stderr  # shown as a result, not thrown
    result = json.loads(bad.stdout)
    assert result["isError"] is True
    assert "structuredContent" not in result
    envelope = _envelope([block["text"] for block in result["content"]])
    assert (envelope["errorCode"], envelope["details"]["field"]) == ("INVALID_INPUT", "limit")

    unknown = _run([*call, "no_such_tool"], environment)
    assert unknown.returncode != 0
    assert "MCP error -32602: Unknown tool: no_such_tool" in unknown.stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_typescript_sdk_client(node: str, environment: dict[str, str], mcp_url: str, transport: str) -> None:
    target = MNEMO_MCP if transport == "stdio" else [mcp_url, f"X-Mnemo-User: {USER}"]
    ran = _run([node, str(SDK_SCRIPT), transport, *target], environment)
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert "failed" not in report, report

    assert set(report["tools"]) == set(load_catalog())
    assert report["ok"]["isError"] is False
    assert report["ok"]["structuredContent"]["memoryId"].startswith("mem_")

    bad = report["bad"]
    assert "thrown" not in bad, bad  # e.g. "Structured content does not match the tool's output schema"
    assert bad["isError"] is True
    assert bad["structuredContent"] is None
    envelope = _envelope(bad["texts"])
    assert (envelope["errorCode"], envelope["details"]["field"]) == ("INVALID_INPUT", "limit")

    assert report["unknown"] == {
        "thrown": {"code": -32602, "message": "MCP error -32602: Unknown tool: no_such_tool"}
    }, report["unknown"]

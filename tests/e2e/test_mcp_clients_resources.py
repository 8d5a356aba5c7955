"""MCP clients Mnemo did not write, on its resources and the recall prompt: the MCP Inspector CLI and the MCP
TypeScript SDK's ``Client`` (pinned in tests/mcp_clients, installed by ``make mcp-clients``), against `mnemo mcp`
(stdio) and a real `mnemo serve`'s /mcp (Streamable HTTP), each over a data directory where alice has pinned
PINS blocks and the example knowledge is synced: more resources than one resources/list page holds.

The Inspector (one process per call: kept to five calls) lists the first page and the templates, reads a block,
sees a URI that leaves the caller's scope refused with -32602, and gets the recall prompt. The TypeScript client
follows nextCursor through every page, reads each kind of resource, sees every refused URI's -32602 with the
Mnemo envelope in ``data``, subscribes over stdio and receives ``notifications/resources/updated`` for the block
a file_edit changed and for the pinned context (over stateless HTTP subscriptions are not advertised, and the
server answers -32601), and gets recall (and -32602 for a bad budget or an unknown prompt)."""

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
from knowledge_helpers import EXAMPLES, push_tree
from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

CLIENTS = Path(__file__).resolve().parents[1] / "mcp_clients"
INSPECTOR = CLIENTS / "node_modules" / ".bin" / "mcp-inspector"
SDK_SCRIPT = CLIENTS / "sdk_resources.mjs"
MNEMO_MCP = [sys.executable, "-m", "mnemo.cli", "mcp"]
PAGE_SIZE = 50
PINS = 45
KNOWLEDGE = sorted(path.stem for folder in ("company", "orgs/engineering") for path in (EXAMPLES / folder).glob("*.md"))
BLOCK = "mnemo:///blocks/note-07.md"
MEMORY = "Alice keeps her release checklist in the blue notebook."
QUERY = "Where does Alice keep her release checklist?"
#: URIs that leave the caller's scope or name no resource: resources/read answers -32602 for each.
REFUSED = {
    "mnemo:///blocks/../note-07.md": "INVALID_INPUT",
    "mnemo://bob/blocks/note-07.md": "INVALID_INPUT",
    "mnemo:///blocks/%2e%2e/x.md": "INVALID_INPUT",
    "mnemo:///blocks/nothing.md": "NOT_FOUND",
    "src/app.py": None,  # not a resource: no envelope, the resource shapes instead
}


def block(n: int) -> str:
    return f"mnemo:///blocks/note-{n:02d}.md"


def text_of(n: int) -> str:
    return f"# Note {n}\n\nKeep {n} in mind.\n"


def seed(data_dir: Path) -> None:
    """The example knowledge synced for tenant local; PINS blocks alice (of the engineering org) wrote and pinned."""
    services = Services(Settings(data_dir=data_dir, embedder="hashing"))
    alice = RequestContext(tenant="local", user="alice", org="engineering", roles=frozenset({"writer"}))
    push_tree(services, "local")
    get_tool("sync_now").invoke(services, alice, {})
    for n in range(PINS):
        get_tool("file_write").invoke(services, alice, {"path": block(n), "content": text_of(n)})
        get_tool("block_pin").invoke(services, alice, {"path": block(n)})


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    assert found, "node (20 or later) must be on PATH for the MCP client checks"
    assert INSPECTOR.exists(), "the pinned MCP clients are not installed: run `make mcp-clients`"
    return found


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What `mnemo mcp` runs with: a seeded data directory of its own, alice of engineering as the caller."""
    data = tmp_path_factory.mktemp("stdio")
    seed(data)
    return {
        **os.environ,
        "MNEMO_DATA_DIR": str(data),
        "MNEMO_EMBEDDER": "hashing",
        "MEMORY_USER_ID": "alice",
        "MNEMO_ORG": "engineering",
        "MNEMO_SESSION": "ts-session",
    }


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("serve")
    seed(data)
    process, url = serve_process(data, {"MNEMO_EMBEDDER": "hashing"})
    try:
        yield f"{url}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


HEADERS = ["X-Mnemo-User: alice", "X-Mnemo-Org: engineering", "X-Mnemo-Session: ts-session"]


def _run(command: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, env=env, timeout=120, cwd=CLIENTS)


def _inspector(transport: str, url: str) -> list[str]:
    if transport == "stdio":
        return [str(INSPECTOR), "--cli", *MNEMO_MCP]
    headers = [part for header in HEADERS for part in ("--header", header)]
    return [str(INSPECTOR), "--cli", url, "--transport", "http", *headers]


def _json(ran: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert ran.returncode == 0, ran.stderr
    return dict(json.loads(ran.stdout))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_inspector_cli(node: str, environment: dict[str, str], mcp_url: str, transport: str) -> None:
    target = _inspector(transport, mcp_url)

    listed = _json(_run([*target, "--method", "resources/list"], environment))
    uris = [resource["uri"] for resource in listed["resources"]]
    assert (
        uris
        == ["mnemo://pinned", *(block(n) for n in range(PINS)), *(f"knowledge://{i}" for i in KNOWLEDGE)][:PAGE_SIZE]
    )
    assert listed["nextCursor"]

    templates = _json(_run([*target, "--method", "resources/templates/list"], environment))
    assert "knowledge://{id}" in {t["uriTemplate"] for t in templates["resourceTemplates"]}

    note = _json(_run([*target, "--method", "resources/read", "--uri", BLOCK], environment))
    assert [(c["uri"], c["mimeType"], c["text"]) for c in note["contents"]] == [(BLOCK, "text/markdown", text_of(7))]

    escape = _run([*target, "--method", "resources/read", "--uri", "mnemo:///blocks/../note-07.md"], environment)
    assert escape.returncode != 0
    assert "MCP error -32602" in escape.stderr
    assert "cannot leave their scope" in escape.stderr

    # memory_context puts alice's pinned blocks in its last section; 4000 tokens hold all of them.
    recall = [*target, "--method", "prompts/get", "--prompt-name", "recall", "--prompt-args", "query=note 3"]
    (message,) = _json(_run([*recall, "budget=4000"], environment))["messages"]
    assert message["role"] == "user"
    assert text_of(3).strip() in message["content"]["text"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_typescript_sdk_client(node: str, environment: dict[str, str], mcp_url: str, transport: str) -> None:
    target = MNEMO_MCP if transport == "stdio" else [mcp_url, *HEADERS]
    driven = {
        **environment,
        "BLOCK": BLOCK,
        "EDIT_OLD": "Keep 7",
        "EDIT_NEW": "Hold 7",
        "REFUSED": ",".join(REFUSED),
        "MEMORY": MEMORY,
        "RECALL_QUERY": QUERY,
    }
    ran = _run([node, str(SDK_SCRIPT), transport, *target], driven)
    report = _json(ran)
    assert "failed" not in report, report

    assert report["capabilities"]["prompts"] is not None
    assert bool(report["capabilities"]["resources"].get("subscribe")) is (transport == "stdio")
    pages = report["pages"]
    assert [len(page) for page in pages] == [PAGE_SIZE, 1 + PINS + len(KNOWLEDGE) - PAGE_SIZE]
    assert [uri for page in pages for uri in page] == [
        "mnemo://pinned",
        *(block(n) for n in range(PINS)),
        *(f"knowledge://{i}" for i in KNOWLEDGE),
    ]
    assert len(report["templates"]) == 5

    assert (report["block"]["uri"], report["block"]["text"]) == (BLOCK, text_of(7))
    assert report["block"]["meta"]["mnemo"]["pinned"] is True
    assert report["pinned"]["text"].count("<block ") == PINS
    assert report["knowledge"]["meta"]["mnemo"]["layer"] == "org"
    for uri, code in REFUSED.items():
        thrown = report["refused"][uri]["thrown"]
        assert thrown["code"] == -32602, (uri, thrown)
        assert thrown["data"]["uri"] == uri
        if code is None:
            assert "mnemo://pinned" in thrown["data"]["resources"]
        else:
            assert thrown["data"]["error"]["errorCode"] == code, (uri, thrown)

    if transport == "stdio":
        assert report["edit"]["isError"] is False, report["edit"]
        assert sorted(report["updated"]) == sorted([BLOCK, "mnemo://pinned"])
        assert report["edited"]["text"] == text_of(7).replace("Keep 7", "Hold 7")
    else:
        assert report["subscribe"]["thrown"]["code"] == -32601, report["subscribe"]

    (prompt,) = report["prompts"]
    assert (prompt["name"], [a["name"] for a in prompt["arguments"]]) == ("recall", ["query", "budget"])
    (message,) = report["recall"]["messages"]
    assert message["role"] == "user"
    assert MEMORY in message["content"]["text"]
    assert report["recall"]["_meta"]["mnemo"]["tokens"] <= 2000
    assert report["badBudget"]["thrown"]["code"] == -32602
    assert report["badBudget"]["thrown"]["data"]["error"]["details"]["field"] == "budget"
    assert report["unknownPrompt"]["thrown"]["code"] == -32602

"""MCP resources and the recall prompt with the official Python SDK client, against `mnemo mcp` (stdio) and a
real `mnemo serve`'s /mcp (Streamable HTTP), and the MCP Lambda door's handler (layers/shared/mnemo/entry/
mcp_resources.py, mcp_prompts.py).

What the caller sees: resources/list pages (nextCursor) over their profile, pinned context, pinned blocks and
knowledge items; resources/templates/list; resources/read of each kind. What nobody else sees: another user,
another tenant and another org read nothing of them, and no URI (``..``, percent escapes, another owner)
leaves the caller's scope. resources/subscribe over stdio: ``notifications/resources/updated`` after the tool
calls that change a subscribed resource, none for the others, none after unsubscribing; over stateless HTTP it
is neither advertised nor served. ``recall`` answers memory_context as a user message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PaginatedRequestParams,
    ResourceUpdatedNotification,
    TextContent,
    TextResourceContents,
)
from mcp_support import http_session, stdio_session
from scripted_model import ScriptedModel

from aws_events import FakeLambdaContext, rest_event
from helpers import local_server
from knowledge_helpers import EXAMPLES, push_tree
from mnemo.context import RequestContext
from mnemo.entry import mcp_lambda
from mnemo.entry.mcp_resources import PAGE_SIZE, PINNED_URI, PROFILE_URI
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

ALICE = {"user": "alice", "org": "engineering"}
PINS = 45  # with the pinned context and 8 knowledge items: more than one page of PAGE_SIZE
#: What alice's layers hold of the example repository: the company's items and the engineering org's.
COMPANY = sorted(path.stem for path in (EXAMPLES / "company").glob("*.md"))
ALICE_KNOWLEDGE = sorted(COMPANY + [path.stem for path in (EXAMPLES / "orgs" / "engineering").glob("*.md")])
ADR = "knowledge://adr-042-database-selection"

Opener = Callable[[dict[str, str]], AbstractAsyncContextManager[ClientSession]]


def block(n: int) -> str:
    return f"mnemo:///blocks/note-{n:02d}.md"


def text_of(n: int) -> str:
    return f"# Note {n}\n\nKeep {n} in mind.\n"


def call(services: Services, tool: str, body: dict[str, Any], **ids: str) -> dict[str, Any]:
    context = RequestContext(tenant="local", roles=frozenset({"writer"}), **ids)
    return get_tool(tool).invoke(services, context, body)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Services:
    """The example knowledge synced for tenant local, and PINS blocks alice wrote and pinned in order."""
    services = Services(Settings(data_dir=tmp_path_factory.mktemp("resources"), embedder="hashing"))
    push_tree(services, "local")
    call(services, "sync_now", {}, **ALICE)
    for n in range(PINS):
        call(services, "file_write", {"path": block(n), "content": text_of(n)}, **ALICE)
        call(services, "block_pin", {"path": block(n)}, **ALICE)
    return services


@pytest.fixture(scope="module")
def url(seeded: Services) -> Iterator[str]:
    with local_server(seeded) as found:
        yield found


def opener(transport: str, services: Services, url: str) -> Opener:
    if transport == "stdio":
        return lambda identity: stdio_session({"MNEMO_DATA_DIR": str(services.settings.data_dir)}, identity)
    return lambda identity: http_session(url, identity)


async def every_page(session: ClientSession) -> list[list[Any]]:
    pages, cursor = [], None
    while True:
        listed = await session.list_resources(params=None if cursor is None else PaginatedRequestParams(cursor=cursor))
        pages.append(listed.resources)
        cursor = listed.next_cursor
        if cursor is None:
            return pages


async def read(session: ClientSession, uri: str) -> TextResourceContents:
    """resources/read of ``uri``: one text content."""
    (content,) = (await session.read_resource(uri)).contents
    assert isinstance(content, TextResourceContents)
    return content


async def refused(session: ClientSession, uri: str) -> dict[str, Any]:
    """resources/read of ``uri`` fails with -32602; the error's data."""
    with pytest.raises(MCPError) as failed:
        await session.read_resource(uri)
    assert failed.value.code == INVALID_PARAMS, (uri, failed.value.message)
    assert failed.value.data["uri"] == uri
    return dict(failed.value.data)


# ------------------------------------------------------------------ list and read ---
async def _list_and_read(open_session: Opener) -> None:
    async with open_session(ALICE) as session:
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is not None and capabilities.prompts is not None

        pages = await every_page(session)
        assert len(pages) == 2
        assert all(len(page) <= PAGE_SIZE for page in pages)
        uris = [resource.uri for page in pages for resource in page]
        # No profile (extraction is off): the pinned context, the pinned files in pin order, then knowledge by id.
        assert uris == [PINNED_URI, *(block(n) for n in range(PINS)), *(f"knowledge://{i}" for i in ALICE_KNOWLEDGE)]
        first = pages[0][1]
        assert (first.name, first.mime_type) == (block(0), "text/markdown")
        assert pages[0][0].size == len((await read(session, PINNED_URI)).text.encode())

        templates = (await session.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {
            "mnemo:///blocks/{+name}",
            "mnemo:///skills/{+name}",
            "mnemo://{owner}/blocks/{+name}",
            "mnemo://{owner}/skills/{+name}",
            "knowledge://{id}",
        }

        note = await read(session, block(7))
        assert (note.uri, note.mime_type, note.text) == (block(7), "text/markdown", text_of(7))
        assert note.meta is not None and note.meta["mnemo"]["version"] == 1
        assert note.meta["mnemo"]["pinned"] is True
        pinned = await read(session, PINNED_URI)
        assert pinned.text.startswith(f'<block path="{block(0)}" tokens=')
        assert pinned.text.count("<block ") == PINS
        assert pinned.meta is not None and pinned.meta["mnemo"]["count"] == PINS
        adr = await read(session, ADR)
        assert adr.mime_type == "text/markdown"
        assert adr.text.startswith("# ADR-042")
        assert adr.meta is not None and adr.meta["mnemo"]["layer"] == "org"

        with pytest.raises(MCPError) as bad_cursor:
            await session.list_resources(params=PaginatedRequestParams(cursor="not-a-cursor"))
        assert bad_cursor.value.code == INVALID_PARAMS

        missing = await refused(session, PROFILE_URI)
        assert missing["error"]["errorCode"] == "NOT_FOUND"
        assert "profile strategy is off" in missing["error"]["message"]
        assert (await refused(session, "mnemo:///blocks/none.md"))["error"]["errorCode"] == "NOT_FOUND"


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_resources_list_in_pages_and_read(seeded: Services, url: str, transport: str) -> None:
    anyio.run(_list_and_read, opener(transport, seeded, url))


# ------------------------------------------------------------------------ scope ---
ESCAPES = [
    "mnemo:///blocks/../note-00.md",
    "mnemo:///blocks/%2e%2e/note-00.md",
    "mnemo://alice/blocks/note-00.md",
    "mnemo://tenant/local/blocks/note-00.md",
    "mnemo:///workspace/../../etc/passwd",
    "knowledge://../adr-042-database-selection",
    "mnemo://profile/../pinned",
]


async def _scope(open_session: Opener) -> None:
    async with open_session({"user": "bob"}) as session:
        pages = await every_page(session)
        assert [r.uri for page in pages for r in page] == [PINNED_URI, *(f"knowledge://{i}" for i in COMPANY)]
        assert (await read(session, PINNED_URI)).text == ""
        for uri in (block(0), "mnemo://user/blocks/note-00.md", ADR):  # alice's own; her org's
            assert (await refused(session, uri))["error"]["errorCode"] == "NOT_FOUND", uri
        for uri in ESCAPES:
            assert (await refused(session, uri))["error"]["errorCode"] == "INVALID_INPUT", uri
        for uri in ("src/app.py", "topic://deployment", "file:///etc/passwd", "https://example.com/x"):
            data = await refused(session, uri)
            assert "error" not in data and PINNED_URI in data["resources"], uri

    async with open_session({"tenant": "elsewhere", **ALICE}) as session:  # the same user id in another tenant
        pages = await every_page(session)
        assert [r.uri for page in pages for r in page] == [PINNED_URI]
        for uri in (block(0), ADR):
            assert (await refused(session, uri))["error"]["errorCode"] == "NOT_FOUND", uri


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_no_uri_reaches_outside_the_callers_scope(seeded: Services, url: str, transport: str) -> None:
    anyio.run(_scope, opener(transport, seeded, url))


# ---------------------------------------------------------------- subscriptions ---
FACT = "Alice lives in Lisbon."


def profiler(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
    """The scripted model: one fact per turn; a profile made of the memories it is given."""
    if tool == "record_facts":
        return {"facts": [{"text": FACT, "subject": "Alice's home city", "sourceIds": ids}]}
    if tool == "record_profile":
        lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[mem_")]
        cited = [line[1 : line.index("]")] for line in lines]
        text = "Alice: " + " ".join(line.split("] ", 1)[1] for line in lines)
        return {"profile": [{"text": text, "sourceIds": cited}]}
    return None


@asynccontextmanager
async def subscribed_session(
    data_dir: Path, model_url: str
) -> AsyncIterator[tuple[ClientSession, MemoryObjectReceiveStream[str]]]:
    """`mnemo mcp` for alice with the facts and profile strategies on the scripted model, and the URIs of the
    ``notifications/resources/updated`` it sends, in the order they arrive."""
    send, receive = anyio.create_memory_object_stream[str](100)

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            await send.send(message.params.uri)

    env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(data_dir),
        "MNEMO_EMBEDDER": "hashing",
        "MEMORY_USER_ID": "alice",
        "MNEMO_SESSION": "s1",
        "MNEMO_OPENAI_BASE_URL": model_url,
        "MNEMO_EXTRACTION_STRATEGIES": "facts,profile",
        "MNEMO_EXTRACTION_JUDGE": "off",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo.cli", "mcp"], env=env)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
    ):
        await session.initialize()
        yield session, receive


async def updates(receive: MemoryObjectReceiveStream[str], count: int) -> list[str]:
    """The next ``count`` updated URIs (a timeout, not a clock: the server sends them before the tool's result)."""
    with anyio.fail_after(60):
        return [await receive.receive() for _ in range(count)]


async def ok(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    (text,) = result.content
    assert isinstance(text, TextContent)
    assert not result.is_error, (tool, text.text)
    return dict(json.loads(text.text))


async def _subscriptions(data_dir: Path, model_url: str) -> None:
    later = "mnemo:///blocks/later.md"
    async with subscribed_session(data_dir, model_url) as (session, receive):
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is not None
        assert capabilities.resources.subscribe is True

        await ok(session, "file_write", {"path": block(1), "content": text_of(1)})
        await ok(session, "block_pin", {"path": block(1)})
        for uri in (block(1), PINNED_URI, later, PROFILE_URI):  # the last two do not exist yet
            await session.subscribe_resource(uri)
        for uri in ("src/app.py", "mnemo:///blocks/../x.md", "mnemo://bob/blocks/x.md"):
            with pytest.raises(MCPError) as bad:
                await session.subscribe_resource(uri)
            assert bad.value.code == INVALID_PARAMS, uri

        await ok(session, "file_edit", {"path": block(1), "old": "Keep", "new": "Hold"})
        assert sorted(await updates(receive, 2)) == sorted([block(1), PINNED_URI])

        # Reads and a write that touches no subscribed resource send nothing: the next update is later.md's.
        await ok(session, "file_read", {"path": block(1)})
        await ok(session, "memory_add", {"content": "Unrelated: the office plants need water."})
        await ok(session, "file_write", {"path": later, "content": "# Later\n"})
        assert await updates(receive, 1) == [later]
        assert (await read(session, later)).text == "# Later\n"

        await session.unsubscribe_resource(block(1))
        await ok(session, "file_edit", {"path": block(1), "old": "Hold", "new": "Keep"})
        assert await updates(receive, 1) == [PINNED_URI]  # the pinned context shows the block; the block is not watched

        messages = [{"id": "m1", "role": "user", "content": "I moved to Lisbon.", "at": "2025-03-01T09:00:00Z"}]
        await ok(session, "add_messages", {"messages": messages})
        await ok(session, "memory_extract", {})
        assert await updates(receive, 1) == [PROFILE_URI]
        profile = await read(session, PROFILE_URI)
        assert profile.text == f"Alice: {FACT}"
        listed = await session.list_resources()
        assert [r.uri for r in listed.resources[:3]] == [PROFILE_URI, PINNED_URI, block(1)]

        await ok(session, "block_unpin", {"path": block(1)})
        assert await updates(receive, 1) == [PINNED_URI]
        await ok(session, "file_delete", {"path": later})
        assert await updates(receive, 1) == [later]


# The 2026-07-28 protocol moves subscriptions to subscriptions/listen; every client tested here speaks 2025-11-25.
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
def test_resource_updates_over_stdio(tmp_path: Path) -> None:
    model = ScriptedModel(profiler)
    try:
        anyio.run(_subscriptions, tmp_path, model.url)
    finally:
        model.close()


async def _no_subscriptions_over_http(url: str) -> None:
    async with http_session(url, ALICE) as session:
        capabilities = session.server_capabilities
        assert capabilities is not None and capabilities.resources is not None
        assert not capabilities.resources.subscribe
        with pytest.raises(MCPError) as refused_subscription:
            await session.subscribe_resource(block(0))
        assert refused_subscription.value.code == METHOD_NOT_FOUND


# The 2026-07-28 protocol moves subscriptions to subscriptions/listen; every client tested here speaks 2025-11-25.
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
def test_stateless_http_offers_no_subscriptions(url: str) -> None:
    anyio.run(_no_subscriptions_over_http, url)


# ----------------------------------------------------------------------- recall ---
async def _recall(open_session: Opener, carol: str) -> None:
    async with open_session({"user": carol, "session": "trip"}) as session:
        added = await ok(session, "memory_add", {"content": "Carol prefers window seats on long flights."})
        (prompt,) = (await session.list_prompts()).prompts
        assert prompt.name == "recall"
        assert prompt.description
        assert [(a.name, a.required) for a in prompt.arguments or []] == [("query", True), ("budget", False)]

        recalled = await session.get_prompt("recall", {"query": "Which seat does Carol like?", "budget": "300"})
        (message,) = recalled.messages
        assert message.role == "user" and isinstance(message.content, TextContent)
        assert "Carol prefers window seats on long flights." in message.content.text
        assert recalled.meta is not None
        meta = recalled.meta["mnemo"]
        assert 0 < meta["tokens"] <= 300 and meta["truncated"] is False
        assert {"kind": "memory", "id": added["memoryId"], "layer": "user"}.items() <= meta["sources"][0].items()

        for arguments, field in [
            ({"query": "x", "budget": "50"}, "budget"),
            ({"query": "x", "budget": "lots"}, "budget"),
            ({"budget": "500"}, "query"),
            ({"query": "x", "user": "dave"}, "user"),
        ]:
            with pytest.raises(MCPError) as bad:
                await session.get_prompt("recall", arguments)
            assert bad.value.code == INVALID_PARAMS, arguments
            assert bad.value.data["error"]["details"]["field"] == field, arguments
        with pytest.raises(MCPError) as unknown:
            await session.get_prompt("forget", {})
        assert (unknown.value.code, unknown.value.data["available"]) == (INVALID_PARAMS, ["recall"])

    async with open_session({"user": "dave", "session": "trip"}) as session:  # another user recalls nothing of hers
        recalled = await session.get_prompt("recall", {"query": "Which seat does Carol like?"})
        (message,) = recalled.messages
        assert isinstance(message.content, TextContent) and "Carol" not in message.content.text


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_recall_prompt(seeded: Services, url: str, transport: str) -> None:
    anyio.run(_recall, opener(transport, seeded, url), f"carol-{transport}")  # each transport writes her memory


# ------------------------------------------------------------------ Lambda door ---
def _rpc(method: str, params: dict[str, Any], caller: dict[str, str]) -> dict[str, Any]:
    """One JSON-RPC request through the MCP Lambda door, ``caller`` as a Lambda authorizer's context."""
    event = rest_event("mcp", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, caller)
    event["path"] = event["resource"] = "/mcp"
    event["headers"].update({"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    answer = mcp_lambda.handler(event, FakeLambdaContext())
    assert answer["statusCode"] == 200, answer
    return dict(json.loads(answer["body"]))


def test_the_lambda_door_serves_resources_for_the_authorizers_caller(seeded: Services, url: str) -> None:
    """mcp_lambda.handler (stateless, the authorizer's caller; ``url`` installs the seeded services)."""
    assert _rpc("resources/read", {"uri": block(3)}, ALICE)["result"]["contents"][0]["text"] == text_of(3)
    listed = _rpc("resources/list", {}, ALICE)["result"]
    assert len(listed["resources"]) == PAGE_SIZE
    following = _rpc("resources/list", {"cursor": listed["nextCursor"]}, ALICE)["result"]
    assert "nextCursor" not in following
    assert len(listed["resources"]) + len(following["resources"]) == 1 + PINS + len(ALICE_KNOWLEDGE)
    assert _rpc("resources/read", {"uri": block(3)}, {"user": "bob"})["error"]["code"] == INVALID_PARAMS
    assert _rpc("resources/subscribe", {"uri": block(3)}, ALICE)["error"]["code"] == METHOD_NOT_FOUND
    assert [p["name"] for p in _rpc("prompts/list", {}, ALICE)["result"]["prompts"]] == ["recall"]


# ------------------------------------------------------------------------- docs ---
def test_the_docs_example_runs_as_written(tmp_path: Path) -> None:
    """docs/mcp-resources.md's example, from the repository root, on a data directory of its own."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "mcp-resources.md"
    after = docs.read_text().split("<!-- example: mcp-resources -->\n```python\n", 1)[1]
    source = after.split("\n```", 1)[0]
    env = {**os.environ, "MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing"}
    ran = subprocess.run(
        [sys.executable, "-c", source], cwd=docs.parents[1], env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "['mnemo://pinned', 'mnemo:///blocks/style.md']"
    assert lines[1].startswith('<block path="mnemo:///blocks/style.md" tokens=')
    assert lines[2] == "Prefer small modules."
    assert "Prefer short modules." in lines[4:6]
    assert "Prefer short modules." in ran.stdout.split("## Pinned blocks", 1)[1]

"""mnemo.client takes the wire (camelCase) names as keywords beside the snake_case ones, and the agent
framework adapters hand the model the whole envelope, ``retryable`` included (LangChain here; Strands, which
needs a virtual environment of its own, in test_client_strands.py)."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from client_support import Answer, Script, scripted_server
from helpers import local_server
from mnemo.client import AsyncMnemoClient, LocalIdentity, MnemoClient, NotFoundError
from mnemo.client.langchain import mnemo_tools
from mnemo.client.tools import AsyncTools, SyncTools
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog
from mnemo_codegen.client_gen import _parameters

ROOT = Path(__file__).resolve().parents[2]
ALICE = LocalIdentity(tenant="acme", user="alice", project="atlas", roles=("writer",))
CATALOG = load_catalog(experimental=True)
#: Tools with a field whose wire name differs from its Python name.
WIRED = [tool for tool in CATALOG.values() if any(name != wire for name, wire, _, _ in _parameters(tool))]


class Recorder(SyncTools):
    def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"tool": tool, "body": body}


class AsyncRecorder(AsyncTools):
    async def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"tool": tool, "body": body}


def _usage(tool: Any) -> dict[str, Any]:
    return dict(dict(tool.examples())["Usage"])


@pytest.mark.parametrize("tool", WIRED, ids=lambda tool: tool.name)
def test_every_method_takes_the_wire_names_and_sends_the_same_body(tool: Any) -> None:
    keywords = set(inspect.signature(getattr(SyncTools, tool.name)).parameters)
    assert {wire for _, wire, _, _ in _parameters(tool)} <= keywords
    snake = {wire: name for name, wire, _, _ in _parameters(tool)}
    full = {wire: f"v-{wire}" for wire in snake}
    sent = {"tool": tool.name, "body": full}
    assert getattr(Recorder(), tool.name)(**full) == sent
    assert getattr(Recorder(), tool.name)(**{snake[wire]: value for wire, value in full.items()}) == sent
    assert asyncio.run(getattr(AsyncRecorder(), tool.name)(**full)) == sent
    usage = _usage(tool)
    assert getattr(Recorder(), tool.name)(**usage)["body"] == usage


@pytest.mark.parametrize("tool", WIRED, ids=lambda tool: tool.name)
def test_a_field_given_both_ways_is_refused(tool: Any) -> None:
    name, wire = next((name, wire) for name, wire, _, _ in _parameters(tool) if name != wire)
    required = {w: f"v-{w}" for n, w, _, needed in _parameters(tool) if needed and w != wire}
    with pytest.raises(TypeError, match=f"{wire} given twice"):
        getattr(Recorder(), tool.name)(**required, **{name: "a", wire: "b"})


def test_a_required_field_given_neither_way_is_refused() -> None:
    with pytest.raises(TypeError, match="missing required keyword argument: memoryId"):
        Recorder().memory_delete()


def test_camel_case_calls_against_the_real_server(services: Services) -> None:
    with local_server(services) as url:
        client = MnemoClient(url, auth=ALICE)
        first = client.memory_add(content="Atlas deploys on Fridays", layer="project", idempotencyKey="k-1")
        again = client.memory_add(content="Atlas deploys on Fridays", layer="project", idempotency_key="k-1")
        assert again["memoryId"] == first["memoryId"], "both spellings reach the same field"
        with pytest.raises(NotFoundError) as missing:
            client.memory_delete(memoryId="mem_nope")
        assert missing.value.field == "memoryId"
        deleted = asyncio.run(AsyncMnemoClient(url, auth=ALICE).memory_delete(memoryId=first["memoryId"]))
        assert deleted["success"] is True
        assert client.memory_search(query="atlas deploys", threshold=0.0)["results"] == []


def test_the_langchain_adapter_hands_the_model_retryable(services: Services) -> None:
    with local_server(services) as url:
        (delete,) = mnemo_tools(MnemoClient(url, auth=ALICE), names=["memory_delete"])
        refused = json.loads(delete.invoke({"memoryId": "mem_nope"}))
    assert refused["errorCode"] == "NOT_FOUND"
    assert refused["retryable"] is False
    throttled = {
        "success": False,
        "errorCode": "RATE_LIMITED",
        "message": "slow down",
        "details": {},
        "retryable": True,
    }
    with scripted_server(Script([Answer(429, json.dumps(throttled).encode())])) as url:
        (search,) = mnemo_tools(MnemoClient(url, auth=ALICE, retries=0), names=["memory_search"])
        assert json.loads(search.invoke({"query": "x"})) == throttled

"""mnemo.client.langchain: LangChain StructuredTools built from the catalog, invoked against a real local
server, on their own and by a LangChain agent (``create_agent``) whose model is a fixed script: the agent's
loop is real, no language model is needed."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from client_support import Answer, Script, scripted_server
from helpers import local_server
from mnemo.client import AsyncMnemoClient, LocalIdentity, MnemoClient
from mnemo.client.langchain import mnemo_tools
from mnemo.client.listing import catalog
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog
from mnemo_codegen.client_gen import render_client_catalog

ALICE = LocalIdentity(user="alice", project="atlas", roles=("writer",))


def test_the_client_catalog_is_generated_from_the_service_catalog() -> None:
    committed = (Path(__file__).resolve().parents[2] / "layers/shared/mnemo/client/catalog.json").read_text()
    assert committed == render_client_catalog(load_catalog(experimental=True)), "run `make docs`"


@pytest.fixture
def tools(services: Services) -> Iterator[dict[str, BaseTool]]:
    with local_server(services) as url:
        built = mnemo_tools(MnemoClient(url, auth=ALICE), async_client=AsyncMnemoClient(url, auth=ALICE))
        yield {tool.name: tool for tool in built}


def test_every_catalog_tool_becomes_a_langchain_tool_with_its_schema(tools: dict[str, BaseTool]) -> None:
    assert list(tools) == [entry["name"] for entry in catalog()]
    add = tools["memory_add"]
    assert add.description == load_catalog()["memory_add"].description
    assert add.args["content"]["type"] == "string"
    assert "layer" in add.args


def test_an_agent_framework_call_stores_and_finds_a_memory(tools: dict[str, BaseTool]) -> None:
    added = json.loads(
        tools["memory_add"].invoke({"content": "The atlas service deploys on Fridays", "layer": "project"})
    )
    assert added["success"]
    assert added["layer"] == "project"
    found = json.loads(tools["memory_search"].invoke({"query": "when does atlas deploy?", "threshold": 0.0}))
    assert found["results"][0]["memoryId"] == added["memoryId"]
    later = json.loads(asyncio.run(tools["memory_search"].ainvoke({"query": "atlas deploys", "threshold": 0.0})))
    assert later["results"][0]["memoryId"] == added["memoryId"]


def test_an_error_goes_back_to_the_model_as_the_envelope(tools: dict[str, BaseTool]) -> None:
    answer = tools["memory_delete"].invoke({"memoryId": "mem_nope"})
    envelope = json.loads(answer)
    assert envelope["success"] is False
    assert envelope["errorCode"] == "NOT_FOUND"
    assert envelope["details"]["field"] == "memoryId"


def test_a_subset_of_tools_by_name(services: Services) -> None:
    with local_server(services) as url:
        chosen = mnemo_tools(MnemoClient(url, auth=ALICE), names=["memory_add", "memory_search"])
    assert [tool.name for tool in chosen] == ["memory_add", "memory_search"]


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers a fixed script of messages (tool calls, then text) and records the tools an
    agent offers it: an agent's whole loop runs, with no language model."""

    offered: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        self.offered.extend(convert_to_openai_tool(tool) for tool in tools)
        return self


def _call(name: str, call_id: str, **arguments: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": arguments, "id": call_id}])


def test_a_langchain_agent_runs_its_loop_over_mnemo_tools(services: Services) -> None:
    script = [
        _call("memory_add", "call_1", content="The atlas service deploys on Fridays", layer="project"),
        _call("memory_search", "call_2", query="when does atlas deploy?", threshold=0.0),
        _call("memory_delete", "call_3", memoryId="mem_nope"),
        AIMessage(content="Atlas deploys on Fridays."),
    ]
    model = ScriptedModel(messages=iter(script))
    with local_server(services) as url:
        agent = create_agent(
            model, mnemo_tools(MnemoClient(url, auth=ALICE), names=["memory_add", "memory_search", "memory_delete"])
        )
        state = agent.invoke({"messages": [{"role": "user", "content": "When does atlas deploy?"}]})
    offered = {tool["function"]["name"]: tool["function"] for tool in model.offered}
    assert set(offered) == {"memory_add", "memory_search", "memory_delete"}
    assert offered["memory_search"]["parameters"]["required"] == ["query"]
    results = {message.tool_call_id: message for message in state["messages"] if isinstance(message, ToolMessage)}
    added = json.loads(results["call_1"].content)
    found = json.loads(results["call_2"].content)
    assert added["success"]
    assert found["results"][0]["memoryId"] == added["memoryId"]
    refused = json.loads(results["call_3"].content)
    assert results["call_3"].status == "error"
    assert refused["errorCode"] == "NOT_FOUND"
    assert state["messages"][-1].content == "Atlas deploys on Fridays."


def test_ainvoke_without_an_async_client_leaves_the_event_loop_free() -> None:
    """The sync client runs in a worker thread: while its call is out, the loop runs other tasks. The server
    answers only once a task on the loop has released it (or gives up after 10 s, which a blocked loop causes)."""
    arrived, released, seen = threading.Event(), threading.Event(), []

    def hold() -> None:
        arrived.set()
        seen.append(released.wait(10))

    script = Script([Answer(200, b'{"success": true, "results": []}', before=hold)])
    with scripted_server(script) as url:
        (search,) = mnemo_tools(MnemoClient(url, auth=ALICE), names=["memory_search"])

        async def release_once_the_call_is_out() -> None:  # runs only while the loop is free
            while not arrived.is_set():
                await asyncio.sleep(0.01)
            released.set()

        async def scenario() -> str:
            call = asyncio.create_task(search.ainvoke({"query": "anything"}))
            await asyncio.wait_for(release_once_the_call_is_out(), timeout=30)
            return str(await call)

        assert json.loads(asyncio.run(scenario()))["success"] is True
    assert seen == [True]

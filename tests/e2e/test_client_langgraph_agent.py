"""LangGraph agents whose long-term memory is a ``MnemoStore`` on a real local server: a StateGraph compiled with
``store=``, whose nodes reach it through ``get_store()`` and their ``runtime``, remembers in one run and thread
and recalls in a later run on another thread (sync and async); and a LangChain ``create_agent`` whose tool
writes through ``ToolRuntime.store``. The chat models are scripted (GenericFakeChatModel): they record the
messages they are given, so the tests see what the store put into the prompt. No language model runs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from pydantic import Field

from helpers import local_server
from mnemo.client import AsyncMnemoClient, LocalIdentity, MnemoClient
from mnemo.client.langgraph import MnemoStore
from mnemo.runtime import Services

NAMESPACE = ("memories", "profile")


class RecordingModel(GenericFakeChatModel):
    """Answers a fixed script and records the messages of every call."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self


class Chat(MessagesState):
    recalled: list[str]


@dataclass
class Context:
    user_name: str


def build_graph(model: RecordingModel, store: MnemoStore) -> Any:
    """recall (get_store(), a search by the user's message), then respond (the runtime's store: the model is
    told what was recalled, and a message starting "remember:" is stored as a memory)."""

    def recall(state: Chat) -> dict[str, Any]:
        found = get_store().search(NAMESPACE, query=str(state["messages"][-1].content), limit=3)
        return {"recalled": [item.value["text"] for item in found]}

    def respond(state: Chat, runtime: Runtime[Context]) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        known = "; ".join(state["recalled"]) or "nothing yet"
        system = SystemMessage(f"You talk with {runtime.context.user_name}. You remember: {known}")
        reply = model.invoke([system, *state["messages"]])
        if said.lower().startswith("remember:"):
            assert runtime.store is not None
            runtime.store.put(NAMESPACE, str(uuid.uuid4()), {"text": said.split(":", 1)[1].strip()})
        return {"messages": [reply]}

    builder = StateGraph(Chat, context_schema=Context)
    builder.add_node(recall)
    builder.add_node(respond)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "respond")
    return builder.compile(store=store, checkpointer=InMemorySaver())


@pytest.fixture
def url(services: Services) -> Iterator[str]:
    with local_server(services) as base:
        yield base


def ask(graph: Any, text: str, thread: str, user: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    result: dict[str, Any] = graph.invoke({"messages": [("user", text)]}, config, context=Context(user))
    return result


def test_a_graph_remembers_in_one_thread_and_recalls_in_another(url: str) -> None:
    model = RecordingModel(messages=iter([AIMessage("Noted."), AIMessage("Teal, you told me.")]))
    alice = MnemoStore(MnemoClient(url, auth=LocalIdentity(user="alice")))
    graph = build_graph(model, alice)

    first = ask(graph, "Remember: my favourite colour is teal", thread="t1", user="Alice")
    assert first["recalled"] == []
    later = ask(graph, "What is my favourite colour?", thread="t2", user="Alice")
    assert later["recalled"] == ["my favourite colour is teal"]
    assert later["messages"][-1].content == "Teal, you told me."
    assert [m.content for m in later["messages"]] == ["What is my favourite colour?", "Teal, you told me."]
    system = model.seen[-1][0]
    assert system.content == "You talk with Alice. You remember: my favourite colour is teal"
    # The memory is a Mnemo memory of Alice's user layer, under the graph's namespace.
    (stored,) = MnemoClient(url, auth=LocalIdentity(user="alice")).memory_list(layer="user")["memories"]
    assert stored["metadata"]["lg.ns"] == "memories.profile"
    assert stored["content"].startswith('{"text": "my favourite colour is teal"}')

    # Bob's graph uses the same namespace; his identity's scope holds none of Alice's memories.
    bob_model = RecordingModel(messages=iter([AIMessage("I do not know yet.")]))
    bob = build_graph(bob_model, MnemoStore(MnemoClient(url, auth=LocalIdentity(user="bob"))))
    assert ask(bob, "What is my favourite colour?", thread="t1", user="Bob")["recalled"] == []
    assert bob_model.seen[0][0].content == "You talk with Bob. You remember: nothing yet"


def test_an_async_graph_reads_and_writes_through_abatch(url: str) -> None:
    identity = LocalIdentity(user="alice")
    store = MnemoStore(MnemoClient(url, auth=identity), async_client=AsyncMnemoClient(url, auth=identity))
    model = RecordingModel(messages=iter([AIMessage("Noted."), AIMessage("On Fridays.")]))

    async def recall(state: Chat) -> dict[str, Any]:
        found = await get_store().asearch(NAMESPACE, query=str(state["messages"][-1].content), limit=3)
        return {"recalled": [item.value["text"] for item in found]}

    async def respond(state: Chat, runtime: Runtime[Context]) -> dict[str, Any]:
        said = str(state["messages"][-1].content)
        reply = await model.ainvoke(
            [SystemMessage("You remember: " + "; ".join(state["recalled"])), *state["messages"]]
        )
        if said.lower().startswith("remember:"):
            assert runtime.store is not None
            await runtime.store.aput(NAMESPACE, "deploys", {"text": said.split(":", 1)[1].strip()})
        return {"messages": [reply]}

    builder = StateGraph(Chat, context_schema=Context)
    builder.add_node(recall)
    builder.add_node(respond)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "respond")
    graph = builder.compile(store=store, checkpointer=InMemorySaver())

    async def scenario() -> dict[str, Any]:
        await graph.ainvoke(
            {"messages": [("user", "Remember: atlas deploys on Fridays")]},
            {"configurable": {"thread_id": "a1"}},
            context=Context("Alice"),
        )
        result: dict[str, Any] = await graph.ainvoke(
            {"messages": [("user", "When does atlas deploy?")]},
            {"configurable": {"thread_id": "a2"}},
            context=Context("Alice"),
        )
        return result

    later = asyncio.run(scenario())
    assert later["recalled"] == ["atlas deploys on Fridays"]
    assert model.seen[-1][0].content == "You remember: atlas deploys on Fridays"
    assert store.get(NAMESPACE, "deploys").value == {"text": "atlas deploys on Fridays"}  # type: ignore[union-attr]


def test_a_langchain_agent_tool_writes_through_the_runtime_store(url: str) -> None:
    """create_agent(..., store=MnemoStore): the tool the scripted model calls writes with ``runtime.store``,
    and a later run on another thread reads it back with another tool."""

    @tool
    def save_preference(key: str, text: str, runtime: ToolRuntime) -> str:
        """Remember a preference of the user."""
        assert runtime.store is not None
        runtime.store.put(("preferences",), key, {"text": text})
        return "saved"

    @tool
    def read_preference(key: str, runtime: ToolRuntime) -> str:
        """Recall a preference of the user."""
        assert runtime.store is not None
        found = runtime.store.get(("preferences",), key)
        return found.value["text"] if found else "unknown"

    script = [
        AIMessage("", tool_calls=[{"name": "save_preference", "args": {"key": "seat", "text": "window"}, "id": "c1"}]),
        AIMessage("Saved."),
        AIMessage("", tool_calls=[{"name": "read_preference", "args": {"key": "seat"}, "id": "c2"}]),
        AIMessage("You like the window seat."),
    ]
    store = MnemoStore(MnemoClient(url, auth=LocalIdentity(user="alice")))
    agent = create_agent(
        RecordingModel(messages=iter(script)),
        [save_preference, read_preference],
        store=store,
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [("user", "I like window seats")]}, {"configurable": {"thread_id": "one"}})
    later = agent.invoke({"messages": [("user", "Which seat do I like?")]}, {"configurable": {"thread_id": "two"}})
    tool_answers = [m.content for m in later["messages"] if m.type == "tool"]
    assert tool_answers == ["window"]
    assert store.get(("preferences",), "seat").value == {"text": "window"}  # type: ignore[union-attr]

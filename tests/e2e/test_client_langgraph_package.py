"""The client wheel with its ``langgraph`` extra, installed as a user installs it (``pip install
"mnemo-client[langgraph]" langgraph==1.2.24``) into a virtual environment of its own, with nothing of the
service: a StateGraph compiled with ``store=MnemoStore(...)`` remembers in one thread and recalls in another,
against a real local server, and docs/langgraph.md's example runs there as written (its printed lines are the
ones its comments show)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import venv
from pathlib import Path

import pytest
from client_wheel import build_client_wheel

from helpers import local_server
from mnemo.runtime import Services

PINNED = ["langgraph==1.2.24", "langgraph-checkpoint==4.3.2"]

SCRIPT = """
import asyncio, importlib.util, json, sys
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph
from mnemo.client import AsyncMnemoClient, LocalIdentity, MnemoClient
from mnemo.client.langgraph import MnemoStore

url, alice = sys.argv[1], LocalIdentity(user="alice")
store = MnemoStore(MnemoClient(url, auth=alice), async_client=AsyncMnemoClient(url, auth=alice))

def remember_or_recall(state):
    said = state["messages"][-1].content
    if said.startswith("remember:"):
        get_store().put(("memories",), "colour", {"text": said.split(":", 1)[1].strip()})
        return {"messages": [("ai", "noted")]}
    found = get_store().search(("memories",), query=said)
    return {"messages": [("ai", found[0].value["text"] if found else "no idea")]}

builder = StateGraph(MessagesState)
builder.add_node(remember_or_recall)
builder.add_edge(START, "remember_or_recall")
graph = builder.compile(store=store, checkpointer=InMemorySaver())
graph.invoke({"messages": [("user", "remember: favourite colour is teal")]}, {"configurable": {"thread_id": "1"}})
answer = graph.invoke({"messages": [("user", "favourite colour?")]}, {"configurable": {"thread_id": "2"}})
item = asyncio.run(store.aget(("memories",), "colour"))
print(json.dumps({"answer": answer["messages"][-1].content, "value": item.value, "key": item.key,
                  "service": importlib.util.find_spec("mnemo.runtime") is not None}))
"""


@pytest.fixture(scope="module")
def langgraph_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with the client wheel and its langgraph extra, LangGraph pinned."""
    root = tmp_path_factory.mktemp("langgraph")
    wheel = build_client_wheel(root)
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "-q", f"{wheel}[langgraph]", *PINNED], check=True, capture_output=True
    )
    return python


def test_a_user_installs_the_langgraph_extra_and_runs_a_graph_on_mnemo(
    langgraph_python: Path, services: Services
) -> None:
    with local_server(services) as url:
        done = subprocess.run(
            [langgraph_python, "-c", SCRIPT, url],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": ""},
        )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {
        "answer": "favourite colour is teal",
        "value": {"text": "favourite colour is teal"},
        "key": "colour",
        "service": False,
    }


def test_the_documented_example_runs_as_written(langgraph_python: Path, services: Services, tmp_path: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "langgraph.md").read_text()
    found = re.search(r"<!-- example: langgraph-store -->\n```python\n(.*?)```", doc, re.S)
    assert found is not None
    shown = [line.split("  # ", 1)[1] for line in found[1].splitlines() if line.startswith("print(")]
    with local_server(services) as url:
        script = tmp_path / "example.py"
        script.write_text(found[1].replace("http://127.0.0.1:8765", url))
        done = subprocess.run(
            [langgraph_python, script],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": ""},
        )
    assert done.stdout.splitlines() == shown

"""mnemo.client.strands: Strands Agents tools built from the catalog and invoked, through a Strands Agent's
direct tool calls (no model is asked) and through its own loop with a scripted model, against a real
local server.

Strands pins an older MCP SDK than the service does, so, as a user would, the test installs Strands and
the client wheel into a virtual environment of their own and runs the agent there."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest
from client_wheel import build_client_wheel

from helpers import local_server
from mnemo.runtime import Services

STRANDS = "strands-agents==1.62.0"

SCRIPT = """
import json, sys
from strands import Agent
from mnemo.client import LocalIdentity, MnemoClient
from mnemo.client.strands import mnemo_tools

client = MnemoClient(sys.argv[1], auth=LocalIdentity(user="alice", project="atlas", roles=("writer",)))
tools = mnemo_tools(client, names=["memory_add", "memory_search", "memory_delete"])
agent = Agent(tools=tools, callback_handler=None)
added = agent.tool.memory_add(content="The atlas service deploys on Fridays", layer="project")
found = agent.tool.memory_search(query="when does atlas deploy?", threshold=0.0)
missing = agent.tool.memory_delete(memoryId="mem_nope")
print(json.dumps({"names": [tool.tool_name for tool in tools], "specs": [tool.tool_spec for tool in tools],
                  "added": added, "found": found, "missing": missing}))
"""


@pytest.fixture(scope="module")
def strands_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with Strands Agents and the client wheel (and nothing of the service)."""
    root = tmp_path_factory.mktemp("strands")
    wheel = build_client_wheel(root)
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", STRANDS, str(wheel)], check=True, capture_output=True)
    return python


def test_a_strands_agent_calls_mnemo_tools(strands_python: Path, services: Services) -> None:
    env = {**os.environ, "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "x"}
    with local_server(services) as url:
        done = subprocess.run(
            [strands_python, "-c", SCRIPT, url], check=True, capture_output=True, text=True, env=env, timeout=120
        )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["names"] == ["memory_add", "memory_search", "memory_delete"]
    spec = answer["specs"][0]
    assert spec["inputSchema"]["json"]["required"] == ["content"]
    assert spec["description"].startswith("Store")
    assert answer["added"]["status"] == "success"
    stored = answer["added"]["content"][0]["json"]
    assert stored["layer"] == "project"
    assert answer["found"]["content"][0]["json"]["results"][0]["memoryId"] == stored["memoryId"]
    assert answer["missing"]["status"] == "error"
    assert answer["missing"]["content"][0]["json"]["errorCode"] == "NOT_FOUND"
    # The adapter hands the model the whole envelope, retryable included (the call took the wire name memoryId).
    refused = answer["missing"]["content"][0]["json"]
    assert refused["retryable"] is False


def test_a_strands_agent_loop_calls_the_tools_its_model_asks_for(strands_python: Path, services: Services) -> None:
    env = {**os.environ, "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "x"}
    script = Path(__file__).with_name("strands_agent_loop.py")
    with local_server(services) as url:
        done = subprocess.run(
            [strands_python, script, url], check=True, capture_output=True, text=True, env=env, timeout=120
        )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["offered"] == ["memory_add", "memory_search"]
    added, found = answer["results"]
    assert [added["toolUseId"], found["toolUseId"]] == ["t1", "t2"]
    stored = added["content"][0]["json"]
    assert added["status"] == "success"
    assert stored["layer"] == "project"
    assert found["content"][0]["json"]["results"][0]["memoryId"] == stored["memoryId"]
    assert answer["reply"].strip() == "Atlas deploys on Fridays."


DELEGATE_SCRIPT = """
import json, sys
from strands import Agent
from mnemo.client import MnemoClient
from mnemo.client.strands import mnemo_tools

client = MnemoClient(sys.argv[1])
names = ["memory_add", "memory_search"]
alice = Agent(tools=mnemo_tools(client.on_behalf_of(user="alice", session="s1"), names), callback_handler=None)
bob = Agent(tools=mnemo_tools(client.on_behalf_of(user="bob", session="s1"), names), callback_handler=None)
added = alice.tool.memory_add(content="Alice's locker code is 4711", layer="session")
print(json.dumps({"added": added,
                  "alice": alice.tool.memory_search(query="locker code", threshold=0.0),
                  "bob": bob.tool.memory_search(query="locker code", threshold=0.0)}))
"""


def test_strands_tools_act_for_the_user_their_client_names(strands_python: Path, services: Services) -> None:
    """A hosted agent's Strands tools built from ``client.on_behalf_of(...)``: each user's agent reads and
    writes that user's memories only (the local server reads the same X-Mnemo-* headers a delegate sends)."""
    with local_server(services) as url:
        done = subprocess.run(
            [strands_python, "-c", DELEGATE_SCRIPT, url], check=True, capture_output=True, text=True, timeout=120
        )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    stored = answer["added"]["content"][0]["json"]
    assert answer["added"]["status"] == "success"
    assert stored["layer"] == "session"
    assert [hit["memoryId"] for hit in answer["alice"]["content"][0]["json"]["results"]] == [stored["memoryId"]]
    assert answer["bob"]["status"] == "success"
    assert answer["bob"]["content"][0]["json"]["results"] == []


BATCH_SCRIPT = """
import json, sys
from strands import Agent
from mnemo.client import LocalIdentity, MnemoClient
from mnemo.client.strands import mnemo_tools

client = MnemoClient(sys.argv[1], auth=LocalIdentity(user="alice"))
tools = mnemo_tools(client, names=["memory_add_batch", "memory_delete_batch"])
agent = Agent(tools=tools, callback_handler=None)
added = agent.tool.memory_add_batch(items=[{"content": "Alice prefers window seats"},
                                           {"content": "Notes of the standup", "layer": "session"}])
stored = added["content"][0]["json"]["results"][0]["memoryId"]
deleted = agent.tool.memory_delete_batch(memoryIds=[stored, "mem_nope"])
refused = agent.tool.memory_add_batch(items=[])
print(json.dumps({"names": [tool.tool_name for tool in tools], "added": added, "deleted": deleted,
                  "refused": refused}))
"""


def test_strands_tools_add_and_delete_in_batches(strands_python: Path, services: Services) -> None:
    with local_server(services) as url:
        done = subprocess.run(
            [strands_python, "-c", BATCH_SCRIPT, url], check=True, capture_output=True, text=True, timeout=120
        )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["names"] == ["memory_add_batch", "memory_delete_batch"]
    assert answer["added"]["status"] == "success"
    added = answer["added"]["content"][0]["json"]
    assert [(r["success"], r["errorCode"]) for r in added["results"]] == [(True, None), (False, "INVALID_INPUT")]
    assert (added["added"], added["failed"]) == (1, 1)
    deleted = answer["deleted"]["content"][0]["json"]
    assert [(r["memoryId"], r["success"]) for r in deleted["results"]] == [
        (added["results"][0]["memoryId"], True),
        ("mem_nope", False),
    ]
    assert answer["refused"]["status"] == "error"
    assert answer["refused"]["content"][0]["json"]["details"]["field"] == "items"

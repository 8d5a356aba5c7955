"""mnemo.client.langchain for a hosted agent acting for its users: tools built from a client that acts for
one user name that user on every call, sync and async, and a sync and an async client acting for different
users are refused. Against the scripted server (which records headers) and a real local server."""

from __future__ import annotations

import asyncio
import json

import pytest

from client_support import Answer, Script
from helpers import local_server
from mnemo.client import AsyncMnemoClient, Delegation, MnemoClient, SigV4
from mnemo.client.langchain import mnemo_tools
from mnemo.runtime import Services


def test_tools_from_a_view_name_its_user_sync_and_async(scripted: tuple[str, Script]) -> None:
    from botocore.credentials import Credentials

    url, script = scripted
    script.answers = [Answer(200), Answer(200), Answer(200)]
    auth = SigV4("eu-west-1", credentials=Credentials("AKIDEXAMPLE", "secret"))
    client, async_client = MnemoClient(url, auth=auth), AsyncMnemoClient(url, auth=auth)
    who = {"user": "alice", "session": "chat-42"}
    (search,) = mnemo_tools(client.on_behalf_of(**who), names=["memory_search"])
    (async_search,) = mnemo_tools(
        client.on_behalf_of(**who), names=["memory_search"], async_client=async_client.on_behalf_of(**who)
    )
    search.invoke({"query": "x"})
    asyncio.run(search.ainvoke({"query": "x"}))  # the sync client in a worker thread
    asyncio.run(async_search.ainvoke({"query": "x"}))  # the async client
    for *_, headers in script.requests:
        assert (headers["x-mnemo-user"], headers["x-mnemo-session"]) == ("alice", "chat-42")
        signed = headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        assert {"x-mnemo-user", "x-mnemo-session"} <= set(signed)
    assert len(script.requests) == 3


def test_a_sync_and_an_async_client_acting_for_different_users_are_refused() -> None:
    client = MnemoClient("http://127.0.0.1:9", on_behalf_of=Delegation("alice"))
    with pytest.raises(ValueError, match="same on_behalf_of"):
        mnemo_tools(client, async_client=AsyncMnemoClient("http://127.0.0.1:9", on_behalf_of=Delegation("bob")))
    with pytest.raises(ValueError, match="same on_behalf_of"):
        mnemo_tools(client, async_client=AsyncMnemoClient("http://127.0.0.1:9"))


def test_each_users_tools_see_only_that_users_memories(services: Services) -> None:
    with local_server(services) as url:
        agent = MnemoClient(url)
        alice = {tool.name: tool for tool in mnemo_tools(agent.on_behalf_of(user="alice"))}
        bob = {tool.name: tool for tool in mnemo_tools(agent.on_behalf_of(user="bob"))}
        added = json.loads(alice["memory_add"].invoke({"content": "Alice's locker code is 4711"}))
        query = {"query": "locker code", "threshold": 0.0}
        assert [hit["memoryId"] for hit in json.loads(alice["memory_search"].invoke(query))["results"]] == [
            added["memoryId"]
        ]
        assert json.loads(bob["memory_search"].invoke(query))["results"] == []
        refused = json.loads(bob["memory_delete"].invoke({"memoryId": added["memoryId"]}))
        assert refused["errorCode"] == "NOT_FOUND"

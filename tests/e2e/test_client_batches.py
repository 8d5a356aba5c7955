"""The batch tools (memory_add_batch, memory_delete_batch) from the Python client, sync and async, and as
LangChain tools, against a real local server: one result per item, per-item errors inside a successful
answer, the whole-request refusal raised as the typed exception. Strands: tests/e2e/test_client_strands.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import local_server
from mnemo.client import AsyncMnemoClient, InvalidInputError, LocalIdentity, MnemoClient
from mnemo.client.langchain import mnemo_tools
from mnemo.runtime import Services

ALICE = LocalIdentity(user="alice", project="atlas")


@pytest.fixture
def url(services: Services) -> Iterator[str]:
    with local_server(services) as found:
        yield found


def test_the_client_adds_and_deletes_in_batches(url: str) -> None:
    client = MnemoClient(url, auth=ALICE)
    added = client.memory_add_batch(
        items=[
            {"content": "The atlas service deploys on Fridays", "idempotencyKey": "k-deploy"},
            {"content": "Notes of the standup", "layer": "session"},  # no session id
            {"content": "Alice reviews the migrations", "idempotency_key": "k-review"},
        ]
    )
    assert [(r["index"], r["success"], r.get("errorCode")) for r in added["results"]] == [
        (0, True, None),
        (1, False, "INVALID_INPUT"),
        (2, True, None),
    ]
    assert (added["added"], added["deduplicated"], added["failed"]) == (2, 0, 1)
    first, _, third = (r["memoryId"] for r in added["results"])
    found = client.memory_search(query="when does atlas deploy?", threshold=0.0)
    assert found["results"][0]["memoryId"] == first
    deleted = client.memory_delete_batch(memory_ids=[first, "mem_nope"])
    assert [(r["memoryId"], r["success"], r.get("errorCode")) for r in deleted["results"]] == [
        (first, True, None),
        ("mem_nope", False, "NOT_FOUND"),
    ]
    assert (deleted["deleted"], deleted["failed"]) == (1, 1)
    listed = client.memory_list(layer="user")
    assert [m["memoryId"] for m in listed["memories"]] == [third]
    with pytest.raises(InvalidInputError) as refused:
        client.memory_add_batch(items=[{"content": f"fact {n}"} for n in range(101)])
    assert refused.value.field == "items"
    assert refused.value.status == 400


def test_the_async_client_answers_the_same(url: str) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        client = AsyncMnemoClient(url, auth=ALICE)
        added = await client.memory_add_batch(items=[{"content": "Deploys freeze on Dec 20"}])
        deleted = await client.memory_delete_batch(memoryIds=[added["results"][0]["memoryId"]])
        return added, deleted

    added, deleted = asyncio.run(scenario())
    assert added["added"] == 1
    assert deleted["results"][0]["memoryId"] == added["results"][0]["memoryId"]
    assert deleted["deleted"] == 1


def test_langchain_tools_add_and_delete_in_batches(url: str) -> None:
    tools = {tool.name: tool for tool in mnemo_tools(MnemoClient(url, auth=ALICE))}
    add, delete = tools["memory_add_batch"], tools["memory_delete_batch"]
    assert add.args["items"]["type"] == "array"
    assert delete.args["memoryIds"]["type"] == "array"
    added = json.loads(
        add.invoke({"items": [{"content": "Alice prefers window seats"}, {"content": "Alice lives in Lisbon"}]})
    )
    assert added["added"] == 2
    ids = [r["memoryId"] for r in added["results"]]
    again = json.loads(asyncio.run(add.ainvoke({"items": [{"content": "Alice lives in Lisbon"}]})))
    assert again["results"][0]["deduplicated"] is True and again["results"][0]["memoryId"] == ids[1]
    deleted = json.loads(delete.invoke({"memoryIds": [*ids, ids[0]]}))
    assert [r["success"] for r in deleted["results"]] == [True, True, False]
    refused = json.loads(add.invoke({"items": [{"content": "   "}]}))  # the envelope goes back to the model
    assert refused["success"] is False
    assert refused["errorCode"] == "INVALID_INPUT"
    assert refused["details"]["field"] == "items.0.content"

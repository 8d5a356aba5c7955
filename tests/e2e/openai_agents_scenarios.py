"""Run in the OpenAI Agents SDK's virtual environment by test_client_openai_agents.py: MnemoSession and
mnemo_instructions against a real Mnemo server, each scenario printing what it saw for the test to check.

    python openai_agents_scenarios.py SCENARIO URL   ->  one JSON line

- ``shapes``: every item shape the SDK keeps (messages with text or content parts, function calls and their
  outputs, reasoning, a refusal, a text longer than one turn) added in two calls, read back whole, by a second
  session object, with a limit, and popped.
- ``runner``: two ``Runner.run`` turns of one session with the scripted model, the first calling a function
  tool; the session's client is a ``MnemoClient`` (each call in a worker thread).
- ``retries``: adds and a pop whose calls a gateway in front of the server answers 504 (the test's plan
  says which, and whether the call ran first).
- ``instructions``: an agent whose instructions are ``mnemo_instructions``, after alice's memory is stored.
- ``users``: one session id used by two users through a hosted agent's ``on_behalf_of``.
- ``refusals``: a session id Mnemo refuses, a client that cannot name a session, an item that is not JSON, a
  file at the log's path that is not a log.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime, timedelta
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from openai_agents_fake_model import FakeModel, call, text

from mnemo.client import ApiKey, AsyncMnemoClient, IdentityValueError, LocalIdentity, MnemoClient
from mnemo.client.openai_agents import MnemoSession, mnemo_instructions

ALICE = LocalIdentity(user="alice", project="atlas")

LOGPROB = {"token": "It", "logprob": -0.125, "bytes": [73, 116], "top_logprobs": []}
SHAPES: list[Any] = [
    {"role": "user", "content": "I moved to Lisbon last month.\nLine two: \u2028 é 🎉"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "detail": "auto", "image_url": "https://example.com/a.png"},
        ],
    },
    {"role": "developer", "content": "Answer briefly."},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Let me check the weather.", "annotations": [], "logprobs": []}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Lisbon"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "22°C and sunny"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user asked about the weather."}],
        "encrypted_content": "gAAAAABo-opaque",
    },
    {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "It is 22°C in Lisbon.", "annotations": [], "logprobs": [LOGPROB]},
            {"type": "refusal", "refusal": "I cannot share the exact address."},
        ],
    },
    {"role": "assistant", "content": "Lisbon " * 2000},
]


async def shapes(url: str) -> dict[str, Any]:
    session = MnemoSession("shapes-1", AsyncMnemoClient(url, auth=ALICE))
    await session.add_items(SHAPES[:5])
    await session.add_items(SHAPES[5:])
    got = await session.get_items()
    fresh = await MnemoSession("shapes-1", AsyncMnemoClient(url, auth=ALICE)).get_items()
    last2 = await session.get_items(limit=2)
    popped = await session.pop_item()
    return {
        "sent": SHAPES,
        "got": got,
        "fresh": fresh,
        "last2": last2,
        "popped": popped,
        "afterPop": await session.get_items(),
        "path": session.path,
    }


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


async def runner(url: str) -> dict[str, Any]:
    session = MnemoSession("runner-1", MnemoClient(url, auth=ALICE))
    model = FakeModel(
        [
            [call("get_weather", {"city": "Lisbon"}, "call_1")],
            [text("It is sunny in Lisbon.", "msg_a1")],
            [text("You asked about Lisbon.", "msg_a2")],
        ]
    )
    agent = Agent(name="helper", model=model, tools=[get_weather])
    first = await Runner.run(agent, "What is the weather in Lisbon?", session=session)
    after_first = await session.get_items()
    second = await Runner.run(agent, "Which city did I ask about?", session=session)
    return {
        "outputs": [first.final_output, second.final_output],
        "calls": model.calls,
        "afterFirst": after_first,
        "items": await session.get_items(),
    }


async def retries(url: str) -> dict[str, Any]:
    session = MnemoSession("retries-1", AsyncMnemoClient(url, auth=ALICE))
    await session.add_items(
        [{"role": "user", "content": "I prefer aisle seats."}, {"role": "assistant", "content": "Noted."}]
    )
    await session.add_items([{"role": "user", "content": "And I fly from Porto."}])
    popped = await session.pop_item()
    return {"items": await session.get_items(), "popped": popped}


async def instructions(url: str) -> dict[str, Any]:
    """One run; then memory_context asked directly, as of just before the run's message (its time from the
    log) and now."""
    client = AsyncMnemoClient(url, auth=ALICE)
    await client.call("memory_add", {"content": "Alice prefers green tea over coffee"})
    session = MnemoSession("instructions-1", client)
    model = FakeModel([[text("Green tea it is.")]])
    base = "You are a helpful assistant."
    agent = Agent(name="helper", model=model, instructions=mnemo_instructions(session, base, budget=500))
    question = "What drink should you make me?"
    await Runner.run(agent, question, session=session)
    files = AsyncMnemoClient(url, auth=LocalIdentity(user="alice", session="instructions-1"))
    first = (await files.call("file_read", {"path": session.path}))["content"].split("\n")[1]
    asked = datetime.fromisoformat(json.loads(first)["at"])
    as_of = (asked - timedelta(microseconds=1)).isoformat().replace("+00:00", "Z")
    body = {"query": question, "budget": 500}
    return {
        "base": base,
        "question": question,
        "instructions": model.calls[0]["instructions"],
        "before": await session.client.call("memory_context", {**body, "asOf": as_of}),
        "now": await session.client.call("memory_context", body),
    }


async def users(url: str) -> dict[str, Any]:
    """One session id, two users, as a hosted agent acting for each (``on_behalf_of``): each has a log of
    their own."""
    hosted = AsyncMnemoClient(url)
    carol = MnemoSession("shared-1", hosted.on_behalf_of(user="carol", project="atlas"))
    dave = MnemoSession("shared-1", hosted.on_behalf_of(user="dave", project="atlas"))
    await carol.add_items([{"role": "user", "content": "Carol's question"}])
    await dave.add_items([{"role": "user", "content": "Dave's question"}])
    return {"carol": await carol.get_items(), "dave": await dave.get_items()}


async def refusals(url: str) -> dict[str, Any]:
    client = AsyncMnemoClient(url, auth=ALICE)
    seen: dict[str, Any] = {"notALog": []}
    try:
        MnemoSession("bad id", client)
    except IdentityValueError as error:
        seen["badId"] = [type(error).__name__, error.field]
    try:
        MnemoSession("chat-1", AsyncMnemoClient(url, auth=ApiKey("k")))
    except ValueError as error:
        seen["apiKey"] = type(error).__name__
    try:
        await MnemoSession("not-json", client).add_items([{"role": "user", "content": object()}])
    except TypeError as error:
        seen["notJson"] = type(error).__name__
    taken = MnemoSession("taken", client)  # the test wrote a file of its own at this session's path
    for change in (taken.get_items(), taken.add_items([{"role": "user", "content": "x"}])):
        try:
            await change
        except ValueError as error:
            seen["notALog"].append(type(error).__name__)
    return seen


SCENARIOS = {
    "shapes": shapes,
    "runner": runner,
    "retries": retries,
    "instructions": instructions,
    "refusals": refusals,
    "users": users,
}

if __name__ == "__main__":
    set_tracing_disabled(True)  # nothing leaves the machine
    print(json.dumps(asyncio.run(SCENARIOS[sys.argv[1]](sys.argv[2]))))

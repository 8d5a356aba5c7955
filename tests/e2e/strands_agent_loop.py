"""Run in the Strands virtual environment by test_client_strands.py: a Strands Agent's own loop over Mnemo
tools, its model a fixed script of turns in Bedrock ConverseStream events (what Strands' model providers
yield). The model asks for two tools, then answers; the tool results the loop feeds back are recorded.

    python strands_agent_loop.py URL   ->  one JSON line: the tools offered, the reply and the results
"""

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent
from strands.models.model import Model

from mnemo.client import LocalIdentity, MnemoClient
from mnemo.client.strands import mnemo_tools


class ScriptedModel(Model):
    def __init__(self, turns: list[dict[str, Any]]) -> None:
        self.turns, self.offered, self.seen = list(turns), [], []

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        # Model requires it; the loop under test never asks for structured output, so a call here is a test bug.
        raise NotImplementedError("the scripted model answers tool calls and text, not structured output")
        yield {}

    async def stream(self, messages: list[Any], tool_specs: Any = None, *args: Any, **kwargs: Any) -> Any:
        self.offered = [spec["name"] for spec in tool_specs or []]
        self.seen.append(messages[-1])
        turn = self.turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if "tool" in turn:
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": turn["id"], "name": turn["tool"]}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn["input"])}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockDelta": {"delta": {"text": turn["text"]}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}


def main(url: str) -> None:
    client = MnemoClient(url, auth=LocalIdentity(user="alice", project="atlas", roles=("writer",)))
    memory = {"content": "The atlas service deploys on Fridays", "layer": "project"}
    model = ScriptedModel(
        [
            {"tool": "memory_add", "id": "t1", "input": memory},
            {"tool": "memory_search", "id": "t2", "input": {"query": "when does atlas deploy?", "threshold": 0.0}},
            {"text": "Atlas deploys on Fridays."},
        ]
    )
    tools = mnemo_tools(client, names=["memory_add", "memory_search"])
    reply = Agent(model=model, tools=tools, callback_handler=None)("When does atlas deploy?")
    results = [block["toolResult"] for message in model.seen for block in message["content"] if "toolResult" in block]
    print(json.dumps({"offered": model.offered, "reply": str(reply), "results": results}))


if __name__ == "__main__":
    main(sys.argv[1])

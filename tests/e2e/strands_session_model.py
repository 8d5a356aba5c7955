"""A scripted Strands model for the strands_session_*.py scripts (run in the Strands virtual environment),
adapted from Strands' own tests/fixtures/mocked_model_provider.py: each call answers the next assistant
message of its script as Bedrock ConverseStream events, and records the system prompt and the messages
it was called with. A reply ``{"redactedUserContent": ..., "redactedAssistantContent": ...}`` is a
guardrail's intervention, as the fixture's."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from strands.models.model import Model


class ScriptedModel(Model):
    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.system_prompts: list[str | None] = []
        self.seen: list[list[dict[str, Any]]] = []

    def update_config(self, **config: Any) -> None:
        pass

    def get_config(self) -> dict[str, Any]:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        # Model requires it; no script asks for structured output, so a call here is a test bug.
        raise NotImplementedError("the scripted model answers text and tool uses, not structured output")
        yield {}

    async def stream(
        self, messages: list[Any], tool_specs: Any = None, system_prompt: str | None = None, *args: Any, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        self.system_prompts.append(system_prompt)
        self.seen.append(json.loads(json.dumps(messages, default=repr)))
        for event in self._events(self.replies.pop(0)):
            yield event

    @staticmethod
    def _events(reply: dict[str, Any]) -> Iterator[dict[str, Any]]:
        stop = "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        if "redactedUserContent" in reply:  # a guardrail: the user's message is to be redacted
            yield {"redactContent": {"redactUserContentMessage": reply["redactedUserContent"]}}
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": reply["redactedAssistantContent"]}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "guardrail_intervened"}}
            return
        for block in reply["content"]:
            if "text" in block:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
                yield {"contentBlockStop": {}}
            if "toolUse" in block:
                stop = "tool_use"
                use = block["toolUse"]
                yield {
                    "contentBlockStart": {"start": {"toolUse": {"name": use["name"], "toolUseId": use["toolUseId"]}}}
                }
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}}
                yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}


def text(words: str) -> dict[str, Any]:
    """An assistant reply of text."""
    return {"role": "assistant", "content": [{"text": words}]}

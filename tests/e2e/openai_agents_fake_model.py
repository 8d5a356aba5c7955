"""A scripted model for the OpenAI Agents SDK scripts (run in their virtual environment by
test_client_openai_agents.py), as the SDK's own tests' fake model: it implements ``agents.models.interface.Model``,
answers each call with the next scripted output (assistant text, or a function call) and records what it was
given (the instructions and the input items). No model is asked anything."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


def text(reply: str, item_id: str = "msg_scripted") -> ResponseOutputMessage:
    """An assistant message, as a model's output holds it."""
    part = ResponseOutputText(text=reply, type="output_text", annotations=[], logprobs=[])
    return ResponseOutputMessage(id=item_id, type="message", role="assistant", status="completed", content=[part])


def call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    """A function call, as a model's output holds it."""
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", call_id=call_id, name=name, arguments=json.dumps(arguments), type="function_call"
    )


class FakeModel(Model):
    """Answers call N with ``turns[N]`` (a list of output items); ``calls`` records each call's instructions
    and input."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.calls: list[dict[str, Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
        **_: Any,
    ) -> ModelResponse:
        self.calls.append({"instructions": system_instructions, "input": copy.deepcopy(input)})
        if not self.turns:
            raise AssertionError("the fake model was called more often than scripted")
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        # Model requires it; the scripts run Runner.run, never streamed, so a call here is a test bug.
        raise NotImplementedError("the fake model answers Runner.run, not streamed runs")

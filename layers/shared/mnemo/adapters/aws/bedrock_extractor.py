"""Extractor on Amazon Bedrock's Converse API, with tool use forcing a JSON-schema'd answer.

Request (Converse, as documented for bedrock-runtime):
``{modelId, system: [{text}], messages: [{role: "user", content: [{text}]}],
toolConfig: {tools: [{toolSpec: {name, description, inputSchema: {json}}}],
toolChoice: {tool: {name}}}, inferenceConfig: {maxTokens, temperature}}``.
Response: ``output.message.content[]`` holds ``{toolUse: {toolUseId, name,
input}}``; ``stopReason`` is ``tool_use``. Any model id that supports tool use
works (a setting and the template's ExtractorModelId).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.errors import ProviderError
from mnemo.ports import ExtractionTool


class BedrockExtractor(LazyClient):
    def __init__(self, client_factory: Callable[[], Any], model_id: str, max_tokens: int = 4096) -> None:
        super().__init__(client_factory)
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.name = f"bedrock:{model_id}"

    def request(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        return {
            "modelId": self.model_id,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": tool.name,
                            "description": tool.description,
                            "inputSchema": {"json": tool.schema},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": tool.name}},
            },
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": 0.0},
        }

    def extract(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.converse(**self.request(system, prompt, tool))
        except (ClientError, BotoCoreError) as error:
            raise provider_error("Bedrock", error) from error
        for block in response.get("output", {}).get("message", {}).get("content", []):
            use = block.get("toolUse")
            if use and use.get("name") == tool.name and isinstance(use.get("input"), dict):
                return dict(use["input"])
        raise ProviderError(
            f"The model {self.model_id} answered without calling {tool.name} "
            f"(stopReason {response.get('stopReason')!r}); retry, or choose a model that supports tool use",
            {"service": "Bedrock", "stopReason": response.get("stopReason")},
        )

"""Extractor on Amazon Bedrock's Converse API, with tool use forcing a JSON-schema'd answer.

Request (Converse, as documented for bedrock-runtime):
``{modelId, system: [{text}], messages: [{role: "user", content: [{text}]}],
toolConfig: {tools: [{toolSpec: {name, description, inputSchema: {json}}}],
toolChoice: {tool: {name}}}, inferenceConfig: {maxTokens, temperature}}``.
Response: ``output.message.content[]`` holds ``{toolUse: {toolUseId, name,
input}}``; ``stopReason`` is ``tool_use``. Any model id that supports tool use
works (a setting and the template's ExtractorModelId), and so does an inference profile: ``modelId`` is
sent as configured, so ``eu.amazon.nova-lite-v1:0``, ``global.…`` or a profile ARN reach Converse as given.

**Sent once.** The client makes one attempt (``clients.model_client``): a read timeout or a 5xx may come
after the model ran and billed the call, so it is answered TIMEOUT or PROVIDER_ERROR, never sent again.
Only the answers that say the request was not processed are retried here, ``NOT_PROCESSED_RETRIES``
times with a short backoff: ThrottlingException (429), ServiceUnavailableException (503),
ModelNotReadyException (429), and a connection that could not be opened.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from mnemo import telemetry
from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.errors import ProviderError
from mnemo.ports import RAW_ANSWER_CHARS, Extraction, ExtractionTool

#: Error codes with which Bedrock refuses a request before running the model (bedrock-runtime Converse errors).
NOT_PROCESSED = frozenset({"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"})
NOT_PROCESSED_RETRIES = 2
RETRY_FIRST_DELAY = 0.5


class BedrockExtractor(LazyClient):
    """The Extractor port on Bedrock's Converse API, the tool forced (see the module docstring)."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        model_id: str,
        max_tokens: int = 4096,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(client_factory)
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.name = f"bedrock:{model_id}"
        self._sleep = sleep

    def _request(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """The documented Converse request: the prompt, the one tool, forced, at temperature 0."""
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
        """One Converse call (retried only when Bedrock says it did not run it); the tool's input."""
        return self.extract_counted(system, prompt, tool).answer

    def extract_counted(self, system: str, prompt: str, tool: ExtractionTool) -> Extraction:
        """``extract`` with the call's ``usage`` (inputTokens, outputTokens) and the tool input as raw JSON."""
        response = self._converse(self._request(system, prompt, tool))
        usage = response.get("usage") or {}
        input_tokens, output_tokens = int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)
        telemetry.count("ModelInputTokens", input_tokens)
        telemetry.count("ModelOutputTokens", output_tokens)
        texts = []
        for block in response.get("output", {}).get("message", {}).get("content", []):
            use = block.get("toolUse")
            if use and use.get("name") == tool.name and isinstance(use.get("input"), dict):
                answer = dict(use["input"])
                return Extraction(answer, input_tokens, output_tokens, json.dumps(answer)[:RAW_ANSWER_CHARS])
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
        raise ProviderError(
            f"The model {self.model_id} answered without calling {tool.name} "
            f"(stopReason {response.get('stopReason')!r}); retry, or choose a model that supports tool use",
            {
                "service": "Bedrock",
                "stopReason": response.get("stopReason"),
                "raw": "\n".join(texts)[:RAW_ANSWER_CHARS],
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
            },
        )

    def _converse(self, request: dict[str, Any]) -> dict[str, Any]:
        """One Converse call, repeated only after an answer that says the model did not run it."""
        from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

        attempt = 0
        while True:
            try:
                return dict(self.client.converse(**request))
            except (ClientError, BotoCoreError) as error:
                if isinstance(error, ClientError):
                    unprocessed = error.response.get("Error", {}).get("Code") in NOT_PROCESSED
                else:
                    unprocessed = isinstance(error, EndpointConnectionError | ConnectTimeoutError)
                if not unprocessed or attempt >= NOT_PROCESSED_RETRIES:
                    raise provider_error("Bedrock", error) from error
            self._sleep(RETRY_FIRST_DELAY * 2**attempt)
            attempt += 1

"""Extractor on any OpenAI-compatible chat completions endpoint (a local model server, or a hosted one).

``POST {base_url}/chat/completions`` with ``{model, messages, tools: [{type:
"function", function: {name, description, parameters}}], tool_choice: {type:
"function", function: {name}}, temperature: 0}``; the answer is
``choices[0].message.tool_calls[0].function.arguments``, a JSON string. A
server that ignores tools but answers JSON in ``content`` is accepted too.
Only the standard library is used, so nothing is installed for it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from mnemo.errors import ProviderError, RateLimited, Timeout
from mnemo.ports import RAW_ANSWER_CHARS, Extraction, ExtractionTool


class OpenAICompatibleExtractor:
    """The Extractor port on an OpenAI-compatible chat completions endpoint, the tool forced; one attempt per call."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 60.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"openai-compatible:{model}"

    def _request(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """The chat completions request: the prompt, the one tool as a function, forced, at temperature 0."""
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": tool.name, "description": tool.description, "parameters": tool.schema},
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": tool.name}},
            "temperature": 0,
        }

    def extract(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """POST the request; RateLimited on HTTP 429, Timeout after ``timeout`` seconds, ProviderError otherwise."""
        return self.extract_counted(system, prompt, tool).answer

    def extract_counted(self, system: str, prompt: str, tool: ExtractionTool) -> Extraction:
        """``extract`` with the answer's ``usage`` (prompt_tokens, completion_tokens) and its raw arguments."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body = json.dumps(self._request(system, prompt, tool)).encode()
        call = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        details = {"service": "extractor", "url": self.url}
        try:
            with urllib.request.urlopen(call, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as error:
            if error.code == 429:
                raise RateLimited("The extraction model is throttling requests", details) from error
            raise ProviderError(
                f"The extraction model answered HTTP {error.code}", {**details, "status": error.code}
            ) from error
        except TimeoutError as error:
            raise Timeout(f"The extraction model did not answer within {self.timeout:g} s", details) from error
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ProviderError(f"The extraction model is unreachable: {error}", details) from error
        usage = payload.get("usage") if isinstance(payload, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        counts = {
            "inputTokens": _tokens(usage.get("prompt_tokens")),
            "outputTokens": _tokens(usage.get("completion_tokens")),
        }
        try:
            answer, raw = self._tool_input(payload, tool, {**details, **counts})
        except ProviderError as error:
            error.details.update(counts)
            raise
        return Extraction(answer, counts["inputTokens"], counts["outputTokens"], raw[:RAW_ANSWER_CHARS])

    @staticmethod
    def _tool_input(payload: Any, tool: ExtractionTool, details: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The tool call's arguments, or JSON answered as content; ProviderError when there are neither."""
        try:
            message = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            raise ProviderError("The extraction model's answer has no choices[0].message object", details)
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and function.get("name") == tool.name:
                arguments = function.get("arguments")
                raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
                return OpenAICompatibleExtractor._object(arguments, details), raw
        if isinstance(message.get("content"), str) and message["content"]:
            return OpenAICompatibleExtractor._object(message["content"], details), message["content"]
        raise ProviderError(f"The extraction model answered without calling {tool.name}", details)

    @staticmethod
    def _object(arguments: Any, details: dict[str, Any]) -> dict[str, Any]:
        """Arguments as a JSON object (a fenced ```json block is accepted); ProviderError otherwise."""
        if isinstance(arguments, dict):
            return arguments
        try:
            value = json.loads(str(arguments).strip().removeprefix("```json").removesuffix("```"))
        except ValueError:
            raw = str(arguments)[:RAW_ANSWER_CHARS]
            raise ProviderError("The extraction model's arguments are not JSON", {**details, "raw": raw}) from None
        if not isinstance(value, dict):
            raw = str(arguments)[:RAW_ANSWER_CHARS]
            raise ProviderError("The extraction model's arguments are not a JSON object", {**details, "raw": raw})
        return value


def _tokens(value: Any) -> int:
    """A token count from a usage object; 0 when it is missing or not a count."""
    return value if isinstance(value, int) and value >= 0 else 0

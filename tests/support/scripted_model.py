"""A scripted OpenAI-compatible model server for the extraction tests: real HTTP, answers chosen per test.

``ScriptedModel`` serves ``POST /chat/completions`` as an OpenAI-compatible server does (the request
``OpenAICompatibleExtractor`` sends; the answer a ``tool_calls`` message with JSON ``arguments`` and a
``usage``). Each request is kept (``requests``), and ``answer(tool, request, ids)`` decides what to say:
by default an empty list for every array the tool's schema has. ``ids`` are the message ids of the
transcript lines in the request (``mnemo.learning.transcript.LINE``). An answer may be:

* a dict: the tool's arguments;
* ``Raw(text)``: the arguments as given (not JSON, say);
* ``Status(code)``: an HTTP error (429 throttles);
* ``Block(event)``: wait until the event is set (or 30 s), then answer an empty list.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mnemo.learning.transcript import LINE


@dataclass
class Raw:
    text: str


@dataclass
class Status:
    code: int


@dataclass
class Block:
    event: threading.Event


Answer = dict[str, Any] | Raw | Status | Block
Script = Callable[[str, dict[str, Any], list[str]], Answer | None]


def empty_answer(request: dict[str, Any]) -> dict[str, Any]:
    """An empty list for every array property of the forced tool's schema."""
    schema = request["tools"][0]["function"]["parameters"]
    return {name: [] for name, spec in schema.get("properties", {}).items() if spec.get("type") == "array"}


def transcript_ids(request: dict[str, Any]) -> list[str]:
    """The message ids of the transcript lines of the request's last message."""
    text = request["messages"][-1]["content"]
    return [match["id"] for match in (LINE.match(line) for line in text.splitlines()) if match]


class ScriptedModel:
    """The server, on 127.0.0.1 at a free port, in a daemon thread; ``close()`` stops it."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or (lambda tool, request, ids: None)
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                tool = body["tools"][0]["function"]["name"]
                answer = model.script(tool, body, transcript_ids(body))
                if isinstance(answer, Block):
                    answer.event.wait(30)
                    answer = None
                if isinstance(answer, Status):
                    self.send_response(answer.code)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                arguments = answer.text if isinstance(answer, Raw) else json.dumps(answer or empty_answer(body))
                payload = {
                    "choices": [{"message": {"tool_calls": [{"function": {"name": tool, "arguments": arguments}}]}}],
                    "usage": {"prompt_tokens": len(json.dumps(body)) // 4, "completion_tokens": len(arguments) // 4},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def calls(self, tool: str) -> list[dict[str, Any]]:
        """The requests that forced ``tool``."""
        return [r for r in self.requests if r["tools"][0]["function"]["name"] == tool]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

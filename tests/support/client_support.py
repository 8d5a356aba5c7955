"""A scripted HTTP server for the client's tests: it answers each request with the next scripted answer
(status, body, headers, a cut-off length, a hook run first) and records what it was sent."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    status: int = 200
    body: bytes = b'{"success": true}'
    headers: dict[str, str] = field(default_factory=dict)
    #: The Content-Length sent (more than the body: the answer is cut off).
    length: int | None = None
    #: Called before answering (to hold the answer back).
    before: Callable[[], None] | None = None


@dataclass
class Script:
    answers: list[Answer] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@contextmanager
def scripted_server(script: Script) -> Iterator[str]:
    """Serves ``script`` on a free port; yields its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            script.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
            answer = script.answers.pop(0) if script.answers else Answer(500, b"script exhausted")
            if answer.before is not None:
                answer.before()
            self.send_response(answer.status)
            for name, value in {"Content-Type": "application/json", **answer.headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(answer.length or len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()
            if answer.length:
                self.close_connection = True

        do_POST = do_GET = _answer

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()

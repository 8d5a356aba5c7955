"""HTTP/1.1 over a bare socket, for tests that need the exact bytes a client library would hide or refuse.

A request is written byte for byte; answers are read off the stream one by one (Content-Length, chunked, or up
to the close), so a test can see a missing status line, count the answers to pipelined requests, or tell an
open connection from a closed one.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass, field
from typing import Any

_STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})(?: [^\r\n]*)?")


@dataclass
class Answer:
    """One HTTP answer as read off the wire."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Wire:
    """A socket and what has been read from it but not yet parsed."""

    def __init__(self, port: int, timeout: float = 15.0, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = b""
        self.closed = False

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *_: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        """Read more; False once the peer has closed (a reset counts as a close)."""
        if self.closed:
            return False
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.buffer += chunk
        return True

    def _take_line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            if not self._fill():
                raise EOFError(f"the connection closed mid-line: {self.buffer!r}")
        line, _, self.buffer = self.buffer.partition(b"\r\n")
        return line

    def _take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            if not self._fill():
                raise EOFError(f"the connection closed {count - len(self.buffer)} bytes short")
        taken, self.buffer = self.buffer[:count], self.buffer[count:]
        return taken

    def at_eof(self) -> bool:
        """True when nothing more arrives before the peer closes (blocks until then, or the socket timeout)."""
        return not self.buffer and not self._fill()

    def answer(self) -> Answer | None:
        """The next answer, or None if the peer closed first. A first line that is not a status line fails."""
        if not self.buffer and not self._fill():
            return None
        first = self._take_line()
        matched = _STATUS_LINE.fullmatch(first)
        assert matched, f"not an HTTP/1.x status line: {first!r} (then {self.buffer[:300]!r})"
        headers: dict[str, str] = {}
        while line := self._take_line():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int(self._take_line().split(b";")[0], 16):
                body += self._take(size)
                self._take_line()
            while self._take_line():  # trailers
                pass
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        else:
            while self._fill():
                pass
            body, self.buffer = self.buffer, b""
        return Answer(int(matched.group(1)), headers, body)

    def answers_until_close(self) -> list[Answer]:
        """Every answer the peer sends before it closes the connection."""
        found = []
        while (answer := self.answer()) is not None:
            found.append(answer)
        return found


def request(
    method: str,
    path: str,
    port: int,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    host: str | None = None,
) -> bytes:
    """The bytes of one HTTP/1.1 request: Host (loopback and ``port`` unless given), the headers as given (values
    encoded as Latin-1, so any byte can be sent), and Content-Length for a body."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host or f'127.0.0.1:{port}'}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (body or b"")


def chunked(body: bytes) -> bytes:
    """``body`` in the chunked transfer coding (two chunks and the last one)."""
    half = len(body) // 2
    parts = [body[:half], body[half:]]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts if part) + b"0\r\n\r\n"


def exchange(port: int, data: bytes, timeout: float = 15.0) -> Answer:
    """Send ``data`` on a new connection; the first answer."""
    with Wire(port, timeout) as wire:
        wire.send(data)
        answer = wire.answer()
    assert answer is not None, "the server closed the connection without answering"
    return answer

"""uvicorn's h11 protocol with a deadline on each request's head, and the envelope for what h11 refuses.

uvicorn times out an idle keep-alive connection, but not one that is still
sending its request line and headers: a client holding half a request line
kept its connection (and a file descriptor) for ever. Here every request head,
the first on a connection and each after a response, must be complete within
``HEAD_TIMEOUT_SECONDS``, or the connection is closed.

h11 parses strictly (RFC 9112): a malformed request line, an HTTP version other
than 1.x, a Transfer-Encoding other than ``chunked`` are refused. uvicorn
answers those with a plain-text 400; here the body is the error envelope, so
every answer a client gets has the same shape. The connection closes after it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mnemo.errors import invalid_field

HEAD_TIMEOUT_SECONDS = 10.0


class GuardedH11Protocol(H11Protocol):
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:  # the head is in: a request is being read or served
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_SECONDS, self._head_timed_out)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """h11 could not parse the request: the envelope, then close (as uvicorn does)."""
        body = json.dumps(invalid_field("request", "not a valid HTTP/1.1 request").envelope()).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            # h11 cannot frame an answer after every kind of error (a request line it could not read leaves
            # no version to answer in): write the status line by hand rather than send nothing.
            head = b"HTTP/1.1 400 Bad Request\r\n" + b"".join(k + b": " + v + b"\r\n" for k, v in headers) + b"\r\n"
            self.transport.write(head + body)
        self.transport.close()

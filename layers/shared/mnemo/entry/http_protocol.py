"""uvicorn's h11 protocol with a deadline on each request's head, and the envelope for what h11 refuses.

uvicorn times out an idle keep-alive connection, but not one that is still
sending its request line and headers: a client holding half a request line
kept its connection (and a file descriptor) for ever. Here every request head,
the first on a connection and each after a response, must be complete within
``HEAD_TIMEOUT_SECONDS``, or the connection is closed.

h11 parses strictly (RFC 9112): a malformed request line (``http/1.1`` in
lower case) or a Transfer-Encoding other than ``chunked`` is refused (an HTTP
version other than 1.x parses, and ``http_guard`` answers it 505). uvicorn
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
        # uvicorn answers h11's refusal without its reason; keep the reason to name the field and status.
        self._refusal: h11.RemoteProtocolError | None = None
        parse = self.conn.next_event

        def next_event() -> Any:
            try:
                return parse()
            except h11.RemoteProtocolError as error:
                self._refusal = error
                raise

        self.conn.next_event = next_event  # type: ignore[method-assign]

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def eof_received(self) -> bool:  # type: ignore[override]  # asyncio.Protocol returns bool | None
        """A client that half-closes after sending its request (``shutdown(SHUT_WR)``, ``nc -N``) still
        gets the answer; the connection closes after it. Before a whole request head, it just closes."""
        if self.cycle is None or self.cycle.response_complete:
            return False
        if self.conn.their_state is h11.SEND_BODY:  # the body can never complete: say so now
            self._refusal = h11.RemoteProtocolError("the connection was half-closed before the whole body")
            self.send_400_response("")
            return False
        self.cycle.keep_alive = False
        return True

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
        """h11 could not parse the request: the envelope naming what was wrong, then close (as uvicorn does)."""
        refusal = getattr(self, "_refusal", None)
        reason = str(refusal) if refusal is not None else "not a valid HTTP/1.1 request"
        status = getattr(refusal, "error_status_hint", 400)
        envelope = invalid_field(_refused_field(reason), reason).envelope()
        body = json.dumps(envelope).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=status, headers=headers)))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            # A request refused mid-body has an answer under way, or none can be framed: write it by hand.
            phrase = {400: b"Bad Request", 431: b"Request Header Fields Too Large", 501: b"Not Implemented"}
            head = b"HTTP/1.1 %d %s\r\n" % (status, phrase.get(status, b"Bad Request"))
            head += b"".join(key + b": " + value + b"\r\n" for key, value in headers) + b"\r\n"
            self.transport.write(head + body)
        self.transport.close()


def _refused_field(reason: str) -> str:
    """The part of the request an h11 refusal is about, as the envelope's field."""
    lowered = reason.lower()
    for marker, field in (
        ("content-length", "Content-Length"),
        ("transfer-encoding", "Transfer-Encoding"),
        ("chunk", "body"),
        ("body", "body"),
        ("host", "Host"),
        ("buffer too long", "headers"),
        ("header", "headers"),
    ):
        if marker in lowered:
            return field
    return "request"

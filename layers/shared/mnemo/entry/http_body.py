"""Reading a request body with a size limit and a deadline, for `mnemo serve`.

A tool call's arguments are at most ``MAX_BODY_BYTES`` of JSON; a larger body
is refused as INVALID_INPUT naming ``body``. A declared Content-Length past
``MAX_DRAINED_BYTES`` is refused before reading and the connection closed;
below it the server reads and drops the rest (uvicorn does), so the client
reads the answer rather than a reset. A client that takes longer than
``BODY_TIMEOUT_SECONDS`` to send its body gets 408 and the connection closes:
a slow sender cannot hold a worker.
"""

from __future__ import annotations

import anyio
from starlette.requests import Request

from mnemo.errors import InvalidInput, MnemoError, RequestTimeout

MAX_BODY_BYTES = 1 << 20
MAX_DRAINED_BYTES = 16 << 20
BODY_TIMEOUT_SECONDS = 30.0


class BodyError(Exception):
    """A body that cannot be taken: the error to answer, and whether the connection must close after it."""

    def __init__(self, error: MnemoError, *, close: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.close = close


def _too_large() -> InvalidInput:
    return InvalidInput(f"body: larger than {MAX_BODY_BYTES} bytes", {"field": "body"})


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, or BodyError. ``starlette.requests.ClientDisconnect`` when the client hangs up."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyError(_too_large(), close=int(declared) > MAX_DRAINED_BYTES)
    chunks = bytearray()
    with anyio.move_on_after(BODY_TIMEOUT_SECONDS) as deadline:
        async for chunk in request.stream():
            chunks += chunk
            if len(chunks) > limit:
                raise BodyError(_too_large(), close=True)
    if deadline.cancelled_caught:
        message = f"body: not received within {BODY_TIMEOUT_SECONDS:g} seconds"
        raise BodyError(RequestTimeout(message, {"field": "body"}), close=True)
    return bytes(chunks)

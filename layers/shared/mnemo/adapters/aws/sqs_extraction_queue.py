"""ExtractionQueue on Amazon SQS: a FIFO queue of notices, and a standard queue of delayed idle wake-ups.

``notify`` sends the notice to the FIFO queue with

- ``MessageGroupId`` = SHA-256 of the stream: SQS hands a group's messages to one consumer at a time, in
  order, so the runs of one session never overlap and never pass each other;
- ``MessageDeduplicationId`` = SHA-256 of (stream, reason, token): the same notice sent twice within SQS's
  five-minute deduplication interval (a retried request, a wake-up delivered twice) is delivered once.

Both are hashes because SQS allows at most 128 characters from a fixed set in either, and a stream key may
be 512 characters of anything. The queue is created with ``ContentBasedDeduplication`` off: the body
carries no time, so the explicit id is what says two notices are the same.

``wake_later`` sends the notice to the wake queue, a standard queue, with ``DelaySeconds``: a FIFO queue has
no per-message delay (only a queue-wide one). Its consumer forwards the notice into the FIFO queue when it
comes due (``mnemo.entry.extraction_events``), so the run it asks for is serialised with the session's
others.

The body is the notice as JSON (``encode_notice``); ``decode_notice`` reads it back and refuses anything
else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal, cast

from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.errors import ProviderError
from mnemo.ports import StreamNotice

#: SQS's longest per-message delay (DelaySeconds), and so the longest wake-up the port accepts.
MAX_DELAY_SECONDS = 900
#: The reasons a notice may give (StreamNotice.reason; a contract test checks they agree).
REASONS = ("turns", "idle", "demand")
_FIELDS = frozenset({"stream", "identity", "reason", "token"})
#: StreamNotice.stream's documented bound (a scope key).
MAX_STREAM_CHARS = 512


def group_id(notice: StreamNotice) -> str:
    """The FIFO message group of a notice: its stream, hashed (64 hex characters)."""
    return hashlib.sha256(notice.stream.encode()).hexdigest()


def deduplication_id(notice: StreamNotice) -> str:
    """The FIFO deduplication id of a notice: its stream, reason and token, hashed (64 hex characters).

    JSON keeps the three apart, so ("a|b", "", ...) and ("a", "b|", ...) never collide.
    """
    return hashlib.sha256(json.dumps([notice.stream, notice.reason, notice.token]).encode()).hexdigest()


def encode_notice(notice: StreamNotice) -> str:
    """A notice as the message body both queues carry: a JSON object of its four fields."""
    return json.dumps(asdict(notice), separators=(",", ":"), sort_keys=True)


def decode_notice(body: str) -> StreamNotice:
    """The notice a message body carries; ValueError for a body that is not exactly one.

    Strict on purpose: the consumer drops what this refuses (no retry can repair a body), so a notice must
    not half-parse into the wrong stream or identity.
    """
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        raise ValueError("the body is not JSON") from None
    if not isinstance(data, dict) or set(data) != _FIELDS:
        raise ValueError(f"a notice has exactly the fields {sorted(_FIELDS)}")
    stream, identity, reason, token = data["stream"], data["identity"], data["reason"], data["token"]
    if not isinstance(stream, str) or not stream or len(stream) > MAX_STREAM_CHARS:
        raise ValueError(f"stream must be a string of 1 to {MAX_STREAM_CHARS} characters")
    if not isinstance(identity, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in identity.items()
    ):
        raise ValueError("identity must map strings to strings")
    if reason not in REASONS:
        raise ValueError(f"reason must be one of {', '.join(REASONS)}")
    if not isinstance(token, str):
        raise ValueError("token must be a string")
    return StreamNotice(
        stream=stream, identity=identity, reason=cast(Literal["turns", "idle", "demand"], reason), token=token
    )


def check_delay(delay_seconds: int) -> int:
    """``delay_seconds`` when it is a whole number of seconds in 0..900; ValueError otherwise."""
    if isinstance(delay_seconds, bool) or not isinstance(delay_seconds, int):
        raise ValueError(f"delay_seconds must be an integer, not {type(delay_seconds).__name__}")
    if not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
        raise ValueError(f"delay_seconds must be between 0 and {MAX_DELAY_SECONDS}, not {delay_seconds}")
    return delay_seconds


class SqsExtractionQueue(LazyClient):
    """The ExtractionQueue port on SQS: ``queue_url`` a FIFO queue, ``wake_queue_url`` a standard one.

    ``wake_queue_url`` may be None where nothing arms wake-ups (the tools that store turns only notify);
    ``wake_later`` then answers PROVIDER_ERROR naming the missing setting.
    """

    def __init__(self, queue_url: str, wake_queue_url: str | None, client_factory: Callable[[], Any]) -> None:
        self._queue_url = queue_url
        self._wake_queue_url = wake_queue_url
        super().__init__(client_factory)

    def notify(self, notice: StreamNotice) -> None:
        """SendMessage to the FIFO queue, grouped by stream and deduplicated by (stream, reason, token)."""
        self._send(
            QueueUrl=self._queue_url,
            MessageBody=encode_notice(notice),
            MessageGroupId=group_id(notice),
            MessageDeduplicationId=deduplication_id(notice),
        )

    def wake_later(self, notice: StreamNotice, delay_seconds: int) -> None:
        """SendMessage to the wake queue with ``DelaySeconds``; ValueError for a delay outside 0..900."""
        delay = check_delay(delay_seconds)
        if not self._wake_queue_url:
            raise ProviderError(
                "No extraction wake queue is configured: set MNEMO_EXTRACTION_WAKE_QUEUE_URL",
                {"service": "SQS", "setting": "MNEMO_EXTRACTION_WAKE_QUEUE_URL"},
            )
        self._send(QueueUrl=self._wake_queue_url, MessageBody=encode_notice(notice), DelaySeconds=delay)

    def _send(self, **request: Any) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.send_message(**request)
        except (ClientError, BotoCoreError) as error:
            raise provider_error("SQS", error) from error

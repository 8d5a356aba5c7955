"""The extraction front door: SQS batches of extraction notices in, learning runs out.

Two queues feed one function (template.yaml, ``ExtractionFunction``; docs/deploy.md, "Extraction on AWS"):

- **the FIFO queue** (``MNEMO_EXTRACTION_QUEUE_URL``): each notice goes to
  ``services.learning.on_notice``, which runs the strategies when enough turns wait (or on demand) and
  otherwise arms an idle wake-up. SQS delivers a session's notices (one message group) in order and one
  batch at a time; Powertools' ``SqsFifoPartialProcessor`` with ``skip_group_on_error`` keeps that order
  when one fails: the rest of its group in the batch is reported failed unprocessed, so it is retried
  after the failed one, while the other sessions' notices go on.
- **the wake queue** (``MNEMO_EXTRACTION_WAKE_QUEUE_URL``, standard, for SQS's per-message delay): an idle
  wake-up come due. It is not run here but forwarded into the FIFO queue (``extraction_queue.notify``),
  so that it is serialised with the session's other notices.

Failures are reported per message (``ReportBatchItemFailures``): SQS makes a failed message visible again
after the queue's visibility timeout and moves it to the queue's dead-letter queue after five receives. A
body that is not a notice is logged and dropped, never retried: no retry can repair it. A FIFO notice that
would start with less than ``RESERVE_SECONDS`` of the invocation left is handed back unprocessed (with the
rest of its group) rather than cut off by the timeout, which would send the whole batch round again.

EMF metrics (``mnemo.observability``): ``ExtractionNotices`` (FIFO notices handled), ``ExtractionWakeUps``
(wake-ups forwarded), ``ExtractionFailedNotices`` (messages handed back for a retry) and
``ExtractionDroppedNotices`` (bodies that were not notices).

``LocalWorker`` is the same consumer for the embedded server: a thread draining the in-process queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, cast

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from mnemo import observability
from mnemo.adapters.aws.sqs_extraction_queue import decode_notice
from mnemo.adapters.local.extraction_queue import LocalExtractionQueue
from mnemo.observability import logger
from mnemo.ports import StreamNotice
from mnemo.runtime import get_services

#: The correlation id of an invocation: its first message's id.
SQS_BATCH = "Records[0].messageId"
#: Seconds a FIFO notice needs left in the invocation to be started: a run makes several model calls.
RESERVE_SECONDS = 120.0


class Learning(Protocol):
    """What this door needs of ``Services.learning`` (mnemo.learning.service.LearningService)."""

    def on_notice(self, notice: StreamNotice) -> Any:
        """Handle one notice: run the strategies, or arm an idle wake-up."""
        ...


class Deferred(Exception):
    """Not started: too little of the invocation is left. The message is retried, not dropped."""


def learning() -> Learning:
    """The learning service of the process-wide services."""
    # Typed through the Protocol above, so this door depends on on_notice only.
    services: Any = get_services()
    return cast(Learning, services.learning)


def queue_name(arn_or_url: str) -> str:
    """A queue's name from its ARN (``arn:aws:sqs:<region>:<account>:<name>``) or URL (``.../<account>/<name>``)."""
    return arn_or_url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def _notice(record: SQSRecord) -> StreamNotice | None:
    """The record's notice, or None (logged and counted) when its body is not one."""
    try:
        return decode_notice(record.body)
    except ValueError as error:
        logger.warning(
            "dropped a message that is not an extraction notice",
            extra={"messageId": record.message_id, "error": str(error), "bodyChars": len(record.body or "")},
        )
        observability.count("ExtractionDroppedNotices")
        return None


def _seconds_left(context: Any) -> float:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return remaining() / 1000.0 if callable(remaining) else float("inf")


def _fifo_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def handle(record: SQSRecord) -> str:
        notice = _notice(record)
        if notice is None:
            return "dropped"
        if _seconds_left(context) < RESERVE_SECONDS:
            raise Deferred(f"{_seconds_left(context):.0f} s left, {RESERVE_SECONDS:.0f} s needed")
        outcome = learning().on_notice(notice)
        observability.count("ExtractionNotices")
        logger.debug("notice handled", extra={"messageId": record.message_id, "reason": notice.reason})
        return str(outcome)

    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    return dict(process_partial_response(event=event, record_handler=handle, processor=processor, context=context))


def _wake_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    def forward(record: SQSRecord) -> str:
        notice = _notice(record)
        if notice is None:
            return "dropped"
        get_services().extraction_queue.notify(notice)
        observability.count("ExtractionWakeUps")
        return "forwarded"

    processor = BatchProcessor(event_type=EventType.SQS)
    return dict(process_partial_response(event=event, record_handler=forward, processor=processor, context=context))


@observability.door(SQS_BATCH)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A batch of one of the two queues: the FIFO queue's notices run, the wake queue's are forwarded."""
    if "mnemoRepair" in event:
        return _repair(context)
    records = event.get("Records") or []
    if not records:
        return {"batchItemFailures": []}
    sources = {queue_name(str(record.get("eventSourceARN", ""))) for record in records}
    settings = get_services().settings
    fifo = queue_name(settings.extraction_queue_url or "")
    wake = queue_name(settings.extraction_wake_queue_url or "")
    logger.append_keys(batchSize=len(records))
    if sources == {fifo}:
        response = _fifo_batch(event, context)
    elif sources == {wake}:
        response = _wake_batch(event, context)
    else:
        # A mapping to a queue this function was not configured for: fail loudly (the batch is retried, then
        # dead-lettered) rather than guess which of the two it is.
        raise ValueError(f"records from {sorted(sources)}; expected the queue {fifo!r} or {wake!r}")
    observability.count("ExtractionFailedNotices", len(response.get("batchItemFailures") or []))
    return response


def _repair(context: Any) -> dict[str, Any]:
    """A direct invocation ``{"mnemoRepair": {}}``: one repair pass (``mnemo.learning.repair``), stopped with
    ``RESERVE_SECONDS`` to spare; its report says ``done: false`` when it should be invoked again."""
    from mnemo.learning.repair import Repair

    deadline = time.monotonic() + max(0.0, _seconds_left(context) - RESERVE_SECONDS)
    report = Repair(get_services().records).run(deadline=deadline).view()
    logger.info("repair pass", extra=report)
    return report


# ------------------------------------------------------------------ local ---
class LocalWorker:
    """The embedded server's extraction consumer: a daemon thread taking notices from the in-process queue and
    handing each to ``handle`` (by default ``services.learning.on_notice``), one at a time, so the runs of a
    stream never overlap in this process.

    A notice that fails is logged and not retried: its turns still wait in the records, and the stream's next
    notice (a new turn, an idle wake-up, a run on demand) finds them. With ``sweep`` (``learning.run_due``), the
    same thread also looks at every stream with waiting turns every ``sweep_seconds``: that finds the turns a
    restart left behind and those other server processes stored (each has a queue of its own).
    """

    def __init__(
        self,
        queue: LocalExtractionQueue,
        handle: Callable[[StreamNotice], Any] | None = None,
        poll_seconds: float = 1.0,
        sweep: Callable[[], Any] | None = None,
        sweep_seconds: float = 15.0,
    ) -> None:
        self._queue = queue
        self._handle = handle or (lambda notice: learning().on_notice(notice))
        self._poll = poll_seconds
        self._sweep = sweep
        self._sweep_seconds = sweep_seconds
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="extraction-worker", daemon=True)

    def start(self) -> None:
        """Start draining the queue."""
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the notice in hand (waiting up to ``timeout`` seconds for it); queued ones are dropped."""
        self._stopping.set()
        self._queue.close()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        swept = time.monotonic()
        while not self._stopping.is_set():
            if self._sweep is not None and time.monotonic() - swept >= self._sweep_seconds:
                swept = time.monotonic()
                try:
                    self._sweep()
                except Exception:  # the next sweep tries again
                    logger.exception("extraction sweep failed")
            notice = self._queue.take(timeout=self._poll)
            if notice is None:
                continue
            try:
                self._handle(notice)
            except Exception:  # the worker outlives one bad run; the turns wait for the next notice
                logger.exception("extraction notice failed", extra={"reason": notice.reason})

"""ExtractionQueue in process: the embedded server's extraction notices, drained by a background thread.

What SQS does on AWS, done here with a lock and a condition:

- ``notify`` appends the notice to one first-in, first-out line and wakes the worker. One line for every
  stream keeps each stream's notices in order, as the FIFO queue's message groups do; a notice equal to one
  seen within the deduplication window (the same stream, reason and token, five minutes as on SQS) is
  dropped.
- ``wake_later`` keeps the notice in a heap of due times; when it comes due it joins the line through the
  same deduplication as ``notify``, as the wake queue's consumer forwards it into the FIFO queue.
- ``take`` is the worker's side: the next notice, once one is due.

Nothing is persisted: a notice lost with the process costs nothing, because the turns it announced wait in
the records and the next notice (or run on demand) of their stream finds them.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from mnemo.ports import StreamNotice

#: SQS's longest per-message delay, which the port keeps everywhere.
MAX_DELAY_SECONDS = 900
#: SQS FIFO's deduplication interval.
DEDUPLICATION_SECONDS = 300.0

_Key = tuple[str, str, str]


def _check_delay(delay_seconds: int) -> int:
    if isinstance(delay_seconds, bool) or not isinstance(delay_seconds, int):
        raise ValueError(f"delay_seconds must be an integer, not {type(delay_seconds).__name__}")
    if not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
        raise ValueError(f"delay_seconds must be between 0 and {MAX_DELAY_SECONDS}, not {delay_seconds}")
    return delay_seconds


class LocalExtractionQueue:
    """The ExtractionQueue port in process (see the module docstring). Thread-safe.

    ``clock`` is monotonic seconds (tests pass their own); ``deduplication_seconds`` the window in which an
    equal notice is delivered once.
    """

    def __init__(
        self,
        deduplication_seconds: float = DEDUPLICATION_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._window = deduplication_seconds
        self._clock = clock
        self._condition = threading.Condition()
        self._line: deque[StreamNotice] = deque()
        #: (due time, order of arrival, notice): the order breaks ties, so notices never compare.
        self._delayed: list[tuple[float, int, StreamNotice]] = []
        self._arrivals = itertools.count()
        #: key -> when it was first seen, oldest first (a key is seen again only after it left the window).
        self._seen: OrderedDict[_Key, float] = OrderedDict()
        self._closed = False

    def notify(self, notice: StreamNotice) -> None:
        """Queue the notice behind every one before it and wake the worker (once per window, as SQS FIFO)."""
        with self._condition:
            if self._enqueue(notice, self._clock()):
                self._condition.notify_all()

    def wake_later(self, notice: StreamNotice, delay_seconds: int) -> None:
        """Queue the notice after ``delay_seconds``; ValueError for a delay outside 0..900."""
        delay = _check_delay(delay_seconds)
        with self._condition:
            heapq.heappush(self._delayed, (self._clock() + delay, next(self._arrivals), notice))
            # The worker may be asleep until a later due time, or for good: it must look at this one.
            self._condition.notify_all()

    def take(self, timeout: float | None = None) -> StreamNotice | None:
        """The next notice, waiting up to ``timeout`` seconds for one to be due (None: until one is, or the queue
        closes); None when none came due in time, or the queue is closed.

        Not part of the port: it is the worker's side, which on AWS is the SQS event source mapping.
        """
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        with self._condition:
            while not self._closed:
                now = self._clock()
                self._release_due(now)
                if self._line:
                    return self._line.popleft()
                wait = self._delayed[0][0] - now if self._delayed else None
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                # ``clock`` and the condition's wait may be different clocks: wait at most one second at a time
                # for a delayed notice, so a due one is seen soon whatever the clock.
                self._condition.wait(None if wait is None else min(max(wait, 0.0), 1.0))
            return None

    def close(self) -> None:
        """Stop handing notices out: a waiting ``take`` returns None at once, and so does every later one.

        Not part of the port: the worker's shutdown (the server stopping). Pending notices are dropped; their
        turns still wait in the records.
        """
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    # ------------------------------------------------------------ internals
    def _release_due(self, now: float) -> None:
        """Move the wake-ups due by ``now`` into the line, in due order."""
        while self._delayed and self._delayed[0][0] <= now:
            _, _, notice = heapq.heappop(self._delayed)
            self._enqueue(notice, now)

    def _enqueue(self, notice: StreamNotice, now: float) -> bool:
        """Append the notice unless an equal one was seen within the window; whether it was appended."""
        while self._seen:
            key, seen_at = next(iter(self._seen.items()))
            if now - seen_at < self._window:
                break
            del self._seen[key]
        key = (notice.stream, notice.reason, notice.token)
        if key in self._seen:
            return False
        self._seen[key] = now
        self._line.append(notice)
        return True

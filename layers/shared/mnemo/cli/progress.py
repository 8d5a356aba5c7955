"""Progress of a long command on stderr: a bar redrawn in place on a terminal, a line now and then elsewhere.

A run shorter than ``QUIET_SECONDS`` shows nothing, so quick commands and their
tests print only their answer. On a terminal the bar is redrawn at most every
``REDRAW_SECONDS``; in a log (not a terminal) a line is written every
``LINE_SECONDS``, so a CI log of a long import stays readable.
"""

from __future__ import annotations

import time
from typing import TextIO

QUIET_SECONDS = 2.0
REDRAW_SECONDS = 0.1
LINE_SECONDS = 2.0
BAR_WIDTH = 30


class Progress:
    """``update(done, detail)`` as work goes on, ``close()`` at the end; ``total`` None when it is not known."""

    def __init__(self, label: str, total: int | None, stream: TextIO | None) -> None:
        self.label, self.total, self.stream = label, total, stream
        self._started = time.perf_counter()
        self._shown = 0.0
        self._drawn = False
        self._done = 0
        self._detail = ""
        self._tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def render(self, now: float) -> str:
        rate = self._done / max(now - self._started, 1e-9)
        detail = f" {self._detail}" if self._detail else ""
        if self.total:
            share = min(self._done / self.total, 1.0)
            filled = int(share * BAR_WIDTH)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            return f"{self.label} [{bar}] {share:4.0%} {self._done:,}/{self.total:,} ({rate:,.0f}/s){detail}"
        return f"{self.label} {self._done:,} ({rate:,.0f}/s){detail}"

    def update(self, done: int, detail: str = "") -> None:
        self._done, self._detail = done, detail
        if self.stream is None:
            return
        now = time.perf_counter()
        if now - self._started < QUIET_SECONDS or now - self._shown < (REDRAW_SECONDS if self._tty else LINE_SECONDS):
            return
        self._shown = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        assert self.stream is not None
        if self._tty:
            self.stream.write("\r\x1b[2K" + self.render(now))
        else:
            self.stream.write(self.render(now) + "\n")
        self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        """The final state, once, if anything was shown (a quick run stays silent)."""
        if self.stream is None or not self._drawn:
            return
        self._draw(time.perf_counter())
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()

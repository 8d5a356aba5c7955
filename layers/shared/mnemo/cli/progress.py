"""Progress of a long command on stderr: the one progress line every `mnemo` command draws.

``Progress(label, total, stream, look)``: ``update(done, detail)`` as work goes on,
``close()`` at the end. On a terminal the line is redrawn in place; elsewhere (a
log) it is written as lines. What the domain code sees is only a callback,
``progress.update``, told the count done and what is being done.

A look says how the line reads and when it is drawn:

- ``RATE`` (export, import): a bar, the share, the counts and the rate. A run
  shorter than ``QUIET_SECONDS`` shows nothing, so quick commands and their tests
  print only their answer. On a terminal the bar is redrawn at most every
  ``REDRAW_SECONDS``; in a log (not a terminal) a line is written every
  ``LINE_SECONDS``, so a CI log of a long import stays readable.
- ``FILES`` (workspace push and pull): every file, a bar and its path fitted to the
  terminal's width on a terminal; a plain line per file (verb, count, path) otherwise.
- ``FILES_BAR`` (knowledge push): every file after a bar, redrawn in place
  wherever the line goes.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

QUIET_SECONDS = 2.0
REDRAW_SECONDS = 0.1
LINE_SECONDS = 2.0
BAR_WIDTH = 30
#: The workspace's bar is narrower: its line also holds the file's path, fitted to the terminal.
FILES_BAR_WIDTH = 24
#: The knowledge push shows this much of a file's path, padded so a shorter path covers a longer one.
PATH_WIDTH = 60


@dataclass(frozen=True)
class Look:
    """How a progress line reads and when it is drawn."""

    #: The line for the progress so far, without the carriage return or the newline around it.
    line: Callable[[Progress, float], str]
    #: Quiet at first, then drawn now and then, and once more at the end; otherwise drawn at every update.
    throttled: bool
    #: Redrawn in place even when the stream is not a terminal.
    always_in_place: bool = False


def _bar(filled: int, width: int) -> str:
    return "#" * filled + "-" * (width - filled)


def _rate_line(progress: Progress, now: float) -> str:
    done, total = progress.done, progress.total
    rate = done / max(now - progress.started, 1e-9)
    detail = f" {progress.detail}" if progress.detail else ""
    clear = "\x1b[2K" if progress.in_place else ""  # the whole line: the rate may get shorter
    if total:
        share = min(done / total, 1.0)
        bar = _bar(int(share * BAR_WIDTH), BAR_WIDTH)
        return f"{clear}{progress.label} [{bar}] {share:4.0%} {done:,}/{total:,} ({rate:,.0f}/s){detail}"
    return f"{clear}{progress.label} {done:,} ({rate:,.0f}/s){detail}"


def _files_line(progress: Progress, now: float) -> str:
    done, total, path = progress.done, progress.total or 0, progress.detail
    if not progress.in_place:
        return f"{progress.label} {done}/{total} {path}"
    columns = shutil.get_terminal_size((80, 24)).columns
    head = f"{progress.label} [{_bar(FILES_BAR_WIDTH * done // max(total, 1), FILES_BAR_WIDTH)}] {done}/{total} "
    room = max(columns - len(head) - 1, 10)
    if len(path) > room:
        path = "…" + path[-(room - 1) :]
    return f"{head}{path:<{room}}"


def _files_bar_line(progress: Progress, now: float) -> str:
    done, total = progress.done, progress.total or 0
    bar = _bar(BAR_WIDTH * done // max(total, 1), BAR_WIDTH)
    return f"[{bar}] {done}/{total} {progress.detail[:PATH_WIDTH]:<{PATH_WIDTH}}"


RATE = Look(_rate_line, throttled=True)
FILES = Look(_files_line, throttled=False)
FILES_BAR = Look(_files_bar_line, throttled=False, always_in_place=True)


class Progress:
    """``update(done, detail)`` as work goes on, ``close()`` at the end; ``total`` None when it is not known."""

    def __init__(self, label: str, total: int | None, stream: TextIO | None, look: Look = RATE) -> None:
        self.label, self.total, self.stream, self.look = label, total, stream, look
        self.started = time.perf_counter()
        self.done = 0
        self.detail = ""
        tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.in_place = tty or self.look.always_in_place
        self._shown = 0.0
        self._drawn = False

    def update(self, done: int, detail: str = "") -> None:
        """Record ``done`` and ``detail`` and draw the line, unless the look throttles it (quiet at first, then at most
        every ``REDRAW_SECONDS`` in place or ``LINE_SECONDS`` in a log); nothing is drawn without a stream."""
        self.done, self.detail = done, detail
        if self.stream is None:
            return
        now = time.perf_counter()
        if self.look.throttled:
            interval = REDRAW_SECONDS if self.in_place else LINE_SECONDS
            if now - self.started < QUIET_SECONDS or now - self._shown < interval:
                return
            self._shown = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        assert self.stream is not None
        line = self.look.line(self, now)
        self.stream.write("\r" + line if self.in_place else line + "\n")
        self._drawn = True
        self.stream.flush()

    def close(self) -> None:
        """The final state, once, if anything was shown (a quick run stays silent); ends a line drawn in place."""
        if self.stream is None or not self._drawn:
            return
        if self.look.throttled:  # the last update may not have been drawn
            self._draw(time.perf_counter())
        if self.in_place:
            self.stream.write("\n")
            self.stream.flush()

"""The package's one clock and its one time format.

Every time Mnemo stores or answers is ISO 8601 in UTC with a ``Z``: ``2026-03-01T09:30:00.123456Z``, with
microseconds when the time has any (``iso``), or always (``timespec="microseconds"``) where text must sort in
time order at a fixed width (graph validity times, erasure receipts). ``now`` is the one clock every module
reads the current time from.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    """The current time, in UTC."""
    return datetime.now(UTC)


def iso(moment: datetime, timespec: str = "auto") -> str:
    """A time as Mnemo writes it: ISO 8601 in UTC with a ``Z`` (``timespec`` as ``datetime.isoformat``'s)."""
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def now_iso(timespec: str = "auto") -> str:
    """The current time as Mnemo writes it."""
    return iso(now(), timespec)


def iso_of_epoch(seconds: float, timespec: str = "auto") -> str:
    """Epoch seconds as Mnemo writes a time."""
    return iso(datetime.fromtimestamp(seconds, UTC), timespec)


def parse_iso(text: str) -> datetime:
    """A time Mnemo wrote (or any ISO 8601 text with a ``Z`` or an offset) back as a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))

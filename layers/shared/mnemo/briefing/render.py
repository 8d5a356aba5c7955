"""How a context is written: section headings, dates a reader can answer "when" from, one line per item.

Dates are written as ``8 May 2023``: a reader (or a model) answers "when did..." from the text alone, for a
few tokens (a date costs about 4 of pinned_context's estimated tokens, an ISO time about 12). Turns are
grouped under the day they were said, in the order they were said, so a day costs its heading once.
"""

from __future__ import annotations

from datetime import datetime

from mnemo.briefing.models import Section

HEADINGS: dict[Section, str] = {
    "profile": "## About the user",
    "summary": "## This session so far",
    "memories": "## Memories",
    "turns": "## From past conversations",
    "blocks": "## Pinned blocks",
}


def day(moment: datetime) -> str:
    """``8 May 2023``: a date in words, unambiguous in any locale."""
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def memory_line(text: str, moment: datetime | None) -> str:
    """One memory: ``- (8 May 2023) text``, or ``- text`` when it has no date."""
    flat = " ".join(text.split())
    return f"- ({day(moment)}) {flat}" if moment is not None else f"- {flat}"


def turn_lines(text: str) -> str:
    """A turn as stored (``speaker: content`` lines), each on one line."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def day_heading(moment: datetime) -> str:
    return f"{day(moment)}:"

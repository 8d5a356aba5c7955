"""Packing a context into a token budget: the most value per token, written in sections. Pure: no I/O.

Each candidate is a ``Piece``: its rendered line(s), its section and its value. Pieces marked ``fixed`` (the
profile, the session's summary, pinned blocks) are taken first, in the order given, when they fit: they
are what the agent should always see. The ranked pieces (memories and turns) are then taken by value per
token, best first, each when its line, and the heading of its section or day if it opens one, still fits:
one long turn of middling rank gives way to two short ones that rank almost as well, which is how a
budget holds more of what answers the query than rank order does. A piece that does not fit is skipped
(``truncated``) and smaller ones behind it may still be taken.

A long turn also offers its ``excerpt`` (``mnemo.briefing.excerpts``), worth ``EXCERPT_WORTH`` of the whole:
the first pass takes whichever of the two is worth more per token, so more of the relevant turns get in;
then, best first, each excerpt taken is put back whole while the budget allows. A source says whether the
context shows the turn whole or its excerpt.

The text is then written (``render``) and counted whole; the estimate is near-additive, so the count is
checked and, should joining have cost more than the sum, the least valuable ranked pieces are dropped until
it fits: ``tokens`` is never above the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mnemo.briefing.excerpts import tokens_of
from mnemo.briefing.models import SECTIONS, ContextSource, Section
from mnemo.briefing.render import HEADINGS, day_heading
from mnemo.files.tokens import count_tokens


@dataclass(frozen=True)
class Piece:
    """One item a context may hold: its source, its text in the context, and what it is worth."""

    source: ContextSource
    text: str
    value: float = 0.0
    #: Taken first, in the order given, when it fits (profile, summary, pinned blocks).
    fixed: bool = False
    #: A turn's time: turns are grouped under their day, in the order they were said.
    said_at: datetime | None = None
    #: A shorter text that may stand for it (a long turn's sentences nearest the query), or None.
    excerpt: str | None = None
    tokens: int = field(init=False)
    excerpt_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", tokens_of(self.text) + 1)  # + its line break
        object.__setattr__(self, "excerpt_tokens", count_tokens(self.excerpt) + 1 if self.excerpt else self.tokens)

    def shown(self, short: bool) -> tuple[str, int]:
        """The text the context shows for this piece (its excerpt when ``short``) and its tokens."""
        return (self.excerpt, self.excerpt_tokens) if short and self.excerpt else (self.text, self.tokens)


#: What an excerpt is worth, the whole turn being worth 1 (LoCoMo dev at 1,000 tokens: 0.6 and 0.8 bring in
#: 86.7% and 88.5% of the evidence turns, against 84.2% with no excerpts).
EXCERPT_WORTH = 0.8


@dataclass(frozen=True)
class Taken:
    """A piece in the context, whole or as its excerpt."""

    piece: Piece
    short: bool = False

    @property
    def text(self) -> str:
        return self.piece.shown(self.short)[0]

    @property
    def tokens(self) -> int:
        return self.piece.shown(self.short)[1]


@dataclass(frozen=True)
class Packed:
    context: str
    tokens: int
    sections: dict[str, int]
    sources: list[ContextSource]
    truncated: bool


def _heading_cost(section: Section) -> int:
    return count_tokens(HEADINGS[section]) + 2  # the heading's line break and the blank line before it


def _day_key(piece: Piece) -> str | None:
    return piece.said_at.date().isoformat() if piece.said_at is not None else None


def choose(pieces: Sequence[Piece], budget: int) -> tuple[list[Taken], bool]:
    """The pieces that fit in ``budget`` (fixed ones first, then by value per token, then excerpts put back
    whole), and whether any relevant piece had to be left out or shortened."""
    taken: list[Taken] = []
    used = 0
    opened: set[Section] = set()
    days: set[str] = set()
    truncated = False
    options = [Taken(piece) for piece in pieces if piece.fixed]
    ranked: list[tuple[float, Taken]] = []
    for piece in pieces:
        if piece.fixed:
            continue
        whole = piece.value / piece.tokens
        short = EXCERPT_WORTH * piece.value / piece.excerpt_tokens if piece.excerpt else 0.0
        ranked.append((max(whole, short), Taken(piece, short > whole)))
    ranked.sort(key=lambda pair: (-pair[0], -pair[1].piece.value, pair[1].piece.source.id))
    for option in [*options, *(option for _, option in ranked)]:
        piece = option.piece
        cost = option.tokens
        section = piece.source.section
        if section not in opened:
            cost += _heading_cost(section)
        key = _day_key(piece) if section == "turns" else None
        if key is not None and key not in days and piece.said_at is not None:
            cost += count_tokens(day_heading(piece.said_at)) + 1
        if used + cost > budget:
            truncated = True
            continue
        taken.append(option)
        used += cost
        opened.add(section)
        if key is not None:
            days.add(key)
    for position in sorted((i for i, option in enumerate(taken) if option.short), key=lambda i: -taken[i].piece.value):
        extra = taken[position].piece.tokens - taken[position].tokens
        if used + extra <= budget:
            taken[position] = Taken(taken[position].piece)
            used += extra
        else:
            truncated = True
    return taken, truncated


def render(pieces: Sequence[Taken]) -> tuple[str, dict[str, int], list[ContextSource]]:
    """The context's text, each section's tokens and the sources in the order the text shows them."""
    parts: list[str] = []
    sections: dict[str, int] = {}
    shown: list[ContextSource] = []
    for section in SECTIONS:
        mine = [taken for taken in pieces if taken.piece.source.section == section]
        if not mine:
            continue
        if section == "turns":
            mine.sort(key=lambda t: (t.piece.said_at.isoformat() if t.piece.said_at else "", t.piece.source.id))
            lines: list[str] = []
            current = None
            for taken in mine:
                key = _day_key(taken.piece)
                if key is not None and key != current and taken.piece.said_at is not None:
                    lines.append(day_heading(taken.piece.said_at))
                    current = key
                lines.append(taken.text)
            body = "\n".join(lines)
        elif section == "memories":
            mine.sort(key=lambda t: -t.piece.value)
            body = "\n".join(t.text for t in mine)
        else:
            body = "\n\n".join(t.text for t in mine)
        text = f"{HEADINGS[section]}\n{body}"
        parts.append(text)
        sections[section] = count_tokens(text)
        shown += [t.piece.source.model_copy(update={"tokens": t.tokens, "excerpt": t.short}) for t in mine]
    return "\n\n".join(parts), sections, shown


def pack(pieces: Sequence[Piece], budget: int) -> Packed:
    """Choose, write and count: the context within ``budget`` tokens (see the module docstring)."""
    taken, truncated = choose(pieces, budget)
    while True:
        context, sections, sources = render(taken)
        tokens = count_tokens(context)
        if tokens <= budget or not taken:
            return Packed(context, tokens, sections, sources, truncated)
        # Joining cost more than the parts: drop the least valuable piece (a ranked one before a fixed one).
        worst = min(taken, key=lambda t: (t.piece.fixed, t.piece.value))
        taken.remove(worst)
        truncated = True

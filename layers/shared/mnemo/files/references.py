"""Finding what a text points at: ``@`` markers to expand, and paths a file mentions.

``@@name`` names one of the caller's blocks (``mnemo:///blocks/name``, with
or without ``.md``, else a skill); ``@path`` names any path the file tools
take (``@src/auth.c``, ``@mnemo://project/blocks/x.md``, ``@topic://deploy``).
A marker starts a word: ``alice@example.com`` holds none. Punctuation that
ends a sentence is not part of it. ``@path`` must look like a path (hold a
``/``, a ``.`` or a scheme), so ``@here`` or ``@property`` stay text; and
nothing inside code (a fenced block or an inline code span) is a marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"(?<![\w@/])(?P<at>@@?)(?P<target>[^\s@`'\"<>()\[\]{}]+)")
_TRAILING = ".,;:!?"
_CODE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)|`[^`\n]+`", re.DOTALL | re.MULTILINE)
#: URIs of the three schemes, and relative paths with a folder and an extension (src/db/schema.sql).
_MENTION = re.compile(
    r"(?P<uri>\b(?:mnemo|knowledge|topic)://[^\s`'\"<>()\[\]{}]*)"
    r"|(?<![\w/.:@-])(?P<relative>(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8})(?![\w/])"
)
MAX_REFERENCES = 20


@dataclass(frozen=True)
class Marker:
    start: int
    end: int
    text: str
    #: True for ``@@name`` (a block by name), False for ``@path``.
    block: bool
    target: str


def _looks_like_a_path(target: str) -> bool:
    return "/" in target or "." in target.strip(".")


def markers(text: str) -> list[Marker]:
    code = [(match.start(), match.end()) for match in _CODE.finditer(text)]
    found = []
    for match in _MARKER.finditer(text):
        target = match["target"].rstrip(_TRAILING)
        block = match["at"] == "@@"
        if not target or (not block and not _looks_like_a_path(target)):
            continue
        if any(start <= match.start() < end for start, end in code):
            continue
        end = match.start("target") + len(target)
        found.append(Marker(match.start(), end, text[match.start() : end], block, target))
    return found


def mentions(content: str) -> list[str]:
    """The paths ``content`` mentions, each once, in order of appearance, at most MAX_REFERENCES."""
    seen: dict[str, None] = {}
    for match in _MENTION.finditer(content):
        path = (match["uri"] or match["relative"]).rstrip(_TRAILING)
        if match["uri"] and path.endswith("://"):
            continue
        seen.setdefault(path, None)
        if len(seen) >= MAX_REFERENCES:
            break
    return list(seen)

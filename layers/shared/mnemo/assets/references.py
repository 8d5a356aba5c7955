"""Finding what a text points at: ``@`` markers to expand, and paths a file mentions.

``@@name`` names one of the caller's blocks (``mnemo:///blocks/name``, with
or without ``.md``, else a skill); ``@path`` names any path the file tools
take (``@src/auth.c``, ``@mnemo://project/blocks/x.md``, ``@topic://deploy``).
A marker starts a word: ``alice@example.com`` holds none. Punctuation that
ends a sentence is not part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(r"(?<![\w@/])(?P<at>@@?)(?P<target>[^\s@`'\"<>()\[\]{}]+)")
_TRAILING = ".,;:!?"
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


def markers(text: str) -> list[Marker]:
    found = []
    for match in _MARKER.finditer(text):
        target = match["target"].rstrip(_TRAILING)
        if not target:
            continue
        end = match.start("target") + len(target)
        found.append(Marker(match.start(), end, text[match.start() : end], match["at"] == "@@", target))
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

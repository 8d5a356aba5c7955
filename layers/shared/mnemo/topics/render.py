"""The markdown the topic tools show: the index document and one topic.

The index document is derived, never stored: it is rendered from the general
section and the topics' summaries, so forgetting a topic always takes its
summary out of the index. Names, tags and summaries are the writers' text, put
inline: each is folded onto one line and its markdown punctuation escaped, so
none can add a heading, a list entry, a link or HTML to the index.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

GENERAL_HEADER = "## General Project Knowledge"
SPECIALIZED_HEADER = "## Specialized Knowledge"
_TITLES = {"project": "# Project Memory", "user": "# Personal Memory"}


#: Inline markdown syntax (CommonMark allows a backslash before any ASCII punctuation).
_INLINE_SYNTAX = re.compile(r"([\\`*_{}\[\]<>~|&!#])")


def _inline(text: str) -> str:
    """Writer text as literal inline markdown: one line, its syntax characters escaped."""
    return _INLINE_SYNTAX.sub(r"\\\1", " ".join(text.split()))


def render_index(layer: str, general: str, heads: Iterable[dict[str, Any]]) -> str:
    """The index: a title, the general section, then each topic with its tags and summary."""
    lines = [_TITLES.get(layer, _TITLES["project"]), "", GENERAL_HEADER, ""]
    lines.append(general.strip() or "_Nothing recorded yet._")
    lines += ["", SPECIALIZED_HEADER, ""]
    entries = [
        f"- **{_inline(head['name'])}**"
        + (f" [{', '.join(_inline(tag) for tag in head['tags'])}]" if head["tags"] else "")
        + f": {_inline(head['summary'])}"
        for head in heads
    ]
    lines += entries or ["_No topics yet._"]
    return "\n".join(lines) + "\n"


def render_topic(head: dict[str, Any], content: str) -> str:
    """One topic as markdown: its title, tags, last updated date and content."""
    tags = ", ".join(_inline(tag) for tag in head["tags"]) or "(none)"
    return (
        f"# {_inline(head['name'])}\n\n**Tags:** {tags}\n**Last updated:** {head['lastUpdated']}\n\n{content.strip()}\n"
    )

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


def index_entry(head: dict[str, Any]) -> str:
    """One topic's line in the index: its name, tags and summary."""
    tags = f" [{', '.join(_inline(tag) for tag in head['tags'])}]" if head["tags"] else ""
    return f"- **{_inline(head['name'])}**{tags}: {_inline(head['summary'])}"


def render_index(layer: str, general: str, heads: Iterable[dict[str, Any]], left_out: int = 0) -> str:
    """The index: a title, the general section, then each topic with its tags and summary.

    ``left_out`` topics that did not fit the answer are named by a closing line.
    """
    lines = [_TITLES.get(layer, _TITLES["project"]), "", GENERAL_HEADER, ""]
    lines.append(general.strip() or "_Nothing recorded yet._")
    lines += ["", SPECIALIZED_HEADER, ""]
    lines += [index_entry(head) for head in heads] or ["_No topics yet._"]
    if left_out:
        lines.append(f"- _… {left_out} more topics left out to fit the response size limit; list_memories names them._")
    return "\n".join(lines) + "\n"


def render_topic(head: dict[str, Any], content: str) -> str:
    """One topic as markdown: its title, tags, last updated date and content."""
    tags = ", ".join(_inline(tag) for tag in head["tags"]) or "(none)"
    return (
        f"# {_inline(head['name'])}\n\n**Tags:** {tags}\n**Last updated:** {head['lastUpdated']}\n\n{content.strip()}\n"
    )

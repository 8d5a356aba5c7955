"""Topic names and tags: what a name may hold, and how names and tags compare.

A name is kept as written (after trimming and Unicode NFC) and compared
case-insensitively: ``Deploy`` and ``deploy`` are one topic. Tags likewise.
"""

from __future__ import annotations

import re
import unicodedata

from mnemo.visible import FORBIDDEN_CATEGORIES as _FORBIDDEN_CATEGORIES

MAX_NAME_CHARS = 128
MAX_TAG_CHARS = 64
MAX_TAGS = 20
#: A markdown heading (ATX ``#`` .. ``######``, or setext) reading "Specialized Knowledge".
_SPECIALIZED_HEADER = re.compile(
    r"^[ \t]{0,3}#{1,6}[ \t]*specialized[ \t]+knowledge\b"
    r"|^[ \t]{0,3}specialized[ \t]+knowledge[ \t]*\r?\n[ \t]{0,3}(=+|-+)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def check_topic_name(value: str) -> str:
    """The name as stored; ValueError says what is wrong with it."""
    name = unicodedata.normalize("NFC", value.strip())
    if not name:
        raise ValueError("a topic name must not be blank")
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"a topic name has at most {MAX_NAME_CHARS} characters (this one has {len(name)})")
    if "/" in name or "\\" in name:
        raise ValueError("a topic name must not contain '/' or '\\'")
    if name in {".", ".."}:
        raise ValueError("a topic name cannot be '.' or '..'")
    bad = next((char for char in name if unicodedata.category(char) in _FORBIDDEN_CATEGORIES), None)
    if bad is not None:
        raise ValueError(f"a topic name must not contain control or invisible characters (found U+{ord(bad):04X})")
    return name


def check_tag(value: str) -> str:
    """A tag as stored: one line of visible text (it is shown inline in the index)."""
    bad = next((char for char in value if unicodedata.category(char) in _FORBIDDEN_CATEGORIES), None)
    if bad is not None:
        raise ValueError(f"a tag must not contain control or invisible characters (found U+{ord(bad):04X})")
    return unicodedata.normalize("NFC", value)


def topic_key(name: str) -> str:
    """What identifies a topic in its scope: the name, case-folded."""
    return unicodedata.normalize("NFC", name).casefold()


def tag_key(tag: str) -> str:
    """How tags compare: NFC-normalised and case-folded."""
    return unicodedata.normalize("NFC", tag).casefold()


def unique_tags(tags: list[str]) -> list[str]:
    """Tags in order, each kept once (compared case-insensitively; the first spelling wins)."""
    seen: set[str] = set()
    kept = []
    for tag in tags:
        if tag_key(tag) not in seen:
            seen.add(tag_key(tag))
            kept.append(tag)
    return kept


def has_specialized_header(content: str) -> bool:
    """Whether markdown holds the 'Specialized Knowledge' heading, which the general section may not."""
    return _SPECIALIZED_HEADER.search(content) is not None

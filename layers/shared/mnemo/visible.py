"""Characters a name may not hold because they show nothing: one definition for topics, paths and graph names.

A name that looks like another must not be a different thing: ``Al\u200bice`` (a zero-width space) or
``Alice\u202e`` (a right-to-left override) would otherwise be entities, topics or files of their own.
"""

from __future__ import annotations

import unicodedata

#: Unicode categories a name may not hold: controls (Cc), invisible formatting such as zero-width and bidi
#: characters (Cf), surrogates (Cs), line and paragraph separators (Zl, Zp).
FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Letters that show nothing (Hangul fillers, the Braille blank, Khmer inherent vowels, the Mongolian vowel
#: separator).
INVISIBLE_LETTERS = frozenset("\u115f\u1160\u17b4\u17b5\u180e\u2800\u3164\uffa0")


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` that is a control or shows nothing, or None."""
    return next(
        (char for char in text if char in INVISIBLE_LETTERS or unicodedata.category(char) in FORBIDDEN_CATEGORIES),
        None,
    )

"""How many tokens a text takes, as the block budget counts them: an estimate, deterministic and offline.

No model's tokenizer is downloaded or shipped: the budget must give the same
answer on Lambda, on a laptop and in a test, whichever model reads the
prompt. The text is cut the way BPE tokenizers pre-split it, and each piece
is charged what such tokenizers typically spend on it:

==================================  ==============================================
piece                               tokens
==================================  ==============================================
a run of ASCII letters              1 per started ``WORD_CHARS`` (11) letters
a run of digits                     1 per started 3 digits
one space before a word             0 (BPE merges it into the word)
other whitespace                    1 per started 15 characters
ASCII punctuation                   1 per started 4 characters of a run
any non-ASCII character             1 each (CJK, emoji, accented letters)
==================================  ==============================================

The constants were fitted (bench/tokens.py) against GPT-4's and GPT-4o's
tokenizers so as to count a little high on English, code and JSON (by 5-13%):
a budget that counts low would let a pinned context overflow. docs/blocks.md
gives the measured figures.
"""

from __future__ import annotations

import math
import re

#: ASCII letters one token covers on average in English and code identifiers.
WORD_CHARS = 11
SPACE_CHARS = 15
PUNCTUATION_CHARS = 4
_PIECE = re.compile(r"(?P<glue> (?=[A-Za-z0-9]))|[A-Za-z]+|[0-9]+|\s+|[!-/:-@\[-`{-~]+|[^\x00-\x7f]")


# The same count for ASCII text, in five scans in C instead of a Python step per piece (memory_context counts
# hundreds of turns a call): a run of L letters is ceil(L / 11) tokens, which is how many matches of at most 11
# letters it holds, and so on; a single space between a non-space and a letter or digit is the glue.
_LETTERS = re.compile(rf"[A-Za-z]{{1,{WORD_CHARS}}}")
_DIGITS = re.compile(r"[0-9]{1,3}")
_SPACES = re.compile(rf"\s{{1,{SPACE_CHARS}}}")
_GLUE = re.compile(r"(?<!\s) (?=[A-Za-z0-9])")
_PUNCTUATION = re.compile(rf"[!-/:-@\[-`{{-~]{{1,{PUNCTUATION_CHARS}}}")


_WIDE = re.compile(r"[^\x00-\x7f]")
_WIDE_SPACE = re.compile(r"[^\S\x00-\x7f]")


def count_tokens(text: str) -> int:
    """The estimated token count of ``text`` (0 for an empty text)."""
    wide = 0
    if not text.isascii():
        if _WIDE_SPACE.search(text):  # a non-ASCII space opens a run of its own kind: counted piece by piece
            return _count_pieces(text)
        # A non-ASCII character is a token of its own and ends the runs around it, as a control character does.
        text, wide = _WIDE.subn("\x00", text)
    return (
        wide
        + len(_LETTERS.findall(text))
        + len(_DIGITS.findall(text))
        + len(_SPACES.findall(text))
        - len(_GLUE.findall(text))
        + len(_PUNCTUATION.findall(text))
    )


def space_tokens(word: str) -> int:
    """What one space before ``word`` costs when it follows a non-space: 0 when the word starts with an ASCII
    letter or digit (BPE merges the space into it), else 1.

    Runs never cross a space, so for words without whitespace ``count_tokens(" ".join(words))`` is the sum of
    each word's count plus the spaces' costs: a run of words can be measured word by word.
    """
    return 0 if _GLUED.match(word) else 1


_GLUED = re.compile(r"[A-Za-z0-9]")


def _count_pieces(text: str) -> int:
    """The estimate piece by piece, as the table above reads."""
    tokens = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isascii():
            if first.isalpha():
                tokens += math.ceil(len(piece) / WORD_CHARS)
            elif first.isdigit():
                tokens += math.ceil(len(piece) / 3)
            elif match.lastgroup == "glue":
                continue
            elif first.isspace():
                tokens += math.ceil(len(piece) / SPACE_CHARS)
            else:
                tokens += math.ceil(len(piece) / PUNCTUATION_CHARS)
        else:
            tokens += 1  # a CJK character or an emoji, or any other non-ASCII one: both are about a token
    return tokens

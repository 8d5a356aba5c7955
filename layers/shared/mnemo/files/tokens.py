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


def count_tokens(text: str) -> int:
    """The estimated token count of ``text`` (0 for an empty text)."""
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

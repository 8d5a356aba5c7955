"""How many tokens a text takes, as the block budget counts them: an estimate, deterministic and offline.

No model's tokenizer is downloaded or shipped: the budget must give the same
answer on Lambda, on a laptop and in a test, whichever model reads the
prompt. The text is cut the way BPE tokenizers pre-split it, and each piece
is charged what such tokenizers typically spend on it:

==================================  ==============================================
piece                               tokens
==================================  ==============================================
a run of ASCII letters              1 per started ``WORD_CHARS`` letters
a run of digits                     1 per started 3 digits
one space before a word             0 (BPE merges it into the word)
other whitespace                    1 per started 4 characters
ASCII punctuation                   1 per started 2 characters of a run
a CJK, kana, hangul or emoji char   1 each
any other non-ASCII character       1 per 2 (the total is rounded up)
==================================  ==============================================

docs/blocks.md gives its measured distance from real tokenizers.
"""

from __future__ import annotations

import math
import re

#: ASCII letters one token covers on average in English and code identifiers.
WORD_CHARS = 6
_PIECE = re.compile(r"(?P<glue> (?=[A-Za-z0-9]))|[A-Za-z]+|[0-9]+|\s+|[!-/:-@\[-`{-~]+|[^\x00-\x7f]")
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3040-\u30ff]")


def count_tokens(text: str) -> int:
    """The estimated token count of ``text`` (0 for an empty text)."""
    halves = 0  # counted in half tokens, so that two non-ASCII letters make one
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[0]
        if first.isascii():
            if first.isalpha():
                halves += 2 * math.ceil(len(piece) / WORD_CHARS)
            elif first.isdigit():
                halves += 2 * math.ceil(len(piece) / 3)
            elif match.lastgroup == "glue":
                continue
            elif first.isspace():
                halves += 2 * math.ceil(len(piece) / 4)
            else:
                halves += 2 * math.ceil(len(piece) / 2)
        elif _WIDE.match(piece) or ord(first) > 0xFFFF:
            halves += 2
        else:
            halves += 1
    return math.ceil(halves / 2)

"""The block budget's token estimate (mnemo.files.tokens): deterministic, offline, monotone, and the
rule its docstring documents, one small example per row of its table."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.files.tokens import WORD_CHARS, count_tokens, space_tokens

#: Text made of the pieces the rule tells apart, so that runs merge and split often.
PIECES = st.text(alphabet=st.sampled_from(list("ab Z09 \n\t.!-_é中ア한😀\u00a0")), max_size=40)


def test_the_empty_text_takes_no_tokens() -> None:
    assert count_tokens("") == 0


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # a run of ASCII letters: one per started WORD_CHARS (11) letters
        ("a", 1),
        ("hello", 1),
        ("a" * 11, 1),
        ("a" * 12, 2),
        ("a" * 22, 2),
        ("a" * 23, 3),
        # a run of digits: one per started 3 digits
        ("7", 1),
        ("123", 1),
        ("1234", 2),
        ("2026", 2),
        # one space before a word costs nothing (BPE merges it into the word)
        ("hello world", 2),
        ("a b c d", 4),
        # other whitespace: one per started 15 characters
        ("\n", 1),
        ("  ", 1),
        ("\n" * 15, 1),
        ("\n" * 16, 2),
        ("a  b", 3),
        # ASCII punctuation: one per started 4 characters of a run
        ("!", 1),
        ("!!!!", 1),
        ("!!!!!", 2),
        ("a.b", 3),
        # any non-ASCII character: one each
        ("中", 1),
        ("中文", 2),
        ("アイ", 2),
        ("한국", 2),
        ("😀😀", 2),
        ("é", 1),
        ("éé", 2),
        ("привет", 6),
        # mixed: letters 1 + punctuation 1 + space-before-word 0 + letters 1 + newline 1
        ("Orders: PostgreSQL\n", 1 + 1 + 0 + 1 + 1),
    ],
)
def test_known_small_examples_document_the_rule(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


def test_word_chars_is_the_documented_eleven() -> None:
    assert WORD_CHARS == 11
    assert count_tokens("x" * WORD_CHARS) == 1
    assert count_tokens("x" * (WORD_CHARS + 1)) == 2


def test_a_lone_space_not_before_a_word_is_other_whitespace() -> None:
    assert count_tokens(" ") == 1
    assert count_tokens("word ") == count_tokens("word") + 1


@settings(max_examples=300, deadline=None)
@given(PIECES | st.text(max_size=60))
def test_counting_is_deterministic(text: str) -> None:
    assert count_tokens(text) == count_tokens(text) == count_tokens(str(text))


@settings(max_examples=1500, deadline=None)
@given(PIECES | st.text(max_size=40), PIECES | st.text(max_size=40))
def test_appending_text_never_lowers_the_count(head: str, tail: str) -> None:
    assert count_tokens(head + tail) >= count_tokens(head)


@settings(max_examples=500, deadline=None)
@given(PIECES, PIECES)
def test_a_join_costs_at_most_its_parts_plus_one(head: str, tail: str) -> None:
    # Merging two runs never costs more than counting them apart (the rounding may save one, never add).
    assert count_tokens(head + tail) <= count_tokens(head) + count_tokens(tail) + 1


def test_non_empty_words_always_cost_something() -> None:
    for text in ("a", "1", ".", "\n", "é", "中", "😀", "\t"):
        assert count_tokens(text) >= 1, text


def test_the_count_is_the_same_in_a_fresh_process_without_network() -> None:
    text = "# Decisions\n\n- Orders live in PostgreSQL 16.\n- Releases: Tuesdays, 10:00 UTC. é中😀\n[END]\n"
    script = (
        "import socket\n"
        "def refuse(*a, **k):\n    raise OSError('no network in this test')\n"
        "socket.socket.connect = refuse\n"
        "from mnemo.files.tokens import count_tokens\n"
        f"print(count_tokens({text!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert int(out.stdout.strip()) == count_tokens(text)


def _piecewise(text: str) -> int:
    """The estimator written piece by piece, as its table reads (the fast path must agree with it)."""
    import math

    from mnemo.files.tokens import _PIECE, PUNCTUATION_CHARS, SPACE_CHARS, WORD_CHARS

    tokens = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        if not piece[0].isascii():
            tokens += 1
        elif piece[0].isalpha():
            tokens += math.ceil(len(piece) / WORD_CHARS)
        elif piece[0].isdigit():
            tokens += math.ceil(len(piece) / 3)
        elif match.lastgroup == "glue":
            continue
        elif piece[0].isspace():
            tokens += math.ceil(len(piece) / SPACE_CHARS)
        else:
            tokens += math.ceil(len(piece) / PUNCTUATION_CHARS)
    return tokens


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab Z09 \t\n.,;:!?-_{}[]()\"'\x00\x07\x7f…é中\u00a0\u2009", "a" * 12, " " * 16, "7" * 5])
    ).map("".join)
)
def test_the_fast_count_agrees_with_the_pieces(text: str) -> None:
    assert count_tokens(text) == _piecewise(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1).map(lambda text: "".join(text.split()) or "x"), min_size=1, max_size=12))
def test_words_joined_by_spaces_cost_their_counts_plus_their_spaces(words: list[str]) -> None:
    # memory_context measures excerpt windows word by word on this property.
    expected = count_tokens(words[0]) + sum(count_tokens(word) + space_tokens(word) for word in words[1:])
    assert count_tokens(" ".join(words)) == expected

"""A long turn's excerpt (mnemo.briefing.excerpts): the words nearest the query, within MAX_TOKENS."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.briefing.excerpts import ELLIPSIS, LEAD_WORDS, MAX_TOKENS, excerpt, terms
from mnemo.files.tokens import count_tokens

LONG = (
    "Caroline: Wow, that is such a lovely thing to hear and I really appreciate it so much. "
    "Yesterday I started researching adoption agencies because it has always been my dream to have a family. "
    "How about you, what have you been up to lately?"
)


def _window_words(text: str) -> str:
    return text.split(": ", 1)[1].replace(ELLIPSIS, " ").strip()


def test_the_window_opens_just_before_the_first_word_the_query_shares() -> None:
    short = excerpt(LONG, terms("What did Caroline research?"))
    assert short == f"Caroline: {ELLIPSIS} I started researching adoption agencies because it has {ELLIPSIS}"
    words = _window_words(short).split()
    assert words.index("researching") == LEAD_WORDS  # who did it stays in
    assert count_tokens(_window_words(short)) <= MAX_TOKENS


def test_with_no_shared_word_the_longest_sentence_opens_the_window() -> None:
    short = excerpt(LONG, terms("zebra xylophone"))
    assert short is not None
    assert short == f"Caroline: {ELLIPSIS} Yesterday I started researching adoption agencies because it {ELLIPSIS}"


def test_a_short_turn_has_no_excerpt() -> None:
    assert excerpt("Melanie: Sounds great, see you then!", terms("when do they meet")) is None


def test_a_turn_on_several_lines_has_no_excerpt() -> None:
    assert excerpt("Caroline: line one\nline two " + "word " * 40, terms("line")) is None


def test_one_word_longer_than_the_window_keeps_its_start() -> None:
    word = "x" * 400
    short = excerpt(f"Bot: {word}", terms("anything"))
    assert short is not None
    kept = _window_words(short)
    assert word.startswith(kept) and 0 < count_tokens(kept) <= MAX_TOKENS


def test_an_empty_body_is_no_excerpt() -> None:
    assert excerpt("Bot: ", terms("anything")) is None


_WORDS = st.sampled_from(
    [
        "adoption",
        "agency",
        "I",
        "the",
        "went",
        "to",
        "a",
        "support",
        "group",
        "yesterday",
        "it's",
        "—",
        "(big)",
        "2023",
        "café",
        "🎉",
        "researching",
        "painting",
        "sunset",
        "lake",
        "...",
        "and",
        "so",
        "much",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(_WORDS, min_size=1, max_size=30), min_size=1, max_size=4),
    st.lists(_WORDS, min_size=1, max_size=4),
)
def test_an_excerpt_keeps_its_window_within_max_tokens_and_saves_a_third(
    sentences: list[list[str]], query: list[str]
) -> None:
    line = "Caroline: " + " ".join(" ".join(words) + "." for words in sentences)
    short = excerpt(line, terms(" ".join(query)))
    if short is None:
        return
    assert short.startswith("Caroline: ")
    assert count_tokens(_window_words(short)) <= MAX_TOKENS
    assert count_tokens(short) <= 0.7 * count_tokens(line)
    kept = _window_words(short).split()
    body = line.split(": ", 1)[1].split()
    # the window is a run of the turn's own words, in order
    assert any(body[i : i + len(kept)] == kept for i in range(len(body) - len(kept) + 1))

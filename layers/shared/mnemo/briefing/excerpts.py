"""A long turn's excerpt: the words nearest the query, for a budget too small for every turn whole.

Chat turns carry their point in a few words among greetings, reactions and questions back ("Wow, that's
great! ... How about you?"). When the budget cannot hold every relevant turn whole, a turn may stand as its
excerpt: its speaker, then a window of at most ``MAX_TOKENS`` of the sentence sharing the most words with the
query (the first of equals; the longest when none shares a word: greetings are short). The window opens
``LEAD_WORDS`` before the first word the query shares, runs right while it fits, then back left with what is
left; ``…`` marks what was left out. The excerpt is offered beside the whole turn (``mnemo.briefing.packing``),
worth less, so the whole turn wins when the budget allows; a source says which one the context shows and
names the turn, so an agent can read it whole. No model: words are compared lower case, on their first six
letters (a crude stem: "painting" meets "paint").

On LoCoMo dev at 1,000 tokens (bench/context.py, turns alone), windows of 8 tokens for the turns past the
first five bring 90.3% of the evidence turns in, against 87.7% with the first 14 tokens of the sentence past
the first ten and 84.2% with no excerpts; the reference answer's words appear in the text for 36.1% of the
questions against 37.9% and 37.7%. docs/context.md has the table.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mnemo.files.tokens import count_tokens, space_tokens

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_WORD = re.compile(r"[a-z0-9]+")
#: Words too common to say what a sentence is about.
_COMMON = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "but",
        "not",
        "you",
        "your",
        "yours",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "how",
        "that",
        "this",
        "these",
        "those",
        "with",
        "from",
        "have",
        "has",
        "had",
        "did",
        "does",
        "doing",
        "done",
        "its",
        "it's",
        "his",
        "her",
        "hers",
        "him",
        "she",
        "they",
        "them",
        "their",
        "there",
        "then",
        "than",
        "been",
        "being",
        "about",
        "into",
        "over",
        "just",
        "also",
        "very",
        "really",
        "some",
        "any",
        "all",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "our",
        "ours",
        "out",
        "get",
        "got",
        "too",
        "yes",
        "yeah",
        "wow",
        "lol",
        "okay",
        "thanks",
        "thank",
    ]
)
#: An excerpt is offered only when it saves at least this share of the turn's tokens.
MIN_SAVING = 0.3
ELLIPSIS = "…"
#: The most tokens an excerpt's window keeps: the query's words and what follows them ("Researching adoption
#: agencies — it's been …").
MAX_TOKENS = 8
#: Words the window keeps before the first word the query shares ("I'm *researching*" keeps who did it).
LEAD_WORDS = 2


def terms(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about, cut to their first six letters."""
    return frozenset(word[:6] for word in _WORD.findall(text.lower()) if len(word) > 2 and word not in _COMMON)


def excerpt(line: str, query: frozenset[str]) -> str | None:
    """The excerpt of a one-line turn ``speaker: text`` for a query's ``terms``, or None when the turn is on
    several lines or the excerpt would save too little."""
    if "\n" in line:
        return None
    speaker, separator, body = line.partition(": ")
    if not separator:
        speaker, body = "", line
    sentences = _SENTENCE.split(body)
    overlap = [len(terms(sentence) & query) for sentence in sentences]
    if max(overlap):
        kept = overlap.index(max(overlap))
    else:
        kept = max(range(len(sentences)), key=lambda index: (len(sentences[index]), -index))
    text = _window(sentences[kept], query)
    if kept > 0 and not text.startswith(ELLIPSIS):
        text = f"{ELLIPSIS} {text}"
    if kept < len(sentences) - 1 and not text.endswith(ELLIPSIS):
        text = f"{text} {ELLIPSIS}"
    shortened = f"{speaker}: {text}" if separator else text
    if count_tokens(shortened) > (1 - MIN_SAVING) * tokens_of(line):
        return None
    return shortened


def _window(sentence: str, query: frozenset[str]) -> str:
    """The sentence's words around the first the query shares, at most ``MAX_TOKENS`` as pinned_context counts
    them, with ``…`` on a side where words were left out."""
    words = sentence.split()
    if not words:
        return ""
    own = [_word_tokens(word) for word in words]
    joined = [count + space_tokens(word) for count, word in zip(own, words, strict=True)]
    shared = next((index for index, word in enumerate(words) if _word_terms(word) & query), 0)
    start = end = max(0, shared - LEAD_WORDS)
    used = 0
    while end < len(words) and used + (own[end] if end == start else joined[end]) <= MAX_TOKENS:
        used += own[end] if end == start else joined[end]
        end += 1
    # Room left after the end of the sentence goes to the words before the window; the word that opened it
    # is now charged its space.
    while start > 0 and end > start and used - own[start] + joined[start] + own[start - 1] <= MAX_TOKENS:
        used += joined[start] - own[start] + own[start - 1]
        start -= 1
    if end == start:  # one word longer than the window: the most of its first characters that fit
        return f"{_prefix(words[start])} {ELLIPSIS}"
    text = " ".join(words[start:end])
    if start > 0:
        text = f"{ELLIPSIS} {text}"
    if end < len(words):
        text = f"{text} {ELLIPSIS}"
    return text


#: ``count_tokens`` remembered for the turns a context weighs: the same turns rank for many queries of a user.
tokens_of = lru_cache(maxsize=1 << 12)(count_tokens)
# Chat reuses its words: a call measures a few thousand, mostly seen before (bounded, a few MB at most).
_word_tokens = lru_cache(maxsize=1 << 14)(count_tokens)
_word_terms = lru_cache(maxsize=1 << 14)(terms)


def _prefix(word: str) -> str:
    """The longest start of ``word`` that fits ``MAX_TOKENS`` (a count never falls as text is appended)."""
    low, high = 0, len(word)  # word[:low] fits, word[:high + 1] does not
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(word[:middle]) <= MAX_TOKENS:
            low = middle
        else:
            high = middle - 1
    return word[:low]

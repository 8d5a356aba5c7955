"""A long turn's excerpt: the sentence nearest the query, for a budget too small for every turn whole.

Chat turns carry their point in a sentence among greetings, reactions and questions back ("Wow, that's great!
... How about you?"). When the budget cannot hold every relevant turn whole, a turn may stand as its excerpt:
its speaker, then the sentence sharing the most words with the query (the first of equals; the longest when
none shares a word: greetings are short), cut after ``MAX_TOKENS`` at a word, with ``…`` where text was left
out. The excerpt is offered beside the whole turn (``mnemo.briefing.packing``), worth less, so the whole turn
wins when the budget allows, and a source says which one the context shows. No model: words are compared
lower case, on their first six letters (a crude stem: "painting" meets "paint").

On LoCoMo dev at 1,000 tokens (bench/context.py), excerpts of the turns past the first ten bring 88.0% of the
X 84.2% without excerpts, and the reference answer's words still
appear in the text as often (37.5% of questions against 37.7%); every sentence of the best overlap instead
of one, or no cut, brought fewer turns in (86.9%, 87.2%).
"""

from __future__ import annotations

import re

from mnemo.files.tokens import count_tokens

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
#: The most tokens an excerpt's sentence keeps (a one-sentence answer to "what", "where", "when" fits).
MAX_TOKENS = 14


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
    text = _cut(sentences[kept])
    if kept > 0:
        text = f"{ELLIPSIS} {text}"
    if kept < len(sentences) - 1 and not text.endswith(ELLIPSIS):
        text = f"{text} {ELLIPSIS}"
    shortened = f"{speaker}: {text}" if separator else text
    if count_tokens(shortened) > (1 - MIN_SAVING) * count_tokens(line):
        return None
    return shortened


def _cut(sentence: str) -> str:
    """The sentence's words up to ``MAX_TOKENS`` (then ``…``), counted as pinned_context counts them."""
    words = sentence.split()
    if count_tokens(" ".join(words)) <= MAX_TOKENS:
        return " ".join(words)
    low, high = 0, len(words) - 1  # the most words that fit: low fits, high + 1 does not
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle])) <= MAX_TOKENS:
            low = middle
        else:
            high = middle - 1
    return " ".join([*words[:low], ELLIPSIS])

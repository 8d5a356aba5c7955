"""A long turn's excerpt: the sentences nearest the query, for a budget too small for every turn whole.

Chat turns carry their point in a sentence or two among greetings, reactions and questions back ("Wow, that's
great! ... How about you?"). When the budget cannot hold every relevant turn whole, a turn may stand as its
excerpt: its speaker, then the sentence sharing the most words with the query (the longest when none
does: greetings are short), and any other sentence that shares as many, in their order, with ``…`` where
sentences were left out. The excerpt is offered beside the whole turn (``mnemo.briefing.packing``), worth
less, so the whole turn wins when the budget allows and a source says which one the context shows. No model:
words are compared lower case, on their first six letters (a crude stem: "painting" meets "paint").
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


def terms(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about, cut to their first six letters."""
    return frozenset(word[:6] for word in _WORD.findall(text.lower()) if len(word) > 2 and word not in _COMMON)


def excerpt(line: str, query: frozenset[str]) -> str | None:
    """The excerpt of a one-line turn ``speaker: text`` for a query's ``terms``, or None when the turn is one
    sentence, several lines, or the excerpt would save too little."""
    if "\n" in line:
        return None
    speaker, separator, body = line.partition(": ")
    if not separator:
        speaker, body = "", line
    sentences = _SENTENCE.split(body)
    if len(sentences) < 2:
        return None
    overlap = [len(terms(sentence) & query) for sentence in sentences]
    best = max(overlap)
    if best:
        kept = [index for index, shared in enumerate(overlap) if shared == best]
    else:
        kept = [max(range(len(sentences)), key=lambda index: (len(sentences[index]), -index))]
    parts: list[str] = []
    for index, sentence in enumerate(sentences):
        if index in kept:
            parts.append(sentence)
        elif not parts or parts[-1] != ELLIPSIS:
            parts.append(ELLIPSIS)
    text = " ".join(parts)
    shortened = f"{speaker}: {text}" if separator else text
    if count_tokens(shortened) > (1 - MIN_SAVING) * count_tokens(line):
        return None
    return shortened

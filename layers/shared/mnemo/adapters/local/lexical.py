"""Incremental BM25 over analysed text (lowercase, stop words out, Snowball stems)."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from functools import lru_cache

import snowballstemmer

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
    ]
)
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def analyse(text: str) -> list[str]:
    return [_stem(word) for word in _TOKEN.findall(text.lower()) if word not in _STOP_WORDS]


#: BM25 parameters shared by every index. ``b`` is low (0.3): short memories should not be
#: rewarded just for being short.
K1 = 1.2
B = 0.3


def idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def term_score(weight: float, tf: int, length: int, average_length: float, k1: float = K1, b: float = B) -> float:
    """One term's BM25 contribution to a document of ``length`` tokens holding it ``tf`` times."""
    norm = k1 * (1 - b + b * length / average_length)
    return weight * tf * (k1 + 1) / (tf + norm)


class Bm25:
    """BM25 whose documents can be added and removed one at a time.

    Rows are small integers owned by the caller.
    """

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = defaultdict(dict)
        self._lengths: dict[int, int] = {}
        self._total_length = 0

    def add(self, row: int, text: str) -> None:
        terms = Counter(analyse(text))
        for term, tf in terms.items():
            self._postings[term][row] = tf
        length = sum(terms.values())
        self._lengths[row] = length
        self._total_length += length

    def remove(self, row: int, text: str) -> None:
        if row not in self._lengths:
            return
        for term in set(analyse(text)):
            postings = self._postings.get(term)
            if postings is not None:
                postings.pop(row, None)
                if not postings:
                    del self._postings[term]
        self._total_length -= self._lengths.pop(row)

    def _idf(self, term: str) -> float:
        return idf(len(self._lengths), len(self._postings.get(term, ())))

    def scores(self, text: str, allowed: set[int] | None) -> tuple[dict[int, float], float]:
        """Raw BM25 per matching row, and the score of a typical full match.

        The reference score is what a document of average length holding each
        query term once would get; dividing by it gives an absolute [0, 1]-ish
        scale that does not depend on which other documents matched.
        """
        terms = [term for term in analyse(text) if term in self._postings]
        if not terms:
            return {}, 0.0
        avg = self._total_length / max(len(self._lengths), 1)
        k1, b = self.k1, self.b
        scores: dict[int, float] = defaultdict(float)
        ceiling = 0.0
        for term, query_tf in Counter(terms).items():
            weight = self._idf(term) * query_tf
            ceiling += weight
            # term_score, inlined: this loop runs once per posting and is the hot path of a search.
            lengths, saturation = self._lengths, k1 + 1
            for row, tf in self._postings[term].items():
                if allowed is None or row in allowed:
                    scores[row] += weight * tf * saturation / (tf + k1 * (1 - b + b * lengths[row] / avg))
        return scores, ceiling

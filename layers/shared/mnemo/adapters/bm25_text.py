"""BM25's text analysis and scoring formula, shared by the local index and the OpenSearch adapter.

Standard-library only (and snowballstemmer): the Lambda layer imports it through the OpenSearch
adapter, and the layer carries no numpy.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import math
import re
import sys
from functools import lru_cache
from typing import Any

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
#: The name under which :func:`_english_stemmer` imports snowballstemmer's folder without its ``__init__``.
_SNOWBALL_ALIAS = "_mnemo_snowballstemmer"


def _english_stemmer() -> Any:
    """snowballstemmer's English stemmer, imported alone.

    ``import snowballstemmer`` runs the package's ``__init__``, which imports its 36 stemmers to offer
    ``stemmer(language)``: about 30 ms of every Lambda cold start, for one language. Its English module needs
    only its siblings ``basestemmer`` and ``among``, so it is imported as a submodule of a bare alias of the
    package's folder: the same module and class (so the same stems), the package's ``__init__`` never run, and
    ``snowballstemmer`` itself left as it is for anyone else. Where the folder cannot be found so, the
    package's own ``stemmer("english")``.
    """
    spec = importlib.util.find_spec("snowballstemmer")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        import snowballstemmer

        return snowballstemmer.stemmer("english")
    if _SNOWBALL_ALIAS not in sys.modules:
        alias = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(_SNOWBALL_ALIAS, None, is_package=True))
        alias.__path__ = list(spec.submodule_search_locations)
        sys.modules[_SNOWBALL_ALIAS] = alias
    return importlib.import_module(f"{_SNOWBALL_ALIAS}.english_stemmer").EnglishStemmer()


_stemmer = _english_stemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A word's Snowball (English) stem, cached."""
    return str(_stemmer.stemWord(word))


def analyse(text: str) -> list[str]:
    """The text's BM25 terms, in order with repeats: lower-cased words, English stop words out, stemmed."""
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

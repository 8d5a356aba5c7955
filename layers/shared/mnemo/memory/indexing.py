"""What the vector index holds for a memory: its document (keywords and BM25 text) and the text embedded.

The index only finds ids; the records (``mnemo.memory.records``) are the truth,
and every document can be rebuilt from its record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mnemo.memory.filters import ATTRS, attr_terms
from mnemo.memory.records import NAMESPACE as NAMESPACE  # the index namespace, and the outbox family
from mnemo.memory.records import day_of
from mnemo.ports import IndexDoc
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT, subject_of

#: Index keyword holding a memory's content hash: an exact repeat is found whatever its stored vector
#: holds (a dated memory's vector is embedded with its predecessor's content).
CONTENT_HASH = "contentHash"


def meta_keywords(metadata: dict[str, Any]) -> dict[str, list[str]]:
    """The index keywords of a memory's scalar metadata (``meta.{key}``: its JSON), for filters; others are left out."""
    return {
        f"meta.{key}": [json.dumps(value)]
        for key, value in metadata.items()
        if isinstance(value, str | int | float | bool)
    }


def lexical_text(content: str, occurred_at: str | None) -> str:
    """What BM25 sees: the content and, when known, the date it happened in words."""
    if not occurred_at:
        return content
    moment = datetime.fromisoformat(occurred_at)
    return f"{content} {moment.day} {moment.strftime('%B %Y')}"


#: The longest pair embedded, in characters. The previous content fills what the content leaves of it, its
#: end kept (a turn's question comes last), so a long memory, which says enough alone, is embedded alone, and
#: a pair of short turns whole. LoCoMo dev (docs/benchmarks.md, "The pair's length"): R@10 78.6 at 256
#: against 78.4 with no limit; a memory of 200-400 characters then costs about half the tokens.
PAIR_CHARACTERS = 256


def pair_tail(previous: str) -> str:
    """What of a content any pair can hold (its last ``PAIR_CHARACTERS`` - 1 characters): the scope's LAST
    pointer keeps it, so the next dated add embeds its pair without reading this memory's record."""
    return previous[-(PAIR_CHARACTERS - 1) :]


def embedding_text(content: str, previous: str | None) -> str:
    """What is embedded: the content, then the end of that of the memory added just before it (same scope,
    same day), the pair at most ``PAIR_CHARACTERS`` long.

    A turn of a conversation often only makes sense with the one before it
    ("Yes, twice last summer"); embedding the pair lets a question about either find it. The previous
    content is cut at a word, from its end; ``pair_tail(previous)`` gives the same text as ``previous``.
    """
    room = PAIR_CHARACTERS - len(content) - 1
    if not previous or room <= 0:
        return content
    if len(previous) > room:
        cut = previous[len(previous) - room :]
        previous = cut.split(" ", 1)[1] if " " in cut else cut
    return f"{content}\n{previous}" if previous else content


def index_doc(data: dict[str, Any], vector: Sequence[float]) -> IndexDoc:
    """A memory record's index document."""
    keywords = {
        "scope": [data["scope"]],
        "layer": [data["layer"]],
        "tags": sorted({tag.lower() for tag in data["tags"]}),
        **meta_keywords(data["metadata"]),
        CONTENT_HASH: [data["contentHash"]],
        # The typed terms operator filters test (mnemo.memory.filters); documents written before them lack
        # this keyword until ``mnemo reindex`` (docs/filters.md).
        ATTRS: attr_terms(data),
    }
    # The context signals of the ranker (mnemo.retrieval.ranker): neighbour link, episode, subject.
    if data.get("after"):
        keywords[AFTER] = [data["after"]]
    day = day_of(data.get("occurredAt"))
    if day:
        keywords[EPISODE] = [day]
    subject = subject_of(data["content"])
    if subject:
        keywords[SUBJECT] = [subject]
    return IndexDoc(
        id=data["memoryId"],
        vector=vector,
        text=lexical_text(data["content"], data.get("occurredAt")),
        keywords=keywords,
    )

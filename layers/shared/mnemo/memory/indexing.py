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
from mnemo.memory.records import day_of
from mnemo.ports import IndexDoc
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT, subject_of

#: The index namespace of memories, and their family in the index outbox.
NAMESPACE = "memory"
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


def embedding_text(content: str, previous: str | None) -> str:
    """What is embedded: the content, then that of the memory added just before it (same scope, same day).

    A turn of a conversation often only makes sense with the one before it
    ("Yes, twice last summer"); embedding the pair lets a question about either find it.
    """
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

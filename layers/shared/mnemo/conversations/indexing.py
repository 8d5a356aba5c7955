"""What the vector index holds for conversations and executions, and its outbox.

Index documents are ``IndexDoc(id=doc_id(scope, message_id))`` with the
keywords ``scope``, ``message_id`` and ``timestamp``; executions add ``tools``,
``success`` and ``error_type`` (lower-cased), so a k-NN or BM25 query filters by
user scope and execution fields inside the index, and the time range is applied
to the hits' keywords before any record is read.

A single message (stored by ``add_messages``: ``meta_data.mnemo_message`` holds its role and name) is
indexed as a memory turn is (``mnemo.memory.indexing``), so that a conversation turn ranks as well as
the same turn stored with memory_add:

- its text is ``"<name>: <content>"`` (a question naming the speaker finds the speaker's turns), or its
  content alone when it has no name;
- BM25 also sees the day it was said in words ("8 May 2023"), for questions that name a date;
- what is embedded is its text, then that of the turn said just before it in the same scope on the same
  day (``previous_turn``): "Yes, twice last summer" is found by a question about what it answers;
- it carries the ranker's context keywords (``mnemo.retrieval.ranker``): ``after`` (the document id of
  that previous turn), ``episode`` (its day) and ``subject`` (the speaker's name), so
  ``hybrid_rank(..., context=True)`` lifts a turn whose neighbour or day matches, as memory search does.

A conversation pair (``add_conversation``) keeps its text and keywords as before.

An index write never loses a record: each record is written with an index
outbox marker (``mnemo.outbox``) in the same all-or-nothing write, and the marker
is cleared only once the record is indexed; ``EntryFamily`` is how the outbox
indexes a record of each kind.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from mnemo.conversations.store import CONVERSATIONS, EntryStore, doc_id
from mnemo.memory.indexing import embedding_text, lexical_text
from mnemo.outbox import GONE, Reference
from mnemo.ports import Embedder, IndexDoc, VectorIndex
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT, subject_of

logger = logging.getLogger(__name__)


#: How many time entries of the same day ``previous_turn`` walks back at most.
PREVIOUS_WALK = 50


def message_of(data: dict[str, Any]) -> dict[str, Any] | None:
    """The role and name of a single stored message (``meta_data.mnemo_message``), or None for a pair."""
    meta = data.get("meta_data")
    message = meta.get("mnemo_message") if isinstance(meta, dict) else None
    return message if isinstance(message, dict) else None


def conversation_text(data: dict[str, Any]) -> str:
    """What a conversation is matched by: a single message's ``"<name>: <content>"`` (its content alone when it
    has no name), else the user's input, then the agent's response."""
    message = message_of(data)
    if message is None:
        return f"{data['user_input']}\n{data['agent_response']}"
    content = data.get("user_input") or data.get("agent_response") or ""
    speaker = str(message.get("name") or "").strip()
    return f"{speaker}: {content}" if speaker else content


def day_of(timestamp: str) -> str:
    """The UTC day of a stored timestamp (``key_time`` format), as a memory's episode."""
    return timestamp[:10]


def turn_doc(
    doc: str, scope: str, data: dict[str, Any], vector: Sequence[float], previous: dict[str, Any] | None
) -> IndexDoc:
    """The index document of a single message: its text with its day in words for BM25, and the context
    keywords of the ranker (``after`` the previous turn's document, ``episode`` its day, ``subject`` the
    speaker); ``vector`` is that of ``turn_embedding_text``."""
    text = conversation_text(data)
    keywords = {
        "scope": [scope],
        "message_id": [data["message_id"]],
        "timestamp": [data["timestamp"]],
        EPISODE: [day_of(data["timestamp"])],
    }
    if previous is not None:
        keywords[AFTER] = [doc_id(scope, previous["message_id"])]
    subject = subject_of(text)
    if subject:
        keywords[SUBJECT] = [subject]
    return IndexDoc(
        id=doc, vector=vector, text=lexical_text(text, data["timestamp"].removesuffix("Z")), keywords=keywords
    )


def turn_embedding_text(data: dict[str, Any], previous: dict[str, Any] | None) -> str:
    """What is embedded for a single message: its text, then the previous turn's (as memory_add does)."""
    return embedding_text(conversation_text(data), conversation_text(previous) if previous is not None else None)


def _order(data: dict[str, Any]) -> tuple[str, str, str]:
    return data["timestamp"], data.get("stored_at", ""), data["message_id"]


def previous_turn(store: EntryStore, scope: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """The single message said just before ``data`` in its scope on the same day, or None.

    ``meta_data.mnemo_message.after`` (a message id), when the writer gives it, names it. Otherwise it is
    the latest earlier message by time; messages sent with the same time (a batch whose turns share one
    ``at``) are ordered as they were stored (``stored_at``), then by id. Reads at most ``PREVIOUS_WALK``
    time entries of the day and the records among them.
    """
    message = message_of(data)
    if message is None:
        return None
    named = message.get("after")
    if isinstance(named, str) and named:
        found = store.get(scope, named)
        if (
            found is not None
            and message_of(found) is not None
            and day_of(found["timestamp"]) == day_of(data["timestamp"])
        ):
            return found
        return None
    own = data["timestamp"]
    same_time: list[str] = []
    earlier: str | None = None
    for walked, entry in enumerate(store.recent(scope, f"{day_of(own)}T", own), start=1):
        if entry["message_id"] != data["message_id"]:
            if entry["timestamp"] == own:
                same_time.append(entry["message_id"])
            else:
                earlier = entry["message_id"]
                break
        if walked >= PREVIOUS_WALK:
            break
    records = store.get_many(scope, [*same_time, *([earlier] if earlier else [])])
    before = [
        record
        for record in records.values()
        if message_of(record) is not None
        and record["message_id"] != data["message_id"]
        and _order(record) < _order(data)
    ]
    return max(before, key=_order, default=None)


def execution_text(data: dict[str, Any]) -> str:
    """What an execution is matched by: its summary, tools, errors, observations and outcome."""
    errors = "; ".join(
        f"{e.get('error_type', '')} {e.get('tool') or ''} {e.get('error_message', '')}" for e in data["errors"]
    )
    outcome = "succeeded" if data["success"] else "failed"
    return "\n".join(
        part
        for part in (
            data["execution_summary"],
            f"tools: {' '.join(data['tools_used'])}" if data["tools_used"] else "",
            f"errors: {errors}" if errors else "",
            data["observations"],
            outcome,
        )
        if part
    )


def execution_keywords(data: dict[str, Any]) -> dict[str, list[str]]:
    """The keywords retrieve_execution filters on: tools used, success, error types (lower-cased)."""
    return {
        "tools": sorted({tool.lower() for tool in data["tools_used"]}),
        "success": ["true" if data["success"] else "false"],
        "error_type": sorted({str(error.get("error_type", "")).lower() for error in data["errors"]}),
    }


def index_doc(doc: str, scope: str, data: dict[str, Any], text: str, vector: Sequence[float]) -> IndexDoc:
    """The index document of a conversation or execution, with its scope, message id and timestamp as keywords (and an
    execution's own)."""
    keywords = {"scope": [scope], "message_id": [data["message_id"]], "timestamp": [data["timestamp"]]}
    if "tools_used" in data:
        keywords |= execution_keywords(data)
    return IndexDoc(id=doc, vector=vector, text=text, keywords=keywords)


class Indexer:
    def __init__(self, index: VectorIndex, embedder: Embedder) -> None:
        self._index = index
        self._embedder = embedder

    def index(self, store: EntryStore, scope: str, data: dict[str, Any]) -> None:
        """Embed and upsert one record; raises whatever the embedder, the store or the index raises."""
        doc_key = doc_id(scope, data["message_id"])
        if store.kind is CONVERSATIONS and message_of(data) is not None:
            previous = previous_turn(store, scope, data)
            vector = self._embedder.embed([turn_embedding_text(data, previous)])[0]
            self._index.upsert(store.kind.namespace, [turn_doc(doc_key, scope, data, vector, previous)])
            return
        text = conversation_text(data) if store.kind is CONVERSATIONS else execution_text(data)
        vector = self._embedder.embed([text])[0]
        doc = index_doc(doc_key, scope, data, text, vector)
        self._index.upsert(store.kind.namespace, [doc])

    def remove(self, store: EntryStore, scope: str, message_id: str) -> None:
        """Delete one record's document from its kind's namespace."""
        self._index.delete(store.kind.namespace, [doc_id(scope, message_id)])

    def reindex(self, stores: Iterable[EntryStore]) -> int:
        """Rebuild the namespaces from the records (maintenance: it scans, which no user request does)."""
        total = 0
        for store in stores:
            self._index.clear(store.kind.namespace)
            for data in store.scan_all():
                self.index(store, data["scope"], data)
                total += 1
        return total


#: A stored conversation or execution never changes, so being there is its only version.
PRESENT = "present"


class EntryFamily:
    """The outbox's view of one kind: a reference is ``{scope, message_id}``."""

    def __init__(self, store: EntryStore, indexer: Indexer) -> None:
        self.family = store.kind.namespace
        self.store = store
        self._indexer = indexer

    @staticmethod
    def reference(scope: str, message_id: str) -> dict[str, str]:
        """The outbox reference of one record."""
        return {"scope": scope, "message_id": message_id}

    def version_token(self, ref: Reference) -> str:
        """``PRESENT`` while the record exists (it never changes), else ``GONE``."""
        return PRESENT if self.store.get(ref["scope"], ref["message_id"]) is not None else GONE

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one record: index it, or remove it if it is gone."""
        data = self.store.get(ref["scope"], ref["message_id"])
        if data is None:
            self._indexer.remove(self.store, ref["scope"], ref["message_id"])
            return GONE
        self._indexer.index(self.store, ref["scope"], data)
        return PRESENT

    def first_write(self, scope: str, data: dict[str, Any]) -> str:
        """The index write right after the record's own write (``IndexOutbox.settle``'s ``first``)."""
        self._indexer.index(self.store, scope, data)
        return PRESENT

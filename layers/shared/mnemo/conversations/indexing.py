"""What the vector index holds for conversations and executions, and its outbox.

Index documents are ``IndexDoc(id=doc_id(scope, message_id))`` with the
keywords ``scope``, ``message_id`` and ``timestamp``; executions add ``tools``,
``success`` and ``error_type`` (lower-cased), so a k-NN or BM25 query filters by
user scope and execution fields inside the index, and the time range is applied
to the hits' keywords before any record is read.

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
from mnemo.outbox import GONE, Reference
from mnemo.ports import Embedder, IndexDoc, VectorIndex

logger = logging.getLogger(__name__)


def conversation_text(data: dict[str, Any]) -> str:
    """What a conversation is matched by: the user's input, then the agent's response."""
    return f"{data['user_input']}\n{data['agent_response']}"


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
        """Embed and upsert one record; raises whatever the embedder or the index raises."""
        text = conversation_text(data) if store.kind is CONVERSATIONS else execution_text(data)
        vector = self._embedder.embed([text])[0]
        doc = index_doc(doc_id(scope, data["message_id"]), scope, data, text, vector)
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

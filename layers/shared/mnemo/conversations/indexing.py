"""What the vector index holds for conversations and executions, and its outbox.

Index documents are ``IndexDoc(id=doc_id(scope, message_id))`` with the
keywords ``scope``, ``message_id`` and ``timestamp``; executions add ``tools``,
``success`` and ``error_type`` (lower-cased), so a k-NN or BM25 query filters by
user scope and execution fields inside the index, and the time range is applied
to the hits' keywords before any record is read.

An index write never loses a record: the record is already stored when the
embedder or the index fails, so the failure is written as a PENDING marker in
the record's partition, and the next call in that scope indexes it (``drain``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from mnemo.conversations.store import CONVERSATIONS, EntryStore, doc_id
from mnemo.ports import Embedder, IndexDoc, VectorIndex

logger = logging.getLogger(__name__)


def conversation_text(data: dict[str, Any]) -> str:
    return f"{data['user_input']}\n{data['agent_response']}"


def execution_text(data: dict[str, Any]) -> str:
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
    return {
        "tools": sorted({tool.lower() for tool in data["tools_used"]}),
        "success": ["true" if data["success"] else "false"],
        "error_type": sorted({str(error.get("error_type", "")).lower() for error in data["errors"]}),
    }


def index_doc(doc: str, scope: str, data: dict[str, Any], text: str, vector: Sequence[float]) -> IndexDoc:
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

    def index_or_queue(self, store: EntryStore, scope: str, data: dict[str, Any]) -> str:
        """ "indexed", or "queued" when indexing failed and the record waits in the outbox."""
        try:
            self.index(store, scope, data)
        except Exception as error:  # any embedder or index failure: the record is already stored
            logger.warning("indexing %s %s failed; queued: %s", store.kind.name, data["message_id"], error)
            store.mark_pending(scope, data["message_id"], str(error))
            return "queued"
        return "indexed"

    def drain(self, store: EntryStore, scope: str) -> tuple[int, int]:
        """Index what waits in one scope's outbox (a bounded batch); returns (done, still pending)."""
        done = failed = 0
        for marker in store.pending(scope):
            data = store.get(scope, marker.data["message_id"])
            try:
                if data is not None:
                    self.index(store, scope, data)
            except Exception as error:  # stays queued for the next call
                logger.warning("pending index of %s failed again: %s", marker.data["message_id"], error)
                failed += 1
                continue
            store.clear_pending(marker)
            done += 1
        return done, failed

    def reindex(self, stores: Iterable[EntryStore]) -> int:
        """Rebuild the namespaces from the records (maintenance: it scans, which no user request does)."""
        total = 0
        for store in stores:
            self._index.clear(store.kind.namespace)
            for data in store.scan_all():
                self.index(store, data["scope"], data)
                total += 1
        return total

"""The graph's vector index family: entity and fact text in namespace ``graph``, kept in line by the index outbox.

Every write of an entity or fact carries its outbox marker in the same
all-or-nothing write (``marker``); after the write, ``index_now`` embeds what
was written in one call and settles the markers, and a failure leaves them for
a drain. The index only finds ids: every hit is read back from the records.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

from mnemo.errors import MnemoError
from mnemo.graph.names import fact_sentence, type_key
from mnemo.graph.store import ENTITY, FACT, NAMESPACE, PARTITION, GraphStore
from mnemo.outbox import GONE, IndexOutbox, Reference
from mnemo.ports import MAX_WRITE_OPERATIONS, Embedder, IndexDoc, Put, RecordStore, VectorIndex

#: Facts a rename re-indexes before it answers; the drain takes the rest.
REINDEX_NOW = 100

logger = logging.getLogger(__name__)


def with_names(fact: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A fact with its ends' current names (an entity renamed since the fact was added), where known."""
    return {
        **fact,
        "subjectName": names.get(fact["subjectId"], fact["subjectName"]),
        "objectName": names.get(fact["objectId"], fact["objectName"]),
    }


def index_text(data: dict[str, Any]) -> str:
    """What is embedded and matched: a fact's sentence (with its triple when the sentence differs), or an
    entity's name, type, aliases and summary."""
    if "factId" in data:
        sentence = fact_sentence(data["subjectName"], data["predicate"], data["objectName"])
        return data["text"] if data["text"] == sentence else f"{data['text']}\n{sentence}"
    return "\n".join([data["name"], data["type"], " ".join(data["aliases"]), data["summary"]]).strip()


def index_doc(data: dict[str, Any], vector: Sequence[float]) -> IndexDoc:
    """The index document of an entity or fact: its text and vector, with the keywords searches filter on (scope, kind,
    and type or ends and predicate)."""
    scope = data["scope"]
    if "factId" in data:
        keywords = {
            "scope": [scope],
            "kind": ["fact"],
            "entity": sorted({data["subjectId"], data["objectId"]}),
            "predicate": [data["predicate"]],
        }
        return IndexDoc(id=data["factId"], vector=vector, text=index_text(data), keywords=keywords)
    keywords = {"scope": [scope], "kind": ["entity"], "type": [type_key(data["type"])]}
    return IndexDoc(id=data["entityId"], vector=vector, text=index_text(data), keywords=keywords)


class GraphIndex:
    #: The outbox family: entities and facts are indexed in the namespace of the same name.
    family = NAMESPACE

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox) -> None:
        self._records = records
        self._store = GraphStore(records)
        self._index = index
        self._embedder = embedder
        self._outbox = outbox

    def marker(self, pk: str, sk: str) -> Put:
        """The outbox marker to write with the entity or fact at (pk, sk)."""
        return self._outbox.marker(self.family, {"pk": pk, "sk": sk})

    def index_now(self, pending: Sequence[tuple[Put, dict[str, Any], int]]) -> None:
        """Index records just written (marker, data, version) with one embedding call; if it fails, their
        markers wait for a drain."""
        try:
            vectors = self._embedder.embed([index_text(data) for _, data, _ in pending])
        except MnemoError as error:
            logger.warning("embedding failed; the graph records are stored and queued for indexing: %s", error.message)
            return
        for (marker, data, version), vector in zip(pending, vectors, strict=True):
            self._outbox.settle(marker, self, first=partial(self._write_document, data, vector, str(version)))

    def settle(self, markers: Sequence[Put]) -> None:
        """Bring the index in line with records just removed (their markers name them)."""
        for marker in markers:
            self._outbox.settle(marker, self)

    def _write_document(self, data: dict[str, Any], vector: Sequence[float], token: str) -> str:
        """Index an entity or fact just written; its version token."""
        self._index.upsert(NAMESPACE, [index_doc(data, vector)])
        return token

    def version_token(self, ref: Reference) -> str:
        """The record's version as a token, ``GONE`` when it is missing or being deleted."""
        item = self._records.get(ref["pk"], ref["sk"])
        return GONE if item is None or item.data.get("deleting") else str(item.version)

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one entity or fact: upsert it, or remove it if it is gone."""
        item = self._records.get(ref["pk"], ref["sk"])
        if item is None or item.data.get("deleting"):
            self._index.delete(NAMESPACE, [ref["sk"].split("#", 1)[1]])
            return GONE
        data = item.data
        if "factId" in data:
            ends = self._store.entities(ref["pk"], [data["subjectId"], data["objectId"]])
            data = with_names(data, {entity_id: entity["name"] for entity_id, entity in ends.items()})
        vector = self._embedder.embed([index_text(data)])[0]
        self._index.upsert(NAMESPACE, [index_doc(data, vector)])
        return str(item.version)

    def requeue_facts(self, pk: str, entity_id: str) -> int:
        """Index an entity's facts again (their text names it, and it was renamed): the first REINDEX_NOW at
        once in one embedding call, the others queued for the drain, so a rename stays short at any size."""
        markers = {
            edge.data["factId"]: self.marker(pk, FACT + edge.data["factId"])
            for edge in self._store.edges(pk, entity_id)
        }
        queued = list(markers.values())
        for start in range(0, len(queued), MAX_WRITE_OPERATIONS):
            self._records.write(queued[start : start + MAX_WRITE_OPERATIONS])
        facts = self._store.facts(pk, list(markers)[:REINDEX_NOW])
        ends = self._store.entities(
            pk, [end for fact in facts for end in (fact.data["subjectId"], fact.data["objectId"])]
        )
        names = {end: entity["name"] for end, entity in ends.items()}
        self.index_now([(markers[fact.data["factId"]], with_names(fact.data, names), fact.version) for fact in facts])
        return len(queued)

    def reindex(self, batch: int = 64) -> int:
        """Rebuild the graph's vector index from the records (maintenance: scans the table)."""
        self._index.clear(NAMESPACE)
        pending: list[dict[str, Any]] = []
        names: dict[str, str] = {}  # a partition's entities come before its facts (ENT# < FACT#) in a scan
        total = 0

        def flush() -> None:
            vectors = self._embedder.embed([index_text(data) for data in pending])
            self._index.upsert(NAMESPACE, [index_doc(d, v) for d, v in zip(pending, vectors, strict=True)])
            pending.clear()

        for item in self._records.scan(PARTITION):
            if item.sk.startswith(ENTITY) and not item.data.get("deleting"):
                names[item.data["entityId"]] = item.data["name"]
                pending.append(item.data)
            elif item.sk.startswith(FACT):
                pending.append(with_names(item.data, names))
            else:
                continue
            total += 1
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        return total

"""The generic indexer: the vector index of a record family that no service of its own indexes.

A family that declares a ``document`` (``mnemo.families.RecordFamily``) is indexed here: its outbox family
and index namespace are its ``name``, an outbox marker names a record by ``{"pk", "sk"}``, and the document
id is derived from those keys (``document_entry``), so a record that is gone can still be unindexed. Its
writer puts the marker in the same all-or-nothing write as the record (``IndexOutbox.marker``) and the outbox
indexes it from the record as it is then, as for every other family.
"""

from __future__ import annotations

import hashlib

from mnemo.families import IndexEntry, RecordFamily
from mnemo.outbox import GONE, Reference
from mnemo.ports import Embedder, IndexDoc, Item, RecordStore, VectorIndex


def document_id(pk: str, sk: str) -> str:
    """The index document id of a record the generic indexer indexes."""
    return "doc_" + hashlib.sha256(f"{pk}\n{sk}".encode()).hexdigest()[:40]


def document_entry(name: str, item: Item) -> IndexEntry:
    """The index entry of a record of the family ``name`` that the generic indexer indexes (its ``index``)."""
    return IndexEntry(name, {"pk": item.pk, "sk": item.sk}, document_id(item.pk, item.sk))


class DocumentIndex:
    """``IndexedFamily`` for a family that declares a ``document``."""

    def __init__(self, family: RecordFamily, records: RecordStore, index: VectorIndex, embedder: Embedder) -> None:
        if family.document is None:
            raise ValueError(f"the {family.name} family declares no document")
        self.family = family.name
        self._describe = family.document
        self._records = records
        self._index = index
        self._embedder = embedder

    def version_token(self, ref: Reference) -> str:
        """The record's version, or ``GONE``, read consistently."""
        item = self._records.get(ref["pk"], ref["sk"])
        return str(item.version) if item is not None else GONE

    def sync_reference(self, ref: Reference) -> str:
        """Index the record as it is now (its document, embedded), or unindex it when it is gone or has none."""
        item = self._records.get(ref["pk"], ref["sk"])
        document = self._describe(item) if item is not None else None
        if item is None or document is None:
            self._index.delete(self.family, [document_id(ref["pk"], ref["sk"])])
            return GONE if item is None else str(item.version)
        (vector,) = self._embedder.embed([document.text])
        keywords = {name: list(values) for name, values in document.keywords.items()}
        doc = IndexDoc(id=document_id(item.pk, item.sk), vector=vector, text=document.text, keywords=keywords)
        self._index.upsert(self.family, [doc])
        return str(item.version)

"""StoredAssets in the vector index (namespace ``blocks``), so their content can be searched.

Each write of a block or skill carries an index outbox marker (``mnemo.outbox``)
in its transaction; the index is brought in line right after, or by the next
drain. The index only finds files: every hit is read back from its head, so a
deleted or moved-on file is never answered from a stale entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from mnemo.files.store import ASSET_PREFIX, HEAD, FileStore, Location
from mnemo.outbox import GONE, Reference
from mnemo.ports import Embedder, Hit, IndexDoc, RecordStore, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank

NAMESPACE = "blocks"
#: What is embedded of a file: its start (Titan reads at most 50,000 characters).
EMBED_CHARS = 8000


def doc_id(pk: str, name: str) -> str:
    return "blk_" + hashlib.sha256(f"{pk}\n{name}".encode()).hexdigest()[:40]


class BlockIndex:
    #: The outbox family.
    family = NAMESPACE

    def __init__(self, records: RecordStore, store: FileStore, index: VectorIndex, embedder: Embedder) -> None:
        self._records = records
        self._store = store
        self._index = index
        self._embedder = embedder

    @staticmethod
    def reference(pk: str, name: str) -> Reference:
        return {"pk": pk, "name": name}

    def version_token(self, ref: Reference) -> str:
        head = self._store.head(Location(ref["pk"]), ref["name"])
        return str(head.version) if head is not None else GONE

    def write_document(self, pk: str, name: str, content: str, version: int) -> str:
        """Index a file just written at ``version``; its version token (a first write for ``IndexOutbox.settle``,
        which callers hand it as ``functools.partial(write_document, ...)``)."""
        text = f"{name}\n{content}"
        vector = self._embedder.embed([text[:EMBED_CHARS]])[0]
        kind = name.split("/", 1)[0]
        scope = pk.split("|", 1)[1]
        keywords = {"scope": [scope], "name": [name], "kind": [kind]}
        self._index.upsert(NAMESPACE, [IndexDoc(doc_id(pk, name), vector, text, keywords)])
        return str(version)

    def delete_document(self, pk: str, name: str) -> str:
        """Remove a file's index document; ``GONE``."""
        self._index.delete(NAMESPACE, [doc_id(pk, name)])
        return GONE

    def sync_reference(self, ref: Reference) -> str:
        where = Location(ref["pk"])
        head = self._store.head(where, ref["name"])
        if head is None:
            return self.delete_document(ref["pk"], ref["name"])
        content, _ = self._store.content(where, head)
        return self.write_document(ref["pk"], ref["name"], content, head.version)

    def reindex(self) -> int:
        """Rebuild the namespace from the records (maintenance: scans the table)."""
        self._index.clear(NAMESPACE)
        total = 0
        for item in self._records.scan(ASSET_PREFIX):
            if item.sk.startswith(HEAD) and not item.data.get("deleted"):
                self.sync_reference(self.reference(item.pk, item.sk.removeprefix(HEAD)))
                total += 1
        return total

    def search(self, scopes: Sequence[str], query: str) -> tuple[list[tuple[Hit, float]], bool]:
        """Hits in ``scopes`` by the calibrated hybrid score memory_search uses, best first; and whether
        the embedder answered (else lexical only)."""
        ranking = hybrid_rank(self._index, self._embedder, NAMESPACE, query, {"scope": list(scopes)})
        found = [(c.hit, c.score) for c in ranking.candidates if set(c.hit.keywords.get("scope", [])) & set(scopes)]
        return found, ranking.dense

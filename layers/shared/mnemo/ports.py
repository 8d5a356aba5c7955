"""The storage and model interfaces that services depend on.

Services import only this module; adapters implement it. Every adapter of a
port passes the same contract suite (tests/contract).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


# ---------------------------------------------------------------- records ---
@dataclass
class Item:
    """One record: a partition key, a sort key, a JSON-able body and a version.

    ``version`` is set by the caller (1 on create, the read version + 1 on an
    update) and stored as given; conditional writes compare against it.
    """

    pk: str
    sk: str
    data: dict[str, Any]
    version: int = 1
    expires_at: int | None = None


@dataclass
class Put:
    item: Item
    #: "absent": the key must not exist; an int: the stored version must equal it.
    expect: Literal["absent"] | int | None = None


@dataclass
class Delete:
    pk: str
    sk: str
    #: "present": the key must exist; an int: the stored version must equal it.
    expect: Literal["present"] | int | None = None


#: The most operations one ``RecordStore.write`` applies together (a DynamoDB transaction's limit).
MAX_WRITE_OPERATIONS = 100


class ConditionFailed(Exception):
    """A conditional write lost: the key existed, was missing, or moved on."""


class RecordStore(Protocol):
    """Key-value records with conditional, all-or-nothing writes (DynamoDB-shaped).

    Reads are strongly consistent unless the caller passes ``consistent=False``: then a read may miss
    a write made up to about a second before, or return the item as it was before it (DynamoDB's
    eventually consistent reads, at half the read units). Only a read whose answer no write depends on
    may pass False: search read-backs and listings. Versions, conditions, idempotency and dedupe checks,
    locks and the outbox always read consistently. Adapters that are always consistent ignore it.
    """

    def get(self, pk: str, sk: str, *, consistent: bool = True) -> Item | None: ...

    def batch_get(self, keys: Sequence[tuple[str, str]], *, consistent: bool = True) -> list[Item]: ...

    def query(
        self,
        pk: str,
        sk_prefix: str = "",
        *,
        limit: int = 100,
        descending: bool = False,
        between: tuple[str, str] | None = None,
        consistent: bool = True,
    ) -> list[Item]:
        """Items of one partition in sort key order, up to ``limit``: those whose sort key starts
        with ``sk_prefix``, or (``between``, with no prefix) lies in [low, high], both inclusive."""
        ...

    def write(self, operations: Sequence[Put | Delete]) -> None:
        """Apply every operation or none; raise ConditionFailed if any condition fails.

        At most ``MAX_WRITE_OPERATIONS`` change together (DynamoDB's transaction limit); every adapter refuses
        more with ValueError, so a caller that could exceed it fails in every test, not only on AWS.
        """
        ...

    def scan(self, pk_prefix: str = "") -> Iterator[Item]:
        """Every item; for maintenance (reindex), never for a user request."""
        ...


# ----------------------------------------------------------- vector index ---
@dataclass
class IndexDoc:
    """What the vector index holds for one record: enough to find it, never the truth.

    ``keywords`` are exact-match filter fields (e.g. scope, tags); each holds a list.
    """

    id: str
    vector: Sequence[float]
    text: str
    keywords: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Hit:
    id: str
    score: float
    #: The document's filter fields, so callers can group hits without a read.
    keywords: dict[str, list[str]] = field(default_factory=dict)


#: field -> accepted values; a doc matches when, for every field, it has any of them.
Filter = dict[str, list[str]]


class VectorIndex(Protocol):
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None: ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None: ...

    def knn(self, namespace: str, vector: Sequence[float], flt: Filter, k: int) -> list[Hit]:
        """Nearest by cosine similarity (vectors are unit length), best first."""
        ...

    def lexical(self, namespace: str, text: str, flt: Filter, k: int) -> list[Hit]:
        """BM25, scaled to [0, 1] against the best score the query could reach."""
        ...

    def keywords_of(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """The filter fields of each of these documents the index holds, by id (the others are left out)."""
        ...

    def count(self, namespace: str) -> int: ...

    def clear(self, namespace: str) -> None: ...


# --------------------------------------------------------------- embedder ---
class Embedder(Protocol):
    #: Identifies the model, so vectors of different models are never mixed.
    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors, one per text."""
        ...


# ------------------------------------------------------------------ blobs ---
@dataclass
class Blob:
    key: str
    content: bytes
    version: str
    metadata: dict[str, str] = field(default_factory=dict)
    modified_at: str = ""


@dataclass
class BlobVersion:
    version: str
    modified_at: str
    metadata: dict[str, str] = field(default_factory=dict)
    deleted: bool = False


class BlobStore(Protocol):
    """Versioned blobs (knowledge markdown): every put keeps the previous versions."""

    def put(self, key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        """Store a new version; returns its version id."""
        ...

    def get(self, key: str, version: str | None = None) -> Blob | None: ...

    def list_keys(self, prefix: str = "") -> list[str]:
        """Keys of the current (not deleted) blobs under a prefix, sorted."""
        ...

    def versions(self, key: str) -> list[BlobVersion]:
        """Every version of a key, newest first (a delete shows as a deleted version)."""
        ...

    def delete(self, key: str) -> None: ...


# ----------------------------------------------------------------- events ---
@dataclass
class Event:
    detail_type: str
    detail: dict[str, Any]
    source: str = "mnemo"


class EventPublisher(Protocol):
    def publish(self, events: Sequence[Event]) -> None:
        """Deliver every event or raise ProviderError; never drop silently."""
        ...


# -------------------------------------------------------------- extractor ---
@dataclass
class ExtractionTool:
    """The one tool a model is made to call: its answer is the tool's input, shaped by ``schema``."""

    name: str
    description: str
    schema: dict[str, Any]


class Extractor(Protocol):
    """A language model that reads text and answers by calling one tool (structured output)."""

    #: Names the provider and model, for answers and logs.
    name: str

    def extract(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """The model's tool input; ProviderError (or RateLimited, Timeout) when the model fails or does not
        call the tool."""
        ...

"""The storage and model interfaces that services depend on: one written contract per port.

Services import only this module; adapters implement it. Each Protocol below names every method
and attribute an adapter implements and a caller may use, and its docstrings say what each
promises: consistency, idempotency, and which errors it raises.

**Every member is required.** No port has optional methods: an adapter with nothing to do for a
member implements it as a documented no-op (``LocalVectorIndex.prune``), so callers never probe an
adapter with ``getattr`` or ``hasattr``, and an adapter has no public method its port does not name.

**Errors.** Unless a method says otherwise, a failure of the backing service reaches the caller as
one of the envelope classes of ``mnemo.errors``: ``RateLimited`` (throttled after the client's own
retries), ``Timeout`` (no answer in time), ``ProviderError`` (anything else: refused, unreachable,
an answer that makes no sense). The embedded adapters' own failures (``sqlite3`` errors, ``OSError``)
are not wrapped; the doors answer them as PROVIDER_ERROR too. ``ValueError`` is a caller's mistake
(arguments the port does not accept) and is never worth retrying.

**Adding a backend: implement these Protocols and pass the contract suite.** Register the new
adapter where each suite lists its backends, and every test must pass unchanged:

- every port: ``tests/contract/test_port_conformance.py`` (add the class to ``ADAPTERS``): each
  member present with a compatible signature, and no public method outside the port;
- ``RecordStore``: ``tests/contract/test_record_store.py`` (``BACKENDS``), then the families on it as
  ``test_graph_contract.py``, ``test_conversations_on_dynamodb.py``, ``test_topics_on_dynamodb.py``,
  ``test_files_on_dynamodb.py``, ``test_sync_on_aws_adapters.py``, ``test_outline_on_aws_adapters.py``
  and ``test_portability_on_aws.py`` run them on DynamoDB;
- ``VectorIndex``: ``tests/contract/test_vector_index.py`` (``BACKENDS``, and ``KNN_BACKENDS`` when the
  test server answers k-NN), ``test_ranker_on_opensearch.py`` (the ranker ranks alike on it) and
  ``test_memory_filters.py`` (``BACKENDS``: ``where`` selects what the reference evaluator says);
- ``BlobStore``: ``tests/contract/test_blob_store.py`` (``BACKENDS``);
- ``Embedder`` and ``EventPublisher``: ``tests/contract/test_embedder_and_events.py``;
- ``Extractor``: ``tests/contract/test_extractors.py``;
- ``ExtractionQueue``: ``tests/contract/test_extraction_queue.py``;
- ``ChangeLog`` (local only): ``tests/unit/test_change_events.py``.

Then wire it in ``mnemo.runtime.Services`` (one adapter per port, chosen by the settings).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from mnemo.changes import RecordChange


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
    #: A label for the table's change stream on this write only (DynamoDB: the top-level attribute
    #: ``stream``, which the stream indexer's event filter matches); not part of the body, never read back,
    #: and ignored by stores without a change stream. A later write of the item without it clears it.
    stream: str | None = field(default=None, compare=False)


@dataclass
class Put:
    """Write ``item`` whole (create or replace), if ``expect`` holds."""

    item: Item
    #: "absent": the key must not exist; an int: the stored version must equal it; "new": the key must hold no
    #: item at all, not even one past its ``expires_at`` that the backend still holds (a keyed memory_add, whose
    #: memory id derives from its idempotency key, must never replace an expired memory's record:
    #: ``mnemo.memory.keys``).
    expect: Literal["absent", "new"] | int | None = None


@dataclass
class Delete:
    """Remove one key, if ``expect`` holds; removing a missing key without ``expect`` is no error."""

    pk: str
    sk: str
    #: "present": the key must exist; an int: the stored version must equal it; "expired": the key must hold an
    #: item past its ``expires_at`` (the expiry sweeper's: never a live item written there since it looked).
    expect: Literal["present", "expired"] | int | None = None


#: The most operations one ``RecordStore.write`` applies together (a DynamoDB transaction's limit).
MAX_WRITE_OPERATIONS = 100


class ConditionFailed(Exception):
    """A conditional write lost: the key existed, was missing, or moved on."""


class RecordStore(Protocol):
    """Key-value records with conditional, all-or-nothing writes (DynamoDB-shaped): the source of truth.

    Every member is required. Reads are strongly consistent (they see every write that returned before
    them) unless the caller passes ``consistent=False``: then a read may miss a write made up to about a
    second before, or return the item as it was before it (DynamoDB's eventually consistent reads, at
    half the read units). Only a read whose answer no write depends on may pass False: search read-backs
    and listings. Versions, conditions, idempotency and dedupe checks, locks and the outbox always read
    consistently. Adapters that are always consistent ignore it.

    An item whose ``expires_at`` has passed reads as absent everywhere (and counts as absent for a
    write's ``expect``, but for ``Delete(expect="expired")`` and ``Put(expect="new")``), even before the
    backend removes it; only ``expired`` lists such items, and ``get(..., expired=True)`` reads one. Errors: the
    provider envelope (see the module docstring); ``write`` also raises ``ConditionFailed``.
    """

    def get(self, pk: str, sk: str, *, consistent: bool = True, expired: bool = False) -> Item | None:
        """The item at this key, or None. Reads nothing else and changes nothing.

        ``expired``: also an item past its ``expires_at`` that the backend still holds (a history read of an
        expired memory, whose record holds its folded ADD entry until storage removes it).
        """
        ...

    def batch_get(self, keys: Sequence[tuple[str, str]], *, consistent: bool = True) -> list[Item]:
        """The items found at these keys, each once, in no promised order; missing keys are left out.

        Any number of keys (adapters split them into the backend's batch size).
        """
        ...

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
        with ``sk_prefix``, or (``between``, with no prefix) lies in [low, high], both inclusive.

        ValueError when both ``sk_prefix`` and ``between`` are given.
        """
        ...

    def write(self, operations: Sequence[Put | Delete]) -> None:
        """Apply every operation or none; raise ConditionFailed if any condition fails.

        At most ``MAX_WRITE_OPERATIONS`` change together (DynamoDB's transaction limit); every adapter refuses
        more with ValueError, so a caller that could exceed it fails in every test, not only on AWS. An empty
        list writes nothing. A write is seen by every consistent read that starts after it returns.
        Idempotency is the caller's, through ``expect``: a repeated conditional write fails its condition
        (a repeat the SDK makes of one call is recognised by DynamoDB and not applied twice). Another
        transaction writing the same item at the same moment also reads as ConditionFailed: re-read and decide.
        """
        ...

    def scan(self, pk_prefix: str = "") -> Iterator[Item]:
        """Every item whose partition key starts with ``pk_prefix``; for maintenance (reindex, export), never
        for a user request.

        Not a snapshot: an item written or removed while the scan runs may or may not be seen.
        """
        ...

    def expired(self, pk_prefix: str = "") -> Iterator[Item]:
        """Every item whose partition key starts with ``pk_prefix`` and whose ``expires_at`` has passed but
        which the backend still holds (each read as absent everywhere else), with its data, version and
        ``expires_at``: for the local expiry sweeper (``mnemo.memory.expiry``), never for a user request.

        Not a snapshot, as ``scan``. DynamoDB removes such items itself (TTL), so there it is rarely needed.
        """
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
    """One search answer: a document id, its score (higher is better) and its filter fields."""

    id: str
    score: float
    #: The document's filter fields, so callers can group hits without a read.
    keywords: dict[str, list[str]] = field(default_factory=dict)


#: field -> accepted values; a doc matches when, for every field, it has any of them.
Filter = dict[str, list[str]]


# The term-match algebra of ``where`` (``VectorIndex.knn`` and ``lexical``): conditions on the values of a
# document's keyword fields, compared as strings in code point order (the byte order of UTF-8). A field may
# hold several values; a leaf matches when any one of them passes. Callers encode what they want ordered
# (numbers, times) as strings whose order is that order (``mnemo.memory.filters``).
@dataclass(frozen=True)
class AnyTerm:
    """The field holds one of ``values`` (none given: matches no document)."""

    field: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class TermRange:
    """The field holds a value that starts with ``prefix`` and whose rest lies between ``low`` and ``high``
    (each inclusive or not; None: unbounded on that side). No bounds: any value starting with ``prefix``."""

    field: str
    prefix: str
    low: str | None = None
    high: str | None = None
    include_low: bool = True
    include_high: bool = True


@dataclass(frozen=True)
class TermContains:
    """The field holds a value that starts with ``prefix`` and whose rest contains ``infix`` (case-sensitive)."""

    field: str
    prefix: str
    infix: str


@dataclass(frozen=True)
class AllOf:
    """Every part matches (no parts: every document)."""

    parts: tuple[Match, ...]


@dataclass(frozen=True)
class AnyOf:
    """Some part matches (no parts: no document)."""

    parts: tuple[Match, ...]


@dataclass(frozen=True)
class NoneOf:
    """No part matches (no parts: every document)."""

    parts: tuple[Match, ...]


Match = AnyTerm | TermRange | TermContains | AllOf | AnyOf | NoneOf


@runtime_checkable
class InsertingIndex(Protocol):
    """An optional capability of a VectorIndex: writing documents whose ids it has never held.

    ``insert`` is ``upsert`` without looking for earlier copies to replace (OpenSearch Serverless looks
    them up by a search before every replacement). Only for ids no write ever gave the index, such as a
    memory id drawn at random for a new memory, or one derived from a memory_add's idempotency key (only a
    repeat of that add writes it again, and a repeat whose record write fails queues the id's re-index, which
    replaces every copy: ``mnemo.memory.writes``); callers check for it with ``isinstance``.
    """

    def insert(self, namespace: str, docs: Sequence[IndexDoc]) -> None: ...


@runtime_checkable
class BatchKnnIndex(Protocol):
    """An optional capability of a VectorIndex: several ``knn`` searches in one request (OpenSearch
    ``_msearch``), each answered exactly as ``knn`` would answer it alone."""

    def knn_many(self, namespace: str, queries: Sequence[tuple[Sequence[float], Filter, int]]) -> list[list[Hit]]: ...


@runtime_checkable
class HybridSearchIndex(Protocol):
    """An optional capability of a VectorIndex: both halves of a hybrid ranking from one search, for an index
    that keeps no corpus statistics for BM25 (S3 Vectors).

    ``hybrid`` answers ``(dense, lexical)``: the k-NN hits as ``knn`` answers them, and the hits among those
    candidates that hold a term of ``text``, scored by BM25 over the candidates' own text
    (``mnemo.adapters.bm25_rescoring``) on [0, 1]. A document the vector search did not find is not a
    lexical hit: the ranking is vector-first. ``mnemo.retrieval.ranker`` uses it, when present, instead of a
    ``knn`` and a ``lexical`` call.
    """

    def hybrid(
        self, namespace: str, vector: Sequence[float], text: str, flt: Filter, k: int, *, where: Match | None = None
    ) -> tuple[list[Hit], list[Hit]]: ...


class VectorIndex(Protocol):
    """Documents found by vector (k-NN) and by text (BM25), in namespaces; a derived copy of the records.

    Every member is required. Each namespace is separate (its own documents, its own vector dimension,
    set by its first write) and holds at most one document per id: a write of an id replaces it.

    **Consistency.** Not read-after-write in general. The embedded index shows a write to every handle
    and every search at once; OpenSearch shows it to searches after its refresh (about a second on a
    domain, 10 to 60 s on Serverless), so ``knn``, ``lexical``, ``keywords_of`` and ``count`` may miss a
    write that just returned. ``refresh_window`` says how long the index's *own* deletes and
    replacements may miss a copy written just before them; the index outbox (``mnemo.outbox``) checks
    such writes again once it has passed, with ``prune``. Records stay the truth: callers read the
    records back for whatever they return.

    **Idempotency.** Every write may be repeated with the same effect (the outbox and the stream indexer
    redeliver). **Errors.** The provider envelope (see the module docstring); ValueError for vectors of
    the wrong shape or dimension.
    """

    @property
    def refresh_window(self) -> float:
        """Seconds after which every write is visible to the lookups that deletes and replacements use.

        0: those are exact at once (writes by id). Above 0 (OpenSearch Serverless, whose ids the index
        assigns): a delete or replacement made inside the window may miss a copy written just before it,
        and ``prune`` after the window removes what it missed.
        """
        ...

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        """Write each document, replacing any held under its id (the last one given wins within a call).

        The namespace is created by its first write, with the dimension of its first vector; ValueError,
        before anything is written, when the vectors of one call differ in length or differ from the
        namespace's. No documents: nothing is written. Idempotent.
        """
        ...

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Remove the documents with these ids; ids (or a namespace) the index does not hold are ignored.

        Idempotent. Never creates a namespace.
        """
        ...

    def prune(self, namespace: str, ids: Sequence[str]) -> None:
        """Keep only the latest written copy of each of these documents; remove nothing else.

        Call it once ``refresh_window`` has passed since the last write of each id, so every copy is seen.
        Only an index whose ``refresh_window`` is above 0 can hold several copies of an id; the others
        implement it as a no-op. Idempotent.
        """
        ...

    def knn(
        self, namespace: str, vector: Sequence[float], flt: Filter, k: int, *, where: Match | None = None
    ) -> list[Hit]:
        """Up to ``k`` documents passing ``flt`` and ``where``, nearest first, scored by cosine similarity
        (vectors are unit length), one hit per id.

        ``where`` (the term-match algebra above: ``AnyTerm``, ``TermRange``, ``TermContains``, ``AllOf``,
        ``AnyOf``, ``NoneOf``) is ANDed with ``flt``; None adds no condition. Every adapter answers it alike
        (``tests/contract/test_memory_filters.py``).
        Empty for a namespace the index does not hold, ``k <= 0``, or a filter field with no accepted values.
        ValueError when ``vector``'s length is not the namespace's dimension. Reads only.
        """
        ...

    def lexical(self, namespace: str, text: str, flt: Filter, k: int, *, where: Match | None = None) -> list[Hit]:
        """Up to ``k`` documents passing ``flt`` and ``where`` (as for ``knn``) that hold a term of ``text``,
        best first by BM25, scaled to [0, 1] against the best score the query could reach; one hit per id.

        Every adapter analyses text alike (``mnemo.adapters.bm25_text``) and scores with the same numbers,
        so rankings agree. Empty when no term survives analysis, as for ``knn`` otherwise. Reads only.
        """
        ...

    def keywords_of(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """The filter fields of each of these documents the index holds, by id (the others are left out).

        Reads only.
        """
        ...

    def count(self, namespace: str) -> int:
        """How many documents the namespace holds (0 when the index does not hold it). Reads only."""
        ...

    def clear(self, namespace: str) -> None:
        """Remove the namespace and every document in it (``mnemo reindex`` rebuilds it). Idempotent."""
        ...


# --------------------------------------------------------------- embedder ---
#: The optional capabilities of a port: protocols of their own that an adapter may also implement, and that
#: callers check for with ``isinstance`` before using (a test double or another backend may lack them).
CAPABILITIES: dict[type, tuple[type, ...]] = {VectorIndex: (InsertingIndex, BatchKnnIndex, HybridSearchIndex)}


class Embedder(Protocol):
    """A text embedding model. Every member is required."""

    #: Identifies the model, so vectors of different models are never mixed.
    name: str
    #: The length of every vector ``embed`` returns.
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors of ``dimensions`` numbers, one per text, in the texts' order.

        Changes no state: the same text gives the same vector (up to the model's floating point), so a
        call may be repeated. No texts: no vectors. Errors: the provider envelope (``ProviderError`` also
        when the model's files are missing or altered, or its answer is not a vector of the right size).
        """
        ...


# ------------------------------------------------------------------ blobs ---
@dataclass
class Blob:
    """One version of a blob with its content."""

    key: str
    content: bytes
    version: str
    metadata: dict[str, str] = field(default_factory=dict)
    modified_at: str = ""
    #: A tag of the content (S3's ETag): the tag ``list_etags`` gives for this version.
    etag: str = ""


@dataclass
class BlobVersion:
    """One entry of a blob's history, without its content (a delete shows as ``deleted``)."""

    version: str
    modified_at: str
    metadata: dict[str, str] = field(default_factory=dict)
    deleted: bool = False


class BlobStore(Protocol):
    """Versioned blobs (knowledge markdown, workspace files): every put keeps the previous versions.

    Every member is required. Read-after-write: a put or delete that returned is seen by every later
    call (S3 is strongly consistent, the directory trivially so). Keys are checked by
    ``mnemo.blob_keys.check_blob_key``: a key that could escape its place (``..``, an absolute path, an
    empty segment) raises ``InvalidInput``. Errors otherwise: the provider envelope (see the module
    docstring).
    """

    def put(self, key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        """Store a new version; returns its version id.

        Not idempotent: each call adds a version (the same content twice is two versions).
        """
        ...

    def get(self, key: str, version: str | None = None) -> Blob | None:
        """The current version, or the one named; None when the key is missing or deleted, or the version
        is unknown or a delete."""
        ...

    def list_keys(self, prefix: str = "") -> list[str]:
        """Keys of the current (not deleted) blobs under a prefix, sorted."""
        ...

    def list_etags(self, prefix: str = "") -> dict[str, str]:
        """The current blobs under a prefix, each with its content's tag (the ``etag`` of its ``get``).

        Equal tags mean equal bytes, so a caller that kept a tag can skip reading an unchanged blob; a tag
        may also change when the bytes do not (S3: a multipart or KMS-encrypted upload of the same bytes).
        """
        ...

    def versions(self, key: str) -> list[BlobVersion]:
        """Every version of a key, newest first (a delete shows as a deleted version); [] for a key never put."""
        ...

    def delete(self, key: str) -> None:
        """Hide the key (``get`` and ``list_keys`` no longer see it) and keep its history.

        Idempotent in effect: deleting a deleted or missing key leaves it deleted.
        """
        ...

    def purge(self, key: str) -> None:
        """Remove the key with every version it ever had (delete markers too): nothing of it is kept.

        For erasing a user's data (``mnemo.portability.erasure``), where ``delete`` keeping the history would
        keep the content. Afterwards ``get`` answers None and ``versions`` []. Idempotent: purging a purged or
        missing key is no error. Not atomic: a purge that fails part-way leaves some versions, and is repeated.
        """
        ...


# ----------------------------------------------------------------- events ---
@dataclass
class Event:
    """One event on the bus: EventBridge's detail-type, detail and source."""

    detail_type: str
    detail: dict[str, Any]
    source: str = "mnemo"


class EventPublisher(Protocol):
    """Sends events to whoever listens (EventBridge rules, or in-process subscribers). Every member is required."""

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver every event or raise; never drop silently (in-process subscribers get them in order).

        Not idempotent: after a failure some events may have been delivered, and publishing again
        delivers them twice, so consumers must tolerate repeats. Errors: the provider envelope
        (``ProviderError`` also when the bus refuses any event); in process, a subscriber's own exception.
        """
        ...


# -------------------------------------------------------------- extractor ---
@dataclass
class ExtractionTool:
    """The one tool a model is made to call: its answer is the tool's input, shaped by ``schema``."""

    name: str
    description: str
    schema: dict[str, Any]


class Extractor(Protocol):
    """A language model that reads text and answers by calling one tool (structured output).

    Every member is required.
    """

    #: Names the provider and model, for answers and logs.
    name: str

    def extract(self, system: str, prompt: str, tool: ExtractionTool) -> dict[str, Any]:
        """The model's tool input; ProviderError (or RateLimited, Timeout) when the model fails or does not
        call the tool.

        Changes no stored state, but each call runs (and may bill) the model and may answer differently.
        A call that timed out is not sent again by the adapter: the model may have run it already.
        """
        ...

    def extract_counted(self, system: str, prompt: str, tool: ExtractionTool) -> Extraction:
        """``extract``, with the tokens the call used and the model's raw answer.

        An answer that is not JSON, or not an object, raises ProviderError with ``details["raw"]`` (the
        answer's first ``RAW_ANSWER_CHARS`` characters), so the caller can record what the model said.
        Same promises as ``extract`` otherwise.
        """
        ...


#: The most characters of a model's raw answer kept with a failure.
RAW_ANSWER_CHARS = 2000


@dataclass
class Extraction:
    """One model call's tool input, the tokens it used (0 when the provider does not say) and its raw text."""

    answer: dict[str, Any]
    input_tokens: int = 0
    output_tokens: int = 0
    raw: str = ""


# ------------------------------------------------------- extraction queue ---
@dataclass
class StreamNotice:
    """Work for the extraction of one stream of turns (a session of a user of a tenant).

    ``stream`` is the stream's key (a scope key; at most 512 characters), ``identity`` the ids of the
    identity that wrote the turns (tenant, user, session, agent: the transport's, never a model's), and
    ``reason`` why it is sent: ``turns`` (new turns were stored), ``idle`` (a wake-up came due) or
    ``demand`` (someone asked for a run now). ``token`` makes a notice unique for deduplication.
    """

    stream: str
    identity: dict[str, str]
    reason: Literal["turns", "idle", "demand"] = "turns"
    token: str = ""


class ExtractionQueue(Protocol):
    """Carries extraction work to a worker (SQS on AWS; the server's background thread locally).

    Every member is required. Delivery is at least once: a worker must tolerate a notice twice, and
    an extraction run is idempotent, so it does.
    """

    def notify(self, notice: StreamNotice) -> None:
        """Ask for the stream to be looked at soon (in order with the stream's other notices).

        Notices with the same stream, reason and token within the queue's deduplication window are
        delivered once. Errors: the provider envelope; a turn stored before a failed notify is still pending, and
        the next notice or sweep finds it.
        """
        ...

    def wake_later(self, notice: StreamNotice, delay_seconds: int) -> None:
        """Deliver ``notice`` (an ``idle`` one) after ``delay_seconds`` (at most 900), for the idle trigger.

        Errors: the provider envelope; ValueError for a delay outside 0..900.
        """
        ...


# ----------------------------------------------------------- change log ---
@dataclass(frozen=True)
class Delivery:
    """One event's delivery to one webhook, as the delivery log keeps it.

    ``status``: pending (not yet delivered, attempts go on at ``next_at``), delivered, or failed (given up);
    ``body``: the exact JSON sent every attempt.
    """

    event_id: str
    target: str
    kind: str
    body: str
    status: str = "pending"
    attempts: int = 0
    last_status: int | None = None
    last_error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    next_at: float = 0.0


class ChangeLog(Protocol):
    """The local change log and delivery log (SQLite): changes in, deliveries out, each leased to one worker.

    Every member is required. A lease lets one worker of several processes hold a row for ``lease_seconds``;
    a worker that dies leaves it to the next one after that.
    """

    def lease_changes(self, worker: str, limit: int, lease_seconds: float) -> list[RecordChange]:
        """The oldest logged changes no other worker holds, now held by ``worker``."""
        ...

    def settle_changes(self, seqs: Sequence[int], deliveries: Sequence[Delivery]) -> None:
        """Store ``deliveries`` (pending, due at their ``next_at``; one per event id and target, a repeat is ignored)
        and forget the changes ``seqs``, in one transaction."""
        ...

    def lease_deliveries(self, worker: str, limit: int, lease_seconds: float, now: float) -> list[Delivery]:
        """Pending deliveries due by ``now`` that no other worker holds, oldest first, now held by ``worker``."""
        ...

    def record_attempt(self, delivery: Delivery) -> None:
        """Store a delivery after an attempt (its status, attempts, last status or error, next_at) and free it."""
        ...

    def deliveries(self, limit: int, *, failed_only: bool = False) -> list[Delivery]:
        """The most recent deliveries, newest first; ``failed_only``: those whose last attempt failed."""
        ...

    def pending_changes(self) -> int:
        """How many logged changes are not yet made into deliveries."""
        ...

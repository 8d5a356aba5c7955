"""VectorIndex on OpenSearch (managed domain or OpenSearch Serverless).

One index per namespace, named ``index_prefix`` + the namespace (escaped into the
characters an index name allows). One document per memory:

- ``doc_id``: the memory id. Serverless vector collections assign ``_id`` themselves, so
  the id is a field and every write finds documents through it. On a managed domain
  (``serverless=False``) ``_id`` is also set to the memory id, which makes an upsert a
  single overwrite.
- ``text``: the text, analysed like the local index (standard tokenizer, lower case,
  English possessives, English stop words, Snowball), BM25 with the local k1 and b, for
  searches made outside this adapter (dashboards, ad hoc queries).
- ``terms``: the tokens of ``mnemo.adapters.local.lexical.analyse`` (with repeats) and
  ``length``: their number, so BM25 here uses exactly the local analysis. The sub-field
  ``terms.bm25`` (whitespace-analysed, same BM25 parameters) ranks lexical candidates
  on those same tokens.
- ``filters``: one ``field=value`` keyword per filter value; ``Hit.keywords`` is rebuilt
  from it.
- ``vector``: faiss HNSW, inner product (vectors are unit length, so it is the cosine), stored
  as 16-bit floats by the faiss ``sq`` encoder (OpenSearch 2.13 and later, and Serverless vector
  collections). A search filters inside the graph search (efficient k-NN filtering), so ``k``
  hits come back when ``k`` documents match. Sizes and limits: docs/scaling.md.

- ``written``: when the copy was written (epoch nanoseconds), so that ``prune`` keeps the
  latest copy of a memory.

The adapter never asks for a refresh (Serverless refuses it): writes become searchable
when the cluster refreshes on its own (about a second on a domain, 10 to 60 s on
Serverless). Until then a search may miss a fresh write and, on Serverless, a write or
delete of the same memory may not find the copy it replaces; searches drop a memory's
second copy. Serverless vector collections refuse a client-supplied ``_id`` (AWS documents
server-generated ids for VECTORSEARCH collections), so exact ids are not an option there;
keeping the assigned ``_id`` beside each record in DynamoDB would cost a second record
write per add. Instead the adapter reports its ``refresh_window`` (``SERVERLESS_REFRESH``
on Serverless, 0 on a domain, where ``_id`` is the memory id and every write is exact),
and the index outbox (``mnemo.outbox``) checks every delete and replacement again once
the window has passed: the delete is repeated, or ``prune`` keeps only the latest copy.
Adds of new memories cannot have missed a copy and are not checked again. The index is
created on the first upsert, with the dimension of the first vector, together with an
index template for ``index_prefix*`` (see ``index_template``);
``infra/bootstrap_opensearch.py`` can create both ahead.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mnemo import telemetry
from mnemo.adapters.bm25_text import K1, B, analyse, idf, term_score
from mnemo.errors import MnemoError, ProviderError, RateLimited, Timeout
from mnemo.ports import Filter, Hit, IndexDoc

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

    from mnemo.settings import Settings

ClientFactory = Callable[[], "OpenSearch"]
_log = logging.getLogger(__name__)


#: The k-NN query accepts k in [1, 10000]; a search returns at most 10000 hits.
MAX_K = 10_000
#: Documents per bulk request, and the request size at which a bulk is sent early.
BULK_DOCS = 500
BULK_BYTES = 5 * 1024 * 1024
#: Memory ids per lookup of existing documents (Serverless writes).
LOOKUP_IDS = 500
#: HNSW graph parameters (docs/scaling.md, "On AWS: OpenSearch"): links per vector, the
#: candidate list while building, and the candidate list while searching. ``ef_search`` stays
#: above the k of memory_search (100 candidates), whose recall a list of exactly k would cap.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
HNSW_EF_SEARCH = 256
#: Seconds a handle keeps a namespace's document count and mean length (BM25's ``n`` and
#: ``avgdl``) before asking again: the bound on their staleness. Its own writes drop them at once.
STATS_TTL = 60.0
#: Seconds after which OpenSearch Serverless shows a write to searches: AWS gives 10 to 60 s
#: for vector collections, and Serverless has no ``_refresh`` to force it.
SERVERLESS_REFRESH = 60.0
#: Keywords longer than this (in characters) are kept in _source but not indexed, so that
#: one enormous token cannot get a document rejected (Lucene refuses terms over 32766 bytes).
KEYWORD_IGNORE_ABOVE = 8191

_INDEX_NAME_KEEPS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")
_INDEX_NAME_MAX_BYTES = 255
_BAD_PREFIX_CHARS = set('\\/*?"<>| ,#:')


# ------------------------------------------------------------- definition ---
def index_definition(dimension: int, *, serverless: bool = False) -> dict[str, Any]:
    """The settings and mappings of a memory index (``infra/opensearch/memory.json`` at 1024).

    Serverless manages shards and replicas itself, so those settings are left out there.
    """
    index_settings: dict[str, Any] = {"knn": True}
    if not serverless:
        index_settings.update({"number_of_shards": 2, "number_of_replicas": 1})
    return {
        "settings": {
            "index": index_settings,
            "analysis": {
                "analyzer": {
                    "mnemo_text": {
                        "type": "custom",
                        "tokenizer": "standard",
                        "filter": ["lowercase", "english_possessive", "english_stop", "english_snowball"],
                    }
                },
                "filter": {
                    "english_possessive": {"type": "stemmer", "language": "possessive_english"},
                    "english_stop": {"type": "stop", "stopwords": "_english_"},
                    "english_snowball": {"type": "snowball", "language": "English"},
                },
            },
            "similarity": {"mnemo_bm25": {"type": "BM25", "k1": K1, "b": B}},
        },
        "mappings": {
            "dynamic": "strict",
            # The vectors are only searched, never read back: keeping them out of _source
            # saves most of the storage and of every response.
            "_source": {"excludes": ["vector"]},
            "properties": {
                "doc_id": {"type": "keyword"},
                "text": {"type": "text", "analyzer": "mnemo_text", "similarity": "mnemo_bm25"},
                "terms": {
                    "type": "keyword",
                    "ignore_above": KEYWORD_IGNORE_ABOVE,
                    "fields": {"bm25": {"type": "text", "analyzer": "whitespace", "similarity": "mnemo_bm25"}},
                },
                "length": {"type": "integer"},
                "filters": {"type": "keyword", "ignore_above": KEYWORD_IGNORE_ABOVE},
                "written": {"type": "long"},
                "vector": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "engine": "faiss",
                        "space_type": "innerproduct",
                        "parameters": {
                            "m": HNSW_M,
                            "ef_construction": HNSW_EF_CONSTRUCTION,
                            "ef_search": HNSW_EF_SEARCH,
                            # Faiss 16-bit scalar quantization: half the memory of float32 vectors.
                            # Unit vectors lie in [-1, 1], well inside fp16's [-65504, 65504].
                            "encoder": {"name": "sq", "parameters": {"type": "fp16"}},
                        },
                    },
                },
            },
        },
    }


def index_template(prefix: str, dimension: int, *, serverless: bool = False) -> dict[str, Any]:
    """A composable index template giving every ``prefix*`` index the memory definition.

    The adapter creates its indexes explicitly; the template covers the race in which a
    handle that still believes an index exists writes to it just after another handle
    deleted it (``clear``, as ``reindex`` does): the bulk request then creates the index
    itself, and without the template it would get a dynamic mapping with no k-NN field.
    """
    return {
        "index_patterns": [f"{prefix}*"],
        "priority": 100,
        "template": index_definition(dimension, serverless=serverless),
    }


def template_name(prefix: str) -> str:
    return f"{prefix}index-template"


def index_name(prefix: str, namespace: str) -> str:
    """``prefix`` + ``namespace``, with every character an index name may not hold escaped.

    Index names are lower case and refuse ``|``, spaces and more; namespaces are free text.
    Lower-case letters, digits and ``-`` are kept, anything else becomes ``_xx`` per UTF-8
    byte (``_`` included), so distinct namespaces never share an index.
    """
    escaped = "".join(
        char if char in _INDEX_NAME_KEEPS else "".join(f"_{byte:02x}" for byte in char.encode()) for char in namespace
    )
    name = prefix + escaped
    if len(name.encode()) > _INDEX_NAME_MAX_BYTES:
        digest = hashlib.sha256(namespace.encode()).hexdigest()[:16]
        name = f"{name[: _INDEX_NAME_MAX_BYTES - len(digest) - 1]}-{digest}"
    return name


# ---------------------------------------------------------------- scoring ---
def cosine_from_score(score: float) -> float:
    """The inner product (the cosine, for unit vectors) behind a faiss ``innerproduct`` score.

    OpenSearch documents the score of the ``innerproduct`` space for the NMSLIB and Faiss
    engines as: d = -(x . y); score = 1 / (1 + d) if d >= 0, else score = -d + 1
    (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-spaces/, table
    "OpenSearch score"; opensearch-project/documentation-website,
    _field-types/supported-field-types/knn-spaces.md). So a positive inner product p scores
    1 + p (> 1) and a negative or zero one scores 1 / (1 - p) (in (0, 1]); inverted below.
    """
    if score >= 1.0:
        return score - 1.0
    if score <= 0.0:  # not produced by the formula; the floor of unit vectors
        return -1.0
    return 1.0 - 1.0 / score


def score_from_cosine(cosine: float) -> float:
    """The faiss ``innerproduct`` score OpenSearch gives an inner product (see ``cosine_from_score``)."""
    distance = -cosine
    return 1.0 / (1.0 + distance) if distance >= 0 else 1.0 - distance


@dataclass(frozen=True)
class CorpusStats:
    """The namespace-wide numbers BM25 needs: document count, mean length, document frequencies."""

    n: int
    avgdl: float
    df: Mapping[str, int]

    def idf(self, term: str) -> float:
        return idf(self.n, self.df.get(term, 0))

    def weights(self, query_terms: Sequence[str]) -> dict[str, float]:
        """idf times the term's count in the query, for the query terms the namespace holds."""
        counts = Counter(term for term in query_terms if self.df.get(term, 0) > 0)
        return {term: self.idf(term) * count for term, count in counts.items()}

    def score(self, weights: Mapping[str, float], doc_terms: Sequence[str]) -> float:
        """Raw BM25 of one document, exactly as ``Bm25.scores`` computes it for one row."""
        tfs = Counter(doc_terms)
        avg = self.avgdl if self.avgdl > 0 else 1.0
        return sum(term_score(w, tfs[t], len(doc_terms), avg) for t, w in weights.items() if tfs[t])


# ---------------------------------------------------------------- filters ---
def filter_strings(keywords: Mapping[str, Sequence[str]]) -> list[str]:
    """``{"scope": ["s1"], "tags": ["a", "b"]}`` -> ``["scope=s1", "tags=a", "tags=b"]``.

    A ``=`` or ``\\`` inside a field name is escaped with ``\\`` so the split is unambiguous.
    """
    return [f"{_escape_field(name)}={value}" for name, values in keywords.items() for value in values]


def keywords_from_filters(strings: Sequence[str]) -> dict[str, list[str]]:
    keywords: dict[str, list[str]] = {}
    for string in strings:
        name, value = _split_filter(string)
        keywords.setdefault(name, []).append(value)
    return keywords


def filter_clauses(flt: Filter) -> list[dict[str, Any]] | None:
    """One ``terms`` clause per field (fields are ANDed, values ORed); None if nothing can match."""
    clauses = []
    for name, values in flt.items():
        if not values:
            return None
        clauses.append({"terms": {"filters": filter_strings({name: values})}})
    return clauses


def _escape_field(name: str) -> str:
    return name.replace("\\", "\\\\").replace("=", "\\=")


def _split_filter(string: str) -> tuple[str, str]:
    name: list[str] = []
    index = 0
    while index < len(string):
        char = string[index]
        if char == "\\" and index + 1 < len(string):
            name.append(string[index + 1])
            index += 2
            continue
        if char == "=":
            return "".join(name), string[index + 1 :]
        name.append(char)
        index += 1
    return "".join(name), ""


# ----------------------------------------------------------------- bodies ---
def knn_body(vector: Sequence[float], k: int, clauses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The documented k-NN query with efficient (in-search) filtering."""
    knn: dict[str, Any] = {"vector": list(vector), "k": k}
    if clauses:
        knn["filter"] = {"bool": {"filter": list(clauses)}}
    return {"size": k, "_source": ["doc_id", "filters"], "query": {"knn": {"vector": knn}}}


def lexical_bodies(
    terms: Sequence[str], clauses: Sequence[Mapping[str, Any]], size: int, *, totals: bool = True
) -> list[Any]:
    """The msearch bodies of a lexical search: document frequencies, candidates and, when
    ``totals``, the namespace's document count and mean length.

    ``terms`` are the analysed query tokens. The document frequencies are counted among the
    documents holding a query term (their posting lists), never by visiting every document. A
    candidate is a document holding any of them (the local definition of a match); OpenSearch
    ranks candidates by BM25 over the same tokens (``terms.bm25``), so that when more match than
    ``size`` the best are kept. Only its statistics are per shard, and only the ranking depends
    on them: scores are computed here. The totals visit every document of the namespace, so the
    adapter asks for them once per ``STATS_TTL`` (see ``OpenSearchVectorIndex.lexical``).
    """
    unique = list(dict.fromkeys(terms))
    df = {
        "size": 0,
        "track_total_hits": False,
        "query": {"terms": {"terms": unique}},
        "aggs": {"df": {"filters": {"filters": {term: {"term": {"terms": term}} for term in unique}}}},
    }
    query: dict[str, Any] = {"must": [{"match": {"terms.bm25": {"query": " ".join(terms)}}}]}
    if clauses:
        query["filter"] = list(clauses)
    candidates = {"size": size, "_source": ["doc_id", "filters", "terms"], "query": {"bool": query}}
    bodies: list[Any] = [df, candidates]
    if totals:
        bodies.append(totals_body())
    return bodies


def totals_body() -> dict[str, Any]:
    """The namespace's document count and mean length: the one statistics query over every document."""
    return {"size": 0, "track_total_hits": True, "aggs": {"avgdl": {"avg": {"field": "length"}}}}


def lexical_window(k: int) -> int:
    """How many candidates to re-score for a top-k lexical search."""
    return min(MAX_K, max(2 * k, k + 20))


# ---------------------------------------------------------------- adapter ---
class OpenSearchVectorIndex:
    """The VectorIndex port on OpenSearch; see the module docstring for the document layout."""

    def __init__(
        self,
        client_factory: ClientFactory,
        index_prefix: str = "mnemo-",
        serverless: bool = True,
        refresh_window: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if (
            not index_prefix
            or index_prefix != index_prefix.lower()
            or index_prefix[0] in "-_+."
            or _BAD_PREFIX_CHARS & set(index_prefix)
        ):
            raise ValueError(f"index prefix {index_prefix!r} cannot start an OpenSearch index name")
        self._client_factory = client_factory
        self._client: OpenSearch | None = None
        self._prefix = index_prefix
        self._serverless = serverless
        #: Seconds until a write is visible to the lookups that deletes and replacements use.
        self.refresh_window = (SERVERLESS_REFRESH if serverless else 0.0) if refresh_window is None else refresh_window
        self._lock = threading.Lock()
        #: index name -> vector dimension, for indexes known to exist.
        self._dimensions: dict[str, int] = {}
        #: Indexes whose mapping lacks ``written`` (made before it, and not yet bootstrapped again).
        self._unstamped: set[str] = set()
        #: index name -> (document count, mean length, when read): BM25's totals, kept STATS_TTL.
        self._totals: dict[str, tuple[int, float, float]] = {}
        self._clock = clock

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenSearchVectorIndex:
        from mnemo.adapters.aws.opensearch.client import is_local_endpoint, make_client

        endpoint = settings.opensearch_endpoint
        if not endpoint:
            raise ValueError("MNEMO_OPENSEARCH_ENDPOINT is required when MNEMO_VECTOR_INDEX is opensearch")
        service = settings.opensearch_service
        local = is_local_endpoint(endpoint)
        return cls(
            lambda: make_client(endpoint, settings.aws_region, service, endpoint_is_local=local),
            index_prefix=settings.index_prefix,
            serverless=service == "aoss",
        )

    @property
    def client(self) -> OpenSearch:
        """The client, made on first use and kept (one per container)."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    with _translated():
                        self._client = self._client_factory()
                client = self._client
        return client

    def index_name(self, namespace: str) -> str:
        return index_name(self._prefix, namespace)

    # -- port ------------------------------------------------------------
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        if not docs:
            return
        latest = {doc.id: doc for doc in docs}  # one document per id: the last one given wins
        vectors = {doc_id: _vector(doc.vector, doc_id) for doc_id, doc in latest.items()}
        dims = len(next(iter(vectors.values())))
        for doc_id, vector in vectors.items():  # check all before anything is written
            if len(vector) != dims:
                raise ValueError(f"vector of {doc_id} has {len(vector)} dimensions, the batch has {dims}")
        index = self.index_name(namespace)
        with _translated():
            created = self._check_dimension(index, dims, create=True) == "created"
            with self._lock:
                unstamped = index in self._unstamped
            actions: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
            for doc_id, doc in latest.items():
                meta: dict[str, Any] = {"_index": index}
                if not self._serverless:
                    meta["_id"] = doc_id
                actions.append(({"index": meta}, _source(doc, vectors[doc_id], stamped=not unstamped)))
            if self._serverless and not created:
                # New copies first, then the old ones go: a search never misses the memory.
                actions += [({"delete": {"_index": index, "_id": _id}}, None) for _id in self._ids_of(index, latest)]
            self._bulk(actions)
            self._changed(index)  # after the write: a search meanwhile cannot keep the old totals

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        index = self.index_name(namespace)
        with _translated():
            if self._dimension(index) is None:
                return  # no index, nothing to delete (and a bulk must not create one)
            targets = self._ids_of(index, unique) if self._serverless else unique
            self._bulk([({"delete": {"_index": index, "_id": _id}}, None) for _id in targets])
            self._changed(index)  # after the write: a search meanwhile cannot keep the old totals

    def prune(self, namespace: str, ids: Sequence[str]) -> None:
        """Keep only the latest written copy of each of these memories (Serverless may hold several).

        Run once the refresh window has passed since the last write of each id, so every copy is seen.
        """
        unique = list(dict.fromkeys(ids))
        index = self.index_name(namespace)
        with _translated():
            if not unique or self._dimension(index) is None:
                return
            copies: dict[str, list[tuple[int, str]]] = {}
            for hit in self._by_doc_id(index, unique, ["doc_id", "written"]):
                source = hit.get("_source") or {}
                copies.setdefault(source.get("doc_id", ""), []).append((int(source.get("written") or 0), hit["_id"]))
            extra = [_id for found in copies.values() for _, _id in sorted(found)[:-1]]
            self._bulk([({"delete": {"_index": index, "_id": _id}}, None) for _id in extra])
            self._changed(index)  # after the write: a search meanwhile cannot keep the old totals

    def knn(self, namespace: str, vector: Sequence[float], flt: Filter, k: int) -> list[Hit]:
        query = _vector(vector, "the query")
        clauses = filter_clauses(flt)
        if k <= 0 or clauses is None:
            return []
        index = self.index_name(namespace)
        with _translated():
            if self._check_dimension(index, len(query), create=False) == "missing":
                return []
            size = min(k, MAX_K)
            response = self._search_or_none(index, knn_body(query, size, clauses))
        if response is None:
            return []
        hits: list[Hit] = []
        seen: set[str] = set()
        for hit in response["hits"]["hits"]:
            source = hit.get("_source") or {}
            doc_id = source.get("doc_id")
            if doc_id is None or doc_id in seen:  # Serverless may briefly hold two copies
                continue
            seen.add(doc_id)
            hits.append(
                Hit(doc_id, cosine_from_score(float(hit["_score"])), keywords_from_filters(source.get("filters", [])))
            )
        hits.sort(key=lambda hit: -hit.score)
        return hits[:k]

    def lexical(self, namespace: str, text: str, flt: Filter, k: int) -> list[Hit]:
        terms = analyse(text)
        clauses = filter_clauses(flt)
        if not terms or k <= 0 or clauses is None:
            return []
        index = self.index_name(namespace)
        with self._lock:
            cached = self._totals.get(index)
        if cached is not None and self._clock() - cached[2] >= STATS_TTL:
            cached = None
        bodies = lexical_bodies(terms, clauses, lexical_window(k), totals=cached is None)
        with _translated():
            try:
                response = self.client.msearch(body=[line for body in bodies for line in ({"index": index}, body)])
            except Exception as error:
                if _is_missing_index(error):
                    return []
                raise
        responses = response["responses"]
        for item in responses:
            if "error" in item:
                if _error_type(item["error"]) == "index_not_found_exception":
                    self._forget(index)
                    return []
                raise _status_error(int(item.get("status", 500)), _error_type(item["error"]))
        df_response, candidates_response = responses[:2]
        if cached is None:
            totals = responses[2]
            read = (int(totals["hits"]["total"]["value"]), float(totals["aggregations"]["avgdl"]["value"] or 0.0))
            cached = (*read, self._clock())
            with self._lock:
                self._totals[index] = cached
        buckets = df_response["aggregations"]["df"]["buckets"]
        df = {term: int(bucket["doc_count"]) for term, bucket in buckets.items()}
        # Totals read before other handles' writes may count fewer documents than hold a term now.
        stats = CorpusStats(n=max([cached[0], *df.values()]), avgdl=cached[1], df=df)
        weights = stats.weights(terms)
        reference = sum(weights.values())
        if reference <= 0:
            return []
        best: dict[str, Hit] = {}
        for hit in candidates_response["hits"]["hits"]:
            source = hit.get("_source") or {}
            doc_id = source.get("doc_id")
            if doc_id is None:
                continue
            raw = stats.score(weights, source.get("terms") or [])
            if raw <= 0:
                continue
            score = min(1.0, raw / reference)
            if doc_id not in best or best[doc_id].score < score:
                best[doc_id] = Hit(doc_id, score, keywords_from_filters(source.get("filters", [])))
        return sorted(best.values(), key=lambda hit: (-hit.score, hit.id))[:k]

    def keywords_of(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        with _translated():
            hits = self._by_doc_id(self.index_name(namespace), dict.fromkeys(ids), ["doc_id", "filters"])
            return {hit["_source"]["doc_id"]: keywords_from_filters(hit["_source"].get("filters", [])) for hit in hits}

    def count(self, namespace: str) -> int:
        index = self.index_name(namespace)
        with _translated():
            try:
                return int(self.client.count(index=index)["count"])
            except Exception as error:
                if _is_missing_index(error):
                    self._forget(index)
                    return 0
                raise

    def clear(self, namespace: str) -> None:
        index = self.index_name(namespace)
        with _translated():
            try:
                self.client.indices.delete(index=index)
            except Exception as error:
                if not _is_missing_index(error):
                    raise
            finally:
                self._forget(index)

    # -- index management -------------------------------------------------
    def _dimension(self, index: str, *, reload: bool = False) -> int | None:
        """The index's vector dimension, or None when the index does not exist."""
        if not reload:
            with self._lock:
                known = self._dimensions.get(index)
            if known is not None:
                return known
        try:
            mapping = self.client.indices.get_mapping(index=index)
        except Exception as error:
            if _is_missing_index(error):
                self._forget(index)
                return None
            raise
        body = mapping.get(index) or next(iter(mapping.values()))
        vector = body.get("mappings", {}).get("properties", {}).get("vector", {})
        if vector.get("type") != "knn_vector" or "dimension" not in vector:
            raise ProviderError(
                f"OpenSearch index {index} has no k-NN mapping: clear it and rebuild it (mnemo reindex)",
                {"service": "opensearch", "index": index},
            )
        dims = int(vector["dimension"])
        stamped = "written" in body.get("mappings", {}).get("properties", {}) or self._add_written(index)
        with self._lock:
            self._dimensions[index] = dims
            if stamped:
                self._unstamped.discard(index)
            else:
                self._unstamped.add(index)
        return dims

    def _add_written(self, index: str) -> bool:
        """Give an index made before documents carried ``written`` the field; False if this role may not.

        Changing a mapping needs ``aoss:UpdateIndex`` on Serverless, which only the admin principal holds
        (``infra/bootstrap_opensearch.py`` adds missing fields). Until it runs, documents are written
        without the field (the strict mapping would refuse them) and ``prune`` cannot tell copies apart
        by age, so it keeps one of them.
        """
        from opensearchpy.exceptions import TransportError

        try:
            self.client.indices.put_mapping(index=index, body={"properties": {"written": {"type": "long"}}})
        except TransportError as error:
            if _status_of(error) not in (401, 403):
                raise
            _log.warning(
                "OpenSearch index %s has no `written` field and this role may not add it: "
                "run infra/bootstrap_opensearch.py as the admin principal",
                index,
            )
            return False
        return True

    def _check_dimension(self, index: str, dims: int, *, create: bool) -> str:
        """ "exists", "created" or "missing"; ValueError if the index holds vectors of another size."""
        current = self._dimension(index)
        if current is None:
            if not create:
                return "missing"
            if self._create(index, dims):
                return "created"
            current = self._dimension(index)
        if current is not None and current != dims:
            current = self._dimension(index, reload=True)  # it may have been recreated since
        if current is None:
            return "missing"
        if current != dims:
            raise ValueError(f"vector has {dims} dimensions, the index holds {current}")
        return "exists"

    def _create(self, index: str, dims: int) -> bool:
        """Create the index; False if another writer created it first (its dimension then rules)."""
        self._put_template(dims)
        try:
            self.client.indices.create(index=index, body=index_definition(dims, serverless=self._serverless))
        except Exception as error:
            if _error_type_of(error) == "resource_already_exists_exception":
                return False
            raise
        with self._lock:
            self._dimensions[index] = dims
        return True

    def _put_template(self, dims: int) -> None:
        """Best effort: a collection that refuses templates still gets its indexes created."""
        try:
            body = index_template(self._prefix, dims, serverless=self._serverless)
            self.client.indices.put_index_template(name=template_name(self._prefix), body=body)
        except Exception as error:
            from opensearchpy.exceptions import TransportError

            if not isinstance(error, TransportError) or not 400 <= _status_of(error) < 500:
                raise
            _log.warning("OpenSearch refused the index template %s: %s", template_name(self._prefix), error.error)

    def _forget(self, index: str) -> None:
        with self._lock:
            self._dimensions.pop(index, None)
            self._totals.pop(index, None)

    def _changed(self, index: str) -> None:
        """This handle wrote to the index: its BM25 totals are read again on the next search."""
        with self._lock:
            self._totals.pop(index, None)

    # -- requests ---------------------------------------------------------
    def _search_or_none(self, index: str, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            response: dict[str, Any] = self.client.search(index=index, body=body)
        except Exception as error:
            if _is_missing_index(error):
                self._forget(index)
                return None
            raise
        return response

    def _ids_of(self, index: str, doc_ids: Iterable[str]) -> list[str]:
        """The ``_id`` of every document holding one of these memory ids (Serverless writes)."""
        return [hit["_id"] for hit in self._by_doc_id(index, doc_ids, False)]

    def _by_doc_id(self, index: str, doc_ids: Iterable[str], source: bool | list[str]) -> Iterator[dict[str, Any]]:
        """The hits of every document holding one of these ids, looked up LOOKUP_IDS at a time."""
        wanted = list(doc_ids)
        for start in range(0, len(wanted), LOOKUP_IDS):
            chunk = wanted[start : start + LOOKUP_IDS]
            body = {
                "size": min(MAX_K, 4 * len(chunk)),
                "_source": source,
                "track_total_hits": False,
                "query": {"terms": {"doc_id": chunk}},
            }
            response = self._search_or_none(index, body)
            if response is not None:
                yield from response["hits"]["hits"]

    def _bulk(self, actions: Sequence[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        lines: list[str] = []
        size = docs = 0
        for action, source in actions:
            entry = [json.dumps(action, separators=(",", ":"))]
            if source is not None:
                entry.append(json.dumps(source, separators=(",", ":")))
            entry_size = sum(len(line) + 1 for line in entry)
            if lines and (docs >= BULK_DOCS or size + entry_size > BULK_BYTES):
                self._send_bulk(lines)
                lines, size, docs = [], 0, 0
            lines += entry
            size += entry_size
            docs += 1
        if lines:
            self._send_bulk(lines)

    def _send_bulk(self, lines: list[str]) -> None:
        response = self.client.bulk(body="\n".join(lines) + "\n")
        if not response.get("errors"):
            return
        failures: Counter[tuple[int, str]] = Counter()
        for item in response.get("items", []):
            operation, result = next(iter(item.items()))
            status = int(result.get("status", 500))
            if operation == "delete" and status == 404:
                continue  # already gone
            if status >= 300 or "error" in result:
                failures[(status, _error_type(result.get("error")))] += 1
        if not failures:
            return
        statuses = {status for status, _ in failures}
        details = {"failed": sum(failures.values()), "errors": sorted({kind for _, kind in failures})}
        if 429 in statuses:
            telemetry.count("OpenSearchThrottles")
            raise RateLimited("OpenSearch is throttling writes", {"service": "opensearch", **details})
        if any(status >= 500 for status in statuses):
            raise ProviderError("OpenSearch failed to write documents", {"service": "opensearch", **details})
        raise ProviderError("OpenSearch rejected documents", {"service": "opensearch", **details})


# ---------------------------------------------------------------- helpers ---
def _vector(values: Sequence[float], owner: str) -> list[float]:
    try:
        vector = [float(value) for value in values]
    except (TypeError, ValueError):
        raise ValueError(f"vector of {owner} is not a flat sequence of numbers") from None
    if not vector:
        raise ValueError(f"vector of {owner} is empty")
    return vector


def _source(doc: IndexDoc, vector: list[float], *, stamped: bool = True) -> dict[str, Any]:
    terms = analyse(doc.text)
    source: dict[str, Any] = {
        "doc_id": doc.id,
        "text": doc.text,
        "terms": terms,
        "length": len(terms),
        "filters": filter_strings(doc.keywords),
        "vector": vector,
    }
    if stamped:
        source["written"] = time.time_ns()
    return source


def _error_type(error: Any) -> str:
    if isinstance(error, Mapping):
        return str(error.get("type", "unknown"))
    return str(error or "unknown")


def _status_of(error: Exception) -> int:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else 0


def _error_type_of(error: Exception) -> str:
    from opensearchpy.exceptions import TransportError

    if isinstance(error, TransportError):
        return str(error.error)
    return ""


def _is_missing_index(error: Exception) -> bool:
    from opensearchpy.exceptions import NotFoundError

    return isinstance(error, NotFoundError) and _error_type_of(error) in ("index_not_found_exception", "404")


def _status_error(status: int, kind: str) -> MnemoError:
    details = {"service": "opensearch", "status": status, "type": kind}
    if status == 429:
        telemetry.count("OpenSearchThrottles")
        return RateLimited("OpenSearch is throttling requests", details)
    if status >= 500:
        return ProviderError("OpenSearch failed", details)
    if status in (401, 403):
        return ProviderError("OpenSearch refused the request's credentials", details)
    return ProviderError("OpenSearch rejected the request", details)


@contextmanager
def _translated() -> Iterator[None]:
    """OpenSearch and transport failures as Mnemo errors: retryable envelopes, never a trace."""
    from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
    from opensearchpy.exceptions import ConnectionTimeout, OpenSearchException, TransportError

    try:
        yield
    except (MnemoError, ValueError):
        raise
    except ConnectionTimeout:
        raise Timeout("OpenSearch timed out", {"service": "opensearch"}) from None
    except OpenSearchConnectionError:
        raise ProviderError("OpenSearch is unreachable", {"service": "opensearch"}) from None
    except TransportError as error:
        raise _status_error(_status_of(error) or 500, str(error.error)) from None
    except OpenSearchException as error:
        raise ProviderError(
            "OpenSearch client failed", {"service": "opensearch", "type": type(error).__name__}
        ) from None
    except Exception as error:  # e.g. botocore failing to sign
        raise ProviderError(
            "OpenSearch request failed", {"service": "opensearch", "type": type(error).__name__}
        ) from None

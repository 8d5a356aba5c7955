"""``OpenSearchVectorIndex``: the VectorIndex port's writes, searches and index management on OpenSearch.

The document layout, and why writes are checked again after the refresh window: the package
docstring (``mnemo.adapters.aws.opensearch``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mnemo.adapters.aws.opensearch.errors import (
    bulk_error,
    error_type,
    error_type_of,
    is_missing_index,
    status_error,
    status_of,
    translated,
)
from mnemo.adapters.aws.opensearch.mapping import index_definition, index_name, index_template, template_name
from mnemo.adapters.aws.opensearch.queries import (
    MAX_K,
    filter_clauses,
    filter_strings,
    keywords_from_filters,
    knn_body,
    lexical_bodies,
    lexical_window,
    where_clause,
)
from mnemo.adapters.aws.opensearch.scoring import CorpusStats, cosine_from_score
from mnemo.adapters.bm25_text import analyse
from mnemo.errors import ProviderError
from mnemo.ports import Filter, Hit, IndexDoc, Match

if TYPE_CHECKING:
    from mnemo.adapters.aws.opensearch.http import OpenSearchClient
    from mnemo.settings import Settings

ClientFactory = Callable[[], "OpenSearchClient"]
_log = logging.getLogger(__name__)


#: Documents per bulk request, and the request size at which a bulk is sent early.
BULK_DOCS = 500
BULK_BYTES = 5 * 1024 * 1024
#: Memory ids per lookup of existing documents (Serverless writes).
LOOKUP_IDS = 500
#: Seconds a handle keeps a namespace's document count and mean length (BM25's ``n`` and
#: ``avgdl``) before asking again: the bound on their staleness. Its own writes drop them at once.
STATS_TTL = 60.0
#: Seconds after which OpenSearch Serverless shows a write to searches: AWS gives 10 to 60 s
#: for vector collections, and Serverless has no ``_refresh`` to force it.
SERVERLESS_REFRESH = 60.0

_BAD_PREFIX_CHARS = set('\\/*?"<>| ,#:')


# ---------------------------------------------------------------- adapter ---
class OpenSearchVectorIndex:
    """The VectorIndex port on OpenSearch; see the package docstring for the document layout.

    Searches see a write after OpenSearch's own refresh (it is never forced); ``refresh_window`` is
    ``SERVERLESS_REFRESH`` on Serverless, where deletes and replacements find documents by a search,
    and 0 on a domain, where they go by ``_id``. Failures leave as envelopes (``errors.translated``).
    """

    def __init__(
        self,
        client_factory: ClientFactory,
        index_prefix: str = "mnemo-",
        serverless: bool = True,
        refresh_window: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        timeout: float | None = None,
        write_timeout: float | None = None,
    ) -> None:
        if (
            not index_prefix
            or index_prefix != index_prefix.lower()
            or index_prefix[0] in "-_+."
            or _BAD_PREFIX_CHARS & set(index_prefix)
        ):
            raise ValueError(f"index prefix {index_prefix!r} cannot start an OpenSearch index name")
        self._client_factory = client_factory
        self._client: OpenSearchClient | None = None
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
        #: Seconds a request waits (the client's own timeout), and memory_add's inline write (``insert``).
        self._timeout = timeout
        self._write_timeout = write_timeout
        #: The timeout of the requests this thread sends now, when not the client's (``insert``).
        self._local = threading.local()

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenSearchVectorIndex:
        """The index the settings describe (the wiring's constructor); ValueError without an endpoint."""
        from mnemo.adapters.aws.opensearch.client import is_local_endpoint, make_client

        endpoint = settings.opensearch_endpoint
        if not endpoint:
            raise ValueError("MNEMO_OPENSEARCH_ENDPOINT is required when MNEMO_VECTOR_INDEX is opensearch")
        service = settings.opensearch_service
        local = is_local_endpoint(endpoint)
        timeout = settings.opensearch_timeout
        return cls(
            lambda: make_client(endpoint, settings.aws_region, service, endpoint_is_local=local, timeout=timeout),
            index_prefix=settings.index_prefix,
            serverless=service == "aoss",
            timeout=timeout,
            write_timeout=settings.opensearch_write_timeout,
        )

    @property
    def client(self) -> OpenSearchClient:
        """The client, made on first use and kept (one per container)."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    with translated(self._waits()):
                        self._client = self._client_factory()
                client = self._client
        return client

    def _waits(self) -> float | None:
        """The seconds this thread's requests wait now (named by a TIMEOUT), if known."""
        override: float | None = getattr(self._local, "timeout", None)
        return override if override is not None else self._timeout

    def _params(self) -> dict[str, Any]:
        """The per-request timeout of this thread's requests now, as opensearch-py takes it (none: the client's)."""
        override = getattr(self._local, "timeout", None)
        return {"request_timeout": override} if override is not None else {}

    def index_name(self, namespace: str) -> str:
        """The OpenSearch index that holds a namespace (``mapping.index_name``)."""
        return index_name(self._prefix, namespace)

    # -- port ------------------------------------------------------------
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        """Bulk-index the documents, creating the index on first use.

        On Serverless the new copies are written before the old ones (found by ``doc_id``) are deleted, so a
        search never misses the document; a copy written inside the refresh window may survive (``prune``).
        """
        self._write(namespace, docs, replace=True)

    def insert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        """``upsert`` of ids the index never held (``InsertingIndex``): no lookup of earlier copies on
        Serverless (one request, not two), and every request waits at most the write timeout (memory_add's
        inline write, which queues the memory for the stream indexer when it times out)."""
        previous = getattr(self._local, "timeout", None)
        self._local.timeout = self._write_timeout if self._write_timeout is not None else previous
        try:
            self._write(namespace, docs, replace=False)
        finally:
            self._local.timeout = previous

    def _write(self, namespace: str, docs: Sequence[IndexDoc], *, replace: bool) -> None:
        if not docs:
            return
        latest = {doc.id: doc for doc in docs}  # one document per id: the last one given wins
        vectors = {doc_id: _vector(doc.vector, doc_id) for doc_id, doc in latest.items()}
        dims = len(next(iter(vectors.values())))
        for doc_id, vector in vectors.items():  # check all before anything is written
            if len(vector) != dims:
                raise ValueError(f"vector of {doc_id} has {len(vector)} dimensions, the batch has {dims}")
        index = self.index_name(namespace)
        with translated(self._waits()):
            created = self._check_dimension(index, dims, create=True) == "created"
            with self._lock:
                unstamped = index in self._unstamped
            actions: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
            for doc_id, doc in latest.items():
                meta: dict[str, Any] = {"_index": index}
                if not self._serverless:
                    meta["_id"] = doc_id
                actions.append(({"index": meta}, _source(doc, vectors[doc_id], stamped=not unstamped)))
            if self._serverless and not created and replace:
                # New copies first, then the old ones go: a search never misses the memory.
                actions += [({"delete": {"_index": index, "_id": _id}}, None) for _id in self._ids_of(index, latest)]
            self._bulk(actions)
            self._changed(index)  # after the write: a search meanwhile cannot keep the old totals

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Bulk-delete the documents (by ``_id`` on a domain, found by ``doc_id`` on Serverless)."""
        unique = list(dict.fromkeys(ids))
        if not unique:
            return
        index = self.index_name(namespace)
        with translated(self._waits()):
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
        with translated(self._waits()):
            if not unique or self._dimension(index) is None:
                return
            copies: dict[str, list[tuple[int, str]]] = {}
            for hit in self._by_doc_id(index, unique, ["doc_id", "written"]):
                source = hit.get("_source") or {}
                copies.setdefault(source.get("doc_id", ""), []).append((int(source.get("written") or 0), hit["_id"]))
            extra = [_id for found in copies.values() for _, _id in sorted(found)[:-1]]
            self._bulk([({"delete": {"_index": index, "_id": _id}}, None) for _id in extra])
            self._changed(index)  # after the write: a search meanwhile cannot keep the old totals

    def knn(
        self, namespace: str, vector: Sequence[float], flt: Filter, k: int, *, where: Match | None = None
    ) -> list[Hit]:
        """One filtered k-NN search; faiss scores turned back into cosines, a second copy of an id dropped."""
        query = _vector(vector, "the query")
        clauses = _clauses(flt, where)
        if k <= 0 or clauses is None:
            return []
        index = self.index_name(namespace)
        with translated(self._waits()):
            if self._check_dimension(index, len(query), create=False) == "missing":
                return []
            size = min(k, MAX_K)
            response = self._search_or_none(index, knn_body(query, size, clauses))
        if response is None:
            return []
        return _knn_hits(response, k)

    def knn_many(self, namespace: str, queries: Sequence[tuple[Sequence[float], Filter, int]]) -> list[list[Hit]]:
        """Several ``knn`` searches in one ``_msearch`` request (``BatchKnnIndex``), each answered as ``knn``
        would answer it alone (the same body, the same hits).

        Its caller is memory_add's near-duplicate check, part of its inline write, so it waits at most the
        write timeout, as ``insert`` does (a TIMEOUT: the add skips the check and queues the memory).
        """
        previous = getattr(self._local, "timeout", None)
        self._local.timeout = self._write_timeout if self._write_timeout is not None else previous
        try:
            return self._knn_many(namespace, queries)
        finally:
            self._local.timeout = previous

    def _knn_many(self, namespace: str, queries: Sequence[tuple[Sequence[float], Filter, int]]) -> list[list[Hit]]:
        answers: list[list[Hit]] = [[] for _ in queries]
        wanted: list[tuple[int, dict[str, Any]]] = []
        index = self.index_name(namespace)
        for position, (vector, flt, k) in enumerate(queries):
            query = _vector(vector, "the query")
            clauses = filter_clauses(flt)
            if k > 0 and clauses is not None:
                wanted.append((position, knn_body(query, min(k, MAX_K), clauses)))
        if not wanted:
            return answers
        dims = {len(body["query"]["knn"]["vector"]["vector"]) for _, body in wanted}
        with translated(self._waits()):
            for size in dims:
                if self._check_dimension(index, size, create=False) == "missing":
                    return answers
            try:
                lines = [line for _, body in wanted for line in ({"index": index}, body)]
                response = self.client.msearch(body=lines, params=self._params())
            except Exception as error:
                if is_missing_index(error):
                    self._forget(index)
                    return answers
                raise
        for (position, _), item in zip(wanted, response["responses"], strict=True):
            if "error" in item:
                if error_type(item["error"]) == "index_not_found_exception":
                    self._forget(index)
                    return [[] for _ in queries]
                raise status_error(int(item.get("status", 500)), error_type(item["error"]))
            answers[position] = _knn_hits(item, queries[position][2])
        return answers

    def lexical(self, namespace: str, text: str, flt: Filter, k: int, *, where: Match | None = None) -> list[Hit]:
        """One msearch for candidates and statistics, scored here exactly as the local index scores.

        The namespace's totals (document count, mean length) are cached for ``STATS_TTL`` seconds per handle.
        """
        terms = analyse(text)
        clauses = _clauses(flt, where)
        if not terms or k <= 0 or clauses is None:
            return []
        index = self.index_name(namespace)
        with self._lock:
            cached = self._totals.get(index)
        if cached is not None and self._clock() - cached[2] >= STATS_TTL:
            cached = None
        bodies = lexical_bodies(terms, clauses, lexical_window(k), totals=cached is None)
        with translated(self._waits()):
            try:
                response = self.client.msearch(body=[line for body in bodies for line in ({"index": index}, body)])
            except Exception as error:
                if is_missing_index(error):
                    return []
                raise
        responses = response["responses"]
        for item in responses:
            if "error" in item:
                if error_type(item["error"]) == "index_not_found_exception":
                    self._forget(index)
                    return []
                raise status_error(int(item.get("status", 500)), error_type(item["error"]))
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
        """The filter fields of the ids found by a ``doc_id`` search."""
        with translated(self._waits()):
            hits = self._by_doc_id(self.index_name(namespace), dict.fromkeys(ids), ["doc_id", "filters"])
            return {hit["_source"]["doc_id"]: keywords_from_filters(hit["_source"].get("filters", [])) for hit in hits}

    def count(self, namespace: str) -> int:
        """The index's document count (0 when it does not exist); on Serverless a second copy counts too."""
        index = self.index_name(namespace)
        with translated(self._waits()):
            try:
                return int(self.client.count(index=index)["count"])
            except Exception as error:
                if is_missing_index(error):
                    self._forget(index)
                    return 0
                raise

    def clear(self, namespace: str) -> None:
        """Delete the namespace's index (nothing if it does not exist)."""
        index = self.index_name(namespace)
        with translated(self._waits()):
            try:
                self.client.indices.delete(index=index)
            except Exception as error:
                if not is_missing_index(error):
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
            mapping = self.client.indices.get_mapping(index=index, params=self._params())
        except Exception as error:
            if is_missing_index(error):
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
        from mnemo.adapters.aws.opensearch.http import TransportError

        try:
            self.client.indices.put_mapping(
                index=index, body={"properties": {"written": {"type": "long"}}}, params=self._params()
            )
        except TransportError as error:
            if status_of(error) not in (401, 403):
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
            self.client.indices.create(
                index=index, body=index_definition(dims, serverless=self._serverless), params=self._params()
            )
        except Exception as error:
            if error_type_of(error) == "resource_already_exists_exception":
                return False
            raise
        with self._lock:
            self._dimensions[index] = dims
        return True

    def _put_template(self, dims: int) -> None:
        """Best effort: a collection that refuses templates still gets its indexes created."""
        try:
            body = index_template(self._prefix, dims, serverless=self._serverless)
            self.client.indices.put_index_template(name=template_name(self._prefix), body=body, params=self._params())
        except Exception as error:
            from mnemo.adapters.aws.opensearch.http import TransportError

            if not isinstance(error, TransportError) or not 400 <= status_of(error) < 500:
                raise
            _log.warning("OpenSearch refused the index template %s: %s", template_name(self._prefix), error.error)

    def _forget(self, index: str) -> None:
        """Drop what this handle knows of an index that no longer exists."""
        with self._lock:
            self._dimensions.pop(index, None)
            self._totals.pop(index, None)

    def _changed(self, index: str) -> None:
        """This handle wrote to the index: its BM25 totals are read again on the next search."""
        with self._lock:
            self._totals.pop(index, None)

    # -- requests ---------------------------------------------------------
    def _search_or_none(self, index: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The search's response, or None when the index does not exist."""
        try:
            response: dict[str, Any] = self.client.search(index=index, body=body)
        except Exception as error:
            if is_missing_index(error):
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
        """Send (action, source) pairs in bulk requests of at most ``BULK_DOCS`` documents and ``BULK_BYTES``."""
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
        """One bulk request; its failed items raise as one envelope (``errors.bulk_error``)."""
        response = self.client.bulk(body="\n".join(lines) + "\n", params=self._params())
        error = bulk_error(response)
        if error is not None:
            raise error


# ---------------------------------------------------------------- helpers ---
def _clauses(flt: Filter, where: Match | None) -> list[dict[str, Any]] | None:
    """The filter clauses of ``flt`` and ``where`` (ANDed); None if nothing can match."""
    clauses = filter_clauses(flt)
    if clauses is not None and where is not None:
        clauses.append(where_clause(where))
    return clauses


def _knn_hits(response: dict[str, Any], k: int) -> list[Hit]:
    """A k-NN answer's hits: faiss scores turned back into cosines, a second copy of an id dropped."""
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


def _vector(values: Sequence[float], owner: str) -> list[float]:
    """The vector as a list of floats; ValueError if it is empty or not numbers."""
    try:
        vector = [float(value) for value in values]
    except (TypeError, ValueError):
        raise ValueError(f"vector of {owner} is not a flat sequence of numbers") from None
    if not vector:
        raise ValueError(f"vector of {owner} is empty")
    return vector


def _source(doc: IndexDoc, vector: list[float], *, stamped: bool = True) -> dict[str, Any]:
    """The stored document (see the package docstring); ``stamped`` adds ``written``."""
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

"""``S3VectorsIndex``: the VectorIndex port's writes, searches and index management on Amazon S3 Vectors.

The layout and the ranking: the package docstring (``mnemo.adapters.aws.s3vectors``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mnemo.adapters.aws.errors import provider_error
from mnemo.adapters.aws.s3vectors.queries import (
    DELETE_BATCH,
    GET_BATCH,
    LIST_PAGE,
    NOTHING,
    PUT_BATCH,
    TERMS_KEY,
    TOP_K,
    compile_filter,
    index_name,
    keywords_of,
    metadata,
    terms_of,
)
from mnemo.adapters.bm25_rescoring import rescore
from mnemo.adapters.bm25_text import analyse
from mnemo.errors import MnemoError
from mnemo.ports import Filter, Hit, IndexDoc, Match

if TYPE_CHECKING:
    from mnemo.settings import Settings

SERVICE = "s3vectors"
#: The service's name in errors and in the throttle metric (``S3VectorsThrottles``, template.yaml's
#: OpenSearchThrottlesAlarm with VectorStore s3vectors).
LABEL = "S3Vectors"


class S3VectorsIndex:
    """The VectorIndex port (and ``HybridSearchIndex``) on one S3 vector bucket; see the package docstring."""

    def __init__(self, client_factory: Callable[[], Any], bucket: str, prefix: str = "mnemo-") -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self._bucket = bucket
        self._prefix = prefix
        self._lock = threading.Lock()
        #: Each index's dimension once seen (an index's dimension never changes).
        self._dimensions: dict[str, int] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> S3VectorsIndex:
        from mnemo.adapters.aws.clients import aws_client

        if not settings.s3vectors_bucket:
            raise ValueError("MNEMO_S3VECTORS_BUCKET is required when MNEMO_VECTOR_INDEX is s3vectors")
        return cls(
            lambda: aws_client(SERVICE, settings.aws_region, settings.aws_endpoint),
            settings.s3vectors_bucket,
            settings.index_prefix,
        )

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    @property
    def refresh_window(self) -> float:
        """0: writes are strongly consistent and keyed by the document id, so every delete and replace is exact."""
        return 0.0

    def index_name(self, namespace: str) -> str:
        return index_name(self._prefix, namespace)

    # ---------------------------------------------------------------- writes ---
    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        """PutVectors in batches of ``PUT_BATCH``; the index is created by the first write."""
        if not docs:
            return
        latest = {doc.id: doc for doc in docs}  # the last one given wins
        dims = {len(doc.vector) for doc in latest.values()}
        if len(dims) != 1 or 0 in dims:
            raise ValueError("the vectors of one write must all have the same, non-zero length")
        vectors = [
            {"key": doc.id, "data": {"float32": [float(x) for x in doc.vector]}, "metadata": metadata(doc)}
            for doc in latest.values()
        ]
        index = self.index_name(namespace)
        dimension = dims.pop()
        self._ensure_index(index, dimension)
        for start in range(0, len(vectors), PUT_BATCH):
            batch = vectors[start : start + PUT_BATCH]
            with _translated():
                try:
                    self.client.put_vectors(vectorBucketName=self._bucket, indexName=index, vectors=batch)
                except Exception as error:
                    if not _not_found(error):
                        raise
                    # Another handle cleared the namespace since this one saw it: create it again, write once more.
                    with self._lock:
                        self._dimensions.pop(index, None)
                    self._ensure_index(index, dimension)
                    self.client.put_vectors(vectorBucketName=self._bucket, indexName=index, vectors=batch)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """DeleteVectors in batches; a namespace the bucket does not hold is ignored."""
        keys = list(dict.fromkeys(ids))
        index = self.index_name(namespace)
        for start in range(0, len(keys), DELETE_BATCH):
            with _translated():
                try:
                    self.client.delete_vectors(
                        vectorBucketName=self._bucket, indexName=index, keys=keys[start : start + DELETE_BATCH]
                    )
                except Exception as error:
                    if _not_found(error):
                        return
                    raise

    def prune(self, namespace: str, ids: Sequence[str]) -> None:
        """Nothing to do: a key holds one vector."""

    def clear(self, namespace: str) -> None:
        """DeleteIndex (``mnemo reindex`` writes it again)."""
        index = self.index_name(namespace)
        with _translated():
            try:
                self.client.delete_index(vectorBucketName=self._bucket, indexName=index)
            except Exception as error:
                if not _not_found(error):
                    raise
        with self._lock:
            self._dimensions.pop(index, None)

    # -------------------------------------------------------------- searches ---
    def knn(
        self, namespace: str, vector: Sequence[float], flt: Filter, k: int, *, where: Match | None = None
    ) -> list[Hit]:
        """One vector query, at most ``TOP_K`` hits."""
        answers = self._vector_query(namespace, vector, flt, k, where)
        return [Hit(key, cosine, keywords_of(meta)) for key, cosine, meta in answers if cosine is not None]

    def hybrid(
        self, namespace: str, vector: Sequence[float], text: str, flt: Filter, k: int, *, where: Match | None = None
    ) -> tuple[list[Hit], list[Hit]]:
        """One hybrid query (the vector and the query's terms; S3 Vectors fuses its k-NN and full-text rankings
        by RRF): the results the vector search found are the dense half, and every result's terms, rescored by
        BM25 among the results, the lexical half. A query with no terms left after analysis is vector-only."""
        terms = analyse(text)
        extra: dict[str, Any] = {"returnScores": True}
        if terms:
            extra["queryTexts"] = [{"text": " ".join(terms), "metadataKey": TERMS_KEY}]
        answers = self._vector_query(namespace, vector, flt, k, where, extra=extra)
        dense = [Hit(key, cosine, keywords_of(meta)) for key, cosine, meta in answers if cosine is not None]
        dense.sort(key=lambda hit: (-hit.score, hit.id))  # nearest first, as knn answers (the answer is RRF's order)
        keywords = {key: keywords_of(meta) for key, _, meta in answers}
        scores = rescore(text, [(key, terms_of(meta)) for key, _, meta in answers])
        lexical = [Hit(key, scores[key], keywords[key]) for key, _, _ in answers if key in scores]
        lexical.sort(key=lambda hit: (-hit.score, hit.id))
        return dense, lexical

    def lexical(self, namespace: str, text: str, flt: Filter, k: int, *, where: Match | None = None) -> list[Hit]:
        """A full-text query on the documents' terms; its candidates rescored by BM25 among themselves."""
        terms = analyse(text)
        document = compile_filter(flt, where)
        if not terms or k <= 0 or document is NOTHING:
            return []
        request: dict[str, Any] = {
            "topK": min(k, TOP_K),
            "queryTexts": [{"text": " ".join(terms), "metadataKey": TERMS_KEY}],
            "returnMetadata": True,
        }
        found = self._query(namespace, request, document)
        if found is None:
            return []
        scores = rescore(text, [(item["key"], terms_of(item.get("metadata"))) for item in found])
        hits = [
            Hit(item["key"], scores[item["key"]], keywords_of(item.get("metadata")))
            for item in found
            if item["key"] in scores
        ]
        return sorted(hits, key=lambda hit: (-hit.score, hit.id))[:k]

    def keywords_of(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
        """GetVectors in batches of ``GET_BATCH``, metadata only."""
        keys = list(dict.fromkeys(ids))
        index = self.index_name(namespace)
        found: dict[str, dict[str, list[str]]] = {}
        for start in range(0, len(keys), GET_BATCH):
            with _translated():
                try:
                    answer = self.client.get_vectors(
                        vectorBucketName=self._bucket,
                        indexName=index,
                        keys=keys[start : start + GET_BATCH],
                        returnMetadata=True,
                    )
                except Exception as error:
                    if _not_found(error):
                        return {}
                    raise
            for item in answer.get("vectors", []):
                found[item["key"]] = keywords_of(item.get("metadata"))
        return found

    def count(self, namespace: str) -> int:
        """ListVectors, page by page (keys only): for reindex and status, not for the request path."""
        total = 0
        for page in self._pages(namespace):
            total += len(page)
        return total

    # ------------------------------------------------------------------ inner ---
    def _vector_query(
        self,
        namespace: str,
        vector: Sequence[float],
        flt: Filter,
        k: int,
        where: Match | None,
        *,
        extra: dict[str, Any] | None = None,
    ) -> list[tuple[str, float | None, dict[str, Any] | None]]:
        """A query with ``vector`` (and ``extra``): each result's key, cosine similarity (None for a hybrid result
        the vector search did not find) and metadata."""
        document = compile_filter(flt, where)
        if k <= 0 or document is NOTHING:
            return []
        index = self.index_name(namespace)
        dimension = self._dimension(index)
        if dimension is None:
            return []
        if len(vector) != dimension:
            raise ValueError(f"the query vector has {len(vector)} numbers; the namespace's vectors have {dimension}")
        request: dict[str, Any] = {
            "topK": min(k, TOP_K),
            "queryVector": {"float32": [float(x) for x in vector]},
            "returnMetadata": True,
            "returnDistance": True,
            **(extra or {}),
        }
        return [
            (item["key"], _cosine(item), item.get("metadata"))
            for item in self._query(namespace, request, document) or []
        ]

    def _query(self, namespace: str, request: dict[str, Any], document: dict[str, Any]) -> list[dict[str, Any]] | None:
        """QueryVectors; None when the namespace has no index."""
        index = self.index_name(namespace)
        if document:
            request["filter"] = document
        with _translated():
            try:
                answer = self.client.query_vectors(vectorBucketName=self._bucket, indexName=index, **request)
            except Exception as error:
                if _not_found(error):
                    with self._lock:
                        self._dimensions.pop(index, None)
                    return None
                raise
        vectors: list[dict[str, Any]] = answer.get("vectors", [])
        return vectors

    def _pages(self, namespace: str) -> Iterator[list[dict[str, Any]]]:
        index = self.index_name(namespace)
        token = None
        while True:
            request: dict[str, Any] = {"vectorBucketName": self._bucket, "indexName": index, "maxResults": LIST_PAGE}
            if token:
                request["nextToken"] = token
            with _translated():
                try:
                    answer = self.client.list_vectors(**request)
                except Exception as error:
                    if _not_found(error):
                        return
                    raise
            yield answer.get("vectors", [])
            token = answer.get("nextToken")
            if not token:
                return

    def _dimension(self, index: str) -> int | None:
        """The index's dimension (GetIndex once per handle), or None when it does not exist."""
        with self._lock:
            if index in self._dimensions:
                return self._dimensions[index]
        with _translated():
            try:
                answer = self.client.get_index(vectorBucketName=self._bucket, indexName=index)
            except Exception as error:
                if _not_found(error):
                    return None
                raise
        dimension = int(answer["index"]["dimension"])
        with self._lock:
            self._dimensions[index] = dimension
        return dimension

    def _ensure_index(self, index: str, dims: int) -> None:
        """Create the index for vectors of ``dims`` numbers unless it exists; ValueError for another dimension."""
        existing = self._dimension(index)
        if existing is not None and existing != dims:  # cached: another handle may have cleared it since
            with self._lock:
                self._dimensions.pop(index, None)
            existing = self._dimension(index)
        if existing is None:
            with _translated():
                try:
                    self.client.create_index(
                        vectorBucketName=self._bucket,
                        indexName=index,
                        dataType="float32",
                        dimension=dims,
                        distanceMetric="cosine",
                        metadataConfiguration={
                            "nonFilterableMetadataKeys": [TERMS_KEY],
                            "textSearchConfigurations": [{"metadataKey": TERMS_KEY}],
                        },
                    )
                except Exception as error:
                    if _code(error) != "ConflictException":  # another writer created it first
                        raise
            with self._lock:
                self._dimensions.pop(index, None)
            existing = self._dimension(index)
        if existing != dims:
            raise ValueError(f"the vectors have {dims} numbers; the namespace's index holds {existing}")


def _cosine(item: dict[str, Any]) -> float | None:
    """A result's cosine similarity: 1 - its cosine distance (``scores.vectorDistance`` in a hybrid answer,
    ``distance`` otherwise); None when the vector search did not find it."""
    distance = (item.get("scores") or {}).get("vectorDistance", item.get("distance"))
    return None if distance is None else 1.0 - float(distance)


def _code(error: Exception) -> str | None:
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def _not_found(error: Exception) -> bool:
    return _code(error) == "NotFoundException"


@contextmanager
def _translated() -> Iterator[None]:
    """botocore failures as the provider envelope; the adapter's own NotFound checks run inside first."""
    try:
        yield
    except (MnemoError, ValueError):
        raise
    except Exception as error:
        raise provider_error(LABEL, error) from error

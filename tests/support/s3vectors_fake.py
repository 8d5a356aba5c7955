"""QueryVectors (and the checks moto leaves out) on moto's S3 Vectors backend.

moto 5.2.5 implements S3 Vectors' buckets, indexes and PutVectors/GetVectors/ListVectors/DeleteVectors,
but not QueryVectors. ``install()`` adds it to moto's S3 Vectors service in this process (so to the serial
moto server of aws_fixtures.py), over the vectors moto stores, as AWS documents it:

- requests reach it through a real botocore client, which validates every parameter against botocore's
  ``s3vectors`` service model (2025-07-15) before sending, and parses the answer with the same model;
- ``topK`` at most 100; a vector query ranks by cosine distance (1 - cosine similarity) and answers
  ``distance`` with ``returnDistance``; a text-only query (``queryTexts``) ranks by BM25 over the searchable
  key's whitespace-separated, lower-cased words and needs that key in the index's
  ``textSearchConfigurations``; both together (hybrid) fuse the two rankings, each cut at ``topK``, by
  Reciprocal Rank Fusion (k = 60), and answer ``scores.vectorDistance`` for the results the vector search
  found (with ``returnScores``);
- filters (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-metadata-filtering.html):
  ``$eq`` (also implied by a bare value; on a list, any element), ``$ne``, ``$gt``/``$gte``/``$lt``/``$lte``
  on numbers only, ``$in``/``$nin`` (non-empty lists), ``$exists``, ``$and``/``$or`` (non-empty lists);
  a key absent from a vector fails ``$eq``/``$in`` and passes ``$ne``/``$nin``; filters on non-filterable
  keys are refused. Pre-filtering (ENHANCED): every match is a candidate.

It also makes moto keep what CreateIndex's ``metadataConfiguration`` says, refuse a second index of the same
name (ConflictException) and refuse PutVectors beyond the documented limits (500 vectors a request, 2 KB of
filterable metadata and 40 KB of metadata a vector,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-limitations.html).

``CALLS`` counts the requests by operation, for the cost tests.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from mnemo.adapters.bm25_text import idf, term_score

CALLS: Counter[str] = Counter()
TOP_K = 100
_installed = False


def install() -> None:
    """Add QueryVectors and the checks to moto's S3 Vectors service (once per process, before its first use)."""
    global _installed
    if _installed:
        return
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult
    from moto.s3vectors import urls
    from moto.s3vectors.responses import S3VectorsResponse

    class ValidationException(ServiceException):
        code = "ValidationException"

    class ConflictException(ServiceException):
        code = "ConflictException"

    configurations: dict[tuple[str, str], dict[str, Any]] = {}
    original_create = S3VectorsResponse.create_index
    original_put = S3VectorsResponse.put_vectors
    original_dispatch_calls = {
        name: getattr(S3VectorsResponse, name)
        for name in ("get_vectors", "list_vectors", "delete_vectors", "get_index", "delete_index")
    }

    def _index(self: Any) -> Any:
        return self.s3vectors_backend.get_index(
            self._get_param("vectorBucketName"), self._get_param("indexName"), self._get_param("indexArn")
        )

    def create_index(self: Any) -> Any:
        CALLS["CreateIndex"] += 1
        bucket, name = self._get_param("vectorBucketName"), self._get_param("indexName")
        try:
            self.s3vectors_backend.get_index(bucket, name, None)
        except ServiceException:
            pass
        else:
            raise ConflictException("An index with the specified name already exists")
        answer = original_create(self)
        configurations[(bucket, name)] = self._get_param("metadataConfiguration") or {}
        return answer

    def put_vectors(self: Any) -> Any:
        CALLS["PutVectors"] += 1
        vectors = self._get_param("vectors") or []
        if len(vectors) > 500:
            raise ValidationException("A request may hold at most 500 vectors")
        index = _index(self)
        hidden = set(
            configurations.get((index.vectorBucketName, index.index_name), {}).get("nonFilterableMetadataKeys", [])
        )
        for vector in vectors:
            meta = vector.get("metadata") or {}
            total = len(json.dumps(meta, separators=(",", ":")).encode())
            shown = {key: value for key, value in meta.items() if key not in hidden}
            filterable = len(json.dumps(shown, separators=(",", ":")).encode())
            if total > 40 * 1024 or filterable > 2048:
                raise ValidationException(f"metadata of {vector['key']} over the limits: {filterable} / {total}")
        return original_put(self)

    def counted(name: str, operation: str) -> Any:
        def handler(self: Any) -> Any:
            CALLS[operation] += 1
            return original_dispatch_calls[name](self)

        return handler

    def query_vectors(self: Any) -> Any:
        CALLS["QueryVectors"] += 1
        top_k = int(self._get_param("topK"))
        if top_k > TOP_K:
            raise ValidationException(f"topK must be at most {TOP_K}")
        index = _index(self)
        config = configurations.get((index.vectorBucketName, index.index_name), {})
        hidden = set(config.get("nonFilterableMetadataKeys", []))
        searchable = {item["metadataKey"] for item in config.get("textSearchConfigurations", [])}
        query_vector = (self._get_param("queryVector") or {}).get("float32")
        query_texts = self._get_param("queryTexts") or []
        document = self._get_param("filter")
        if document is not None:
            _check_filter(document, hidden, ValidationException)
        if query_vector is None and not query_texts:
            raise ValidationException("A request must include queryVector, queryTexts, or both")
        for text in query_texts:
            if text["metadataKey"] not in searchable:
                raise ValidationException(f"{text['metadataKey']} is not a full-text searchable key")
        matching = [
            vector for vector in index.vectors.values() if document is None or _passes(vector.metadata or {}, document)
        ]
        by_vector: list[tuple[Any, float]] = []
        if query_vector is not None:
            if len(query_vector) != index.dimension:
                raise ValidationException("The query vector's dimension does not match the index")
            by_vector = sorted(
                ((vector, 1.0 - _cosine(query_vector, vector.data["float32"])) for vector in matching),
                key=lambda item: (item[1], item[0].key),
            )[:top_k]
        by_text: list[tuple[Any, float]] = []
        if query_texts:
            by_text = sorted(
                ((vector, score) for vector, score in _bm25(matching, query_texts) if score > 0),
                key=lambda item: (-item[1], item[0].key),
            )[:top_k]
        distances = {vector.key: distance for vector, distance in by_vector}
        bm25 = {vector.key: score for vector, score in by_text}
        if query_vector is not None and query_texts:
            # Hybrid: Reciprocal Rank Fusion of the two rankings (k = 60, the usual constant).
            fused: dict[str, float] = {}
            for ranking in (by_vector, by_text):
                for rank, (vector, _) in enumerate(ranking, 1):
                    fused[vector.key] = fused.get(vector.key, 0.0) + 1.0 / (60 + rank)
            vectors = {vector.key: vector for vector, _ in (*by_vector, *by_text)}
            order = sorted(fused, key=lambda key: (-fused[key], key))[:top_k]
            ranked = [(vectors[key], fused[key]) for key in order]
        else:
            fused = {}
            ranked = by_vector or by_text
        answers = []
        for vector, _ in ranked:
            item: dict[str, Any] = {"key": vector.key}
            if vector.key in distances and self._get_bool_param("returnDistance", False):
                item["distance"] = distances[vector.key]
            if self._get_bool_param("returnScores", False) and query_texts:
                scores: dict[str, Any] = {}
                if fused:
                    scores["fused"] = fused[vector.key]
                if vector.key in distances:
                    scores["vectorDistance"] = distances[vector.key]
                if vector.key in bm25:
                    scores["bm25Scores"] = [
                        {"metadataKey": text["metadataKey"], "score": bm25[vector.key]} for text in query_texts
                    ]
                item["scores"] = scores
            if self._get_bool_param("returnMetadata", False):
                item["metadata"] = vector.metadata or {}
            answers.append(item)
        return ActionResult({"vectors": answers, "distanceMetric": index.distance_metric})

    S3VectorsResponse.create_index = create_index  # type: ignore[method-assign]
    S3VectorsResponse.put_vectors = put_vectors  # type: ignore[method-assign]
    S3VectorsResponse.query_vectors = query_vectors  # type: ignore[attr-defined]
    for name, operation in (
        ("get_vectors", "GetVectors"),
        ("list_vectors", "ListVectors"),
        ("delete_vectors", "DeleteVectors"),
        ("get_index", "GetIndex"),
        ("delete_index", "DeleteIndex"),
    ):
        setattr(S3VectorsResponse, name, counted(name, operation))
    urls.url_paths["{0}/QueryVectors$"] = S3VectorsResponse.dispatch
    _installed = True


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def _bm25(vectors: list[Any], query_texts: list[dict[str, str]]) -> list[tuple[Any, float]]:
    """BM25 (the summed score of each query text's key) over the whitespace-separated words of the keys."""
    scores: dict[str, float] = {}
    for query in query_texts:
        key = query["metadataKey"]
        docs = {v.key: str((v.metadata or {}).get(key, "")).lower().split() for v in vectors}
        n = len(docs)
        average = (sum(len(words) for words in docs.values()) / n) if n else 1.0
        frequency: Counter[str] = Counter()
        for words in docs.values():
            frequency.update(set(words))
        terms = Counter(query["text"].lower().split())
        for doc_key, words in docs.items():
            held = Counter(words)
            score = sum(
                term_score(idf(n, frequency[term]) * count, held[term], len(words), average or 1.0)
                for term, count in terms.items()
                if held[term]
            )
            scores[doc_key] = scores.get(doc_key, 0.0) + score
    by_key = {v.key: v for v in vectors}
    return [(by_key[key], score) for key, score in scores.items()]


_COMPARISONS = {"$gt", "$gte", "$lt", "$lte"}
_OPERATORS = {"$eq", "$ne", "$in", "$nin", "$exists", *_COMPARISONS}


def _check_filter(document: Any, hidden: set[str], error: Any) -> None:
    if not isinstance(document, dict) or not document:
        raise error("A filter is a non-empty object")
    for key, value in document.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise error(f"{key} takes a non-empty array of filters")
            for part in value:
                _check_filter(part, hidden, error)
            continue
        if key.startswith("$"):
            raise error(f"unknown operator {key}")
        if key in hidden:
            raise error(f"{key} is non-filterable metadata")
        if isinstance(value, dict):
            for operator, operand in value.items():
                if operator not in _OPERATORS:
                    raise error(f"unknown operator {operator}")
                if operator in _COMPARISONS and (isinstance(operand, bool) or not isinstance(operand, int | float)):
                    raise error(f"{operator} compares numbers")
                if operator in ("$in", "$nin") and (not isinstance(operand, list) or not operand):
                    raise error(f"{operator} takes a non-empty array")
                if operator == "$exists" and not isinstance(operand, bool):
                    raise error("$exists takes a boolean")


def _passes(meta: dict[str, Any], document: dict[str, Any]) -> bool:
    for key, value in document.items():
        if key == "$and":
            if not all(_passes(meta, part) for part in value):
                return False
            continue
        if key == "$or":
            if not any(_passes(meta, part) for part in value):
                return False
            continue
        conditions = value if isinstance(value, dict) else {"$eq": value}
        for operator, operand in conditions.items():
            if not _holds(meta, key, operator, operand):
                return False
    return True


def _holds(meta: dict[str, Any], key: str, operator: str, operand: Any) -> bool:
    present = key in meta
    stored = meta.get(key)
    values = stored if isinstance(stored, list) else [stored]
    if operator == "$exists":
        return present is operand
    if operator == "$eq":
        return present and operand in values
    if operator == "$ne":
        return not present or operand not in values
    if operator == "$in":
        return present and any(value in operand for value in values)
    if operator == "$nin":
        return not present or not any(value in operand for value in values)
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    compare = {
        "$gt": lambda v: v > operand,
        "$gte": lambda v: v >= operand,
        "$lt": lambda v: v < operand,
        "$lte": lambda v: v <= operand,
    }[operator]
    return any(compare(v) for v in numbers)

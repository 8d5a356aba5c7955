"""The request bodies the adapter sends: filters as ``field=value`` keywords, k-NN and lexical searches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mnemo.ports import AllOf, AnyOf, AnyTerm, Filter, Match, NoneOf, TermContains, TermRange

#: The k-NN query accepts k in [1, 10000]; a search returns at most 10000 hits.
MAX_K = 10_000


# ---------------------------------------------------------------- filters ---
def filter_strings(keywords: Mapping[str, Sequence[str]]) -> list[str]:
    """``{"scope": ["s1"], "tags": ["a", "b"]}`` -> ``["scope=s1", "tags=a", "tags=b"]``.

    A ``=`` or ``\\`` inside a field name is escaped with ``\\`` so the split is unambiguous.
    """
    return [f"{_escape_field(name)}={value}" for name, values in keywords.items() for value in values]


def keywords_from_filters(strings: Sequence[str]) -> dict[str, list[str]]:
    """The inverse of ``filter_strings``: ``["tags=a", "tags=b"]`` -> ``{"tags": ["a", "b"]}``."""
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


def where_clause(where: Match) -> dict[str, Any]:
    """A term-match expression (``mnemo.ports.Match``) as one query clause over the ``filters`` keyword.

    A keyword ``name`` holding ``value`` is the string ``name=value`` there, so a test on the values of
    ``name`` is one on the strings after ``name=``: ``terms`` for ``AnyTerm``, ``range`` (keyword bounds
    compare as UTF-8 bytes, the code point order the port promises) for ``TermRange``, ``wildcard`` with
    ``*``, ``?`` and ``\\`` escaped for ``TermContains``, and ``bool`` for the combinations.
    """
    if isinstance(where, AnyTerm):
        if not where.values:
            return _NOTHING
        return {"terms": {"filters": filter_strings({where.field: where.values})}}
    if isinstance(where, TermRange):
        prefix = f"{_escape_field(where.field)}={where.prefix}"
        bounds: dict[str, str] = {"gte": prefix, "lt": _successor(prefix)}
        if where.low is not None:
            bounds.pop("gte")
            bounds["gte" if where.include_low else "gt"] = prefix + where.low
        if where.high is not None:
            bounds.pop("lt")
            bounds["lte" if where.include_high else "lt"] = prefix + where.high
        return {"range": {"filters": bounds}}
    if isinstance(where, TermContains):
        prefix = f"{_escape_field(where.field)}={where.prefix}"
        pattern = f"{_wildcard_literal(prefix)}*{_wildcard_literal(where.infix)}*"
        return {"wildcard": {"filters": {"value": pattern}}}
    parts = [where_clause(part) for part in where.parts]
    if isinstance(where, AllOf):
        return {"bool": {"filter": parts}} if parts else {"match_all": {}}
    if isinstance(where, AnyOf):
        return {"bool": {"should": parts, "minimum_should_match": 1}} if parts else _NOTHING
    if isinstance(where, NoneOf):
        return {"bool": {"must_not": parts}} if parts else {"match_all": {}}
    raise ValueError(f"not a term-match expression: {where!r}")


#: A clause no document passes.
_NOTHING: dict[str, Any] = {"bool": {"must_not": [{"match_all": {}}]}}


def _successor(prefix: str) -> str:
    """The least string above every string that starts with ``prefix`` (which ends with ``=`` or more)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _wildcard_literal(text: str) -> str:
    """Text matched literally inside a wildcard pattern."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _escape_field(name: str) -> str:
    """A field name with ``\\`` and ``=`` escaped, so the first unescaped ``=`` ends it."""
    return name.replace("\\", "\\\\").replace("=", "\\=")


def _split_filter(string: str) -> tuple[str, str]:
    """A ``field=value`` string back into its unescaped field name and value."""
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

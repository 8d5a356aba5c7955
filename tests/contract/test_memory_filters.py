"""Operator filters mean the same on every VectorIndex adapter: a property-based contract.

Hypothesis draws a handful of memory records (tags, metadata of every type, lists, time strings in
several zones, absent fields) and filters of the grammar of docs/filters.md. Each filter is compiled by
the production code (``mnemo.memory.filters.to_match``) and run as ``where`` on the index documents the
production code writes (``mnemo.memory.indexing.index_doc``), through k-NN and BM25, on the local index and on
OpenSearch (osmem-server, which answers no k-NN query: there the filter clause of the k-NN request the adapter
sends is run as a plain search, see ``_opensearch``). Every answer must equal what
``expected`` below, a plain evaluator written from the documented semantics with no knowledge of the
index encoding, says; and so must the domain evaluator search and list use on the records
(``mnemo.memory.filters.matches``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.opensearch.scoring import score_from_cosine
from mnemo.adapters.aws.s3vectors.adapter import S3VectorsIndex
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.errors import InvalidInput
from mnemo.memory.filters import matches, parse_filter, to_match
from mnemo.memory.indexing import index_doc
from mnemo.ports import AllOf, AnyOf, Match, NoneOf, TermContains, TermRange, VectorIndex

NS = "memory-filters"
SCOPE = "t=acme|user|u=alice"
MAX_RECORDS = 8
VECTOR = [0.5, 0.5, 0.5, 0.5]

# ------------------------------------------------------------ the reference ---
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})")
LONGEST = 1024


def as_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and TIME.fullmatch(value) else None


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def field_of(name: str) -> str:
    return "metadata.source" if name == "source" else name


def present_and_values(field: str, record: dict[str, Any]) -> tuple[bool, list[Any]]:
    if field == "tags":
        return bool(record["tags"]), [tag.lower() for tag in record["tags"]]
    if field in ("createdAt", "occurredAt", "expiresAt"):
        value = record.get(field)
        return value is not None, [] if value is None else [value]
    key = field.removeprefix("metadata.")
    if key not in record["metadata"]:
        return False, []
    value = record["metadata"][key]
    return True, value if isinstance(value, list) else [value]


def equal(field: str, have: Any, want: Any) -> bool:
    if field == "tags":
        return have == want.strip().lower()
    if as_time(want) is not None:
        return as_time(have) is not None and as_time(have) == as_time(want)
    if isinstance(want, bool):
        return isinstance(have, bool) and have == want
    if is_number(want):
        return is_number(have) and have == want
    return isinstance(have, str) and len(have) <= LONGEST and have == want


def ordered(op: str, have: Any, bound: Any) -> bool:
    if is_number(bound):
        if not is_number(have):
            return False
        left, right = have, bound
    else:
        left, right = as_time(have), as_time(bound)
        if left is None:
            return False
    return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}[op]


def condition(field: str, op: str, operand: Any, record: dict[str, Any]) -> bool:
    present, values = present_and_values(field, record)
    if op == "exists":
        return present == operand
    if op == "eq":
        return any(equal(field, have, operand) for have in values)
    if op == "ne":
        return not condition(field, "eq", operand, record)
    if op == "in":
        return any(equal(field, have, want) for have in values for want in operand)
    if op == "nin":
        return not condition(field, "in", operand, record)
    if op == "all":
        return all(any(equal(field, have, want) for have in values) for want in operand)
    if op == "contains":
        if field == "tags":
            return any(operand.lower() in have for have in values)
        return any(isinstance(have, str) and len(have) <= LONGEST and operand in have for have in values)
    return any(ordered(op, have, operand) for have in values)


def on_field(field: str, value: Any, record: dict[str, Any]) -> bool:
    if isinstance(value, dict):
        return all(condition(field, op, operand, record) for op, operand in value.items())
    if isinstance(value, list):
        return not value or condition(field, "in", value, record)
    return condition(field, "eq", value, record)


def expected(flt: dict[str, Any], record: dict[str, Any]) -> bool:
    """The documented meaning of a filter on a memory record, evaluated plainly."""
    for key, value in flt.items():
        if key == "and" and not all(expected(part, record) for part in value):
            return False
        if key == "or" and not any(expected(part, record) for part in value):
            return False
        if key == "not" and expected(value, record):
            return False
        if key == "metadata" and not all(on_field(f"metadata.{k}", v, record) for k, v in value.items()):
            return False
        if key not in ("and", "or", "not", "metadata") and not on_field(field_of(key), value, record):
            return False
    return True


# -------------------------------------------------------------- strategies ---
KEYS = ["p", "q", "a|b\\c", "source"]
TIMES = [
    "2026-01-01T00:00:00Z",
    "2026-01-01T01:00:00+01:00",  # the same instant as the one above
    "2025-12-31T23:59:59.500000Z",
    "2026-03-01T12:00Z",
    "2026-03-01T12:00:00.000001-05:00",
    "1999-01-01T00:00:00Z",
]
STRINGS = ["", "a", "ab", "Ab", "b*", "a?b", "x\\y", "x|y", "manual", "2026-01-01", "é", "a" * 1030]
NUMBERS = [-5, -1, 0, 1, 2, 1.5, -2.5, 0.0, -0.0, 3.0, 1e20]
TAGS = ["alpha", "Beta", "c d", "x*y", "ab"]

scalars = st.one_of(
    st.sampled_from(NUMBERS),
    st.integers(-4, 4),
    st.booleans(),
    st.sampled_from(STRINGS),
    st.sampled_from(TIMES),
)
metadata_values = st.one_of(
    scalars, st.none(), st.lists(scalars, max_size=3), st.just({"nested": 1}), st.just([["deep"], 1])
)
records = st.lists(
    st.fixed_dictionaries(
        {
            "tags": st.lists(st.sampled_from(TAGS), max_size=3, unique=True),
            "metadata": st.dictionaries(st.sampled_from(KEYS), metadata_values, max_size=4),
            "createdAt": st.sampled_from(TIMES),
            "occurredAt": st.one_of(st.none(), st.sampled_from(TIMES)),
            "expiresAt": st.one_of(st.none(), st.sampled_from(TIMES)),
        }
    ),
    min_size=2,
    max_size=MAX_RECORDS,
)

FIELDS = ["tags", "source", "createdAt", "occurredAt", "expiresAt", *(f"metadata.{key}" for key in KEYS[:3])]
equatable = st.one_of(st.sampled_from(NUMBERS), st.booleans(), st.sampled_from(STRINGS[:-1]), st.sampled_from(TIMES))
bounds = st.one_of(st.sampled_from(NUMBERS), st.integers(-4, 4), st.sampled_from(TIMES))


def seen_values(drawn: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per field, the values the drawn records hold: operands drawn from them make filters that split the set."""
    seen: dict[str, list[Any]] = {"tags": [tag for fields in drawn for tag in fields["tags"]]}
    for name in ("createdAt", "occurredAt", "expiresAt"):
        seen[name] = [fields[name] for fields in drawn if fields[name] is not None]
    for fields in drawn:
        for key, value in fields["metadata"].items():
            items = value if isinstance(value, list) else [value]
            seen.setdefault(f"metadata.{key}", []).extend(
                item for item in items if isinstance(item, str | int | float) and item != STRINGS[-1]
            )
    return {field: values for field, values in seen.items() if values}


def pick(seen: dict[str, list[Any]], field: str, pool: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    values = seen.get(field)
    return st.one_of(st.sampled_from(values), pool) if values else pool


def pieces(values: list[Any]) -> st.SearchStrategy[str]:
    """Substrings of the strings among ``values`` (any string when there are none)."""
    strings = [value for value in values if isinstance(value, str) and value]
    if not strings:
        return st.sampled_from(STRINGS[:-1])
    return st.builds(
        lambda text, start, size: text[start % len(text) :][:size],
        st.sampled_from(strings),
        st.integers(0, 9),
        st.integers(0, 4),
    )


@st.composite
def operators(draw: st.DrawFn, field: str, seen: dict[str, list[Any]]) -> Any:
    """A condition on one field: a bare value, a bare list or an object of one or two operators."""
    if field == "tags":
        value = pick(seen, field, st.sampled_from([*TAGS, "ALPHA", " beta ", "zeta"]))
        ops: dict[str, st.SearchStrategy[Any]] = {
            "eq": value,
            "ne": value,
            "in": st.lists(value, max_size=3),
            "nin": st.lists(value, max_size=3),
            "all": st.lists(value, max_size=3),
            "contains": st.sampled_from(["a", "B", "*", " ", "", "zz"]),
            "exists": st.booleans(),
        }
    elif field in ("createdAt", "occurredAt", "expiresAt"):
        value = pick(seen, field, st.sampled_from(TIMES))
        ops = {
            **{op: value for op in ("eq", "ne", "gt", "gte", "lt", "lte")},
            "in": st.lists(value, max_size=3),
            "nin": st.lists(value, max_size=3),
            "exists": st.booleans(),
        }
    else:
        value = pick(seen, field, equatable)
        ordered_value = pick(
            {field: [v for v in seen.get(field, []) if is_number(v) or as_time(v) is not None]}, field, bounds
        )
        ops = {
            "eq": value,
            "ne": value,
            "in": st.lists(value, max_size=3),
            "nin": st.lists(value, max_size=3),
            **{op: ordered_value for op in ("gt", "gte", "lt", "lte")},
            "contains": st.one_of(
                st.sampled_from(["a", "b", "*", "?", "\\", "|", "", "2026", "x|y"]), pieces(seen.get(field, []))
            ),
            "exists": st.booleans(),
        }
    shape = draw(st.sampled_from(["bare", "list", "ops", "ops", "ops"]))
    if shape == "bare":
        return draw(ops["eq"])
    if shape == "list":
        return draw(ops["in"])
    names = draw(st.lists(st.sampled_from(sorted(ops)), min_size=1, max_size=2, unique=True))
    return {name: draw(ops[name]) for name in names}


@st.composite
def leaves(draw: st.DrawFn, seen: dict[str, list[Any]]) -> dict[str, Any]:
    if draw(st.integers(0, 5)) == 0:  # the shape from before operators: {"metadata": {key: condition}}
        key = draw(st.sampled_from(KEYS))
        return {"metadata": {key: draw(operators(f"metadata.{key}", seen))}}
    names = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=draw(st.sampled_from([1, 1, 2])), unique=True))
    return {name: draw(operators(field_of(name), seen)) for name in names}


def filters(seen: dict[str, list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        leaves(seen),
        lambda children: st.one_of(
            st.builds(lambda parts: {"and": parts}, st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda parts: {"or": parts}, st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda part: {"not": part}, children),
        ),
        max_leaves=6,
    )


@st.composite
def cases(draw: st.DrawFn, most: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Records, and filters whose operands are mostly values those records hold."""
    drawn = draw(records)
    return drawn, draw(st.lists(filters(seen_values(drawn)), min_size=1, max_size=most))


def bodies(drawn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Memory records as stored (``mnemo.memory.records.record_data``), from the drawn fields."""
    made = []
    for position, fields in enumerate(drawn):
        data = {
            "memoryId": f"m{position}",
            "content": f"memo number {position}",
            "layer": "user",
            "scope": SCOPE,
            "contentHash": f"h{position}",
            "embeddingModel": "test",
            "createdBy": "alice",
            **fields,
        }
        made.append({key: value for key, value in data.items() if value is not None or key == "occurredAt"})
    return made


def valid(flt: dict[str, Any]) -> bool:
    try:
        parse_filter(flt)
    except InvalidInput:
        return False  # deeper than the limit (the drawn operands are all well-formed)
    return True


# ---------------------------------------------------------------- backends ---
Opener = Callable[[pytest.FixtureRequest, Path], VectorIndex]


def _local(request: pytest.FixtureRequest, tmp_path: Path) -> VectorIndex:
    return LocalVectorIndex(tmp_path / "vectors.db")


def _opensearch(request: pytest.FixtureRequest, tmp_path: Path) -> VectorIndex:
    client = make_client(request.getfixturevalue("osmem_clone").url, None, "es", endpoint_is_local=True)
    perform = client.transport.perform_request

    def knn_by_its_filter(method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        """osmem has no k-NN query: a k-NN search is sent as its own ``filter`` clause, every hit scored 1."""
        if not url.endswith("/_search"):  # bulk and msearch bodies are NDJSON, and never k-NN here
            return perform(method, url, params=params, body=body, **kwargs)
        decoded = json.loads(body) if isinstance(body, bytes | str) else body
        knn = (decoded.get("query") or {}).get("knn") if isinstance(decoded, dict) else None
        if knn is None:
            return perform(method, url, params=params, body=body, **kwargs)
        (search,) = knn.values()
        query = {"bool": {"filter": [search["filter"]]}} if "filter" in search else {"match_all": {}}
        answer = perform(method, url, params=params, body={**decoded, "query": query}, **kwargs)
        for hit in answer["hits"]["hits"]:
            hit["_score"] = score_from_cosine(1.0)
        return answer

    client.transport.perform_request = knn_by_its_filter  # type: ignore[method-assign]
    return OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-filters-")


def _s3vectors(request: pytest.FixtureRequest, tmp_path: Path) -> VectorIndex:
    from aws_fixtures import shared_moto_server
    from s3vectors_fake import install

    install()
    client = shared_moto_server().client("s3vectors")
    bucket = f"filters-{tmp_path.name.lower().replace('_', '-')[-40:].strip('-')}"
    client.create_vector_bucket(vectorBucketName=bucket)
    return S3VectorsIndex(lambda: client, bucket, "mnemo-filters-")


#: Backend -> opener. osmem-server answers no k-NN query, so on OpenSearch the k-NN request's filter clause (the
#: one the adapter sends) is run as a plain search: what it selects is checked, not the vector ranking. S3 Vectors
#: runs on moto with tests/support/s3vectors_fake.py's QueryVectors; it compares strings for equality only, so
#: it may refuse (INVALID_INPUT, before any request) a filter holding an ordered range or a substring test, and
#: must answer every other filter as the reference does.
BACKENDS: dict[str, Opener] = {"local": _local, "opensearch": _opensearch, "s3vectors": _s3vectors}


def _needs_order_or_substring(where: Match | None) -> bool:
    """Whether ``where`` holds a condition S3 Vectors cannot express: a range or a substring test (any
    ``TermRange`` but "the field holds a value", any ``TermContains``)."""
    if isinstance(where, TermContains):
        return True
    if isinstance(where, TermRange):
        return not (where.prefix == "" and where.low is None and where.high is None)
    if isinstance(where, AllOf | AnyOf | NoneOf):
        return any(_needs_order_or_substring(part) for part in where.parts)
    return False


def _answers(index: VectorIndex, where: Match | None) -> tuple[set[str], set[str]] | None:
    """The ids lexical and knn answer under ``where``, or None when the index refused the filter (S3 Vectors,
    only for what it cannot express)."""
    try:
        lexical = {hit.id for hit in index.lexical(NS, "memo", {"scope": [SCOPE]}, 50, where=where)}
        knn = {hit.id for hit in index.knn(NS, VECTOR, {"scope": [SCOPE]}, 50, where=where)}
    except InvalidInput as refused:
        assert isinstance(index, S3VectorsIndex) and _needs_order_or_substring(where), (where, refused)
        assert refused.details["field"] == "filter"
        return None
    return lexical, knn


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    yield BACKENDS[request.param](request, tmp_path)


# ------------------------------------------------------------------- tests ---
@settings(max_examples=150, deadline=None)
@given(cases())
def test_the_domain_evaluator_agrees_with_the_reference(case: tuple[list[dict[str, Any]], list[Any]]) -> None:
    drawn, flts = case
    stored = bodies(drawn)
    for flt in flts:
        assume(valid(flt))
        node = parse_filter(flt)
        for data in stored:
            assert matches(node, data) == expected(flt, data), (flt, data)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(most=8))
def test_every_index_answers_a_filter_as_the_reference(
    backend: VectorIndex, case: tuple[list[dict[str, Any]], list[Any]]
) -> None:
    index = backend
    drawn, flts = case
    stored = bodies(drawn)
    index.delete(NS, [f"m{i}" for i in range(len(stored), MAX_RECORDS)])  # the previous example's
    index.upsert(NS, [index_doc(data, VECTOR) for data in stored])
    for flt in flts:
        if not valid(flt):
            continue
        want = {data["memoryId"] for data in stored if expected(flt, data)}
        answers = _answers(index, to_match(parse_filter(flt)))
        if answers is not None:
            assert answers == (want, want), flt


#: Filters whose index form is easy to get wrong: wildcard and separator characters, bounds equal to a value,
#: a time written in another zone, negative numbers, -0.0, a key holding ``|`` and ``\``.
TRICKY: list[dict[str, Any]] = [
    {"metadata.p": {"contains": "*"}},
    {"metadata.p": {"contains": "?"}},
    {"metadata.p": {"contains": "\\"}},
    {"metadata.p": {"contains": "|"}},
    {"metadata.p": {"contains": ""}},
    {"tags": {"contains": "*"}},
    {"tags": {"contains": "Y"}},
    {"metadata.a|b\\c": {"exists": True}},
    {"metadata.a|b\\c": {"gt": 1}},
    {"metadata.p": {"gt": -1}},
    {"metadata.p": {"gte": -2.5, "lt": 0}},
    {"metadata.p": {"lte": -0.0}},
    {"metadata.p": {"gte": "2026-01-01T01:00:00+01:00"}},
    {"metadata.p": {"gt": "2026-01-01T00:00:00Z"}},
    {"createdAt": {"lt": "2026-01-01T00:00:00Z"}},
    {"createdAt": {"lte": "2026-01-01T01:00:00+01:00"}},
    {"metadata.p": "2026-01-01T00:00:00Z"},
    {"metadata.p": {"ne": 1}},
    {"metadata.p": True},
    {"metadata.p": ["b*", 3.0]},
    {"tags": {"exists": False}},
    {"tags": {"all": ["X*Y", "alpha"]}},
    {"not": {"or": [{"source": "manual"}, {"occurredAt": {"exists": True}}]}},
]
TRICKY_RECORDS = [
    {"tags": ["x*y", "Alpha"], "metadata": {"p": "b*", "a|b\\c": 2}, "createdAt": TIMES[0], "occurredAt": None},
    {
        "tags": [],
        "metadata": {"p": ["a?b", "2026-03-01T12:00Z"]},
        "createdAt": TIMES[2],
        "occurredAt": TIMES[3],
        "expiresAt": None,
    },
    {"tags": ["ab"], "metadata": {"p": "x\\y", "source": "manual"}, "createdAt": TIMES[1], "occurredAt": None},
    {"tags": ["x?y"], "metadata": {"p": "x|y"}, "createdAt": TIMES[5], "occurredAt": None},
    {"tags": ["alpha"], "metadata": {"p": [-2.5, 1]}, "createdAt": TIMES[4], "occurredAt": None},
    {"tags": ["c d"], "metadata": {"p": -0.0, "a|b\\c": 1}, "createdAt": TIMES[0], "occurredAt": None},
    {"tags": [], "metadata": {"p": "2026-01-01T01:00:00+01:00"}, "createdAt": TIMES[0], "occurredAt": None},
    {"tags": [], "metadata": {"p": True, "source": "import"}, "createdAt": TIMES[3], "occurredAt": TIMES[0]},
]


def test_tricky_filters_answer_as_the_reference(backend: VectorIndex) -> None:
    index = backend
    stored = bodies([{"expiresAt": None, **fields} for fields in TRICKY_RECORDS])
    index.upsert(NS, [index_doc(data, VECTOR) for data in stored])
    split = answered = 0
    for flt in TRICKY:
        want = {data["memoryId"] for data in stored if expected(flt, data)}
        split += 0 < len(want) < len(stored)
        answers = _answers(index, to_match(parse_filter(flt)))
        if answers is not None:
            assert answers == (want, want), flt
            answered += 1
    assert answered == len(TRICKY) or isinstance(index, S3VectorsIndex)
    assert split == len(TRICKY)  # each filter keeps some records and drops others

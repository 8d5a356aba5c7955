"""Operator filters (mnemo.memory.filters): what the parser refuses and where, the limits, the shape from before
operators, and the index terms. Their meaning on every index: the contract tests/contract/test_memory_filters.py."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.errors import InvalidInput
from mnemo.memory.filters import (
    EVERYTHING,
    MAX_CONDITIONS,
    MAX_DEPTH,
    And,
    Condition,
    Not,
    attr_terms,
    matches,
    parse_filter,
    request_filter,
    to_match,
)
from mnemo.memory.models import MemoryListInput, MemorySearchInput
from mnemo.ports import AllOf, AnyOf, AnyTerm, NoneOf, TermContains, TermRange


def refused(raw: Any) -> str:
    with pytest.raises(InvalidInput) as raised:
        parse_filter(raw)
    field = raised.value.details["field"]
    assert raised.value.message.startswith(f"{field}: ")
    return str(field)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ({"and": [{"tags": "a"}, {"metadata.priority": {"gt": "high"}}]}, "filter.and[1].metadata.priority.gt"),
        ({"and": [{"tags": "a"}, {"createdAt": {"gt": 5}}]}, "filter.and[1].createdAt.gt"),
        ({"createdAt": {"gte": "2026-01-01"}}, "filter.createdAt.gte"),  # no time of day, no zone
        ({"createdAt": {"gte": "2026-01-01T00:00:00"}}, "filter.createdAt.gte"),  # no zone
        ({"occurredAt": "yesterday"}, "filter.occurredAt"),
        ({"expiresAt": {"contains": "2026"}}, "filter.expiresAt.contains"),
        ({"metadata.n": {"gt": True}}, "filter.metadata.n.gt"),  # a bool is not a number
        ({"metadata.n": {"lt": "abc"}}, "filter.metadata.n.lt"),
        ({"metadata.n": {"between": [1, 2]}}, "filter.metadata.n.between"),
        ({"metadata.n": {}}, "filter.metadata.n"),
        ({"metadata.n": None}, "filter.metadata.n"),
        ({"metadata.n": {"eq": {"x": 1}}}, "filter.metadata.n.eq"),
        ({"metadata.n": {"in": "a"}}, "filter.metadata.n.in"),
        ({"metadata.n": {"in": ["a", None]}}, "filter.metadata.n.in[1]"),
        ({"metadata.n": {"all": ["a"]}}, "filter.metadata.n.all"),
        ({"metadata.n": {"exists": "yes"}}, "filter.metadata.n.exists"),
        ({"metadata.n": {"contains": 3}}, "filter.metadata.n.contains"),
        ({"metadata.n": {"contains": "x" * 1025}}, "filter.metadata.n.contains"),
        ({"metadata.": 1}, "filter.metadata."),
        ({"metadata." + "k" * 257: 1}, "filter.metadata." + "k" * 257),
        ({"priority": 3}, "filter.priority"),
        ({"tags": {"gt": "a"}}, "filter.tags.gt"),
        ({"tags": [" "]}, "filter.tags[0]"),
        ({"tags": {"all": "a"}}, "filter.tags.all"),
        ({"or": []}, "filter.or"),
        ({"and": {"tags": "a"}}, "filter.and"),
        ({"or": [{"tags": "a"}, "b"]}, "filter.or[1]"),
        ({"not": [{"tags": "a"}]}, "filter.not"),
        ({"not": {"or": [{"source": "manual"}, {"source": {"ne": 1e400}}]}}, "filter.not.or[1].source.ne"),
        ({"metadata": {"team": {"gte": "x"}}}, "filter.metadata.team.gte"),
        ([{"tags": "a"}], "filter"),
    ],
)
def test_a_malformed_filter_names_its_path(raw: Any, path: str) -> None:
    assert refused(raw) == path


def test_filters_nest_at_most_five_deep() -> None:
    deep: dict[str, Any] = {"tags": "a"}
    for _ in range(MAX_DEPTH - 1):
        deep = {"not": deep}
    parse_filter(deep)  # five objects deep
    assert refused({"not": deep}) == "filter.not.not.not.not.not"


def test_a_filter_holds_at_most_fifty_conditions() -> None:
    parse_filter({"or": [{f"metadata.k{i}": i} for i in range(MAX_CONDITIONS)]})
    too_many = {"or": [{f"metadata.k{i}": i} for i in range(MAX_CONDITIONS)] + [{"tags": {"in": ["a"], "nin": []}}]}
    assert refused(too_many) == f"filter.or[{MAX_CONDITIONS}].tags.in"


def test_the_tool_models_refuse_a_malformed_filter_naming_its_path() -> None:
    bad = {"and": [{"tags": "a"}, {"createdAt": {"gt": 5}}]}
    for model, payload in ((MemorySearchInput, {"query": "x"}), (MemoryListInput, {})):
        with pytest.raises(InvalidInput) as raised:
            model.model_validate({**payload, "filter": bad})
        assert raised.value.details == {"field": "filter.and[1].createdAt.gt"}


def test_bare_values_lists_and_the_shape_from_before_operators() -> None:
    assert parse_filter(None) == EVERYTHING
    assert parse_filter({}) == EVERYTHING
    assert parse_filter({"tags": []}) == EVERYTHING  # as `tags: []` always meant
    assert parse_filter({"tags": None, "metadata": None}) == EVERYTHING
    assert parse_filter({"source": "manual"}) == parse_filter({"metadata.source": {"eq": "manual"}})
    assert parse_filter({"metadata": {"team": "ops"}}) == parse_filter({"metadata.team": "ops"})
    assert parse_filter({"tags": ["A", "b"]}) == Condition("tags", "in", (("s", "a"), ("s", "b")), raw=("A", "b"))
    assert parse_filter({"metadata.n": {"ne": 1}}) == Not(Condition("metadata.n", "in", (("n", 1.0),), raw=(1,)))
    assert isinstance(parse_filter({"metadata.n": {"gte": 1, "lt": 3}}), And)


def test_request_filter_merges_the_top_level_fields_as_before() -> None:
    record = {"tags": ["b"], "metadata": {"team": "ops", "n": 1}, "createdAt": "2026-01-01T00:00:00Z"}
    # Top-level tags join filter.tags (one any-of), as the pre-operator merge did.
    assert matches(request_filter({"tags": ["a"]}, ["B"], None), record)
    # filter.metadata overrides a top-level key.
    assert matches(request_filter({"metadata": {"team": "ops"}}, None, {"team": "dev", "n": 1}), record)
    # An operator filter is ANDed with the top-level fields.
    assert not matches(request_filter({"tags": {"all": ["b"]}}, ["a"], None), record)
    assert matches(request_filter({"metadata.n": {"gte": 1}}, ["a", "b"], {"team": "ops"}), record)
    with pytest.raises(InvalidInput) as raised:
        request_filter({"tags": {"gt": "a"}}, ["a"], None)
    assert raised.value.details["field"] == "filter.tags.gt"


def test_attr_terms_are_typed_escaped_and_ordered() -> None:
    data = {
        "tags": ["Ops"],
        "metadata": {"source": "manual", "a|b": [2, "x"], "ok": True, "none": None, "long": "y" * 2000},
        "createdAt": "2026-01-07T10:00:00Z",
        "occurredAt": "2026-01-07T11:00:00+01:00",
    }
    terms = attr_terms(data)
    assert "createdAt|e" in terms and "createdAt|t|2026-01-07T10:00:00.000000Z" in terms
    assert "occurredAt|t|2026-01-07T10:00:00.000000Z" in terms  # the instant, in UTC
    assert "expiresAt|e" not in terms
    assert {"metadata.source|e", "metadata.source|s|manual", "metadata.ok|b|true", "metadata.none|e"} <= set(terms)
    assert {"metadata.a\\|b|e", "metadata.a\\|b|s|x"} <= set(terms)
    assert [t for t in terms if t.startswith("metadata.a\\|b|n|")] == ["metadata.a\\|b|n|c000000000000000"]
    assert [t for t in terms if t.startswith("metadata.long")] == ["metadata.long|e"]  # too long to hold
    assert not any(t.startswith("tags") for t in terms)  # tags keep their own keyword


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**60), 2**60), min_size=2))
def test_the_number_terms_sort_as_the_numbers(numbers: list[float]) -> None:
    def term(number: float) -> str:
        return next(t for t in attr_terms({"metadata": {"n": number}}) if "|n|" in t)

    by_term = sorted(numbers, key=term)
    assert [float(n) for n in by_term] == sorted(float(n) for n in numbers)
    assert all(len(term(n)) == len("metadata.n|n|") + 16 for n in numbers)
    assert term(-0.0) == term(0.0)
    assert struct.pack(">d", 1.0).hex() == "3ff0000000000000"  # the encoding flips the sign bit of this
    assert term(1.0).endswith("bff0000000000000")


def test_to_match_compiles_to_the_port_algebra() -> None:
    assert to_match(parse_filter({})) is None
    assert to_match(parse_filter({"tags": {"all": ["A", "b"]}})) == AllOf(
        (AnyTerm("tags", ("a",)), AnyTerm("tags", ("b",)))
    )
    assert to_match(parse_filter({"tags": {"exists": False}})) == NoneOf((TermRange("tags", ""),))
    assert to_match(parse_filter({"metadata.t": {"contains": "a*"}})) == TermContains("attrs", "metadata.t|s|", "a*")
    assert to_match(parse_filter({"createdAt": {"gt": "2026-01-01T01:00:00+01:00"}})) == TermRange(
        "attrs", "createdAt|t|", low="2026-01-01T00:00:00.000000Z", include_low=False
    )
    # Equality on metadata also finds documents indexed before operators (their ``meta.<key>`` keyword).
    assert to_match(parse_filter({"metadata.team": "ops"})) == AnyOf(
        (AnyTerm("attrs", ("metadata.team|s|ops",)), AnyTerm("meta.team", ('"ops"',)))
    )

"""mnemo.schema_check: the first place an untrusted document breaks its JSON Schema, named as callers report it."""

from __future__ import annotations

from typing import Any

import pytest

from mnemo.graph.extraction import EXTRACTION_SCHEMA
from mnemo.knowledge.documents import front_matter_schema
from mnemo.schema_check import Problem, first_problem

ADR = {"id": "adr-001", "title": "Use DynamoDB", "type": "adr", "status": "accepted", "summary": "Records."}


def test_a_conforming_document_has_no_problem() -> None:
    assert first_problem(front_matter_schema(), ADR) is None
    assert first_problem(EXTRACTION_SCHEMA, {"entities": [], "facts": []}) is None


UNEXPECTED = "Additional properties are not allowed ('colour' was unexpected)"


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({k: v for k, v in ADR.items() if k != "title"},
         Problem((), "required", "'title' is a required property", "title")),
        ({**ADR, "colour": "red"}, Problem((), "additionalProperties", UNEXPECTED, "colour")),
        ({**ADR, "constraints": [{"id": "c1"}]},
         Problem(("constraints", "0"), "required", "'operator' is a required property", "operator")),
        ({**ADR, "status": "maybe"}, Problem(("status",), "enum", "must be one of [...]", None)),
    ],
)  # fmt: skip
def test_front_matter_problems_name_the_field(document: dict[str, Any], expected: Problem) -> None:
    found = first_problem(front_matter_schema(), document)
    assert found is not None
    assert (found.path, found.rule, found.subject) == (expected.path, expected.rule, expected.subject)
    if expected.rule != "enum":  # the enum's wording lists the schema's values, whatever they are
        assert found.message == expected.message
    else:
        assert found.message.startswith("'maybe' must be one of")


def test_a_model_answer_out_of_shape_is_placed_by_its_path() -> None:
    answer = {"entities": [{"name": "Spring AI", "type": 7}], "facts": []}
    found = first_problem(EXTRACTION_SCHEMA, answer)
    assert found is not None
    assert (found.where, found.rule) == ("entities/0/type", "type")
    assert found.message == "7 must be string"


def test_a_schema_through_refs_is_checked_where_the_ref_points() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"fact": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}},
        "type": "object",
        "properties": {"facts": {"type": "array", "items": {"$ref": "#/$defs/fact"}}},
    }
    assert first_problem(schema, {"facts": [{"text": "ok"}]}) is None
    found = first_problem(schema, {"facts": [{"text": "ok"}, {}]})
    assert found is not None and (found.where, found.subject) == ("facts/1", "text")


def test_the_instance_is_never_filled_with_defaults() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "default": []}}}
    document: dict[str, Any] = {}
    assert first_problem(schema, document) is None
    assert document == {}

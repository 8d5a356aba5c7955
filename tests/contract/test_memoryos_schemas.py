"""The MemoryOS contract: the draft-07 schemas vendored in mnemo/conversations/contracts/, an input and an
output schema for each tool of the conversations family.

Inputs: every example valid under an input schema (the required set, the full
set) is accepted; invalid ones (a required field missing, a wrong type, too long
or short, an unknown property) are INVALID_INPUT naming the field. Each invalid
example is first checked to be invalid under the schema itself, so the test
cannot drift from it. Two omissions the schemas forbid are accepted by design:
add_conversation generates a missing message_id, and retrieve_execution takes
the user from the transport, so its user_id may be left out.

Outputs: answers of real calls validate against the output schemas with
draft-07 and date-time format checking.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft7Validator

from helpers import ctx
from mnemo.conversations import contracts
from mnemo.errors import InvalidInput, MnemoError
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool, load_catalog

CONTRACTS = contracts.DIRECTORY
ALICE = ctx()
#: Every tool of the conversations family, from the catalog: each answers to a vendored MemoryOS contract.
TOOLS = tuple(name for name, tool in load_catalog().items() if tool.family == "conversations")

FULL: dict[str, dict[str, Any]] = {
    "add_conversation": {
        "message_id": "msg_full",
        "explanation": "Store the deploy question",
        "user_input": "How do I deploy the checkout service?",
        "agent_response": "Merge to main; the pipeline deploys it.",
        "timestamp": "2024-12-15T14:30:00Z",
        "meta_data": {"platform": "slack", "importance": "high", "nested": {"thread": [1, 2]}},
    },
    "add_execution": {
        "message_id": "msg_full",
        "explanation": "Store how the deploy went",
        "execution_summary": "Deployed checkout through the pipeline",
        "tools_used": ["git", "deploy_pipeline"],
        "errors": [
            {"error_type": "timeout", "error_message": "health check slow", "tool": "deploy_pipeline"},
            {"error_type": "lint", "error_message": "unused import", "severity": "low"},
        ],
        "observations": "The health check needs a longer grace period.",
        "success": True,
        "duration_ms": 93000,
        "timestamp": "2024-12-15T14:31:00+01:00",
        "meta_data": {"platform": "cli"},
    },
    "retrieve_conversation": {
        "message_id": "msg_full",
        "time_range": {"start": "2024-12-01T00:00:00Z", "end": "2024-12-31T23:59:59Z"},
        "explanation": "Find the deploy question",
        "query": "deploy checkout service",
        "max_results": 5,
        "retrieval_strategy": "keyword",
    },
    "retrieve_execution": {
        "message_id": "msg_full",
        "explanation": "See how deploys went",
        "query": "deploy pipeline timeouts",
        "user_id": "alice",
        "max_results": 50,
        "retrieval_strategy": "recent",
    },
}

WRONG_TYPE = {"string": 123, "integer": "ten", "boolean": "yes", "array": "git", "object": "platform=slack"}


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CONTRACTS / f"{name}.json").read_text())
    return loaded


def minimal(tool: str) -> dict[str, Any]:
    required = schema(f"{tool}_input")["required"]
    return {key: value for key, value in FULL[tool].items() if key in required}


def invoke(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, ALICE, copy.deepcopy(payload))


def validate_output(tool: str, answer: dict[str, Any]) -> None:
    validator = Draft7Validator(schema(f"{tool}_output"), format_checker=Draft7Validator.FORMAT_CHECKER)
    errors = [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(answer)]
    assert not errors, errors


def test_every_conversation_tool_has_its_two_draft_07_schemas_and_the_date_time_format_is_checked() -> None:
    vendored = {path.stem for path in CONTRACTS.glob("*.json")}
    assert vendored == {f"{tool}_{side}" for tool in TOOLS for side in ("input", "output")}
    for tool in TOOLS:
        for side in ("input", "output"):
            loaded = schema(f"{tool}_{side}")
            assert loaded["$schema"] == "http://json-schema.org/draft-07/schema#"
            Draft7Validator.check_schema(loaded)
    checker = Draft7Validator({"type": "string", "format": "date-time"}, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert checker.is_valid("2024-12-15T14:30:00Z")
    assert not checker.is_valid("yesterday at noon")


# ------------------------------------------------------------------- inputs ---
def valid_examples() -> list[tuple[str, str, dict[str, Any]]]:
    cases = []
    for tool in TOOLS:
        cases.append((tool, "full", FULL[tool]))
        cases.append((tool, "required only", minimal(tool)))
    cases += [
        (
            "add_conversation",
            "offset timestamp",
            {**minimal("add_conversation"), "timestamp": "2024-06-01T08:00:00-07:00"},
        ),
        ("add_conversation", "empty meta_data", {**minimal("add_conversation"), "meta_data": {}}),
        (
            "add_conversation",
            "longest texts",
            {
                **minimal("add_conversation"),
                "message_id": "m" * 100,
                "user_input": "u" * 10000,
                "agent_response": "a" * 10000,
            },
        ),
        (
            "add_execution",
            "no tools, empty observations",
            {**minimal("add_execution"), "tools_used": [], "observations": ""},
        ),
        ("add_execution", "a failure at 0 ms", {**minimal("add_execution"), "success": False, "duration_ms": 0}),
        (
            "retrieve_conversation",
            "open time range",
            {**minimal("retrieve_conversation"), "time_range": {"start": "2024-01-01T00:00:00Z"}},
        ),
        ("retrieve_conversation", "empty time range", {**minimal("retrieve_conversation"), "time_range": {}}),
        (
            "retrieve_conversation",
            "hybrid, one result",
            {**minimal("retrieve_conversation"), "retrieval_strategy": "hybrid", "max_results": 1},
        ),
        ("retrieve_execution", "keyword", {**minimal("retrieve_execution"), "retrieval_strategy": "keyword"}),
        ("retrieve_execution", "longest query", {**minimal("retrieve_execution"), "query": "q" * 4000}),
    ]
    return cases


@pytest.mark.parametrize(("tool", "label", "payload"), valid_examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_valid_requests_are_accepted(services: Services, tool: str, label: str, payload: dict[str, Any]) -> None:
    Draft7Validator(schema(f"{tool}_input"), format_checker=Draft7Validator.FORMAT_CHECKER).validate(payload)
    answer = invoke(services, tool, payload)
    assert answer["success"] is True
    validate_output(tool, answer)


def test_omissions_the_schemas_forbid_but_the_tools_accept_by_design(services: Services) -> None:
    without_id = {key: value for key, value in minimal("add_conversation").items() if key != "message_id"}
    assert not Draft7Validator(schema("add_conversation_input")).is_valid(without_id)
    generated = invoke(services, "add_conversation", without_id)
    assert generated["data"]["message_id"].startswith("msg_")
    without_user = {key: value for key, value in minimal("retrieve_execution").items() if key != "user_id"}
    assert not Draft7Validator(schema("retrieve_execution_input")).is_valid(without_user)
    validate_output("retrieve_execution", invoke(services, "retrieve_execution", without_user))


def invalid_examples() -> list[tuple[str, str, dict[str, Any], str]]:
    """(tool, label, payload, the field the error must name), derived from each input schema."""
    cases: list[tuple[str, str, dict[str, Any], str]] = []
    for tool in TOOLS:
        input_schema = schema(f"{tool}_input")
        base = FULL[tool]
        for name in input_schema["required"]:
            if (tool, name) in {("add_conversation", "message_id"), ("retrieve_execution", "user_id")}:
                continue  # accepted by design (see the test above)
            cases.append((tool, f"missing {name}", {k: v for k, v in base.items() if k != name}, name))
        for name, spec in input_schema["properties"].items():
            if name == "user_id":
                continue  # an identity claim: its own test
            cases.append((tool, f"{name} of a wrong type", {**base, name: WRONG_TYPE[spec["type"]]}, name))
            if "maxLength" in spec:
                cases.append((tool, f"{name} too long", {**base, name: "x" * (spec["maxLength"] + 1)}, name))
            if spec.get("minLength"):
                cases.append((tool, f"{name} empty", {**base, name: ""}, name))
            if "maximum" in spec:
                cases.append((tool, f"{name} over the maximum", {**base, name: spec["maximum"] + 1}, name))
            if "minimum" in spec:
                cases.append((tool, f"{name} under the minimum", {**base, name: spec["minimum"] - 1}, name))
            if "enum" in spec:
                cases.append((tool, f"{name} not in the enum", {**base, name: "fastest"}, name))
        cases.append((tool, "an unknown property", {**base, "priority": "high"}, "priority"))
    cases += [
        (
            "add_conversation",
            "timestamp not a date",
            {**FULL["add_conversation"], "timestamp": "yesterday"},
            "timestamp",
        ),
        (
            "add_execution",
            "an error without error_type",
            {**FULL["add_execution"], "errors": [{"error_message": "x"}]},
            "errors.0.error_type",
        ),
        (
            "add_execution",
            "a tool that is not a string",
            {**FULL["add_execution"], "tools_used": ["git", 7]},
            "tools_used.1",
        ),
        ("add_execution", "duration_ms a fraction", {**FULL["add_execution"], "duration_ms": 1.5}, "duration_ms"),
        (
            "retrieve_conversation",
            "time_range.start not a date",
            {**FULL["retrieve_conversation"], "time_range": {"start": "soon"}},
            "time_range.start",
        ),
        (
            "retrieve_conversation",
            "time_range.end a number",
            {**FULL["retrieve_conversation"], "time_range": {"end": 1734272000}},
            "time_range.end",
        ),
    ]
    return cases


@pytest.mark.parametrize(
    ("tool", "label", "payload", "field"), invalid_examples(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_invalid_requests_are_invalid_input_naming_the_field(
    services: Services, tool: str, label: str, payload: dict[str, Any], field: str
) -> None:
    validator = Draft7Validator(schema(f"{tool}_input"), format_checker=Draft7Validator.FORMAT_CHECKER)
    assert not validator.is_valid(payload), f"{label} is valid under the schema: not an invalid example"
    with pytest.raises(MnemoError) as raised:
        invoke(services, tool, payload)
    assert isinstance(raised.value, InvalidInput)
    assert raised.value.details["field"] == field, raised.value.details
    assert raised.value.envelope()["errorCode"] == "INVALID_INPUT"


# ------------------------------------------------------------------ outputs ---
def test_every_output_validates_against_its_schema(services: Services) -> None:
    stored = invoke(services, "add_conversation", FULL["add_conversation"])
    validate_output("add_conversation", stored)
    validate_output("add_conversation", invoke(services, "add_conversation", FULL["add_conversation"]))  # a repeat
    generated = invoke(services, "add_conversation", {**minimal("add_conversation"), "message_id": "msg_min"})
    validate_output("add_conversation", generated)
    validate_output("add_execution", invoke(services, "add_execution", FULL["add_execution"]))
    validate_output("add_execution", invoke(services, "add_execution", {**minimal("add_execution"), "message_id": "x"}))

    retrieve = {"explanation": "check the contract", "query": "deploy checkout"}
    answers = {
        "general": invoke(services, "retrieve_conversation", retrieve),
        "specific": invoke(services, "retrieve_conversation", {**retrieve, "message_id": "msg_full"}),
        "time filtered": invoke(
            services, "retrieve_conversation", {**retrieve, "time_range": FULL["retrieve_conversation"]["time_range"]}
        ),
        "recent": invoke(services, "retrieve_conversation", {**retrieve, "retrieval_strategy": "recent"}),
        "empty": invoke(services, "retrieve_conversation", {**retrieve, "message_id": "msg_none"}),
    }
    for label, answer in answers.items():
        validate_output("retrieve_conversation", answer)
        assert set(answer) == {"success", "message", "data"}, label
    assert answers["general"]["data"]["conversations"]
    assert answers["empty"]["data"]["conversations"] == []
    assert answers["specific"]["data"]["query_type"] == "specific_message"
    assert answers["time filtered"]["data"]["query_type"] == "time_filtered"
    assert answers["specific"]["data"]["conversations"][0]["has_execution_memory"] is True

    executions = {
        "general": invoke(services, "retrieve_execution", retrieve),
        "specific": invoke(services, "retrieve_execution", {**retrieve, "message_id": "msg_full", "user_id": "alice"}),
        "pattern": invoke(services, "retrieve_execution", {**retrieve, "tools": ["git"], "success": True}),
        "recent": invoke(services, "retrieve_execution", {**retrieve, "retrieval_strategy": "recent"}),
        "empty": invoke(services, "retrieve_execution", {**retrieve, "error_type": "out_of_memory"}),
    }
    for label, answer in executions.items():
        validate_output("retrieve_execution", answer)
        assert set(answer) == {"success", "message", "data"}, label
    assert executions["specific"]["data"]["executions"][0]["execution_details"]["errors"][1] == {
        "error_type": "lint",
        "error_message": "unused import",
        "severity": "low",
    }
    assert executions["pattern"]["data"]["query_type"] == "pattern_search"
    assert executions["empty"]["data"]["executions"] == []
    assert executions["empty"]["data"]["total_found"] == 0


def test_output_validation_would_catch_a_broken_answer(services: Services) -> None:
    answer = invoke(services, "add_conversation", FULL["add_conversation"])
    for broken in (
        {**answer, "extra": True},
        {**answer, "data": {**answer["data"], "timestamp": "not a time"}},
        {key: value for key, value in answer.items() if key != "message"},
    ):
        validator = Draft7Validator(schema("add_conversation_output"), format_checker=Draft7Validator.FORMAT_CHECKER)
        assert not validator.is_valid(broken)

"""The generated Bedrock definitions fit Bedrock Agents' quotas and declare what a model can send.

Quotas (Amazon Bedrock endpoints and quotas, https://docs.aws.amazon.com/general/latest/gr/bedrock.html):
at most ``MAX_PARAMETERS_PER_FUNCTION`` parameters per function. Bedrock carries every value as a string
and function details have no object type, so a field that takes objects (or an array of them) is a string
holding JSON whose description shows an example.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from entry.test_bedrock import (
    ALICE,
    api_body,
    call,
    envelope,
    function_body,
    function_event,
    load_function,
    openapi_event,
)

from mnemo.runtime import Services
from mnemo.tools.bedrock_schema import (
    MAX_PARAMETERS_PER_FUNCTION,
    OPTIONS,
    action_groups,
    bedrock_functions,
    bedrock_openapi,
    request_fields,
)
from mnemo.tools.registry import load_catalog

GROUPS = action_groups(load_catalog(experimental=True).values())


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_function_and_operation_fits_the_parameter_quota(group: str) -> None:
    for function in bedrock_functions(GROUPS[group])["functions"]:
        assert len(function["parameters"]) <= MAX_PARAMETERS_PER_FUNCTION, function["name"]
    for path, item in bedrock_openapi(group, GROUPS[group])["paths"].items():
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert len(body["properties"]) <= MAX_PARAMETERS_PER_FUNCTION, path


def test_the_largest_tools_group_their_optional_fields_in_one_json_parameter() -> None:
    catalog = load_catalog(experimental=True)
    (link,) = bedrock_functions([catalog["add_memory_link"]])["functions"]
    assert list(link["parameters"]) == ["subject", "predicate", "object", "text", OPTIONS]
    grouped = link["parameters"][OPTIONS]
    assert grouped["type"] == "string"
    assert grouped["required"] is False
    for name in ("subjectType", "objectType", "layer", "validAt", "invalidAt", "exclusive", "invalidates", "source"):
        assert f"{name} (" in grouped["description"], name
    (execution,) = bedrock_functions([catalog["add_execution"]])["functions"]
    assert execution["parameters"][OPTIONS]["required"] is True  # errors, observations and success are in it
    assert "errors (JSON array, required)" in execution["parameters"][OPTIONS]["description"]


def _object_fields() -> list[tuple[str, str]]:
    found = []
    for tool in load_catalog(experimental=True).values():
        for field in request_fields(tool):
            items = field.schema.get("items")
            if field.kind == "object" or (field.kind == "array" and field.schema.get("type") == "string"):
                found.append((tool.name, field.name))
            assert not (isinstance(items, dict) and items.get("type") == "object"), (tool.name, field.name)
    return found


def test_fields_that_take_objects_are_json_strings_with_an_example() -> None:
    found = _object_fields()
    for expected in [("knowledge_check", "files"), ("knowledge_check", "dependencies"), ("add_execution", "errors")]:
        assert expected in found
    catalog = load_catalog(experimental=True)
    for tool_name, name in found:
        (field,) = [f for f in request_fields(catalog[tool_name]) if f.name == name]
        assert field.schema["type"] == "string"
        example = field.description.split("e.g. ", 1)[1].split(". ")[0].rstrip(".")
        value = json.loads(example)
        assert isinstance(value, dict if field.kind == "object" else list), (tool_name, name, example)


def _knowledge_check(style: str, values: list[dict[str, Any]], state: str | None, status: int) -> dict[str, Any]:
    handler = load_function("knowledge").handler
    if style == "openapi":
        event = openapi_event("knowledge_check", values, ALICE, group="mnemo-knowledge")
        return api_body(call(event, handler), event, status)
    event = function_event("knowledge_check", values, ALICE, group="mnemo-knowledge")
    return function_body(call(event, handler), event, state)


@pytest.mark.parametrize("style", ["function", "openapi"])
def test_knowledge_check_takes_files_and_dependencies_as_declared(services: Services, style: str) -> None:
    (check,) = bedrock_functions([load_catalog()["knowledge_check"]])["functions"]
    files, dependencies = check["parameters"]["files"], check["parameters"]["dependencies"]
    values = [
        {
            "name": "files",
            "type": files["type"],
            "value": json.dumps([{"path": "src/app.py", "content": "import os\n"}]),
        },
        {"name": "dependencies", "type": dependencies["type"], "value": '[{"name": "left-pad", "version": "1.0.0"}]'},
    ]
    body = _knowledge_check(style, values, None, 200)
    assert body["success"] is True


@pytest.mark.parametrize("style", ["function", "openapi"])
def test_more_arguments_rejects_a_key_that_is_not_grouped(services: Services, style: str) -> None:
    values = [
        {"name": "query", "type": "string", "value": "x"},
        {"name": OPTIONS, "type": "string", "value": '{"nonsense": 1}'},
    ]
    handler = load_function("memory").handler
    if style == "openapi":
        event = openapi_event("memory_search", values)
        body = api_body(call(event, handler), event, 400)
    else:
        event = function_event("memory_search", values)
        body = function_body(call(event, handler), event, "REPROMPT")
    envelope(body, "INVALID_INPUT", f"{OPTIONS}.nonsense")


def test_more_arguments_values_are_decoded_by_their_kind(services: Services) -> None:
    values = [
        {"name": "query", "type": "string", "value": "x"},
        {
            "name": OPTIONS,
            "type": "string",
            "value": '{"threshold": "0.1", "includeGraph": "false", "tags": "[\\"a\\"]"}',
        },
    ]
    event = function_event("memory_search", values)
    body = function_body(call(event, load_function("memory").handler), event, None)
    assert body["success"] is True

"""The Bedrock Agents action-group Lambdas (functions/bedrock_*/app.py) on events shaped as AWS documents.

Input and response shapes follow the Amazon Bedrock user guide, "Configure Lambda functions to
send information that an Amazon Bedrock agent elicits from the user" (agents-lambda): OpenAPI
events carry ``apiPath``/``httpMethod``/``requestBody.content["application/json"].properties``,
function-details events carry ``function``/``parameters``; every value arrives as a string next to
its declared type.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest
from openapi_spec_validator import validate
from pydantic import Field

from aws_events import FakeLambdaContext, bedrock_agent_event
from mnemo.cli import main
from mnemo.context import RequestContext
from mnemo.entry import bedrock
from mnemo.entry.bedrock import MAX_RESPONSE_BYTES, action_group_handler, decode_value, wire_size
from mnemo.errors import InvalidInput
from mnemo.memory.models import MemorySearchOutput
from mnemo.models import ToolRequest, ToolResponse
from mnemo.runtime import Services
from mnemo.tools.bedrock_schema import (
    MAX_FUNCTION_DESCRIPTION,
    MAX_OPERATIONS_PER_GROUP,
    MAX_PARAMETER_DESCRIPTION,
    action_group_name,
    action_groups,
    bedrock_functions,
    bedrock_openapi,
)
from mnemo.tools.registry import CATALOG, Tool, load_catalog, tool
from mnemo.tools.rights import Rights

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
ALICE = {"mnemoUser": "alice", "mnemoTenant": "acme"}
BOB = {"mnemoUser": "bob", "mnemoTenant": "acme"}
ENVELOPE_KEYS = {"success", "errorCode", "message", "details", "retryable"}


# ------------------------------------------------------------------ events ---
def prop(name: str, value: Any, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "type": kind, "value": value}


def openapi_event(
    tool_name: str,
    properties: Any,
    attributes: dict[str, Any] | None = ALICE,
    *,
    group: str = "mnemo-memory",
    parameters: Any = None,
) -> dict[str, Any]:
    """An OpenAPI-schema action group event (agents-lambda, "API schema" input format)."""
    return bedrock_agent_event(
        attributes,
        group=group,
        apiPath=f"/{tool_name}",
        httpMethod="POST",
        parameters=[] if parameters is None else parameters,
        requestBody={"content": {"application/json": {"properties": properties}}},
    )


def function_event(
    function: str, parameters: Any, attributes: dict[str, Any] | None = ALICE, *, group: str = "mnemo-memory"
) -> dict[str, Any]:
    """A function-details action group event (agents-lambda, "function details" input format)."""
    return bedrock_agent_event(attributes, group=group, function=function, parameters=parameters)


def load_function(family: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"bedrock_{family}", ROOT / "functions" / f"bedrock_{family}" / "app.py"
    )
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(event: Any, handler: Any = None) -> dict[str, Any]:
    answer: dict[str, Any] = (handler or load_function("memory").handler)(event, FakeLambdaContext())
    assert wire_size(answer) == len(json.dumps(answer, ensure_ascii=False).encode()) <= MAX_RESPONSE_BYTES
    return answer


# ------------------------------------------------------- documented answers ---
def api_body(answer: dict[str, Any], event: dict[str, Any], status: int) -> dict[str, Any]:
    """The documented API-schema response; returns its parsed body."""
    assert set(answer) == {"messageVersion", "response", "sessionAttributes", "promptSessionAttributes"}
    assert answer["messageVersion"] == "1.0"
    response = answer["response"]
    assert set(response) == {"actionGroup", "apiPath", "httpMethod", "httpStatusCode", "responseBody"}
    assert response["actionGroup"] == event["actionGroup"]
    assert response["apiPath"] == event["apiPath"]
    assert response["httpMethod"] == event["httpMethod"]
    assert response["httpStatusCode"] == status
    assert set(response["responseBody"]) == {"application/json"}
    body = response["responseBody"]["application/json"]["body"]
    assert isinstance(body, str)
    assert answer["sessionAttributes"] == event["sessionAttributes"]
    assert answer["promptSessionAttributes"] == event["promptSessionAttributes"]
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def function_body(answer: dict[str, Any], event: dict[str, Any], state: str | None) -> dict[str, Any]:
    """The documented function-details response; returns its parsed body."""
    assert set(answer) == {"messageVersion", "response", "sessionAttributes", "promptSessionAttributes"}
    assert answer["messageVersion"] == "1.0"
    response = answer["response"]
    assert set(response) == {"actionGroup", "function", "functionResponse"}
    assert response["actionGroup"] == event.get("actionGroup", "")
    assert response["function"] == (event.get("function") if isinstance(event.get("function"), str) else "")
    function_response = response["functionResponse"]
    assert function_response.get("responseState") == state
    assert set(function_response) == ({"responseBody"} | ({"responseState"} if state else set()))
    assert set(function_response["responseBody"]) == {"TEXT"}
    body = function_response["responseBody"]["TEXT"]["body"]
    assert isinstance(body, str)
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def envelope(body: dict[str, Any], code: str, field: str | None = None) -> dict[str, Any]:
    assert set(body) == ENVELOPE_KEYS
    assert body["success"] is False
    assert body["errorCode"] == code, body
    if field is not None:
        assert body["details"]["field"] == field, body
    assert "Traceback" not in json.dumps(body)
    return body


# ----------------------------------------------- a probe tool of every type ---
class ProbeInput(ToolRequest):
    text: str = Field(description="A string.")
    count: int = Field(1, ge=0, le=1000, description="An integer.")
    ratio: float = Field(0.5, description="A number.")
    flag: bool = Field(False, description="A boolean.")
    items: list[str] = Field(default_factory=list, description="An array of strings.")
    options: dict[str, Any] = Field(default_factory=dict, description="An object.")


class ProbeOutput(ToolResponse):
    echo: dict[str, Any]
    caller: dict[str, Any]


def bedrock_probe(services: Services, context: RequestContext, request: ProbeInput) -> ProbeOutput:
    """Echo the typed arguments and the caller (a test-only tool)."""
    caller = context.model_dump(include={"tenant", "user", "agent", "session", "project"})
    return ProbeOutput(
        echo=request.model_dump(mode="json", by_alias=True), caller=caller | {"roles": sorted(context.roles)}
    )


@pytest.fixture
def probe(services: Services) -> Iterator[Any]:
    tool("probe", rights=Rights(records="read"))(bedrock_probe)
    try:
        yield action_group_handler("probe")
    finally:
        CATALOG.pop("bedrock_probe", None)


def probe_call(handler: Any, kind: str, values: list[dict[str, Any]], attributes: dict[str, Any] = ALICE) -> Any:
    if kind == "openapi":
        event = openapi_event("bedrock_probe", values, attributes, group="mnemo-probe")
        return api_body(call(event, handler), event, 200)
    event = function_event("bedrock_probe", values, attributes, group="mnemo-probe")
    return function_body(call(event, handler), event, None)


# ------------------------------------------------------------------- tests ---
def test_every_family_has_an_action_group_function() -> None:
    for family in {t.family for t in load_catalog().values()}:
        source = (ROOT / "functions" / f"bedrock_{family}" / "app.py").read_text()
        assert f'action_group_handler("{family}")' in source


def test_openapi_add_then_search(services: Services) -> None:
    add = openapi_event(
        "memory_add",
        [
            prop("content", "The staging database is Postgres 16"),
            prop("layer", "user"),
            prop("tags", '["db", "staging"]', "array"),
            prop("metadata", '{"team": "payments"}'),
        ],
    )
    added = api_body(call(add), add, 200)
    assert added["success"] is True
    assert added["memoryId"].startswith("mem_")
    search = openapi_event(
        "memory_search",
        [
            prop("query", "which database runs staging?"),
            prop("layers", "[user]", "array"),
            prop("limit", "5", "integer"),
            prop("threshold", "0.0", "number"),
            prop("tags", "[staging, other]", "array"),
        ],
    )
    found = api_body(call(search), search, 200)
    assert [r["memoryId"] for r in found["results"]] == [added["memoryId"]]
    assert found["results"][0]["tags"] == ["db", "staging"]
    assert found["results"][0]["metadata"]["team"] == "payments"
    assert found["searchedLayers"] == ["user"]


def test_function_details_add_then_search_then_delete(services: Services) -> None:
    add = function_event(
        "memory_add",
        [
            prop("content", "Deploys freeze on December 20"),
            prop("tags", '["release"]', "array"),
            prop("occurredAt", "2026-01-07T10:00:00Z"),
        ],
    )
    added = function_body(call(add), add, None)
    search = function_event(
        "memory_search",
        [prop("query", "when do deploys freeze"), prop("limit", "3", "integer"), prop("threshold", "0", "number")],
    )
    found = function_body(call(search), search, None)
    assert found["results"][0]["memoryId"] == added["memoryId"]
    assert found["results"][0]["occurredAt"].startswith("2026-01-07T10:00:00")
    delete = function_event("memory_delete", [prop("memoryId", added["memoryId"])])
    assert function_body(call(delete), delete, None)["memoryId"] == added["memoryId"]
    again = function_body(call(search), search, None)
    assert again["results"] == []


@pytest.mark.parametrize("kind", ["openapi", "function"])
def test_values_of_every_declared_type_reach_the_model_typed(probe: Any, kind: str) -> None:
    echo = probe_call(
        probe,
        kind,
        [
            prop("text", "  keep my spaces "),
            prop("count", "42", "integer"),
            prop("ratio", "0.25", "number"),
            prop("flag", "TRUE", "boolean"),
            prop("items", '["a", "b, c"]', "array"),
            prop("options", '{"k": 1, "nested": {"x": [1, 2]}}'),
        ],
    )["echo"]
    assert echo == {
        "text": "  keep my spaces ",
        "count": 42,
        "ratio": 0.25,
        "flag": True,
        "items": ["a", "b, c"],
        "options": {"k": 1, "nested": {"x": [1, 2]}},
    }


@pytest.mark.parametrize("kind", ["openapi", "function"])
def test_the_bracketed_forms_models_produce_are_understood(probe: Any, kind: str) -> None:
    echo = probe_call(
        probe,
        kind,
        [
            prop("text", "x"),
            prop("flag", "false", "boolean"),
            prop("items", '[alpha, "beta, gamma", delta]', "array"),
            prop("options", "{colour=blue, size=XL}", "object"),
        ],
    )["echo"]
    assert echo["flag"] is False
    assert echo["items"] == ["alpha", "beta, gamma", "delta"]
    assert echo["options"] == {"colour": "blue", "size": "XL"}


@pytest.mark.parametrize(
    ("raw", "declared", "expected", "value"),
    [
        ("7", "integer", "integer", 7),
        ("-7", "integer", "integer", -7),
        ("7.0", "integer", "integer", 7),
        (" 3 ", "integer", None, 3),
        ("0.5", "number", "number", 0.5),
        ("2", "number", "number", 2),
        ("1e3", "number", "number", 1000.0),
        ("true", "boolean", "boolean", True),
        ("False", "boolean", "boolean", False),
        ("[]", "array", "array", []),
        ('["x", 1]', "array", "array", ["x", 1]),
        ("[x]", "array", "array", ["x"]),
        ("solo", "array", "array", ["solo"]),
        ("a, b", "array", "array", ["a", "b"]),
        ('{"a": [1]}', "string", "object", {"a": [1]}),
        ("{a=1}", "object", "object", {"a": "1"}),
        ("42", "integer", "string", "42"),  # the model wants a string: it stays one
        ("text", "mystery", None, "text"),
        (5, "integer", "integer", 5),  # already typed
    ],
)
def test_decode_value(raw: Any, declared: str, expected: str | None, value: Any) -> None:
    assert decode_value("f", raw, declared, expected) == value


@pytest.mark.parametrize(
    ("raw", "declared", "expected"),
    [
        ("abc", "integer", "integer"),
        ("1.5", "integer", "integer"),
        ("", "integer", "integer"),
        ("nan", "number", "number"),
        ("inf", "number", "number"),
        ("ten", "number", "number"),
        ("yes", "boolean", "boolean"),
        ('{"a": 1}', "array", "array"),
        ("[1, 2", "array", "array"),
        ("[1, 2]", "object", "object"),
        ("not json", "string", "object"),
        ("{a}", "object", "object"),
    ],
)
def test_garbage_values_are_invalid_input_naming_the_field(raw: str, declared: str, expected: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        decode_value("field_x", raw, declared, expected)
    assert caught.value.details["field"] == "field_x"


def test_identity_comes_from_session_attributes_and_users_are_isolated(services: Services) -> None:
    add = openapi_event("memory_add", [prop("content", "Alice's secret plan is to learn Rust")])
    added = api_body(call(add), add, 200)
    for attributes, expected in ((ALICE, [added["memoryId"]]), (BOB, []), ({**ALICE, "mnemoTenant": "globex"}, [])):
        search = function_event(
            "memory_search", [prop("query", "secret plan"), prop("threshold", "0", "number")], attributes
        )
        found = function_body(call(search), search, None)
        assert [r["memoryId"] for r in found["results"]] == expected, attributes


def test_agent_and_session_default_to_bedrock_ids(probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(bedrock.TENANT_VARIABLE, raising=False)
    caller = probe_call(probe, "function", [prop("text", "x")], {"mnemoUser": "alice"})["caller"]
    assert caller == {
        "tenant": "default",
        "user": "alice",
        "agent": "AGENT12345",
        "session": "111122223333-conv-1",
        "project": None,
        "roles": [],
    }
    monkeypatch.setenv(bedrock.TENANT_VARIABLE, "123456789012")
    attributes = {
        "mnemoUser": "alice",
        "mnemoAgent": "planner",
        "mnemoSession": "ticket-9",
        "mnemoProject": "apollo",
        "mnemoRoles": "writer, reviewer",
        "unrelated": "ignored",
    }
    caller = probe_call(probe, "openapi", [prop("text", "x")], attributes)["caller"]
    assert caller == {
        "tenant": "123456789012",
        "user": "alice",
        "agent": "planner",
        "session": "ticket-9",
        "project": "apollo",
        "roles": ["reviewer", "writer"],
    }


@pytest.mark.parametrize(
    "attributes",
    [None, {}, {"mnemoTenant": "acme"}, {"mnemoUser": ""}, {"userId": "alice"}],
)
def test_no_user_in_session_attributes_is_unauthorized(services: Services, attributes: Any) -> None:
    event = openapi_event("memory_search", [prop("query", "x")], attributes)
    envelope(api_body(call(event), event, 403), "UNAUTHORIZED", "sessionAttributes.mnemoUser")
    event = function_event("memory_search", [prop("query", "x")], attributes)
    envelope(function_body(call(event), event, "FAILURE"), "UNAUTHORIZED", "sessionAttributes.mnemoUser")


def test_session_attributes_of_the_wrong_shape_are_unauthorized(services: Services) -> None:
    event = function_event("memory_search", [prop("query", "x")])
    event["sessionAttributes"] = ["mnemoUser", "alice"]
    answer = call(event)
    assert answer["sessionAttributes"] == {}
    envelope(json.loads(answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"]), "UNAUTHORIZED")
    bad = openapi_event("memory_search", [prop("query", "x")], {"mnemoUser": "alice|admin"})
    envelope(api_body(call(bad), bad, 403), "UNAUTHORIZED", "sessionAttributes.mnemoUser")


@pytest.mark.parametrize(
    ("name", "value", "kind"),
    [("userId", "mallory", "string"), ("user_id", "mallory", "string"), ("tenant", "globex", "string"),
     ("agentId", "other-agent", "string"), ("roles", '["writer"]', "array")],
)  # fmt: skip
def test_a_body_claiming_another_identity_is_unauthorized(services: Services, name: str, value: str, kind: str) -> None:
    event = openapi_event("memory_add", [prop("content", "x"), prop(name, value, kind)])
    envelope(api_body(call(event), event, 403), "UNAUTHORIZED", name)
    event = function_event("memory_add", [prop("content", "x"), prop(name, value, kind)])
    envelope(function_body(call(event), event, "FAILURE"), "UNAUTHORIZED", name)


def test_a_body_repeating_the_callers_own_identity_is_accepted(services: Services) -> None:
    event = openapi_event("memory_add", [prop("content", "I like tea"), prop("userId", "alice")])
    assert api_body(call(event), event, 200)["success"] is True


def test_shared_layers_need_the_writer_role(services: Services) -> None:
    params = [prop("content", "Releases ship on Tuesdays"), prop("layer", "project")]
    reader = {**ALICE, "mnemoProject": "apollo"}
    event = function_event("memory_add", params, reader)
    envelope(function_body(call(event), event, "FAILURE"), "UNAUTHORIZED")
    event = function_event("memory_add", params, {**reader, "mnemoRoles": "writer"})
    assert function_body(call(event), event, None)["layer"] == "project"


# ------------------------------------------------------------ malformed events ---
def _api_event_with(**changes: Any) -> dict[str, Any]:
    event = openapi_event("memory_search", [prop("query", "x")])
    event.update(changes)
    return event


@pytest.mark.parametrize(
    ("event", "status", "code", "field"),
    [
        (openapi_event("memory_search", [prop("query", "x"), prop("limit", "ten", "integer")]), 400, "INVALID_INPUT",
         "limit"),
        (openapi_event("memory_search", [prop("query", "x"), prop("limit", "0", "integer")]), 400, "INVALID_INPUT",
         "limit"),
        (openapi_event("memory_search", [prop("limit", "3", "integer")]), 400, "INVALID_INPUT", "query"),
        (openapi_event("memory_search", [prop("query", "x"), prop("surprise", "1")]), 400, "INVALID_INPUT",
         "surprise"),
        (openapi_event("memory_search", {"query": "x"}), 400, "INVALID_INPUT",
         "requestBody.content.application/json.properties"),
        (openapi_event("memory_search", ["query"]), 400, "INVALID_INPUT",
         "requestBody.content.application/json.properties.0"),
        (openapi_event("memory_search", [{"name": "query", "type": "string"}]), 400, "INVALID_INPUT", "query"),
        (openapi_event("memory_search", [prop("query", "x"), prop("query", "y")]), 400, "INVALID_INPUT", "query"),
        (openapi_event("memory_search", [prop("query", "x")], parameters=[prop("query", "y")]), 400,
         "INVALID_INPUT", "query"),
        (openapi_event("memory_search", [], parameters="query=x"), 400, "INVALID_INPUT", "parameters"),
        (_api_event_with(requestBody={"content": {"text/plain": {"body": "x"}}}), 400, "INVALID_INPUT",
         "requestBody.content"),
        (_api_event_with(requestBody="query=x"), 400, "INVALID_INPUT", "requestBody"),
        (openapi_event("memory_forget", [prop("query", "x")]), 404, "NOT_FOUND", "apiPath"),
        (_api_event_with(httpMethod="GET"), 404, "NOT_FOUND", "apiPath"),
    ],
)  # fmt: skip
def test_malformed_openapi_events_get_a_clean_error(
    services: Services, event: dict[str, Any], status: int, code: str, field: str
) -> None:
    envelope(api_body(call(event), event, status), code, field)


def test_an_event_without_http_method_is_read_as_post(services: Services) -> None:
    event = _api_event_with()
    del event["httpMethod"]
    answer = call(event)
    assert answer["response"]["httpStatusCode"] == 200
    assert json.loads(answer["response"]["responseBody"]["application/json"]["body"])["success"] is True


@pytest.mark.parametrize(
    ("event", "state", "code", "field"),
    [
        (function_event("memory_search", [prop("query", "x"), prop("limit", "lots", "integer")]), "REPROMPT",
         "INVALID_INPUT", "limit"),
        (function_event("memory_search", [prop("query", "x"), prop("threshold", "high", "number")]), "REPROMPT",
         "INVALID_INPUT", "threshold"),
        (function_event("memory_search", [prop("query", "x"), prop("layers", '{"user": 1}', "array")]),
         "REPROMPT", "INVALID_INPUT", "layers"),
        (function_event("memory_search", {"query": "x"}), "REPROMPT", "INVALID_INPUT", "parameters"),
        (function_event("memory_search", [42]), "REPROMPT", "INVALID_INPUT", "parameters.0"),
        (function_event("memory_add", []), "REPROMPT", "INVALID_INPUT", "content"),
        (function_event("memory_forget", [prop("memoryId", "mem_1")]), "REPROMPT", "NOT_FOUND", "function"),
        (function_event("memory_delete", [prop("memoryId", "mem_nope")]), "REPROMPT", "NOT_FOUND", "memoryId"),
    ],
)  # fmt: skip
def test_malformed_function_events_get_a_clean_error(
    services: Services, event: dict[str, Any], state: str, code: str, field: str
) -> None:
    envelope(function_body(call(event), event, state), code, field)


@pytest.mark.parametrize(
    "event",
    [
        {k: v for k, v in openapi_event("memory_search", []).items() if k not in ("apiPath", "httpMethod")},
        {"messageVersion": "1.0"},
        {},
        {"apiPath": 42, "function": ["memory_search"]},
        ["not", "an", "event"],
    ],
)
def test_an_event_with_neither_api_path_nor_function_gets_a_clean_error(services: Services, event: Any) -> None:
    answer = call(event)
    frame = event if isinstance(event, dict) else {}
    body = function_body(answer, frame, "FAILURE")
    envelope(body, "INVALID_INPUT", "apiPath")


@pytest.mark.parametrize("kind", ["openapi", "function"])
def test_an_unexpected_failure_is_an_envelope_not_a_trace(
    services: Services, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    def explode(*_: Any) -> Any:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(services.memory, "search", explode)
    if kind == "openapi":
        event = openapi_event("memory_search", [prop("query", "x")])
        body = api_body(call(event), event, 502)
    else:
        event = function_event("memory_search", [prop("query", "x")])
        body = function_body(call(event), event, "FAILURE")
    assert envelope(body, "PROVIDER_ERROR")["retryable"] is True
    assert "/secret/path" not in json.dumps(body)


# ------------------------------------------------------------------ result size ---
def test_a_long_search_is_paged_under_the_limit(services: Services) -> None:
    for n in range(30):
        filler = " ".join(f"word{n}x{i}" for i in range(150))
        event = function_event(
            "memory_add", [prop("content", f"Runbook note {n} about the payments service: {filler}")]
        )
        assert function_body(call(event), event, None)["success"] is True
    query = [
        prop("query", "runbook payments service"),
        prop("limit", "100", "integer"),
        prop("threshold", "0", "number"),
    ]
    event = function_event("memory_search", query)
    first = function_body(call(event), event, None)
    assert first["hasMore"] is True
    assert first["nextCursor"]
    assert 0 < len(first["results"]) < 30
    follow = openapi_event("memory_search", [*query, prop("cursor", first["nextCursor"])])
    second = api_body(call(follow), follow, 200)
    seen = {r["memoryId"] for r in first["results"]}
    assert second["results"]
    assert not seen & {r["memoryId"] for r in second["results"]}


def test_non_ascii_results_are_counted_in_bytes_and_still_paged(services: Services) -> None:
    """Three bytes a character: the first page asked for does not fit, a smaller one is asked for."""
    for n in range(12):
        text = "".join(chr(0x4E00 + (n * 997 + i * 31) % 20000) for i in range(1500))
        event = function_event("memory_add", [prop("content", f"备忘 {n} {text}")])
        assert function_body(call(event), event, None)["success"] is True
    query = [prop("query", "备忘"), prop("limit", "50", "integer"), prop("threshold", "0", "number")]
    event = openapi_event("memory_search", query)
    body = api_body(call(event), event, 200)  # call() checks the UTF-8 size
    assert body["hasMore"] is True
    assert 0 < len(body["results"]) < 12


def _oversized(*_: Any) -> MemorySearchOutput:
    result = {
        "content": "x" * 5000,
        "layer": "user",
        "score": 0.9,
        "memoryId": "mem_1",
        "createdAt": "2026-01-07T10:00:00Z",
    }
    return MemorySearchOutput.model_validate({"results": [result] * 10, "totalCount": 10, "searchedLayers": ["user"]})


@pytest.mark.parametrize("kind", ["openapi", "function"])
def test_an_answer_over_the_limit_becomes_invalid_input(
    services: Services, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(services.memory, "search", _oversized)  # ignores the response budget
    params = [prop("query", "x"), prop("limit", "10", "integer")]
    if kind == "openapi":
        event = openapi_event("memory_search", params)
        body = api_body(call(event), event, 400)
    else:
        event = function_event("memory_search", params)
        body = function_body(call(event), event, "REPROMPT")
    envelope(body, "INVALID_INPUT", "limit")
    assert body["details"]["bytes"] > MAX_RESPONSE_BYTES == body["details"]["limitBytes"]
    assert "limit" in body["message"]


def test_an_empty_page_that_says_has_more_is_invalid_input(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    stuck = MemorySearchOutput.model_validate(
        {"results": [], "totalCount": 3, "searchedLayers": ["user"], "hasMore": True, "nextCursor": "abc"}
    )
    monkeypatch.setattr(services.memory, "search", lambda *_: stuck)
    event = function_event("memory_search", [prop("query", "x")])
    envelope(function_body(call(event), event, "REPROMPT"), "INVALID_INPUT", "limit")


def test_huge_session_attributes_never_make_an_oversized_answer(services: Services) -> None:
    attributes = {**ALICE, "notes": "n" * (MAX_RESPONSE_BYTES + 100)}
    for event in (
        openapi_event("memory_search", [prop("query", "x")], attributes),
        function_event("memory_search", [prop("query", "x")], attributes),
    ):
        answer = call(event)  # call() asserts the size
        assert "sessionAttributes" not in answer


# ------------------------------------------------------- generated definitions ---
def _walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}/{key}", value
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _walk(value, f"{path}/{index}")


def _groups() -> dict[str, list[Tool]]:
    return action_groups(load_catalog().values())


def test_groups_cover_the_catalog_within_the_operation_limit() -> None:
    groups = _groups()
    assert sorted(t.name for members in groups.values() for t in members) == sorted(load_catalog())
    for name, members in groups.items():
        assert 1 <= len(members) <= MAX_OPERATIONS_PER_GROUP <= 11, name
        assert len({t.family for t in members}) == 1
        assert re.fullmatch(r"([0-9a-zA-Z][_-]?){1,100}", action_group_name(name))


def test_a_large_family_is_split_into_several_groups() -> None:
    (sample,) = [t for t in load_catalog().values() if t.name == "memory_delete"]
    fake = [dataclasses.replace(sample, name=f"tool_{n}", family="big") for n in range(23)]
    groups = action_groups(fake)
    assert list(groups) == ["big", "big-2", "big-3"]
    assert [len(g) for g in groups.values()] == [10, 10, 3]


@pytest.mark.parametrize("group", sorted(action_groups(load_catalog().values())))
def test_generated_openapi_is_valid_and_fits_bedrock(group: str) -> None:
    members = _groups()[group]
    document = bedrock_openapi(group, members)
    validate(document)
    assert document["openapi"] == "3.0.0"
    keys = [path.rsplit("/", 1)[-1] for path, _ in _walk(document)]
    assert "enum" not in keys
    assert "$ref" not in keys
    assert "const" not in keys
    operations = [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]
    assert len(operations) == len(members) <= 11
    assert sorted(op["operationId"] for _, _, op in operations) == sorted(t.name for t in members)
    for path, method, op in operations:
        assert method == "post"
        assert path == f"/{op['operationId']}"
        assert 0 < len(op["description"]) <= MAX_FUNCTION_DESCRIPTION
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        for name, prop_schema in schema["properties"].items():
            assert 0 < len(prop_schema["description"]) <= MAX_PARAMETER_DESCRIPTION, (path, name)
            assert prop_schema["type"] in ("string", "integer", "number", "boolean", "array"), (path, name)
        for status, response in op["responses"].items():
            assert response["description"], (path, status)
            assert "application/json" in response["content"], (path, status)


@pytest.mark.parametrize("group", sorted(action_groups(load_catalog().values())))
def test_generated_function_details_fit_bedrock(group: str) -> None:
    members = _groups()[group]
    schema = bedrock_functions(members)
    assert "enum" not in [path.rsplit("/", 1)[-1] for path, _ in _walk(schema)]
    assert [f["name"] for f in schema["functions"]] == [t.name for t in members]
    assert len(schema["functions"]) <= 11
    for function in schema["functions"]:
        assert re.fullmatch(r"([0-9a-zA-Z][_-]?){1,100}", function["name"])
        assert 0 < len(function["description"]) <= MAX_FUNCTION_DESCRIPTION
        for name, parameter in function["parameters"].items():
            assert re.fullmatch(r"([0-9a-zA-Z][_-]?){1,100}", name)
            assert set(parameter) == {"type", "description", "required"}
            assert parameter["type"] in ("string", "number", "integer", "boolean", "array"), (function["name"], name)
            assert 0 < len(parameter["description"]) <= MAX_PARAMETER_DESCRIPTION, (function["name"], name)
            assert isinstance(parameter["required"], bool)


def test_object_fields_are_declared_as_json_strings() -> None:
    (add, search) = [load_catalog()[name] for name in ("memory_add", "memory_search")]
    (function,) = bedrock_functions([add])["functions"]
    assert function["parameters"]["metadata"]["type"] == "string"
    assert "JSON object" in function["parameters"]["metadata"]["description"]
    (function,) = bedrock_functions([search])["functions"]
    layers = function["parameters"]["layers"]["description"]
    assert "agent, user, session, project, team, org, company" in layers


def test_every_generated_operation_is_served_by_its_group_function(services: Services) -> None:
    for group, members in _groups().items():
        handler = load_function(group.split("-")[0]).handler
        document = bedrock_openapi(group, members)
        for path in document["paths"]:
            event = openapi_event(path.lstrip("/"), [], group=action_group_name(group))
            assert call(event, handler)["response"]["httpStatusCode"] in (200, 400), path
        for function in bedrock_functions(members)["functions"]:
            event = function_event(function["name"], [], group=action_group_name(group))
            body = json.loads(call(event, handler)["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
            assert body.get("errorCode") != "NOT_FOUND", function["name"]


def test_cli_writes_one_openapi_and_one_functions_file_per_group(tmp_path: Path, capsys: Any) -> None:
    assert main(["openapi", "--bedrock", "--output-dir", str(tmp_path)]) == 0
    groups = _groups()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{group}.{kind}.json" for group in groups for kind in ("openapi", "functions")
    )
    for group, members in groups.items():
        assert json.loads((tmp_path / f"{group}.openapi.json").read_text()) == bedrock_openapi(group, members)
        assert json.loads((tmp_path / f"{group}.functions.json").read_text()) == bedrock_functions(members)
    capsys.readouterr()
    assert main(["openapi", "--bedrock"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert sorted(printed) == sorted(p.name for p in tmp_path.iterdir())
    assert main(["openapi", "--output-dir", str(tmp_path)]) == 2


def test_knowledge_and_sync_action_groups(services: Services) -> None:
    """The knowledge family's Lambda answers knowledge_check as the specification's example does."""
    from knowledge_helpers import push_tree

    engineer = {**ALICE, "mnemoOrg": "engineering"}
    push_tree(services, "acme")
    sync = load_function("sync").handler
    now = function_event("sync_now", [prop("layers", '["org", "company"]', "array")], engineer, group="mnemo-sync")
    assert function_body(call(now, sync), now, None)["result"]["failures"] == 0

    knowledge = load_function("knowledge").handler
    check = function_event(
        "knowledge_check",
        [prop("dependencies", '[{"name": "mysql2", "version": "3.0.0"}]', "array")],
        engineer,
        group="mnemo-knowledge",
    )
    checked = function_body(call(check, knowledge), check, None)
    assert checked["passed"] is False
    assert checked["summary"] == {"info": 0, "warn": 0, "block": 1}
    assert checked["violations"][0]["knowledgeItemId"] == "adr-042-database-selection"

    query = openapi_event(
        "knowledge_query", [prop("query", "database selection"), prop("type", "adr")], engineer, group="mnemo-knowledge"
    )
    assert api_body(call(query, knowledge), query, 200)["items"][0]["id"] == "adr-042-database-selection"
    missing = function_event("knowledge_show", [prop("id", "adr-999")], engineer, group="mnemo-knowledge")
    envelope(function_body(call(missing, knowledge), missing, "REPROMPT"), "NOT_FOUND")


def test_files_action_group_checks_the_block_budget(tmp_path: Path) -> None:
    """Through the files group: a pinned block that would grow past the budget is a CONFLICT the model can act on
    (REPROMPT); unpinned, the same write goes through."""
    from mnemo.runtime import set_services
    from mnemo.settings import Settings

    set_services(Services(Settings(data_dir=tmp_path, embedder="hashing", block_budget_tokens=40)))  # type: ignore[arg-type]
    try:
        files = load_function("files").handler
        path = "mnemo:///blocks/notes.md"

        def run(function: str, *properties: dict[str, Any], state: str | None = None) -> dict[str, Any]:
            event = function_event(function, list(properties), group="mnemo-files")
            return function_body(call(event, files), event, state)

        assert run("file_write", prop("path", path), prop("content", "Short note."))["created"] is True
        assert run("block_pin", prop("path", path))["budgetTokens"] == 40
        grown = prop("content", "A much longer note " * 20)
        over = envelope(run("file_write", prop("path", path), grown, state="REPROMPT"), "CONFLICT")
        assert over["details"]["reason"] == "BLOCK_BUDGET_EXCEEDED"
        assert over["details"]["limit"] == 40
        assert run("block_unpin", prop("path", path))["changed"] is True
        assert run("file_write", prop("path", path), grown)["version"] == 2
        event = openapi_event("pinned_context", [], group="mnemo-files")
        assert api_body(call(event, files), event, 200)["count"] == 0
    finally:
        set_services(None)

"""The tool and MCP Lambdas on HTTP API events (payload format 2.0), as AuthMode JWT deploys them.

Events are Powertools' documented fixtures (tests/support/http_api_events.py): a JWT authorizer's claims or an
IAM caller, routed to a tool's path under a named stage as the template deploys it. Every tool function must
answer a 2.0 event exactly as it answers the same body in a REST event (payload format 1.0) from a
Cognito authorizer with the same claims, in the response format an HTTP API expects.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from door_parity import tool_bodies, without_ids
from http_api_events import http_api_event

from aws_events import FakeLambdaContext, rest_event
from helpers import make_services
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]
STAGE = "dev"
CLAIMS = {"sub": "pat", "custom:tenant": "parity", "custom:project": "p1", "custom:roles": "writer"}
ENVELOPE_KEYS = {"success", "errorCode", "message", "details", "retryable"}
HOSTILE_BODIES = [None, "", "[]", "nope", '{"a": 1, "a": 2}', '{"user_id": "someone-else"}', '{"user_id": "pat"}']
WRONG_VALUES = [None, "", [], {}, -1]
#: Over the IAM fixture's caller: its account id has 10 digits, where an AWS account has 12.
IAM_CALLER = {"accountId": "123456789012", "userArn": "arn:aws:iam::123456789012:user/Admin"}


def http_event(
    path: str,
    body: str | None,
    *,
    claims: dict[str, Any] | None = CLAIMS,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    iam: bool = False,
) -> dict[str, Any]:
    """The documented 2.0 event to ``path`` of the deployed stage: the JWT fixture with ``claims``, or the
    IAM fixture's own caller."""
    if iam:
        return http_api_event(path, body, iam=IAM_CALLER, method=method, headers=headers, stage=STAGE)
    return http_api_event(path, body, claims=claims, method=method, headers=headers, stage=STAGE)


def load_function(folder: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fn_http_{folder}", ROOT / "functions" / folder / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def call(tool: str, event: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = load_function(tool).handler(event, FakeLambdaContext())
    return answer


def envelope_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The error envelope of a 2.0 answer, checked for the response format an HTTP API expects."""
    assert set(answer) <= {"statusCode", "headers", "body", "isBase64Encoded", "cookies"}, answer
    assert answer["headers"]["Content-Type"] == "application/json"
    assert answer["isBase64Encoded"] is False
    envelope: dict[str, Any] = json.loads(answer["body"])
    assert set(envelope) == ENVELOPE_KEYS
    assert envelope["success"] is False
    assert "Traceback" not in answer["body"]
    return envelope


# ------------------------------------------------------------ every tool function ---
@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, Services]]:
    """One store per payload format, so that each sees the same sequence of calls."""
    made = (make_services(tmp_path_factory.mktemp("rest")), make_services(tmp_path_factory.mktemp("http")))
    yield made
    set_services(None)


def _bodies(name: str) -> list[str | None]:
    return tool_bodies(load_catalog(experimental=True)[name], HOSTILE_BODIES, WRONG_VALUES)


@pytest.mark.parametrize("name", sorted(load_catalog(experimental=True)))
def test_every_tool_function_answers_a_2_0_event_as_it_answers_rest(
    name: str, stores: tuple[Services, Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "true")  # the outline functions exist only so deployed
    handler = load_function(name).handler
    statuses = set()
    for body in _bodies(name):
        set_services(stores[0])
        rest = handler(rest_event(name, body, {"claims": CLAIMS}), FakeLambdaContext())
        set_services(stores[1])
        http = handler(http_event(f"/v1/tools/{name}", body), FakeLambdaContext())
        assert http["statusCode"] == rest["statusCode"], (body, rest["body"], http["body"])
        assert "multiValueHeaders" not in http, body
        assert http["headers"]["Content-Type"] == "application/json", body
        assert rest["multiValueHeaders"]["Content-Type"] == ["application/json"], body
        statuses.add(http["statusCode"])
        if rest["statusCode"] == 200:
            assert set(json.loads(http["body"])) == set(json.loads(rest["body"])), body
        else:
            assert without_ids(envelope_of(http)) == without_ids(json.loads(rest["body"])), body
    # The claims were taken for a caller: some body got past identity to the tool (its answer or its refusal).
    assert statuses - {403}, f"{name}: every call was refused"


# ------------------------------------------------------------------------- errors ---
@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ("{}", 400, "INVALID_INPUT", "content"),
        ('{"content": "x", "surprise": 1}', 400, "INVALID_INPUT", "surprise"),
        ("[1, 2]", 400, "INVALID_INPUT", "body"),
        ("{not json", 400, "INVALID_INPUT", "body"),
        (None, 400, "INVALID_INPUT", "body"),
        ('{"content": "x", "tenant": "other"}', 403, "UNAUTHORIZED", "tenant"),
    ],
)
def test_bad_input_is_the_envelope_naming_the_field(
    services: Services, body: str | None, status: int, code: str, field: str
) -> None:
    answer = call("memory_add", http_event("/v1/tools/memory_add", body))
    assert answer["statusCode"] == status
    envelope = envelope_of(answer)
    assert (envelope["errorCode"], envelope["details"]["field"]) == (code, field)


def test_a_body_that_is_not_base64_is_the_envelope(services: Services) -> None:
    event = http_event("/v1/tools/memory_add", "%%% not base64")
    event["isBase64Encoded"] = True
    answer = call("memory_add", event)
    assert answer["statusCode"] == 400
    assert envelope_of(answer)["details"]["field"] == "body"


def test_a_call_without_an_authorizer_is_unauthorized(services: Services) -> None:
    answer = call("memory_search", http_event("/v1/tools/memory_search", '{"query": "x"}', claims=None))
    assert answer["statusCode"] == 403
    assert envelope_of(answer)["errorCode"] == "UNAUTHORIZED"


def test_another_route_of_the_api_is_not_found(services: Services) -> None:
    answer = call("memory_add", http_event("/v1/tools/no_such_tool", "{}"))
    assert answer["statusCode"] == 404
    assert envelope_of(answer)["errorCode"] == "NOT_FOUND"


def test_an_unexpected_failure_is_the_envelope_not_a_trace(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: Any) -> Any:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(services.memory, "search", explode)
    answer = call("memory_search", http_event("/v1/tools/memory_search", '{"query": "x"}'))
    envelope = envelope_of(answer)
    assert answer["statusCode"] == 502
    assert envelope["errorCode"] == "PROVIDER_ERROR"
    assert "/secret/path" not in answer["body"]


# ---------------------------------------------------------- headers and encodings ---
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"content-type": "application/x-www-form-urlencoded"},  # curl -d
        {"content-type": "text/plain; charset=utf-8"},
    ],
)
def test_the_body_is_json_whatever_content_type_says(services: Services, headers: dict[str, str]) -> None:
    body = '{"content": "Deploys freeze on Dec 20", "layer": "project"}'
    answer = call("memory_add", http_event("/v1/tools/memory_add", body, headers=headers))
    assert answer["statusCode"] == 200, answer["body"]
    assert json.loads(answer["body"])["layer"] == "project"
    assert answer["headers"]["Content-Type"] == "application/json"


def test_a_base64_body_is_read_as_the_text_it_carries(services: Services) -> None:
    event = http_event("/v1/tools/memory_add", base64.b64encode(b'{"content": "Encoded on the way in"}').decode())
    event["isBase64Encoded"] = True
    answer = call("memory_add", event)
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"])["success"] is True


def test_the_default_stage_has_no_prefix(services: Services) -> None:
    """An HTTP API's $default stage sends rawPath without a stage (Powertools' fixture as documented)."""
    body = '{"content": "On the default stage"}'
    event = http_api_event("/v1/tools/memory_add", body, claims=CLAIMS, stage="$default")
    assert call("memory_add", event)["statusCode"] == 200


# -------------------------------------------------------------------- identity ---
def test_the_claims_are_the_caller(services: Services) -> None:
    """What one token's subject stores, another subject does not see; the same subject does."""
    added = call("memory_add", http_event("/v1/tools/memory_add", '{"content": "Pat keeps the release keys"}'))
    assert added["statusCode"] == 200, added["body"]
    query = '{"query": "release keys", "threshold": 0}'
    mine = json.loads(call("memory_search", http_event("/v1/tools/memory_search", query))["body"])
    assert [r["memoryId"] for r in mine["results"]] == [json.loads(added["body"])["memoryId"]]
    other = {**CLAIMS, "sub": "sam"}
    theirs = json.loads(call("memory_search", http_event("/v1/tools/memory_search", query, claims=other))["body"])
    assert theirs["results"] == []


def test_the_documented_iam_event_is_answered(services: Services) -> None:
    """The IAM fixture's caller (requestContext.authorizer.iam) stores and finds its own memory; another
    IAM user of the account does not."""
    added = call("memory_add", http_event("/v1/tools/memory_add", '{"content": "Signed with SigV4"}', iam=True))
    assert added["statusCode"] == 200, added["body"]
    query = '{"query": "SigV4", "threshold": 0}'
    found = json.loads(call("memory_search", http_event("/v1/tools/memory_search", query, iam=True))["body"])
    assert [r["memoryId"] for r in found["results"]] == [json.loads(added["body"])["memoryId"]]
    other = http_api_event(
        "/v1/tools/memory_search", query, iam={**IAM_CALLER, "userArn": "arn:aws:iam::123456789012:user/Other"}
    )
    assert json.loads(call("memory_search", other)["body"])["results"] == []


# ------------------------------------------------------------------------- MCP ---
def _mcp(method: str, body: dict[str, Any] | None, claims: dict[str, Any] | None = CLAIMS) -> dict[str, Any]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    event = http_event("/mcp", json.dumps(body) if body is not None else None, claims=claims, method=method)
    event["headers"] = headers
    answer: dict[str, Any] = load_function("mcp").handler(event, FakeLambdaContext())
    return answer


def test_mcp_answers_a_2_0_event(services: Services) -> None:
    listed = _mcp("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert listed["statusCode"] == 200, listed["body"]
    assert "memory_add" in {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}
    arguments = {"content": "Told over MCP"}
    called = _mcp(
        "POST",
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_add", "arguments": arguments}},
    )
    assert json.loads(called["body"])["result"]["structuredContent"]["success"] is True
    # The caller is the token's subject: a REST event with the same claims finds it.
    search = {"name": "memory_search", "arguments": {"query": "Told over MCP", "threshold": 0}}
    found = _mcp("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": search})
    assert len(json.loads(found["body"])["result"]["structuredContent"]["results"]) == 1


def test_mcp_reads_the_method_of_a_2_0_event(services: Services) -> None:
    """The method is requestContext.http.method (a 2.0 event has no httpMethod): a PUT is not served as
    the POST it would be taken for, but refused as MCP refuses it."""
    answer = _mcp("PUT", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert answer["statusCode"] == 405


def test_mcp_without_an_authorizer_is_unauthorized(services: Services) -> None:
    answer = _mcp("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, claims=None)
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"])["errorCode"] == "UNAUTHORIZED"


def test_a_token_caller_cannot_name_another_user_in_headers(services: Services) -> None:
    """Delegation is for listed SigV4 roles: a JWT caller's X-Mnemo-* header is refused, named."""
    headers = {"content-type": "application/json", "x-mnemo-user": "someone-else"}
    answer = call("memory_search", http_event("/v1/tools/memory_search", '{"query": "x"}', headers=headers))
    envelope = envelope_of(answer)
    assert answer["statusCode"] == 403
    assert envelope["errorCode"] == "UNAUTHORIZED"
    assert envelope["details"]["field"].lower() == "x-mnemo-user"

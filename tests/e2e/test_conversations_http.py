"""Conversation and execution memory over real HTTP: `mnemo serve` in a thread, identity in X-Mnemo-* headers.

Every 200 answer is checked against the MemoryOS output schema (draft-07, date-time
format checked); every other answer is the error envelope.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft7Validator

from helpers import http_call, http_request, local_server
from mnemo.conversations import contracts
from mnemo.runtime import Services

CONTRACTS = contracts.DIRECTORY
ALICE = {"tenant": "acme", "user": "alice"}
BOB = {"tenant": "acme", "user": "bob"}


@pytest.fixture
def base(services: Services) -> Iterator[str]:
    with local_server(services) as url:
        yield url


def call(base: str, tool: str, body: Any, identity: dict[str, str] = ALICE) -> tuple[int, Any]:
    status, answer = http_call(base, tool, body, **identity)
    if status == 200:
        schema = json.loads((CONTRACTS / f"{tool}_output.json").read_text())
        Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER).validate(answer)
    else:
        assert answer["success"] is False
        assert set(answer) == {"success", "errorCode", "message", "details", "retryable"}
    return status, answer


CONVERSATION = {
    "message_id": "msg_http",
    "explanation": "Remember the question",
    "user_input": "Which tool renews the TLS certificate?",
    "agent_response": "certbot renews it every 60 days.",
    "timestamp": "2024-12-15T14:30:00Z",
    "meta_data": {"platform": "web"},
}
EXECUTION = {
    "message_id": "msg_http",
    "explanation": "Remember how it was done",
    "execution_summary": "Renewed the certificate with certbot",
    "tools_used": ["ssh", "certbot"],
    "errors": [{"error_type": "permission_denied", "error_message": "needs sudo", "tool": "certbot"}],
    "observations": "Run certbot with sudo.",
    "success": True,
    "duration_ms": 5200,
}


def test_store_link_and_retrieve_over_http(base: str) -> None:
    status, stored = call(base, "add_conversation", CONVERSATION)
    assert status == 200
    assert stored["data"]["message_id"] == "msg_http"
    status, repeat = call(base, "add_conversation", CONVERSATION)
    assert status == 200
    assert "already stored" in repeat["data"]["details"]["memory_processing"]
    assert {**repeat["data"], "details": None} == {**stored["data"], "details": None}
    status, executed = call(base, "add_execution", EXECUTION)
    assert status == 200
    assert executed["data"]["details"]["tools_count"] == 2

    status, found = call(base, "retrieve_execution", {"query": "certbot", "explanation": "how", "user_id": "alice"})
    assert status == 200
    assert found["data"]["executions"][0]["message_id"] == "msg_http"
    message_id = found["data"]["executions"][0]["message_id"]
    status, behind = call(base, "retrieve_conversation", {"query": "q", "explanation": "w", "message_id": message_id})
    conversation = behind["data"]["conversations"][0]
    assert conversation["user_input"] == CONVERSATION["user_input"]
    assert conversation["has_execution_memory"] is True
    status, recent = call(
        base, "retrieve_conversation", {"query": "q", "explanation": "w", "retrieval_strategy": "recent"}, BOB
    )
    assert status == 200
    assert recent["data"]["conversations"] == []
    assert recent["data"]["total_found"] == 0


def test_conflict_is_409_naming_message_id(base: str) -> None:
    assert call(base, "add_conversation", CONVERSATION)[0] == 200
    status, answer = call(base, "add_conversation", {**CONVERSATION, "agent_response": "Something else."})
    assert status == 409
    assert answer["errorCode"] == "CONFLICT"
    assert answer["details"]["field"] == "message_id"


def test_a_body_user_id_claiming_another_user_is_403(base: str) -> None:
    body = {"query": "certbot", "explanation": "how", "user_id": "bob"}
    status, answer = call(base, "retrieve_execution", body)
    assert status == 403
    assert answer["errorCode"] == "UNAUTHORIZED"
    assert answer["details"]["field"] == "user_id"
    status, answer = call(base, "add_conversation", {**CONVERSATION, "user_id": "mallory"})
    assert status == 403
    assert answer["errorCode"] == "UNAUTHORIZED"
    assert call(base, "retrieve_execution", {**body, "user_id": "alice"})[0] == 200


@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("retrieve_conversation", {"query": "q", "explanation": "w", "max_results": 51}, "max_results"),
        (
            "retrieve_conversation",
            {"query": "q", "explanation": "w", "time_range": {"start": "soon"}},
            "time_range.start",
        ),
        ("retrieve_conversation", {"explanation": "w"}, "query"),
        ("retrieve_execution", {"query": "q", "explanation": "w", "retrieval_strategy": "fast"}, "retrieval_strategy"),
        ("add_conversation", {**CONVERSATION, "user_input": "x" * 10001}, "user_input"),
        ("add_conversation", {**CONVERSATION, "priority": "high"}, "priority"),
        ("add_execution", {**EXECUTION, "success": "yes"}, "success"),
        ("add_execution", {**EXECUTION, "duration_ms": -1}, "duration_ms"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_bad_input_is_400_naming_the_field(base: str, tool: str, body: dict[str, Any], field: str) -> None:
    status, answer = call(base, tool, body)
    assert status == 400
    assert answer["errorCode"] == "INVALID_INPUT"
    assert answer["details"]["field"] == field


def test_a_body_that_is_not_json_is_400(base: str) -> None:
    headers = {"Content-Type": "application/json", "X-Mnemo-User": "alice"}
    status, answer = http_request(base, "POST", "/v1/tools/add_conversation", b"{not json", headers)
    assert status == 400
    assert answer["errorCode"] == "INVALID_INPUT"

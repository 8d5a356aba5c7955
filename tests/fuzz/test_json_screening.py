"""The shared JSON screening behind every door, without HTTP: the Lambda handler and Tool.parse (MCP, CLI, Bedrock).

What the fuzzer found through the local server holds on the AWS front door too,
and the in-process doors refuse the same values once parsed.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import pytest

from aws_events import FakeLambdaContext, rest_event
from mnemo.entry.apigw import tool_handler
from mnemo.errors import InvalidInput
from mnemo.runtime import Services
from mnemo.tools.registry import MAX_JSON_DEPTH, check_json, get_tool, parse_json_body

AUTH = {"tenant": "acme", "user": "alice", "roles": "writer"}


def _invoke(tool: str, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    answer = tool_handler(tool)(event, FakeLambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"content": "a", "content": "b"}', "content"),
        ('{"content": NaN}', "content"),
        ('{"content": "x", "metadata": {"n": -Infinity}}', "metadata.n"),
        ('{"content": "x", "metadata": {"n": [1e999]}}', "metadata.n.0"),
        ('{"content": ' + "9" * 5000 + "}", "content"),
        ('{"content": "\\udfff"}', "content"),
        ("[" * 5000 + "]" * 5000, "body"),
        ('[{"content": "x"}]', "body"),
        ('"x"', "body"),
        ("{", "body"),
    ],
)
def test_the_lambda_front_door_refuses_what_json_should_not_carry(services: Services, raw: str, field: str) -> None:
    status, envelope = _invoke("memory_add", rest_event("memory_add", raw, authorizer=AUTH))
    assert status == 400, envelope
    assert envelope["errorCode"] == "INVALID_INPUT", envelope
    assert envelope["details"]["field"] == field


def test_a_base64_body_is_read_as_the_json_it_carries(services: Services) -> None:
    event = rest_event("memory_add", None, authorizer=AUTH)
    event |= {"body": base64.b64encode(b'{"content": "carried as base64"}').decode(), "isBase64Encoded": True}
    status, answer = _invoke("memory_add", event)
    assert status == 200, answer
    assert answer["success"], answer


def test_a_base64_body_that_is_not_base64(services: Services) -> None:
    event = rest_event("memory_add", "not base64 at all!", authorizer=AUTH) | {"isBase64Encoded": True}
    status, envelope = _invoke("memory_add", event)
    assert status == 400, envelope
    assert envelope["details"]["field"] == "body", envelope


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"content": math.nan}, "content"),
        ({"content": "x", "metadata": {"k": [math.inf]}}, "metadata.k.0"),
        ({"content": "x", "tags": ["\ud800"]}, "tags.0"),
        ({"content": "x", "metadata": {"deep": json.loads("[" * 70 + "]" * 70)}}, "metadata"),
    ],
)
def test_tool_parse_refuses_them_too(payload: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        get_tool("memory_add").parse(payload)
    assert caught.value.details["field"] == field


def test_nesting_up_to_the_limit_passes() -> None:
    depth = MAX_JSON_DEPTH - 1  # the body object itself is one level
    check_json({"k": json.loads("[" * depth + "]" * depth)})
    with pytest.raises(InvalidInput):
        check_json({"k": json.loads("[" * (depth + 1) + "]" * (depth + 1))})


def test_valid_text_survives_the_strict_parse() -> None:
    raw = '{"a": "\\ud83d\\ude00 \\u0000 é", "b": [1, -2.5e10, true, null], "c": {"d": 12345678901234567890}}'
    assert parse_json_body(raw) == json.loads(raw)

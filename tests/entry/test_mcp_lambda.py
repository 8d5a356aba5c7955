"""The MCP Lambda on REST proxy events: JSON-RPC in the body, identity from the authorizer."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from aws_events import FakeLambdaContext, rest_event
from mnemo.runtime import Services

ROOT = Path(__file__).resolve().parents[2]
ACCEPT = "application/json, text/event-stream"


def _handler() -> Any:
    spec = importlib.util.spec_from_file_location("fn_mcp", ROOT / "functions" / "mcp" / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def rpc(method: str, params: dict[str, Any], user: str | None = "alice", request_id: int = 1) -> dict[str, Any]:
    event = rest_event(
        "mcp",
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
        {"user": user, "tenant": "acme"} if user else None,
    )
    event["path"] = event["resource"] = "/mcp"
    event["headers"].update({"Accept": ACCEPT, "MCP-Protocol-Version": "2025-06-18"})
    return _handler()(event, FakeLambdaContext())


def test_tools_list_and_calls_through_the_lambda(services: Services) -> None:
    listed = rpc("tools/list", {})
    assert listed["statusCode"] == 200
    names = {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}
    assert {"memory_add", "memory_search", "memory_delete"} <= names

    added = json.loads(rpc("tools/call", {"name": "memory_add", "arguments": {"content": "Lambda MCP works"}})["body"])
    memory_id = added["result"]["structuredContent"]["memoryId"]
    found = rpc("tools/call", {"name": "memory_search", "arguments": {"query": "Lambda MCP", "threshold": 0}})
    results = json.loads(found["body"])["result"]["structuredContent"]["results"]
    assert [r["memoryId"] for r in results] == [memory_id]

    other = rpc(
        "tools/call", {"name": "memory_search", "arguments": {"query": "Lambda MCP", "threshold": 0}}, user="bob"
    )
    assert json.loads(other["body"])["result"]["structuredContent"]["results"] == []


def test_tool_errors_are_is_error_results_with_the_envelope(services: Services) -> None:
    """The envelope is the text; no structuredContent, which would not match the tool's output schema."""
    answer = json.loads(rpc("tools/call", {"name": "memory_search", "arguments": {"query": "x", "limit": 0}})["body"])
    assert answer["result"]["isError"] is True
    assert "structuredContent" not in answer["result"]
    (block,) = answer["result"]["content"]
    envelope = json.loads(block["text"])
    assert (envelope["errorCode"], envelope["details"]["field"]) == ("INVALID_INPUT", "limit")
    assert set(envelope) == {"success", "errorCode", "message", "details", "retryable"}


def test_an_unknown_tool_is_a_protocol_error(services: Services) -> None:
    answer = json.loads(rpc("tools/call", {"name": "no_such_tool", "arguments": {}})["body"])
    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    assert "no_such_tool" in answer["error"]["message"]


def test_no_identity_is_refused_before_mcp(services: Services) -> None:
    answer = rpc("tools/list", {}, user=None)
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"])["errorCode"] == "UNAUTHORIZED"


def test_a_malformed_body_is_answered_not_raised(services: Services) -> None:
    event = rest_event("mcp", "{not json", {"user": "alice", "tenant": "acme"})
    event["path"] = event["resource"] = "/mcp"
    event["headers"].update({"Accept": ACCEPT, "MCP-Protocol-Version": "2025-06-18"})
    answer = _handler()(event, FakeLambdaContext())
    assert 400 <= answer["statusCode"] < 500
    assert "Traceback" not in answer["body"]

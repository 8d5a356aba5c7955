"""Real HTTP against `mnemo serve` (in a thread), with the real bge model: the issue's acceptance path."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from helpers import local_server
from mnemo.runtime import Services

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def base_url(bge_services: Services) -> Iterator[str]:
    with local_server(bge_services) as url:
        yield url


def request(
    base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        status, raw, kind = error.code, error.read(), error.headers.get("Content-Type", "")
    return status, (json.loads(raw) if "json" in kind else raw.decode())


def call(base: str, tool: str, body: Any, **headers: str) -> tuple[int, Any]:
    wire = {f"X-Mnemo-{key.title()}": value for key, value in headers.items()}
    return request(base, "POST", f"/v1/tools/{tool}", body, {"Content-Type": "application/json", **wire})


def test_the_acceptance_path(base_url: str) -> None:
    status, added = call(
        base_url,
        "memory_add",
        {
            "content": "User prefers functional programming patterns over OOP",
            "layer": "user",
            "tags": ["preferences", "coding-style"],
        },
    )
    assert status == 200
    assert added["success"]
    assert added["memoryId"]

    status, found = call(base_url, "memory_search", {"query": "What are the user's coding preferences?"})
    assert status == 200
    assert found["results"][0]["memoryId"] == added["memoryId"]
    assert found["results"][0]["score"] >= 0.7

    status, weather = call(base_url, "memory_search", {"query": "What will the weather be in Paris tomorrow?"})
    assert status == 200
    assert weather["results"] == []
    assert weather["totalCount"] == 0

    status, other = call(
        base_url,
        "memory_search",
        {"query": "What are the user's coding preferences?", "threshold": 0},
        user="someone-else",
    )
    assert status == 200
    assert all(r["memoryId"] != added["memoryId"] for r in other["results"])

    status, envelope = call(base_url, "memory_delete", {"memoryId": added["memoryId"]}, user="someone-else")
    assert status == 404
    assert envelope["errorCode"] == "NOT_FOUND"

    status, still = call(base_url, "memory_search", {"query": "What are the user's coding preferences?"})
    assert still["results"][0]["memoryId"] == added["memoryId"]


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        ("/v1/tools/memory_add", {"layer": "user"}, 400, "content"),
        ("/v1/tools/memory_search", {"query": "x", "limit": 0}, 400, "limit"),
        ("/v1/tools/memory_search", {"query": "x", "threshold": 2}, 400, "threshold"),
        ("/v1/tools/memory_add", {"content": "x", "layer": "galaxy"}, 400, "layer"),
        ("/v1/tools/memory_add", b"this is not json", 400, "body"),
        ("/v1/tools/no_such_tool", {}, 404, "name"),
    ],
)
def test_bad_requests_get_4xx_envelopes(base_url: str, path: str, body: Any, status: int, field: str) -> None:
    got, envelope = request(base_url, "POST", path, body, {"Content-Type": "application/json"})
    assert got == status
    assert envelope["success"] is False
    assert envelope["details"]["field"] == field
    assert set(envelope) == {"success", "errorCode", "message", "details", "retryable"}


@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain", None])
def test_a_tool_call_that_is_not_json_is_refused_and_writes_nothing(base_url: str, content_type: str | None) -> None:
    """What a web page can send cross-site without a preflight (form, text/plain) never reaches a tool."""
    token = f"notjson{abs(hash(content_type))}"
    body = json.dumps({"content": f"written by {token}", "layer": "user"}).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    status, envelope = request(base_url, "POST", "/v1/tools/memory_add", body, headers)
    assert status == 415
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == "Content-Type"
    status, found = request(
        base_url, "POST", "/v1/tools/memory_search", {"query": token}, {"Content-Type": "application/json"}
    )
    assert status == 200
    assert not [hit for hit in found["results"] if token in hit["content"]]


def test_json_with_a_charset_is_json(base_url: str) -> None:
    status, found = request(
        base_url, "POST", "/v1/tools/memory_search", {"query": "x"}, {"Content-Type": "Application/JSON; charset=utf-8"}
    )
    assert status == 200
    assert found["success"]


def test_invalid_identity_header_is_unauthorized(base_url: str) -> None:
    status, envelope = call(base_url, "memory_search", {"query": "x"}, user="alice|admin")
    assert status == 403
    assert envelope["errorCode"] == "UNAUTHORIZED"
    assert envelope["details"]["field"] == "user"


def test_discovery_routes(base_url: str) -> None:
    status, health = request(base_url, "GET", "/health")
    assert status == 200
    assert health["status"] == "ok"
    status, tools = request(base_url, "GET", "/v1/tools")
    names = {tool["name"] for tool in tools["tools"]}
    assert {"memory_add", "memory_search", "memory_delete"} <= names
    assert health["tools"] == len(names), "/health counts the tools /v1/tools lists"
    for tool in tools["tools"]:
        Draft202012Validator.check_schema(tool["inputSchema"])
    status, document = request(base_url, "GET", "/v1/openapi.json")
    assert status == 200
    assert document["servers"][0]["url"].startswith("http://127.0.0.1:")
    validate_openapi(document)
    status, page = request(base_url, "GET", "/docs")
    assert status == 200
    assert "swagger-ui" in page
    assert "memory_search" in page
    status, envelope = request(base_url, "GET", "/nowhere")
    assert status == 404
    assert envelope["errorCode"] == "NOT_FOUND"
    status, envelope = request(base_url, "DELETE", "/v1/tools/memory_add")
    assert status == 404
    assert envelope["success"] is False

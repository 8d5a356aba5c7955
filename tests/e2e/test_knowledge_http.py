"""Knowledge and sync over real HTTP against `mnemo serve` (in a thread), with the real bge model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from helpers import http_call as call
from helpers import local_server
from knowledge_helpers import EXAMPLE_COUNT, push_tree
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from mnemo.tools.schema import output_schema

pytestmark = pytest.mark.model

TENANT = "acme-http"
ENGINEER = {"tenant": TENANT, "org": "engineering", "team": "payments", "project": "checkout-api"}
ADR_042 = "adr-042-database-selection"


@pytest.fixture(scope="module")
def base_url(bge_services: Services) -> Iterator[str]:
    push_tree(bge_services, TENANT)
    with local_server(bge_services) as url:
        yield url


def tool_call(base: str, tool: str, body: Any, **headers: str) -> tuple[int, Any]:
    status, answer = call(base, tool, body, **headers)
    if status == 200:
        Draft202012Validator(output_schema(get_tool(tool))).validate(answer)
    return status, answer


@pytest.fixture(scope="module")
def synced(base_url: str) -> str:
    status, first = tool_call(base_url, "sync_now", {}, **ENGINEER)
    assert status == 200
    assert first["result"]["added"] == EXAMPLE_COUNT
    assert first["result"]["failures"] == 0
    status, second = tool_call(base_url, "sync_now", {}, **ENGINEER)
    assert status == 200
    assert second["result"] == {
        "added": 0,
        "updated": 0,
        "deleted": 0,
        "unchanged": EXAMPLE_COUNT,
        "failures": 0,
    }
    return base_url


def test_query_show_and_check_over_http(synced: str) -> None:
    status, found = tool_call(synced, "knowledge_query", {"query": "database selection", "type": "adr"}, **ENGINEER)
    assert status == 200
    assert found["items"][0]["id"] == ADR_042
    assert found["items"][0]["layer"] == "org"

    status, shown = tool_call(synced, "knowledge_show", {"id": ADR_042, "includeHistory": True}, **ENGINEER)
    assert status == 200
    assert shown["item"]["severity"] == "block"
    assert shown["history"][0]["author"] == "tester"

    status, checked = tool_call(
        synced, "knowledge_check", {"dependencies": [{"name": "mysql2", "version": "3.0.0"}]}, **ENGINEER
    )
    assert status == 200
    assert checked["passed"] is False
    assert checked["summary"] == {"info": 0, "warn": 0, "block": 1}
    assert checked["violations"][0]["knowledgeItemId"] == ADR_042

    manifest = json.dumps({"dependencies": {"mysql2": "^3.0.0"}}, indent=2)
    status, in_file = tool_call(
        synced, "knowledge_check", {"files": [{"path": "package.json", "content": manifest}]}, **ENGINEER
    )
    blocks = [v for v in in_file["violations"] if v["severity"] == "block"]
    assert status == 200
    assert [v["location"] for v in blocks] == [{"file": "package.json", "line": 3}]

    status, health = tool_call(synced, "sync_status", {}, **ENGINEER)
    assert status == 200
    assert health["healthy"] is True
    assert health["stats"]["totalSyncs"] >= 2


def test_memory_search_surfaces_the_adr_pointer_in_the_org_layer(synced: str) -> None:
    status, found = call(synced, "memory_search", {"query": "which database should a new service use"}, **ENGINEER)
    assert status == 200
    pointers = [r for r in found["results"] if r["metadata"].get("knowledgePointer", {}).get("sourceId") == ADR_042]
    assert pointers
    assert pointers[0]["layer"] == "org"
    assert pointers[0]["score"] >= 0.7
    assert found["results"][0]["memoryId"] == pointers[0]["memoryId"]


def test_unknown_items_and_other_tenants(synced: str) -> None:
    status, missing = call(synced, "knowledge_show", {"id": "adr-999"}, **ENGINEER)
    assert status == 404
    assert missing["errorCode"] == "NOT_FOUND"
    assert missing["details"]["searchedLayers"] == ["project", "team", "org", "company"]
    status, stranger = call(
        synced, "knowledge_query", {"query": "database selection"}, tenant="globex", org="engineering"
    )
    assert status == 200
    assert stranger["items"] == []
    assert stranger["totalCount"] == 0


@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("knowledge_query", {"query": "x", "limit": 0}, "limit"),
        ("knowledge_query", {"type": "memo"}, "type"),
        ("knowledge_query", {"status": ["archived"]}, "status.0"),
        ("knowledge_show", {}, "id"),
        ("knowledge_check", {"dependencies": [{"version": "1"}]}, "dependencies.0.name"),
        ("knowledge_check", {"dependencies": [{"name": "x"}], "minSeverity": "fatal"}, "minSeverity"),
        ("knowledge_check", {"files": [{"path": "a.py"}]}, "files.0.content"),
        ("knowledge_check", {}, "files"),
        ("sync_now", {"layers": ["galaxy"]}, "layers.0"),
        ("sync_status", {"verbose": True}, "verbose"),
    ],
)
def test_bad_input_gets_the_envelope_naming_the_field(synced: str, tool: str, body: Any, field: str) -> None:
    status, envelope = call(synced, tool, body, **ENGINEER)
    assert status == 400, envelope
    assert envelope["success"] is False
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == field

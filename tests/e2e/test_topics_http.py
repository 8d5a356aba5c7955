"""Each topic rule over real HTTP: `mnemo serve` in a thread, identity in X-Mnemo-* headers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from helpers import http_call, local_server
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from mnemo.tools.schema import output_schema

WRITER = {"tenant": "acme", "user": "alice", "project": "checkout", "roles": "writer"}
READER = {"tenant": "acme", "user": "bob", "project": "checkout", "roles": "reader"}


@pytest.fixture
def base(services: Services) -> Iterator[str]:
    with local_server(services) as url:
        yield url


def call(base: str, tool: str, body: Any, identity: dict[str, str] = WRITER) -> tuple[int, Any]:
    status, answer = http_call(base, tool, body, **identity)
    if status == 200:
        Draft202012Validator(output_schema(get_tool(tool))).validate(answer)
    else:
        assert answer["success"] is False
        assert set(answer) >= {"errorCode", "message", "details", "retryable"}
    return status, answer


def memorize(base: str, topic: str, identity: dict[str, str] = WRITER, **fields: Any) -> tuple[int, Any]:
    body = {"topic": topic, "tags": ["deploy"], "summary": f"About {topic}.", "content": "Notes."}
    return call(base, "memorize_new_topic", body | fields, identity)


def test_memorize_recall_list_and_conflict_over_http(base: str) -> None:
    status, stored = memorize(base, "Deployment", tags=["Deploy", "ops"], content="Blue green on Tuesdays.")
    assert status == 200
    assert stored["version"] == 1
    status, recalled = call(base, "recall_memory", {"topic": "deployment"})
    assert status == 200
    assert recalled["title"] == "Deployment"
    assert recalled["tags"] == ["Deploy", "ops"]
    assert recalled["content"] == "Blue green on Tuesdays."
    assert recalled["lastUpdated"] == stored["lastUpdated"]
    assert "**Last updated:**" in recalled["markdown"]
    status, listed = call(base, "list_memories", {})
    assert status == 200
    assert listed["topics"] == ["Deployment"]
    assert listed["text"] == "Deployment"
    status, again = memorize(base, "DEPLOYMENT")
    assert status == 409
    assert again["errorCode"] == "CONFLICT"
    assert again["details"]["field"] == "topic"


@pytest.mark.parametrize("name", ["a/b", "a\\b", ".", "..", "a\x00b", "a\x7fb", "x" * 129, ""], ids=repr)
def test_bad_topic_names_are_400_naming_topic(base: str, name: str) -> None:
    status, answer = memorize(base, name)
    assert status == 400
    assert answer["errorCode"] == "INVALID_INPUT"
    assert answer["details"]["field"] == "topic"
    status, answer = call(base, "recall_memory", {"topic": name})
    assert status == 400
    assert answer["details"]["field"] == "topic"


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"summary": "s" * 501}, "summary"), ({"content": "c" * 100_001}, "content"), ({"tags": ["t"] * 21}, "tags")],
)
def test_over_long_fields_are_400_naming_them(base: str, fields: dict[str, Any], field: str) -> None:
    status, answer = memorize(base, "t", **fields)
    assert status == 400
    assert answer["details"]["field"] == field


def test_refine_over_http_applies_everything_and_updates_the_index(base: str) -> None:
    _, before = memorize(base, "t", tags=["a", "draft"], summary="Old summary.")
    status, refined = call(
        base,
        "refine_memory",
        {"topic": "t", "tagsToAdd": ["B"], "tagsToRemove": ["DRAFT"], "newSummary": "New summary.", "newContent": "v2"},
    )
    assert status == 200
    assert refined["tags"] == ["a", "B"]
    assert refined["version"] == 2
    assert refined["lastUpdated"] > before["lastUpdated"]
    _, recalled = call(base, "recall_memory", {"topic": "t"})
    assert recalled["content"] == "v2"
    assert recalled["summary"] == "New summary."
    _, general = call(base, "recall_general_memory", {})
    assert "- **t** [a, B]: New summary." in general["index"]
    assert "Old summary." not in general["index"]
    status, unknown = call(base, "refine_memory", {"topic": "nope", "newSummary": "x"})
    assert status == 404
    assert unknown["errorCode"] == "NOT_FOUND"


def test_concurrent_refines_over_http_the_second_gets_conflict(base: str) -> None:
    memorize(base, "t")
    _, first_read = call(base, "recall_memory", {"topic": "t"})
    _, second_read = call(base, "recall_memory", {"topic": "t"})
    version = first_read["version"]
    status, first = call(base, "refine_memory", {"topic": "t", "newContent": "first", "expectedVersion": version})
    assert status == 200
    assert first["version"] == version + 1
    status, second = call(
        base, "refine_memory", {"topic": "t", "newContent": "second", "expectedVersion": second_read["version"]}
    )
    assert status == 409
    assert second["errorCode"] == "CONFLICT"
    assert second["retryable"] is False  # recall, refine
    assert second["details"] == {"field": "expectedVersion", "currentVersion": version + 1}
    assert call(base, "recall_memory", {"topic": "t"})[1]["content"] == "first"


def test_general_info_over_http_replaces_only_its_section_and_refuses_the_header(base: str) -> None:
    memorize(base, "deployment", summary="How we deploy.")
    assert call(base, "memorize_general_info", {"content": "First."})[0] == 200
    assert call(base, "memorize_general_info", {"content": "Second."})[0] == 200
    status, answer = call(base, "memorize_general_info", {"content": "x\n## Specialized Knowledge\n- y"})
    assert status == 400
    assert answer["details"]["field"] == "content"
    _, general = call(base, "recall_general_memory", {})
    assert general["content"] == "Second."
    assert general["version"] == 2
    assert "How we deploy." in general["index"].split("## Specialized Knowledge")[1]


def test_forget_over_http_removes_the_topic_everywhere(base: str) -> None:
    memorize(base, "deployment", summary="How we deploy.", content="Blue green deployments on Tuesdays.")
    assert call(base, "search_memories", {"query": "blue green deployments"})[1]["topics"] == ["deployment"]
    status, forgotten = call(base, "forget_memory", {"topic": "deployment"})
    assert status == 200
    assert forgotten["topic"] == "deployment"
    assert call(base, "list_memories", {})[1]["topics"] == []
    assert "How we deploy." not in call(base, "recall_general_memory", {})[1]["index"]
    assert call(base, "search_memories", {"query": "blue green deployments"})[1]["topics"] == []
    status, again = call(base, "forget_memory", {"topic": "deployment"})
    assert status == 404
    assert again["details"]["field"] == "topic"


def test_search_over_http_by_tag_and_by_content(base: str) -> None:
    memorize(base, "deployment", tags=["Deploy"], content="Blue green deployments roll out on Tuesdays.")
    memorize(base, "database", tags=["db"], content="Orders live in PostgreSQL 16 with nightly backups.")
    status, by_tag = call(base, "search_memories", {"tags": ["DEPLOY"]})
    assert status == 200
    assert by_tag["topics"] == ["deployment"]
    assert by_tag["retrieval"] == "tags"
    status, by_content = call(base, "search_memories", {"query": "postgresql nightly backups"})
    assert status == 200
    assert by_content["topics"][0] == "database"
    assert by_content["retrieval"] == "hybrid"
    _, nothing = call(base, "search_memories", {"tags": ["none"]})
    assert nothing["message"] == "No topics found"
    status, neither = call(base, "search_memories", {})
    assert status == 400
    assert neither["details"]["field"] == "tags"


def test_roles_scopes_and_isolation_over_http(base: str) -> None:
    memorize(base, "t")
    status, denied = memorize(base, "u", READER)
    assert status == 403
    assert denied["errorCode"] == "UNAUTHORIZED"
    assert call(base, "forget_memory", {"topic": "t"}, READER)[0] == 403
    assert call(base, "list_memories", {}, READER)[1]["topics"] == ["t"]
    other_project = WRITER | {"project": "billing"}
    other_tenant = WRITER | {"tenant": "globex"}
    personal = {"tenant": "acme", "user": "alice", "roles": "reader"}
    for identity in (other_project, other_tenant, personal):
        assert call(base, "list_memories", {}, identity)[1]["topics"] == []
        assert call(base, "recall_memory", {"topic": "t"}, identity)[0] == 404
    assert memorize(base, "mine", personal)[0] == 200  # one's own layer needs no writer role
    _, listed = call(base, "list_memories", {}, personal)
    assert listed["topics"] == ["mine"]
    assert listed["layer"] == "user"
    assert call(base, "list_memories", {})[1]["topics"] == ["t"]

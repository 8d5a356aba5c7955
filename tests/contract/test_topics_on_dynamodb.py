"""Topic memory on DynamoDB records (a serial moto server, a table built from template.yaml).

The local vector index and the hashing embedder stand in for OpenSearch and Titan.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError, NotFound, Unauthorized
from mnemo.ports import Delete, Item, Put, RecordStore
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool
from mnemo.topics.models import RefineMemoryInput
from mnemo.topics.service import TopicService

WRITER = ctx(tenant="acme", project="checkout", roles=("writer",))
_tables = itertools.count()


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, str]]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = f"topics-records-{next(_tables)}"
    dynamodb = server.client("dynamodb")
    create_records_table(dynamodb, table, stream=False)
    settings = dynamodb_settings(server, table, tmp_path)
    services = Services(settings)
    set_services(services)
    try:
        yield services, table
    finally:
        set_services(None)
        dynamodb.delete_table(TableName=table)


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def memorize(services: Services, topic: str, **fields: Any) -> dict[str, Any]:
    payload = {"topic": topic, "tags": ["deploy"], "summary": f"About {topic}.", "content": "Notes."}
    return call(services, WRITER, "memorize_new_topic", payload | fields)


def error_of(run: Callable[[], Any]) -> MnemoError:
    with pytest.raises(MnemoError) as raised:
        run()
    return raised.value


def table_items(table: str, pk: str) -> dict[str, dict[str, Any]]:
    client = shared_moto_server().client("dynamodb")
    response = client.query(
        TableName=table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}}
    )
    return {item["sk"]["S"]: item for item in response["Items"]}


def test_records_layout_on_dynamodb(aws: tuple[Services, str]) -> None:
    services, table = aws
    memorize(services, "Deployment", tags=["ops"], content="Blue green.")
    call(services, WRITER, "memorize_general_info", {"content": "Checkout API."})
    items = table_items(table, "TOPIC|t=acme|project|p=checkout")
    assert set(items) == {"GENERAL", "TOPIC#deployment", "BODY#deployment"}
    head = json.loads(items["TOPIC#deployment"]["data"]["S"])
    assert head["name"] == "Deployment"
    assert head["tags"] == ["ops"]
    assert "content" not in head
    assert json.loads(items["BODY#deployment"]["data"]["S"]) == {"content": "Blue green."}
    assert items["TOPIC#deployment"]["version"]["N"] == items["BODY#deployment"]["version"]["N"] == "1"
    assert json.loads(items["GENERAL"]["data"]["S"])["content"] == "Checkout API."


def test_conflict_refine_and_version_on_dynamodb(aws: tuple[Services, str]) -> None:
    services, _ = aws
    memorize(services, "t", tags=["a", "draft"], summary="Old.")
    assert isinstance(error_of(lambda: memorize(services, "T")), Conflict)
    refined = call(
        services,
        WRITER,
        "refine_memory",
        {"topic": "t", "tagsToAdd": ["B"], "tagsToRemove": ["DRAFT"], "newSummary": "New.", "newContent": "v2"},
    )
    assert refined["version"] == 2
    assert refined["tags"] == ["a", "B"]
    stale = error_of(
        lambda: call(services, WRITER, "refine_memory", {"topic": "t", "newContent": "x", "expectedVersion": 1})
    )
    assert isinstance(stale, Conflict)
    assert stale.details["field"] == "expectedVersion"
    recalled = call(services, WRITER, "recall_memory", {"topic": "t"})
    assert (recalled["content"], recalled["summary"], recalled["version"]) == ("v2", "New.", 2)
    assert "- **t** [a, B]: New." in call(services, WRITER, "recall_general_memory", {})["index"]


class InterleavingRecords:
    """The DynamoDB store, running ``between`` once right after the topic's first read."""

    def __init__(self, inner: RecordStore, between: Callable[[], None]) -> None:
        self.inner = inner
        self.between: Callable[[], None] | None = between

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        found = self.inner.batch_get(keys)
        if self.between is not None:
            between, self.between = self.between, None
            between()
        return found

    def write(self, operations: Sequence[Put | Delete]) -> None:
        self.inner.write(operations)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_concurrent_refine_gets_conflict_on_dynamodb(aws: tuple[Services, str]) -> None:
    services, _ = aws
    memorize(services, "t", tags=["a"])

    def other() -> None:
        services.topics.refine(WRITER, RefineMemoryInput(topic="t", tags_to_add=["second"]))

    racing = TopicService(
        InterleavingRecords(services.records, other), services.index, services.embedder, services.outbox
    )
    with pytest.raises(Conflict):
        racing.refine(WRITER, RefineMemoryInput(topic="t", tags_to_add=["first"]))
    assert call(services, WRITER, "recall_memory", {"topic": "t"})["tags"] == ["a", "second"]


def test_general_info_and_forget_on_dynamodb(aws: tuple[Services, str]) -> None:
    services, table = aws
    memorize(services, "deployment", summary="How we deploy.", content="Blue green deployments on Tuesdays.")
    call(services, WRITER, "memorize_general_info", {"content": "General."})
    header = error_of(lambda: call(services, WRITER, "memorize_general_info", {"content": "## Specialized Knowledge"}))
    assert isinstance(header, InvalidInput)
    assert header.details["field"] == "content"
    assert call(services, WRITER, "recall_general_memory", {})["content"] == "General."
    found = call(services, WRITER, "search_memories", {"query": "blue green deployments"})
    assert found["topics"] == ["deployment"]
    call(services, WRITER, "forget_memory", {"topic": "deployment"})
    assert set(table_items(table, "TOPIC|t=acme|project|p=checkout")) == {"GENERAL"}
    assert "How we deploy." not in call(services, WRITER, "recall_general_memory", {})["index"]
    assert call(services, WRITER, "search_memories", {"query": "blue green deployments"})["topics"] == []
    assert isinstance(error_of(lambda: call(services, WRITER, "forget_memory", {"topic": "deployment"})), NotFound)


def test_names_tags_roles_and_isolation_on_dynamodb(aws: tuple[Services, str]) -> None:
    services, _ = aws
    for name in ("a/b", "..", "a\x00b", "x" * 129):
        error = error_of(lambda name=name: memorize(services, name))
        assert isinstance(error, InvalidInput)
        assert error.details["field"] == "topic"
    memorize(services, "deployment", tags=["Deploy"])
    assert call(services, WRITER, "search_memories", {"tags": ["DEPLOY"]})["topics"] == ["deployment"]
    reader = ctx(tenant="acme", project="checkout")
    assert isinstance(error_of(lambda: call(services, reader, "forget_memory", {"topic": "deployment"})), Unauthorized)
    assert call(services, reader, "list_memories", {})["topics"] == ["deployment"]
    for other in (ctx(tenant="acme", project="billing"), ctx(tenant="globex", project="checkout"), ctx()):
        assert call(services, other, "list_memories", {})["topics"] == []
        assert isinstance(
            error_of(lambda other=other: call(services, other, "recall_memory", {"topic": "deployment"})), NotFound
        )

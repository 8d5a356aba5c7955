"""Conversation and execution memory on DynamoDB records (a serial moto server, a table from template.yaml).

The local vector index and the hashing embedder stand in for OpenSearch and
Titan. Every test here runs with the store's ``scan`` refused: no user request
may scan the table.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from mnemo.context import RequestContext
from mnemo.conversations.models import AddConversationInput
from mnemo.conversations.service import ConversationService
from mnemo.errors import Conflict, MnemoError
from mnemo.ports import Item, RecordStore
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

ALICE = ctx(tenant="acme")
SCOPE = "t=acme|user|u=alice"
_tables = itertools.count()


class Stack:
    def __init__(self, services: Services, table: str) -> None:
        self.services = services
        self.table = table
        self.queries: list[dict[str, Any]] = []


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = f"conversation-records-{next(_tables)}"
    dynamodb = server.client("dynamodb")
    create_records_table(dynamodb, table, stream=False)
    settings = dynamodb_settings(server, table, tmp_path)
    services = Services(settings)
    stack = Stack(services, table)
    records = services.records
    original_query = records.query

    def refused_scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a user request scanned the table")

    def recorded_query(
        pk: str,
        sk_prefix: str = "",
        *,
        limit: int = 100,
        descending: bool = False,
        between: tuple[str, str] | None = None,
        consistent: bool = True,
    ) -> list[Item]:
        query = {"pk": pk, "prefix": sk_prefix, "limit": limit, "descending": descending, "between": between}
        stack.queries.append(query)
        return original_query(pk, sk_prefix, limit=limit, descending=descending, between=between, consistent=consistent)

    monkeypatch.setattr(records, "scan", refused_scan)
    monkeypatch.setattr(records, "query", recorded_query)
    set_services(services)
    try:
        yield stack
    finally:
        set_services(None)
        dynamodb.delete_table(TableName=table)


def call(stack: Stack, tool: str, payload: dict[str, Any], context: RequestContext = ALICE) -> dict[str, Any]:
    return get_tool(tool).invoke(stack.services, context, payload)


def add_conversation(stack: Stack, message_id: str, day: int, text: str, context: RequestContext = ALICE) -> Any:
    payload = {
        "message_id": message_id,
        "explanation": "keep it",
        "user_input": text,
        "agent_response": f"Answered: {text}",
        "timestamp": f"2024-12-{day:02d}T10:00:00Z",
    }
    return call(stack, "add_conversation", payload, context)


def add_execution(stack: Stack, message_id: str, day: int, tools: list[str], **fields: Any) -> Any:
    payload = {
        "message_id": message_id,
        "explanation": "learn from it",
        "execution_summary": f"Ran {' and '.join(tools)}",
        "tools_used": tools,
        "errors": [],
        "observations": "",
        "success": True,
        "timestamp": f"2024-12-{day:02d}T10:00:05Z",
    }
    return call(stack, "add_execution", payload | fields)


def retrieve(stack: Stack, tool: str, context: RequestContext = ALICE, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = call(stack, tool, {"query": "deploy", "explanation": "why"} | fields, context)["data"]
    return data


def ids(data: dict[str, Any], key: str = "conversations") -> list[str]:
    return [entry["message_id"] for entry in data[key]]


def table_items(table: str, pk: str) -> dict[str, dict[str, Any]]:
    client = shared_moto_server().client("dynamodb")
    response = client.query(
        TableName=table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": pk}}
    )
    return {item["sk"]["S"]: json.loads(item["data"]["S"]) for item in response["Items"]}


def test_records_layout_on_dynamodb(aws: Stack) -> None:
    add_conversation(aws, "m1", 15, "How do I deploy?")
    add_execution(
        aws,
        "m1",
        15,
        ["git", "Deploy_Pipeline"],
        success=False,
        errors=[{"error_type": "Timeout", "error_message": "slow"}],
    )
    conversations = table_items(aws.table, f"CONV|{SCOPE}")
    assert set(conversations) == {"MSG#m1", "TS#2024-12-15T10:00:00.000000Z#m1"}
    assert conversations["MSG#m1"]["user_input"] == "How do I deploy?"
    assert conversations["TS#2024-12-15T10:00:00.000000Z#m1"] == {
        "message_id": "m1",
        "timestamp": "2024-12-15T10:00:00.000000Z",
    }
    executions = table_items(aws.table, f"EXEC|{SCOPE}")
    assert set(executions) == {"MSG#m1", "TS#2024-12-15T10:00:05.000000Z#m1"}
    assert executions["MSG#m1"]["tools_used"] == ["git", "Deploy_Pipeline"]
    assert executions["TS#2024-12-15T10:00:05.000000Z#m1"] == {
        "message_id": "m1",
        "timestamp": "2024-12-15T10:00:05.000000Z",
        "tools": ["deploy_pipeline", "git"],
        "success": ["false"],
        "error_type": ["timeout"],
    }


def test_idempotent_repeat_and_conflict_on_dynamodb(aws: Stack) -> None:
    first = add_conversation(aws, "m1", 15, "How do I deploy?")
    again = add_conversation(aws, "m1", 15, "How do I deploy?")
    assert again["data"]["timestamp"] == first["data"]["timestamp"] == "2024-12-15T10:00:00Z"
    with pytest.raises(Conflict) as raised:
        add_conversation(aws, "m1", 15, "How do I roll back?")
    assert raised.value.details["field"] == "message_id"
    assert raised.value.details["differs"] == [
        "user_input",
        "agent_response",
    ]
    assert len(table_items(aws.table, f"CONV|{SCOPE}")) == 2


class BlindFirstRead:
    """The DynamoDB store whose first ``get`` misses, as if a concurrent add had not landed yet."""

    def __init__(self, inner: RecordStore) -> None:
        self.inner = inner
        self.blind = True

    def get(self, pk: str, sk: str) -> Item | None:
        if self.blind:
            self.blind = False
            return None
        return self.inner.get(pk, sk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_racing_add_is_settled_by_the_conditional_write(aws: Stack) -> None:
    add_conversation(aws, "m1", 15, "How do I deploy?")
    same = {
        "message_id": "m1",
        "explanation": "x",
        "user_input": "How do I deploy?",
        "agent_response": "Answered: How do I deploy?",
        "timestamp": "2024-12-15T10:00:00Z",
    }
    racing = ConversationService(
        BlindFirstRead(aws.services.records), aws.services.index, aws.services.embedder, aws.services.outbox
    )
    repeat = racing.add_conversation(ALICE, AddConversationInput.model_validate(same))
    assert "already stored" in repeat.data.details.memory_processing
    racing = ConversationService(
        BlindFirstRead(aws.services.records), aws.services.index, aws.services.embedder, aws.services.outbox
    )
    with pytest.raises(Conflict):
        racing.add_conversation(ALICE, AddConversationInput.model_validate({**same, "user_input": "Other"}))
    assert table_items(aws.table, f"CONV|{SCOPE}")["MSG#m1"]["user_input"] == "How do I deploy?"


def test_links_strategies_and_time_range_on_dynamodb(aws: Stack) -> None:
    add_execution(aws, "m2", 2, ["kubectl"])  # before its conversation
    for message_id, day, text in (("m1", 1, "deploy billing"), ("m2", 2, "deploy checkout"), ("m3", 9, "lunch")):
        add_conversation(aws, message_id, day, text)
    recent = retrieve(aws, "retrieve_conversation", retrieval_strategy="recent")
    assert ids(recent) == ["m3", "m2", "m1"]
    assert recent["total_found"] == 3
    assert [c["has_execution_memory"] for c in recent["conversations"]] == [False, True, False]
    aws.queries.clear()
    window = {"start": "2024-12-02T00:00:00Z", "end": "2024-12-09T23:00:00Z"}
    ranged = retrieve(aws, "retrieve_conversation", retrieval_strategy="recent", time_range=window)
    assert ids(ranged) == ["m3", "m2"]
    assert ranged["query_type"] == "time_filtered"
    time_queries = [query for query in aws.queries if query["between"]]
    assert time_queries == [
        {
            "pk": f"CONV|{SCOPE}",
            "prefix": "",
            "limit": 1000,
            "descending": True,
            "between": ("TS#2024-12-02T00:00:00.000000Z", "TS#2024-12-09T23:00:00.000000Z#\U0010ffff"),
        }
    ], "a time range is the key range of one bounded query"
    assert ids(retrieve(aws, "retrieve_conversation", query="checkout", retrieval_strategy="keyword")) == ["m2"]
    assert ids(retrieve(aws, "retrieve_conversation", query="deploy checkout"))[0] == "m2"
    behind = retrieve(aws, "retrieve_conversation", message_id="m2")["conversations"][0]
    assert behind["user_input"] == "deploy checkout"
    assert behind["has_execution_memory"] is True
    execution = retrieve(aws, "retrieve_execution", message_id="m2", user_id="alice")["executions"][0]
    assert execution["execution_details"]["tools_used"] == ["kubectl"]
    assert execution["has_conversation_memory"]


def test_execution_filters_and_counts_on_dynamodb(aws: Stack) -> None:
    add_execution(aws, "a", 1, ["git", "deploy_pipeline"])
    add_execution(
        aws,
        "b",
        2,
        ["deploy_pipeline"],
        success=False,
        errors=[{"error_type": "timeout", "error_message": "slow", "tool": "deploy_pipeline"}],
    )
    add_execution(aws, "c", 3, ["wiki"])
    for strategy in ("hybrid", "recent", "keyword"):

        def found(strategy: str = strategy, **filters: Any) -> list[str]:
            data = retrieve(
                aws, "retrieve_execution", query="ran deploy_pipeline", retrieval_strategy=strategy, **filters
            )
            assert data["query_type"] == "pattern_search"
            return sorted(ids(data, "executions"))

        assert found(tools=["Deploy_Pipeline"]) == ["a", "b"]
        assert found(success=False) == ["b"]
        assert found(error_type="TIMEOUT") == ["b"]
        assert found(tools=["deploy_pipeline"], success=True) == ["a"]
    limited = retrieve(aws, "retrieve_execution", retrieval_strategy="recent", max_results=2)
    assert ids(limited, "executions") == ["c", "b"]
    assert (limited["total_found"], limited["returned_count"], limited["max_results_applied"]) == (3, 2, True)


def test_users_and_tenants_are_isolated_on_dynamodb(aws: Stack) -> None:
    add_conversation(aws, "m1", 1, "deploy secrets")
    add_execution(aws, "m1", 1, ["vault"])
    for stranger in (ctx(tenant="acme", user="bob"), ctx(tenant="globex")):
        for strategy in ("hybrid", "recent", "keyword"):
            assert retrieve(aws, "retrieve_conversation", stranger, retrieval_strategy=strategy)["conversations"] == []
            assert retrieve(aws, "retrieve_execution", stranger, retrieval_strategy=strategy)["executions"] == []
        assert retrieve(aws, "retrieve_conversation", stranger, message_id="m1")["total_found"] == 0
    with pytest.raises(MnemoError) as raised:
        retrieve(aws, "retrieve_execution", user_id="bob")
    assert raised.value.code == "UNAUTHORIZED"

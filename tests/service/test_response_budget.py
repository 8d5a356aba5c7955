"""Conversation and topic reads fit the transport's response budget, as memory_search does.

Each front door sets ``response_budget`` (Lambda 5.5 MB, MCP 1 MiB, Bedrock a share of 25 kB);
an answer that would not fit keeps the longest head that does and says so, so no transport ever
fails with a bare 502. The last test sends a 15 MB page through the real local server.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator

from helpers import ctx, http_call, local_server
from mnemo.budget import wire_bytes
from mnemo.context import RequestContext
from mnemo.conversations import contracts
from mnemo.entry.apigw import RESPONSE_BUDGET_BYTES
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx()
WRITER = ctx(project="p1", roles=("writer",))


def budgeted(context: RequestContext, budget: int) -> RequestContext:
    return context.model_copy(update={"response_budget": budget})


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def valid_memoryos(tool: str, answer: dict[str, Any]) -> None:
    schema = contracts.schema(f"{tool}_output")
    Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER).validate(answer)


@pytest.fixture
def big_conversations(services: Services) -> Services:
    for n in range(12):
        call(
            services,
            ALICE,
            "add_conversation",
            {
                "message_id": f"m{n:02d}",
                "explanation": "x",
                "user_input": f"deploy question {n} " + "é" * 9000,  # two bytes each on the wire
                "agent_response": "answer " + "z" * 9000,
                "timestamp": f"2024-05-{n + 1:02d}T10:00:00Z",
            },
        )
        call(
            services,
            ALICE,
            "add_execution",
            {
                "message_id": f"m{n:02d}",
                "explanation": "x",
                "execution_summary": "deploy " + "s" * 1900,
                "tools_used": ["git"],
                "errors": [],
                "observations": "o" * 4900,
                "success": True,
            },
        )
    return services


@pytest.mark.parametrize(
    "tool, key", [("retrieve_conversation", "conversations"), ("retrieve_execution", "executions")]
)
def test_a_retrieval_keeps_the_head_of_its_page_that_fits(big_conversations: Services, tool: str, key: str) -> None:
    payload = {"query": "deploy", "explanation": "x", "retrieval_strategy": "recent", "max_results": 12}
    whole = call(big_conversations, ALICE, tool, payload)
    assert whole["data"]["returned_count"] == 12
    budget = wire_bytes(whole) // 3
    trimmed = call(big_conversations, budgeted(ALICE, budget), tool, payload)
    valid_memoryos(tool, trimmed)
    data = trimmed["data"]
    assert wire_bytes(trimmed) <= budget
    assert 0 < data["returned_count"] == len(data[key]) < 12
    assert data["total_found"] == 12
    assert data["max_results_applied"] is True
    assert "response size limit" in trimmed["message"]
    assert [entry["message_id"] for entry in data[key]] == [f"m{n:02d}" for n in range(11, 11 - len(data[key]), -1)]


def _topics(services: Services, count: int, content: str = "notes") -> None:
    for n in range(count):
        call(
            services,
            WRITER,
            "memorize_new_topic",
            {"topic": f"topic-{n:03d}-" + "n" * 100, "tags": ["deploy"], "summary": "s" * 400, "content": content},
        )


def test_topic_search_and_list_fit_a_small_budget(services: Services) -> None:
    _topics(services, 40)
    budget = 4096
    for tool, payload in (("search_memories", {"tags": ["deploy"], "limit": 40}), ("list_memories", {})):
        whole = call(services, WRITER, tool, payload)
        trimmed = call(services, budgeted(WRITER, budget), tool, payload)
        assert wire_bytes(whole) > budget >= wire_bytes(trimmed), tool
        assert "response size limit" in (trimmed.get("message") or trimmed.get("text")), tool
        assert trimmed["topics"], tool
        assert len(trimmed["topics"]) < 40, tool
    # The whole list, part by part.
    offset, names = 0, []
    while True:
        part = call(services, budgeted(WRITER, budget), "list_memories", {"offset": offset})
        assert wire_bytes(part) <= budget
        assert part["count"] == 40
        assert part["topics"]
        names += part["topics"]
        if not part["hasMore"]:
            break
        offset = part["nextOffset"]
    assert names == call(services, WRITER, "list_memories", {})["topics"]
    assert len(names) == 40
    searched = call(services, budgeted(WRITER, budget), "search_memories", {"tags": ["deploy"], "limit": 40})
    assert searched["totalCount"] == 40
    assert [r["topic"] for r in searched["results"]] == searched["topics"]
    assert call(services, budgeted(WRITER, budget), "list_memories", {})["count"] == 40


def test_the_general_memory_and_one_topic_fit_a_small_budget(services: Services) -> None:
    _topics(services, 30, content="c" * 50_000)
    call(services, WRITER, "memorize_general_info", {"content": "General notes. " + "g" * 40_000})
    budget = 8192
    general = call(services, budgeted(WRITER, budget), "recall_general_memory", {})
    assert wire_bytes(general) <= budget
    assert "more topics left out" in general["index"]
    assert general["content"].startswith("General notes.")
    assert general["content"].endswith("[… shortened to fit the response size limit]")
    # Without a budget (in process), nothing is shortened.
    assert len(call(services, WRITER, "recall_memory", {"topic": "topic-001-" + "n" * 100})["content"]) == 50_000


def test_a_topic_too_long_for_the_transport_is_read_in_parts(services: Services) -> None:
    content = "".join(f'line {n}: é日本語 ✓ "quoted"\n' for n in range(3000))  # multi-byte and escaped text
    call(services, WRITER, "memorize_new_topic", {"topic": "long", "tags": [], "summary": "s", "content": content})
    budget, offset, parts = 8192, 0, []
    while True:
        part = call(services, budgeted(WRITER, budget), "recall_memory", {"topic": "long", "offset": offset})
        assert wire_bytes(part) <= budget
        assert part["totalChars"] == len(content)
        assert part["content"]
        assert part["markdown"].startswith("# long\n")
        assert part["content"].strip() in part["markdown"]
        parts.append(part["content"])
        if not part["hasMore"]:
            assert part["nextOffset"] is None
            break
        assert part["nextOffset"] == offset + len(part["content"])
        offset = part["nextOffset"]
    assert "".join(parts) == content
    assert len(parts) > 5


def test_a_fifteen_megabyte_page_over_http_is_trimmed_to_the_lambda_limit_not_a_502(services: Services) -> None:
    meta = {"attachment": "a" * 290_000}
    for n in range(50):
        call(
            services,
            ALICE,
            "add_conversation",
            {"message_id": f"big{n}", "explanation": "x", "user_input": "q", "agent_response": "a", "meta_data": meta},
        )
    with local_server(services) as base:
        payload = {"query": "q", "explanation": "x", "retrieval_strategy": "recent", "max_results": 50}
        status, answer = http_call(base, "retrieve_conversation", payload, tenant="acme", user="alice")
    assert status == 200, answer
    valid_memoryos("retrieve_conversation", answer)
    assert wire_bytes(answer) <= RESPONSE_BUDGET_BYTES
    assert 0 < answer["data"]["returned_count"] < 50
    assert answer["data"]["total_found"] == 50

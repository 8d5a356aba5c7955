"""Memory that learns on the AWS adapters: DynamoDB records, SQS queues and EventBridge on one moto server.

add_messages writes its turns and their waiting-turn markers to DynamoDB and one notice per call to the
SQS FIFO queue; the notices, received from SQS as the extraction Lambda's event source mapping receives
them, drive ``learning.on_notice``; an idle wake-up goes to the standard wake queue with its delay. The
model is the scripted OpenAI-compatible server (Bedrock's requests are checked against botocore's model
in test_learning_bedrock_requests.py). A user request never scans the table.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from mnemo.adapters.aws.sqs_extraction_queue import decode_notice
from mnemo.learning.outcomes import Left, NoticeOutcome
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from tests.support.scripted_model import ScriptedModel

ALICE = ctx("alice", tenant="acme", session="s1")
_names = itertools.count()


class Stack:
    def __init__(self, services: Services, sqs: Any, fifo: str, wake: str, model: ScriptedModel) -> None:
        self.services, self.sqs, self.fifo, self.wake, self.model = services, sqs, fifo, wake, model

    def call(self, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
        return get_tool(tool).invoke(self.services, ALICE, payload)

    def receive(self, url: str) -> list[dict[str, Any]]:
        got = self.sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
        ).get("Messages", [])
        for message in got:
            self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return got


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    number = next(_names)
    table = f"learning-records-{number}"
    dynamodb, sqs, events = server.client("dynamodb"), server.client("sqs"), server.client("events")
    create_records_table(dynamodb, table, stream=False)
    fifo = sqs.create_queue(
        QueueName=f"extraction-{number}.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    )["QueueUrl"]
    wake = sqs.create_queue(QueueName=f"extraction-wake-{number}")["QueueUrl"]
    bus = f"learning-bus-{number}"
    events.create_event_bus(Name=bus)
    model = ScriptedModel(
        lambda tool, request, ids: (
            {"facts": [{"text": f"Fact of {i}.", "subject": f"s {i}", "sourceIds": [i]} for i in ids]}
            if tool == "record_facts"
            else None
        )
    )
    settings = dynamodb_settings(
        server,
        table,
        tmp_path,
        events="eventbridge",
        event_bus=bus,
        openai_base_url=model.url,
        extraction_strategies=("facts",),
        extraction_every_turns=3,
        extraction_queue_url=fifo,
        extraction_wake_queue_url=wake,
    )
    services = Services(settings)

    def refused_scan(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a user request scanned the table")

    monkeypatch.setattr(services.records, "scan", refused_scan)
    try:
        yield Stack(services, sqs, fifo, wake, model)
    finally:
        model.close()
        dynamodb.delete_table(TableName=table)
        sqs.delete_queue(QueueUrl=fifo)
        sqs.delete_queue(QueueUrl=wake)
        events.delete_event_bus(Name=bus)


def said(*texts: str, start: int = 1) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": text, "id": f"m{start + n}", "at": f"2025-03-01T09:{start + n:02d}:00Z"}
            for n, text in enumerate(texts)
        ]
    }


def test_turns_go_through_sqs_to_memories_in_dynamodb(aws: Stack) -> None:
    first = aws.call("add_messages", said("one", "two"))
    assert first["extraction"] == "queued" and aws.model.requests == []
    (message,) = aws.receive(aws.fifo)
    notice = decode_notice(message["Body"])
    assert notice.stream == "t=acme|session|u=alice|s=s1" and notice.reason == "turns"
    assert message["Attributes"]["MessageGroupId"] and message["Attributes"]["MessageDeduplicationId"]
    assert aws.services.learning.on_notice(notice) == NoticeOutcome(0, Left.NOT_DUE), (
        "2 of 3 turns: the idle wake-up is armed"
    )
    delayed = aws.sqs.get_queue_attributes(QueueUrl=aws.wake, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert delayed["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1", "the wake-up waits its delay"
    assert aws.receive(aws.wake) == []

    aws.call("add_messages", said("three", start=3))
    (message,) = aws.receive(aws.fifo)
    assert aws.services.learning.on_notice(decode_notice(message["Body"])) == NoticeOutcome(1, Left.NOTHING)
    memories = aws.call("memory_list", {"layer": "user"})["memories"]
    assert sorted(m["content"] for m in memories) == ["Fact of m1.", "Fact of m2.", "Fact of m3."]
    assert all(m["metadata"]["provenance"]["messageIds"] for m in memories)
    status = aws.call("extraction_status", {"runs": 1})
    assert status["pendingTurns"] == 0 and status["recentRuns"][0]["turns"] == ["m1", "m2", "m3"]

    # The same notice delivered again (at least once): nothing waits, nothing new is written.
    assert aws.services.learning.on_notice(decode_notice(message["Body"])) == NoticeOutcome(0, Left.NOTHING)
    assert len(aws.call("memory_list", {"layer": "user"})["memories"]) == 3
    assert len(aws.model.calls("record_facts")) == 1


def test_a_resent_batch_sends_nothing_and_queues_nothing(aws: Stack) -> None:
    aws.call("add_messages", said("one"))
    aws.receive(aws.fifo)
    again = aws.call("add_messages", said("one"))
    assert again["repeated"] == 1 and aws.receive(aws.fifo) == []
    assert again["pendingTurns"] == 1


def test_every_strategy_writes_its_memories_on_dynamodb(aws: Stack) -> None:
    def script(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
        item = {"subject": "s", "sourceIds": ids[:1]}
        answers: dict[str, dict[str, Any]] = {
            "record_facts": {"facts": [{"text": "Alice lives in Lisbon.", **item}]},
            "record_preferences": {"preferences": [{"text": "Alice prefers tea.", **item}]},
            "record_summary": {"summary": [{"text": "Alice talked about Lisbon and tea.", "sourceIds": ids}]},
            "record_lessons": {"lessons": [{"text": "Retrying the weather API worked.", **item}]},
            "record_knowledge_graph": {
                "entities": [{"name": "Alice", "type": "person"}, {"name": "Lisbon", "type": "place"}],
                "facts": [
                    {"subject": "Alice", "predicate": "lives_in", "object": "Lisbon", "text": "Alice lives in Lisbon."}
                ],
            },
        }
        if tool == "record_profile":
            prompt = request["messages"][-1]["content"]
            cited = [line[1 : line.index("]")] for line in prompt.splitlines() if line.startswith("[mem_")]
            return {"profile": [{"text": "Alice lives in Lisbon and prefers tea.", "sourceIds": cited}]}
        return answers.get(tool)

    aws.model.script = script
    every = ("facts", "preferences", "summary", "lessons", "graph", "profile")
    services = Services(aws.services.settings.model_copy(update={"extraction_strategies": every}))
    agent = ctx("alice", tenant="acme", session="s1", agent="helper")
    get_tool("add_messages").invoke(aws.services, agent, said("I live in Lisbon", "I prefer tea"))
    get_tool("add_execution").invoke(
        services,
        agent,
        {
            "message_id": "m1",
            "explanation": "t",
            "execution_summary": "weather API retried",
            "tools_used": ["weather"],
            "errors": [],
            "observations": "retry helped",
            "success": True,
        },
    )
    run = get_tool("memory_extract").invoke(services, agent, {})
    assert {p["strategy"]: p["failure"] for p in run["run"]["strategies"]} == dict.fromkeys(every)
    listed = {
        layer: [m["content"] for m in get_tool("memory_list").invoke(services, agent, {"layer": layer})["memories"]]
        for layer in ("user", "session", "agent")
    }
    assert sorted(listed["user"]) == [
        "Alice lives in Lisbon and prefers tea.",
        "Alice lives in Lisbon.",
        "Alice prefers tea.",
    ]
    assert listed["session"] == ["Alice talked about Lisbon and tea."]
    assert listed["agent"] == ["Retrying the weather API worked."]
    facts = get_tool("graph_search").invoke(services, agent, {"query": "Alice lives in"})["facts"]
    assert facts and facts[0]["object"] == "Lisbon"

"""The extraction strategies on Bedrock: each Converse request as documented, each documented answer used.

The stack is the one a deployment with ``MNEMO_EXTRACTOR=bedrock`` builds (Services.extractor and
Services.extractor_for make the BedrockExtractor); only its client factory is replaced, by a real
``bedrock-runtime`` client under botocore's ``Stubber``. botocore validates each request against the service
model (the documented Converse shape) and the Stubber checks it against the expected one: the strategy's
system prompt, its tool with the strategy's JSON schema as ``inputSchema.json``, ``toolChoice`` forcing that
tool. Each answer is a documented Converse response (``output.message.content[].toolUse``, ``usage``,
``stopReason: tool_use``, checked against the output shape), and memory_extract answers the strategy's
candidates and the response's token counts. The consolidation judge's ``decide_updates`` call is checked the
same way, and an answer without the tool use is a failure carrying the model's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from helpers import ctx
from mnemo.adapters.aws.bedrock_extractor import BedrockExtractor
from mnemo.learning.consolidation import JUDGE_SYSTEM, JUDGE_TOOL
from mnemo.learning.strategies import STRATEGIES, Strategy
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

MODEL_ID = "amazon.nova-lite-v1:0"
REGION = "us-east-1"
ALICE = ctx("alice", "acme", session="s1", agent="helper")
TURNS = [
    {"id": "m-1", "role": "user", "content": "I work at Acme as a data engineer.", "at": "2025-03-03T09:00:00Z"},
    {"id": "m-2", "role": "user", "content": "I prefer window seats on long flights.", "at": "2025-03-03T09:01:00Z"},
]
EXECUTION = {
    "message_id": "x-1",
    "explanation": "How the forecast was looked up",
    "execution_summary": "Looked up the Paris forecast after a geocoding retry",
    "tools_used": ["geocode_city", "weather_api"],
    "errors": [{"error_type": "timeout", "error_message": "geocoding took over 5 s", "tool": "geocode_city"}],
    "observations": "A retry of geocode_city worked.",
    "success": True,
    "timestamp": "2025-03-03T09:02:00Z",
}
#: Each strategy's answer (the tool's input), the layer its memory goes to, and the usage its response reports.
ANSWERS: dict[str, tuple[dict[str, Any], str, tuple[int, int]]] = {
    "facts": (
        {
            "facts": [
                {
                    "text": "Alice works at Acme as a data engineer.",
                    "subject": "Alice's employer",
                    "sourceIds": ["m-1"],
                    "occurredAt": "2025-03",
                }
            ]
        },
        "user",
        (612, 48),
    ),
    "preferences": (
        {"preferences": [{"text": "Alice prefers window seats.", "subject": "preferred seat", "sourceIds": ["m-2"]}]},
        "user",
        (587, 31),
    ),
    "summary": (
        {"summary": [{"text": "Alice told of her job at Acme and her seat preference.", "sourceIds": ["m-1", "m-2"]}]},
        "session",
        (640, 40),
    ),
    "lessons": (
        {
            "lessons": [
                {
                    "text": "When geocode_city times out, one retry is enough to get the forecast.",
                    "subject": "geocode_city timeouts",
                    "sourceIds": ["x-1"],
                }
            ]
        },
        "agent",
        (701, 57),
    ),
}


class StubbedBedrock(Services):
    """Services as configured for Bedrock, whose extraction client is the stubbed one."""

    def __init__(self, settings: Settings, client: Any) -> None:
        super().__init__(settings)
        self._client = client

    def _bedrock_for_extraction(self) -> Any:
        return self._client


@pytest.fixture
def client() -> Any:
    return boto3.client(
        "bedrock-runtime", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubbed:
        yield stubbed
        stubbed.assert_no_pending_responses()


@pytest.fixture
def prompts(client: Any) -> list[str]:
    """The user message of every Converse call, as sent."""
    sent: list[str] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        sent.append(params["messages"][0]["content"][0]["text"])

    client.meta.events.register("provide-client-params.bedrock-runtime.Converse", capture)
    return sent


def services_on(tmp_path: Path, client: Any, strategies: tuple[str, ...], judge: bool = False) -> Services:
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        extractor="bedrock",
        extractor_model_id=MODEL_ID,
        aws_region=REGION,
        extraction_strategies=strategies,
        extraction_judge=judge,
    )
    services = StubbedBedrock(settings, client)
    assert isinstance(services.extractor_for(None), BedrockExtractor)
    return services


def call(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, ALICE, payload)


def expected_request(system: str, name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The documented Converse request with one tool, forced, its schema as JSON."""
    return {
        "modelId": MODEL_ID,
        "system": [{"text": system}],
        "messages": [{"role": "user", "content": [{"text": ANY}]}],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}],
            "toolChoice": {"tool": {"name": name}},
        },
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0.0},
    }


def strategy_request(strategy: Strategy) -> dict[str, Any]:
    return expected_request(strategy.system, strategy.tool_name, strategy.tool_description, strategy.schema)


def response(name: str, arguments: dict[str, Any], usage: tuple[int, int]) -> dict[str, Any]:
    """A Converse response as documented, the tool's input in a toolUse block after some text."""
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Recording them."},
                    {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name, "input": arguments}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)},
        "metrics": {"latencyMs": 850},
    }


def store_turns(services: Services) -> None:
    assert call(services, "add_messages", {"messages": TURNS})["stored"] == 2
    assert call(services, "add_execution", EXECUTION)["success"] is True


def expect_strategy(stubber: Stubber, name: str) -> None:
    strategy = STRATEGIES[name]
    arguments, _, usage = ANSWERS[name]
    stubber.add_response("converse", response(strategy.tool_name, arguments, usage), strategy_request(strategy))


def check_part(services: Services, part: dict[str, Any]) -> None:
    """The strategy's part of the run: its candidate added with the response's tokens, stored in its layer."""
    name = part["strategy"]
    arguments, layer, usage = ANSWERS[name]
    (proposed,) = arguments[STRATEGIES[name].items_key]
    assert part["failure"] is None, part
    assert part["model"] == f"bedrock:{MODEL_ID}"
    assert (part["inputTokens"], part["outputTokens"]) == usage
    (candidate,) = part["candidates"]
    assert (candidate["text"], candidate["sourceIds"], candidate["decision"]) == (
        proposed["text"],
        proposed["sourceIds"],
        "added",
    )
    (memory,) = [
        m for m in call(services, "memory_list", {"layer": layer})["memories"] if m["tags"] == [STRATEGIES[name].tag]
    ]
    assert memory["memoryId"] == candidate["memoryId"]
    assert memory["metadata"]["source"] == "extraction"
    provenance = memory["metadata"]["provenance"]
    assert (provenance["strategy"], provenance["model"], provenance["messageIds"]) == (
        name,
        f"bedrock:{MODEL_ID}",
        proposed["sourceIds"],
    )


@pytest.mark.parametrize("name", ["facts", "preferences", "summary", "lessons"])
def test_each_strategy_sends_the_documented_converse_request_and_uses_the_documented_answer(
    tmp_path: Path, client: Any, stubber: Stubber, prompts: list[str], name: str
) -> None:
    services = services_on(tmp_path, client, (name,))
    store_turns(services)
    expect_strategy(stubber, name)

    answer = call(services, "memory_extract", {})
    stubber.assert_no_pending_responses()
    (part,) = answer["run"]["strategies"]
    check_part(services, part)
    assert answer["pendingTurns"] == 0
    (prompt,) = prompts
    assert answer["run"]["turns"] == (["x-1"] if name == "lessons" else ["m-1", "m-2"])
    if name == "lessons":
        assert "[x-1] 2025-03-03T09:02:00" in prompt and "geocode_city" in prompt
        assert "[m-1]" not in prompt
    else:
        assert "[m-1] 2025-03-03T09:00:00" in prompt and "[m-2]" in prompt
        assert "[x-1]" not in prompt
    status = call(services, "extraction_status", {})
    (counted,) = [s for s in status["strategies"] if s["strategy"] == name]
    assert (counted["inputTokens"], counted["outputTokens"], counted["added"]) == (*ANSWERS[name][2], 1)


def test_one_run_of_every_strategy_sends_one_request_each_in_order(
    tmp_path: Path, client: Any, stubber: Stubber, prompts: list[str]
) -> None:
    order = ("facts", "preferences", "summary", "lessons")
    services = services_on(tmp_path, client, order)
    store_turns(services)
    for name in order:
        expect_strategy(stubber, name)

    answer = call(services, "memory_extract", {})
    assert [part["strategy"] for part in answer["run"]["strategies"]] == list(order)
    for part in answer["run"]["strategies"]:
        check_part(services, part)
    assert sorted(answer["run"]["turns"]) == ["m-1", "m-2", "x-1"]
    assert (len(prompts), answer["pendingTurns"]) == (4, 0)


MERGED = "Alice worked at Acme as a data engineer and now works at Globex."


@pytest.mark.parametrize(
    ("judged", "decision"),
    [("update", "superseded"), ("merge", "superseded"), ("same", "kept")],
    ids=lambda v: str(v),
)
def test_the_consolidation_judge_sends_the_documented_request_and_its_decision_stands(
    tmp_path: Path, client: Any, stubber: Stubber, prompts: list[str], judged: str, decision: str
) -> None:
    services = services_on(tmp_path, client, ("facts",), judge=True)
    store_turns(services)
    expect_strategy(stubber, "facts")  # the first fact: nothing stored to compare it with, no judge call
    first = call(services, "memory_extract", {})["run"]["strategies"][0]["candidates"][0]

    moved = {"id": "m-3", "role": "user", "content": "I left Acme; I work at Globex now.", "at": "2025-09-01T08:00:00Z"}
    call(services, "add_messages", {"messages": [moved]})
    changed = {"facts": [{"text": "Alice works at Globex.", "subject": "Alice's employer", "sourceIds": ["m-3"]}]}
    stubber.add_response(
        "converse", response("record_facts", changed, (333, 22)), strategy_request(STRATEGIES["facts"])
    )
    judge = expected_request(JUDGE_SYSTEM, JUDGE_TOOL.name, JUDGE_TOOL.description, JUDGE_TOOL.schema)
    verdict = {"decisions": [{"pair": 0, "decision": judged, **({"text": MERGED} if judged == "merge" else {})}]}
    stubber.add_response("converse", response(JUDGE_TOOL.name, verdict, (120, 9)), judge)

    answer = call(services, "memory_extract", {})
    stubber.assert_no_pending_responses()
    (part,) = answer["run"]["strategies"]
    (candidate,) = part["candidates"]
    assert candidate["decision"] == decision
    assert candidate["supersedes"] == (first["memoryId"] if decision == "superseded" else None)
    assert "[0] subject: Alice's employer" in prompts[-1]
    assert "earlier: Alice works at Acme as a data engineer." in prompts[-1]
    assert "newer: Alice works at Globex." in prompts[-1]
    assert part["inputTokens"] >= 333 and part["outputTokens"] >= 22, "the strategy's call's usage, at least"
    listed = call(services, "memory_list", {"layer": "user"})["memories"]
    current = [m["content"] for m in listed if not m.get("supersededBy")]
    assert (
        current
        == {
            "update": ["Alice works at Globex."],
            "merge": [MERGED],
            "same": ["Alice works at Acme as a data engineer."],
        }[judged]
    ), "one current memory of the subject, whatever the judge answers"


def test_an_answer_without_the_tool_use_is_asked_again_then_a_failure_with_the_models_text(
    tmp_path: Path, client: Any, stubber: Stubber
) -> None:
    services = services_on(tmp_path, client, ("facts",))
    store_turns(services)
    prose = {
        "output": {"message": {"role": "assistant", "content": [{"text": "I cannot call tools today."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 500, "outputTokens": 7, "totalTokens": 507},
        "metrics": {"latencyMs": 300},
    }
    for _ in range(2):
        stubber.add_response("converse", prose, strategy_request(STRATEGIES["facts"]))

    answer = call(services, "memory_extract", {})
    stubber.assert_no_pending_responses()
    failure = answer["run"]["strategies"][0]["failure"]
    assert failure["raw"] == "I cannot call tools today."
    assert failure["attempts"] == 2
    assert "without calling record_facts" in failure["message"]
    assert "end_turn" in failure["message"]
    part = answer["run"]["strategies"][0]
    assert (part["inputTokens"], part["outputTokens"]) == (1000, 14), "both answers' usage is counted"
    assert answer["pendingTurns"] == 2

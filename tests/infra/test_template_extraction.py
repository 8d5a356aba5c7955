"""Extraction on AWS in template.yaml: its parameters are the settings', its queues and mappings are as designed
(docs/deploy.md, "Extraction on AWS"), and only the functions that store turns may send to its queue.

Read as plain YAML, with the template's own conditions evaluated (tests/infra/test_template.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from infra.test_template import (
    _actions,
    _served_tools,
    _statements,
    choose,
    condition,
    functions,
    parameters,
    resources_of,
    template,
)

from mnemo.entry.extraction_events import RESERVE_SECONDS, queue_name
from mnemo.settings import Settings
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]
FIFO_ARN = {"GetAtt": "ExtractionQueue.Arn"}
WAKE_ARN = {"GetAtt": "ExtractionWakeQueue.Arn"}
EXTRACTION = "ExtractionFunction"


def properties(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["Resources"][name]["Properties"]
    return found


def timeout_of(doc: dict[str, Any], name: str) -> int:
    return int(properties(doc, name).get("Timeout", doc["Globals"]["Function"]["Timeout"]))


# ------------------------------------------------------------- parameters ---
def test_the_parameters_are_the_settings() -> None:
    doc = template()
    params = doc["Parameters"]
    fields = Settings.model_fields
    assert params["ExtractionStrategies"]["Default"] == "" and fields["extraction_strategies"].default == ()
    every = params["ExtractionEveryTurns"]
    bounds = {type(m).__name__: m for m in fields["extraction_every_turns"].metadata}
    assert every["Default"] == fields["extraction_every_turns"].default == 6
    assert (every["MinValue"], every["MaxValue"]) == (bounds["Ge"].ge, bounds["Le"].le)
    idle = params["ExtractionIdleMinutes"]
    assert idle["Default"] == fields["extraction_idle_minutes"].default == 10
    # The idle wake-up is an SQS message delay: at most 900 s.
    assert idle["MaxValue"] == 15 == {type(m).__name__: m for m in fields["extraction_idle_minutes"].metadata}["Le"].le
    judge = params["ExtractionJudge"]
    assert judge["Default"] == "on" and Settings.from_env({"MNEMO_EXTRACTION_JUDGE": "on"}).extraction_judge is True
    assert Settings.from_env({"MNEMO_EXTRACTION_JUDGE": "off"}).extraction_judge is False
    # The model is ExtractorModelId's, the one build_memory_from_text uses: no second model parameter.
    assert not [name for name in params if name.startswith("Extraction") and "Model" in name]


@pytest.mark.parametrize(
    ("value", "on"),
    [("", False), ("none", False), ("all", True), ("facts", True), ("facts,preferences,summary,lessons,graph", True)],
)
def test_every_strategy_list_the_parameter_takes_is_one_the_setting_takes(value: str, on: bool) -> None:
    doc = template()
    assert re.fullmatch(doc["Parameters"]["ExtractionStrategies"]["AllowedPattern"], value)
    assert bool(Settings.from_env({"MNEMO_EXTRACTION_STRATEGIES": value}).extraction_strategies) is on
    assert condition(doc, "ExtractionOn", parameters(doc, ExtractionStrategies=value)) is on


@pytest.mark.parametrize("value", ["facts,", "Facts", "facts graph", "memories", "all,facts", ",facts"])
def test_the_parameter_refuses_what_the_setting_would_refuse(value: str) -> None:
    assert not re.fullmatch(template()["Parameters"]["ExtractionStrategies"]["AllowedPattern"], value)


def test_every_function_knows_whether_extraction_is_on() -> None:
    """The tools that store turns mark them waiting only when it is on; extraction_status reports it."""
    variables = template()["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["MNEMO_EXTRACTION_STRATEGIES"] == {"Ref": "ExtractionStrategies"}
    assert variables["MNEMO_EXTRACTION_EVERY_TURNS"] == {"Ref": "ExtractionEveryTurns"}
    assert variables["MNEMO_EXTRACTION_IDLE_MINUTES"] == {"Ref": "ExtractionIdleMinutes"}


# ------------------------------------------------------------------ queues ---
def test_the_fifo_queue_groups_by_session_and_deduplicates_by_notice() -> None:
    doc = template()
    queue = properties(doc, "ExtractionQueue")
    assert queue["FifoQueue"] is True and queue["ContentBasedDeduplication"] is False
    assert queue["QueueName"] == {"Sub": "mnemo-${Stage}-extraction.fifo"}
    assert (queue["DeduplicationScope"], queue["FifoThroughputLimit"]) == ("messageGroup", "perMessageGroupId")
    dead = properties(doc, "ExtractionDeadLetterQueue")
    assert dead["FifoQueue"] is True and dead["QueueName"]["Sub"].endswith(".fifo")  # a FIFO queue's DLQ is FIFO
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"GetAtt": "ExtractionDeadLetterQueue.Arn"},
        "maxReceiveCount": 5,
    }


def test_the_wake_queue_is_a_standard_queue_for_its_per_message_delay() -> None:
    doc = template()
    wake = properties(doc, "ExtractionWakeQueue")
    assert "FifoQueue" not in wake and "DelaySeconds" not in wake  # each wake-up says its own delay
    assert wake["RedrivePolicy"] == {
        "deadLetterTargetArn": {"GetAtt": "ExtractionWakeDeadLetterQueue.Arn"},
        "maxReceiveCount": 5,
    }


@pytest.mark.parametrize("queue", ["ExtractionQueue", "ExtractionWakeQueue"])
def test_messages_stay_hidden_for_six_function_timeouts_and_their_dead_letters_outlive_them(queue: str) -> None:
    """Lambda's advice for SQS event sources; a dead letter's age counts from its first enqueue, so the
    dead-letter queue keeps messages longer than the queue (4 days by default) does."""
    doc = template()
    source = properties(doc, queue)
    assert source["VisibilityTimeout"] >= 6 * timeout_of(doc, EXTRACTION)
    target = source["RedrivePolicy"]["deadLetterTargetArn"]["GetAtt"].removesuffix(".Arn")
    dead = properties(doc, target)
    assert dead["MessageRetentionPeriod"] > source.get("MessageRetentionPeriod", 4 * 24 * 3600)
    assert source["SqsManagedSseEnabled"] is True and dead["SqsManagedSseEnabled"] is True


def test_both_queues_feed_the_extraction_function_only_while_extraction_is_on() -> None:
    doc = template()
    mappings = {
        p["EventSourceArn"]["GetAtt"]: p
        for p in (r["Properties"] for r in resources_of(doc, "AWS::Lambda::EventSourceMapping").values())
    }
    assert set(mappings) == {"ExtractionQueue.Arn", "ExtractionWakeQueue.Arn"}
    on, off = parameters(doc, ExtractionStrategies="all"), parameters(doc)
    for mapping in mappings.values():
        assert mapping["FunctionName"] == {"Ref": EXTRACTION}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert 1 <= mapping["BatchSize"] <= 10  # a FIFO queue's most
        assert "MaximumBatchingWindowInSeconds" not in mapping  # FIFO queues take none
        assert choose(doc, mapping["Enabled"], on) is True and choose(doc, mapping["Enabled"], off) is False
        assert 2 <= mapping["ScalingConfig"]["MaximumConcurrency"] <= 1000
    # A SAM SQS event would also attach AWSLambdaSQSQueueExecutionRole, which reaches every queue.
    assert not [e for e in properties(doc, EXTRACTION).get("Events", {}).values() if e["Type"] == "SQS"]


# ---------------------------------------------------------------- function ---
def test_the_extraction_function() -> None:
    doc = template()
    function = properties(doc, EXTRACTION)
    assert function["CodeUri"] == "functions/extraction/" and function["Handler"] == "app.handler"
    assert "from mnemo.entry.extraction_events import handler" in (ROOT / "functions/extraction/app.py").read_text()
    assert timeout_of(doc, EXTRACTION) > RESERVE_SECONDS
    variables = function["Environment"]["Variables"]
    assert variables == {
        "MNEMO_EXTRACTOR": "bedrock",
        "MNEMO_EXTRACTOR_MODEL_ID": {"Ref": "ExtractorModelId"},
        "MNEMO_EXTRACTION_JUDGE": {"Ref": "ExtractionJudge"},
        "MNEMO_EXTRACTION_QUEUE_URL": {"Ref": "ExtractionQueue"},
        "MNEMO_EXTRACTION_WAKE_QUEUE_URL": {"Ref": "ExtractionWakeQueue"},
    }
    assert {name.removeprefix("MNEMO_").lower() for name in variables} <= set(Settings.model_fields) | {"extractor"}
    # The handler tells the queues apart by name, as their ARNs and URLs give it.
    for queue in ("ExtractionQueue", "ExtractionWakeQueue"):
        name = properties(doc, queue)["QueueName"]["Sub"].replace("${Stage}", "dev")
        assert queue_name(f"arn:aws:sqs:eu-west-1:123456789012:{name}") == name
        assert queue_name(f"https://sqs.eu-west-1.amazonaws.com/123456789012/{name}") == name


# ------------------------------------------------------------------ rights ---
def _sqs(doc: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    """Function -> SQS action -> the queues (logical ids) it is granted on, from its inline statements."""
    found: dict[str, dict[str, set[str]]] = {}
    for name, statements in _statements(doc, parameters(doc)).items():
        for statement in statements:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in _actions(statement):
                if action.startswith("sqs:"):
                    for resource in resources:
                        queue = resource["GetAtt"].removesuffix(".Arn")
                        found.setdefault(name, {}).setdefault(action, set()).add(queue)
    return found


def test_only_the_functions_that_store_turns_may_notify_and_they_know_where() -> None:
    doc = template()
    catalog = load_catalog(experimental=True)
    served = _served_tools(doc)
    notifying = {name for name, tools in served.items() if any(catalog[t].rights.extraction_queue for t in tools)}
    assert {
        "AddConversationFunction",
        "AddExecutionFunction",
        "BedrockConversationsFunction",
        "McpFunction",
    } <= notifying
    granted = _sqs(doc)
    for name in notifying - {EXTRACTION}:
        assert granted.get(name) == {"sqs:SendMessage": {"ExtractionQueue"}}, name
        variables = properties(doc, name).get("Environment", {}).get("Variables", {})
        assert variables.get("MNEMO_EXTRACTION_QUEUE_URL") == {"Ref": "ExtractionQueue"}, name
    for name in set(functions(doc)) - notifying - {EXTRACTION}:
        assert name not in granted, name
        assert "MNEMO_EXTRACTION_QUEUE_URL" not in str(properties(doc, name).get("Environment")), name


def test_the_extraction_function_consumes_both_queues_and_sends_to_both() -> None:
    granted = _sqs(template())[EXTRACTION]
    assert granted == {
        "sqs:ReceiveMessage": {"ExtractionQueue", "ExtractionWakeQueue"},
        "sqs:DeleteMessage": {"ExtractionQueue", "ExtractionWakeQueue"},
        "sqs:GetQueueAttributes": {"ExtractionQueue", "ExtractionWakeQueue"},
        # Forwards due wake-ups into the FIFO queue; arms wake-ups on the wake queue.
        "sqs:SendMessage": {"ExtractionQueue", "ExtractionWakeQueue"},
    }

"""One Logger, Metrics and Tracer for every door (mnemo.observability), seen from the outside.

Metrics are read as CloudWatch would: the EMF documents a handler prints on stdout, checked against
the embedded metric format specification
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
Log lines are read from the one Logger's handler.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import jsonschema
import pytest
from botocore.stub import Stubber

from aws_events import FakeLambdaContext, bedrock_agent_event, rest_event
from helpers import local_server
from mnemo import observability, telemetry
from mnemo.adapters.aws.bedrock_extractor import BedrockExtractor
from mnemo.adapters.aws.titan import TitanEmbedder
from mnemo.errors import ProviderError, RateLimited
from mnemo.outbox import MAX_ATTEMPTS
from mnemo.ports import ExtractionTool
from mnemo.runtime import Services
from mnemo.tools.registry import Tool

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "shared" / "mnemo"
AUTH = {"principalId": "alice", "tenant": "acme", "user": "alice", "project": "p1", "roles": "writer"}
REQUEST_ID = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"  # requestContext.requestId of rest_event
UNITS = [
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
    "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second",
    "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second",
    "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None",
]  # fmt: skip
#: The specification's structure: the metadata object, its MetricDirectives and MetricDefinitions.
EMF_SCHEMA = {
    "type": "object",
    "required": ["_aws"],
    "properties": {
        "_aws": {
            "type": "object",
            "required": ["Timestamp", "CloudWatchMetrics"],
            "properties": {
                "Timestamp": {"type": "integer", "minimum": 0},
                "CloudWatchMetrics": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["Namespace", "Dimensions", "Metrics"],
                        "additionalProperties": False,
                        "properties": {
                            "Namespace": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": r"\S"},
                            "Dimensions": {
                                "type": "array",
                                "items": {
                                    "type": "array",
                                    "maxItems": 30,
                                    "items": {"type": "string", "minLength": 1, "maxLength": 250},
                                },
                            },
                            "Metrics": {
                                "type": "array",
                                "maxItems": 100,
                                "items": {
                                    "type": "object",
                                    "required": ["Name"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "Name": {"type": "string", "minLength": 1, "maxLength": 1024},
                                        "Unit": {"enum": UNITS},
                                        "StorageResolution": {"enum": [1, 60]},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        }
    },
}


# ----------------------------------------------------------------- reading ---
def emf_documents(printed: str) -> list[dict[str, Any]]:
    """Every EMF document in ``printed``, each checked against the specification."""
    documents = []
    for line in printed.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "_aws" in value:
            check_emf(value)
            documents.append(value)
    return documents


def check_emf(document: dict[str, Any]) -> None:
    """The schema, then the target members: each dimension a string and each metric a number at the root."""
    jsonschema.validate(document, EMF_SCHEMA)
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            for name in dimension_set:
                assert isinstance(document.get(name), str), name
                assert document[name], name
        for metric in directive["Metrics"]:
            value = document.get(metric["Name"])
            values = value if isinstance(value, list) else [value]
            assert values, metric
            assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in values), metric


def the_document(printed: str) -> dict[str, Any]:
    (document,) = emf_documents(printed)
    return document


def the_documents(printed: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The invocation's document (by ``[service]`` alone) and its errors' documents, by error code."""
    (main, *errors) = emf_documents(printed)
    assert dimension_sets(main) == [["service"]]
    by_code = {}
    for document in errors:
        assert dimension_sets(document) == [["service", "errorCode"]]
        assert metric_names(document) == {"Errors"}
        by_code[document["errorCode"]] = document
    assert len(by_code) == len(errors)  # one document per code
    return main, by_code


def value(document: dict[str, Any], name: str) -> float:
    """A metric's total in the document (Powertools prints the values as an array)."""
    found = document[name]
    return float(sum(found)) if isinstance(found, list) else float(found)


def dimension_sets(document: dict[str, Any]) -> list[list[str]]:
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    return [list(dimensions) for dimensions in directive["Dimensions"]]


def metric_names(document: dict[str, Any]) -> set[str]:
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    return {metric["Name"] for metric in directive["Metrics"]}


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The Logger's lines (JSON), at DEBUG, while the test runs."""
    buffer = io.StringIO()
    handler = observability.logger.registered_handler
    previous = handler.setStream(buffer)
    level = observability.logger.log_level
    observability.logger.setLevel(logging.DEBUG)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]
    observability.logger.setLevel(level)
    if previous is not None:
        handler.setStream(previous)


def load(folder: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fn_{folder}", ROOT / "functions" / folder / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def invoke(tool: str, body: Any) -> tuple[int, dict[str, Any]]:
    answer = load(tool).handler(rest_event(tool, body, AUTH), FakeLambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


# ------------------------------------------------------------- API Gateway ---
def test_a_tool_call_that_records_nothing_prints_nothing(services: Services, capsys: Any) -> None:
    """No latency metric: AWS/Lambda's free Duration says it per function. The local embedder reports no
    tokens, so this add records nothing, and prints no document (a log line CloudWatch would bill)."""
    status, _ = invoke("memory_add", {"content": "Deploys freeze on Dec 20"})

    assert status == 200
    assert emf_documents(capsys.readouterr().out) == []


def test_a_tool_call_prints_one_emf_document_of_what_it_recorded(services: Services, capsys: Any) -> None:
    invoke("memory_add", {"content": "Deploys freeze on Dec 20"})
    capsys.readouterr()
    status, _ = invoke("memory_add", {"content": "Deploys freeze on Dec 20"})
    document = the_document(capsys.readouterr().out)

    assert status == 200
    assert document["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Mnemo"  # no POWERTOOLS_METRICS_NAMESPACE here
    # No tool dimension: the tool's own function is its FunctionName in AWS/Lambda's free metrics.
    assert dimension_sets(document) == [["service"]]
    assert document["service"] == "mnemo" and "tool" not in document
    assert metric_names(document) == {"DeduplicatedAdds"}
    assert {"Unit": "Count", "Name": "DeduplicatedAdds"} in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]


def test_bad_input_is_counted_as_an_error_by_its_code(services: Services, capsys: Any) -> None:
    status, envelope = invoke("memory_add", {"content": ""})
    document, by_code = the_documents(capsys.readouterr().out)

    assert status == 400
    assert envelope["errorCode"] == "INVALID_INPUT"
    # The envelope is an answer to Lambda (no Errors in AWS/Lambda): the door counts it, and by its code
    # in a document of its own, so that the code is a dimension of Errors alone.
    assert value(document, "Errors") == 1
    assert "Latency" not in document
    assert set(by_code) == {"INVALID_INPUT"} and value(by_code["INVALID_INPUT"], "Errors") == 1


def test_an_add_that_finds_its_duplicate_is_counted(services: Services, capsys: Any) -> None:
    invoke("memory_add", {"content": "The build cache lives in eu-west-1"})
    assert emf_documents(capsys.readouterr().out) == []  # nothing recorded: no document
    _, added = invoke("memory_add", {"content": "The build cache lives in eu-west-1"})

    assert added["deduplicated"] is True
    assert value(the_document(capsys.readouterr().out), "DeduplicatedAdds") == 1


def test_what_a_caller_typed_is_no_dimension(services: Services, capsys: Any) -> None:
    event = rest_event("memory_add", {"content": "x"}, AUTH)
    event["path"] = "/v1/tools/drop_table_users"
    answer = load("memory_add").handler(event, FakeLambdaContext())
    printed = capsys.readouterr().out
    _, by_code = the_documents(printed)

    assert answer["statusCode"] == 404
    assert set(by_code) == {"NOT_FOUND"}
    assert "drop_table_users" not in printed


def test_every_line_of_a_call_carries_the_request_id_and_the_tool(
    services: Services, log_lines: Callable[[], list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A domain module's own logger (a child of the one Logger) writes inside the call: its line is stamped too."""
    run = Tool.run

    def noisy(self: Tool, *args: Any) -> Any:
        logging.getLogger("mnemo.memory.service").warning("inside the tool")
        return run(self, *args)

    monkeypatch.setattr(Tool, "run", noisy)
    invoke("memory_add", {"content": "Postgres 16 in staging"})
    observability.logger.info("after the call")
    lines = log_lines()

    inside = [line for line in lines if line["message"] == "inside the tool"]
    assert len(inside) == 1
    assert inside[0]["tool"] == "memory_add"
    assert inside[0]["service"] == "mnemo"
    call_lines = [line for line in lines if line["message"] != "after the call"]
    assert call_lines
    assert {line["correlation_id"] for line in call_lines} == {REQUEST_ID}
    assert {line["function_request_id"] for line in call_lines} == {FakeLambdaContext.aws_request_id}
    (summary,) = [line for line in lines if line["message"] == "tool call"]
    assert summary["tool"] == "memory_add"
    assert summary["latencyMs"] > 0
    assert "errorCode" not in summary
    (after,) = [line for line in lines if line["message"] == "after the call"]
    assert "tool" not in after


# --------------------------------------------------------- MCP and Bedrock ---
def test_an_mcp_call_is_measured_and_its_lines_carry_the_json_rpc_id(
    services: Services, capsys: Any, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "x", "limit": 0}},
    }
    event = rest_event("mcp", message, AUTH)
    event["path"] = event["resource"] = "/mcp"
    event["headers"].update({"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"})
    answer = json.loads(load("mcp").handler(event, FakeLambdaContext())["body"])
    document, by_code = the_documents(capsys.readouterr().out)

    assert answer["result"]["isError"] is True
    assert (value(document, "Errors"), set(by_code)) == (1, {"INVALID_INPUT"})
    (summary,) = [line for line in log_lines() if line["message"] == "tool call"]
    assert summary["tool"] == "memory_search"
    assert summary["errorCode"] == "INVALID_INPUT"
    assert (summary["mcpRequestId"], summary["mcpMethod"], summary["correlation_id"]) == ("7", "tools/call", REQUEST_ID)


def test_a_bedrock_action_is_measured_and_correlated_by_session(
    services: Services, capsys: Any, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    event = bedrock_agent_event(
        {"mnemoUser": "alice", "mnemoTenant": "acme"},
        function="memory_add",
        parameters=[{"name": "content", "type": "string", "value": ""}],
    )
    answer = load("bedrock_memory").handler(event, FakeLambdaContext())
    document, by_code = the_documents(capsys.readouterr().out)

    assert answer["response"]["functionResponse"]["responseState"] == "REPROMPT"
    assert (value(document, "Errors"), set(by_code)) == (1, {"INVALID_INPUT"})
    (summary,) = [line for line in log_lines() if line["message"] == "tool call"]
    assert summary["correlation_id"] == "111122223333-conv-1"
    assert summary["actionGroup"] == "mnemo-memory"


# ----------------------------------------------------------------- indexer ---
def test_the_drain_publishes_the_outbox_depth_and_its_dead_letters(
    services: Services, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def gone(texts: Any) -> Any:
        raise ProviderError("model gone")

    monkeypatch.setattr(services.embedder, "embed", gone)
    invoke("memory_add", {"content": "The zebra gateway runs in Dublin"})
    for _ in range(MAX_ATTEMPTS - 1):
        services.outbox.drain()
    schedule = {"id": "cdc73f9d-aea9-11e3-9d5a-835b769c0d9c", "source": "aws.events", "detail-type": "Scheduled Event"}
    capsys.readouterr()

    summary = load("indexer").handler(schedule, FakeLambdaContext())  # its fifth failure: a dead letter
    document = the_document(capsys.readouterr().out)
    assert (summary["deadLetters"], summary["stillPending"]) == (1, 0)
    assert dimension_sets(document) == [["service"]]
    # Only the metrics that are not zero: an idle stack publishes none (the alarms treat missing as OK).
    assert metric_names(document) == {"IndexOutboxDeadLetters"}
    assert value(document, "IndexOutboxDeadLetters") == 1

    invoke("memory_add", {"content": "A second memory that waits in the outbox"})
    capsys.readouterr()
    summary = load("indexer").handler(schedule, FakeLambdaContext())  # its first failure: still pending
    document = the_document(capsys.readouterr().out)
    assert (summary["deadLetters"], summary["stillPending"]) == (1, 1)
    assert (value(document, "IndexOutboxDepth"), value(document, "IndexOutboxDeadLetters")) == (1, 1)


def test_stream_records_handed_back_are_counted(services: Services, capsys: Any) -> None:
    def record(sequence: str, keys: dict[str, Any]) -> dict[str, Any]:
        return {
            "eventID": f"c4ca4238a0b923820dcc509a6f7584{sequence}",
            "eventName": "INSERT",
            "eventSource": "aws:dynamodb",
            "dynamodb": {"Keys": keys, "StreamViewType": "KEYS_ONLY", "SequenceNumber": sequence},
        }

    unreadable = record("11", {"pk": {"S": "T#acme"}})
    skipped = record("12", {"pk": {"S": "T#acme"}, "sk": {"S": "CONV#c1"}})
    answer = load("indexer").handler({"Records": [unreadable, skipped]}, FakeLambdaContext())
    document = the_document(capsys.readouterr().out)

    assert answer["batchItemFailures"] == [{"itemIdentifier": "11"}]
    assert value(document, "IndexerFailedRecords") == 1


# ---------------------------------------------------------------- adapters ---
def _titan_body(tokens: int) -> Any:
    from botocore.response import StreamingBody

    raw = json.dumps({"embedding": [1.0] + [0.0] * 255, "inputTextTokenCount": tokens}).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_titan_tokens_and_bedrock_throttles_are_recorded(capsys: Any) -> None:
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    embedder = TitanEmbedder(lambda: client, dimensions=256)

    @observability.door()
    def handler(event: Any, context: Any) -> Any:
        return embedder.embed(["first text", "second text"])

    with Stubber(client) as stub:
        stub.add_response("invoke_model", {"body": _titan_body(7), "contentType": "application/json"})
        stub.add_response("invoke_model", {"body": _titan_body(5), "contentType": "application/json"})
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        handler({}, FakeLambdaContext())
        embedded = the_document(capsys.readouterr().out)
        with pytest.raises(RateLimited):
            handler({}, FakeLambdaContext())
        throttled = the_document(capsys.readouterr().out)

    assert embedded["EmbeddingTokens"] == [7, 5]  # one value per call; CloudWatch sums them
    assert value(throttled, "BedrockThrottles") == 1
    assert "EmbeddingTokens" not in throttled


def test_converse_tokens_are_recorded(capsys: Any) -> None:
    client = boto3.client("bedrock-runtime", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    extractor = BedrockExtractor(lambda: client, "amazon.nova-lite-v1:0")
    tool = ExtractionTool("record", "Record the answer", {"type": "object"})
    use = {"toolUse": {"toolUseId": "t", "name": "record", "input": {}}}
    response = {
        "output": {"message": {"role": "assistant", "content": [use]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 412, "outputTokens": 96, "totalTokens": 508},
        "metrics": {"latencyMs": 850},
    }

    with Stubber(client) as stub:
        stub.add_response("converse", response)
        observability.door()(lambda event, context: extractor.extract("system", "text", tool))({}, FakeLambdaContext())
    document = the_document(capsys.readouterr().out)

    assert (value(document, "ModelInputTokens"), value(document, "ModelOutputTokens")) == (412, 96)


def test_an_opensearch_429_is_counted() -> None:
    from mnemo.adapters.aws.opensearch import errors as opensearch_errors

    counted: list[tuple[str, float, str]] = []
    previous = telemetry.install(lambda *figure: counted.append(figure))
    try:
        error = opensearch_errors.status_error(429, "too_many_requests")
    finally:
        telemetry.install(previous)

    assert isinstance(error, RateLimited)
    assert counted == [("OpenSearchThrottles", 1, "Count")]


# ---------------------------------------------------------- one per call ---
def test_calls_in_one_invocation_share_its_document_and_their_codes_stay_on_errors(
    services: Services, capsys: Any
) -> None:
    @observability.door()
    def handler(event: Any, context: Any) -> None:
        with observability.tool_call("memory_add"):
            telemetry.count("EmbeddingTokens", 3)
        for _ in range(2):
            with observability.tool_call("memory_search") as call:
                call.failed("RATE_LIMITED")
        with observability.tool_call("memory_list") as call:
            call.failed("UNAUTHORIZED")

    handler({}, FakeLambdaContext())
    document, by_code = the_documents(capsys.readouterr().out)

    assert "Latency" not in document
    assert (value(document, "EmbeddingTokens"), value(document, "Errors")) == (3, 3)
    assert {code: value(errors, "Errors") for code, errors in by_code.items()} == {"RATE_LIMITED": 2, "UNAUTHORIZED": 1}
    handler({}, FakeLambdaContext())  # the next invocation starts from nothing
    again, _ = the_documents(capsys.readouterr().out)
    assert (value(again, "EmbeddingTokens"), value(again, "Errors")) == (3, 3)


def test_nothing_is_printed_outside_a_lambda_invocation(services: Services, capfd: Any) -> None:
    """The local server (and the CLI) measure no metrics: no EMF on the console, and counts go nowhere."""
    import urllib.request

    telemetry.count("EmbeddingTokens", 5)
    with local_server(services) as base:
        request = urllib.request.Request(
            f"{base}/v1/tools/memory_add",
            data=json.dumps({"content": "Served locally"}).encode(),
            headers={"Content-Type": "application/json", "X-Mnemo-User": "alice"},
        )
        with urllib.request.urlopen(request) as response:
            assert response.status == 200
    printed = capfd.readouterr()
    assert "_aws" not in printed.out
    assert "_aws" not in printed.err


# ------------------------------------------------------------------ tracing ---
def test_the_tracer_lives_only_inside_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert not observability.tracing_enabled()
    assert observability.tracer() is None
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "mnemo-dev-memory_add")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    assert not observability.tracing_enabled()
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "false")
    assert observability.tracing_enabled()


SCRIPT = """
import json, sys, tempfile, pathlib, importlib.util
sys.path.insert(0, "tests/support")
from aws_events import FakeLambdaContext, rest_event
from helpers import make_services
from mnemo.runtime import set_services
set_services(make_services(pathlib.Path(tempfile.mkdtemp())))
spec = importlib.util.spec_from_file_location("fn", "functions/memory_search/app.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
event = rest_event("memory_search", {"query": "x"}, {"tenant": "acme", "user": "a"})
answer = module.handler(event, FakeLambdaContext())
from mnemo import observability
print(json.dumps({"status": answer["statusCode"], "xray": "aws_xray_sdk" in sys.modules,
                  "tracer": type(observability.tracer()).__name__}), file=sys.stderr)
"""


LAMBDA = {"AWS_LAMBDA_FUNCTION_NAME": "f", "LAMBDA_TASK_ROOT": "/var/task"}  # what the runtime sets


@pytest.mark.parametrize(
    ("environment", "traced"),
    [
        ({}, False),  # the local server, the CLI, tests
        ({**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        (LAMBDA, True),
    ],
)
def test_aws_xray_sdk_is_imported_only_when_tracing(environment: dict[str, str], traced: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_LAMBDA_FUNCTION_NAME", "POWERTOOLS_TRACE_DISABLED")}
    env.update(environment, AWS_XRAY_CONTEXT_MISSING="IGNORE_ERROR")
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    (report,) = [json.loads(line) for line in run.stderr.splitlines() if line.startswith('{"status"')]

    assert report == {"status": 200, "xray": traced, "tracer": "Tracer" if traced else "NoneType"}


# ---------------------------------------------------------------- one module ---
DOORS = ["apigw", "bedrock", "mcp_lambda", "mcp_server", "indexer", "sync_events", "outline_events"]
HANDLER_DOORS = ["apigw", "bedrock", "mcp_lambda", "indexer", "sync_events", "outline_events"]


def _calls(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            yield func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def test_no_module_but_observability_builds_a_logger_metrics_or_tracer() -> None:
    strays = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "observability.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        built = ("Logger", "Metrics", "Tracer")
        strays += [f"{path.relative_to(PACKAGE)}: {name}(" for name in _calls(tree) if name in built]
        strays += [
            f"{path.relative_to(PACKAGE)}: {name}"
            for name in _calls(tree)
            if name in ("inject_lambda_context", "log_metrics", "capture_lambda_handler", "single_metric")
        ]
    assert strays == []


@pytest.mark.parametrize("door", DOORS)
def test_every_door_logs_through_the_one_logger(door: str) -> None:
    source = (PACKAGE / "entry" / f"{door}.py").read_text()
    assert "from mnemo.observability import logger" in source
    assert "getLogger" not in source


@pytest.mark.parametrize("door", HANDLER_DOORS)
def test_every_lambda_handler_is_an_observed_door(door: str) -> None:
    source = (PACKAGE / "entry" / f"{door}.py").read_text()
    assert "@observability.door(" in source


def test_adapters_count_through_the_hook_only() -> None:
    """Adapters stay free of the doors: they import mnemo.telemetry, never mnemo.observability."""
    for path in (PACKAGE / "adapters").rglob("*.py"):
        assert "mnemo.observability" not in path.read_text(), path
    assert ast.parse((PACKAGE / "telemetry.py").read_text()).body  # and the hook imports only the standard library
    imported = {
        (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(ast.parse((PACKAGE / "telemetry.py").read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {"__future__", "contextlib", "collections.abc"}

"""The memory graph tools on AWS's front doors: each tool's own Lambda (functions/<tool>/app.py) on API Gateway
REST proxy events, and the graph action group (functions/bedrock_graph/app.py) on Bedrock Agents events.

Both drive the same scenario: a fact, its entity read and enriched, a contradicting exclusive fact, graph_search
before and after the change (the old truth, then the new), an invalidation, and a deletion previewed, then
confirmed. build_memory_from_text runs on a real bedrock-runtime client whose Converse answer (a toolUse block) is
stubbed with botocore's Stubber.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from aws_events import FakeLambdaContext, rest_event
from helpers import bedrock_extraction_services
from mnemo.adapters.aws import bedrock_extractor
from mnemo.entry.bedrock import MAX_RESPONSE_BYTES, wire_size
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]
GRAPH_TOOLS = [name for name, tool in load_catalog().items() if tool.family == "graph"]
AUTH = {"principalId": "alice", "tenant": "acme", "user": "alice", "project": "p1", "roles": "writer"}
ALICE = {"mnemoUser": "alice", "mnemoTenant": "acme", "mnemoProject": "p1", "mnemoRoles": "writer"}
ENVELOPE_KEYS = {"success", "errorCode", "message", "details", "retryable"}
EXTRACTOR_MODEL = "amazon.nova-lite-v1:0"
BEFORE, AFTER = "2025-01-01T00:00:00Z", "2025-09-01T00:00:00Z"


def _load(folder: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fn_graph_{folder}", ROOT / "functions" / folder / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -------------------------------------------------------------- API Gateway ---
def invoke(tool: str, body: Any, authorizer: dict[str, Any] | None = AUTH) -> tuple[int, dict[str, Any]]:
    result = _load(tool).handler(rest_event(tool, body, authorizer), FakeLambdaContext())
    return result["statusCode"], json.loads(result["body"])


def ok(tool: str, body: Any) -> dict[str, Any]:
    status, answer = invoke(tool, body)
    assert status == 200, (tool, answer)
    assert answer["success"] is True, (tool, answer)
    return answer


def test_every_graph_tool_has_its_own_function() -> None:
    """Every tool of the catalog's graph family has its own Lambda, and the family its action group."""
    assert GRAPH_TOOLS, "the catalog serves graph tools"
    for name in GRAPH_TOOLS:
        assert f'tool_handler("{name}", family="graph")' in (ROOT / "functions" / name / "app.py").read_text()
    assert 'action_group_handler("graph")' in (ROOT / "functions" / "bedrock_graph" / "app.py").read_text()


def test_the_graph_scenario_through_each_tools_lambda(services: Services) -> None:
    link = {
        "subject": "Alice",
        "predicate": "works at",
        "object": "Acme",
        "subjectType": "person",
        "objectType": "organization",
        "text": "Alice works at Acme as a data engineer.",
        "validAt": "2024-03-01T00:00:00Z",
        "exclusive": True,
    }
    added = ok("add_memory_link", link)
    assert added["created"]
    assert added["fact"]["predicate"] == "works_at"
    assert added["subject"]["created"]
    assert ok("add_memory_link", link)["created"] is False  # a retried call stores nothing

    read = ok("get_memory_object", {"name": "alice"})
    assert read["entity"]["name"] == "Alice"
    assert [f["factId"] for f in read["facts"]] == [added["factId"]]
    assert [n["name"] for n in read["neighbours"]] == ["Acme"]
    updated = ok(
        "update_memory_object",
        {"name": "Alice", "summary": "Data engineer.", "aliases": ["Alice Smith"], "expectedVersion": 1},
    )
    assert updated["entity"]["version"] == 2
    assert updated["entity"]["aliases"] == ["Alice Smith"]

    moved = ok(
        "add_memory_link",
        {
            "subject": "Alice Smith",
            "predicate": "works_at",
            "object": "Globex",
            "text": "Alice moved to Globex.",
            "validAt": "2025-07-01T00:00:00Z",
            "exclusive": True,
        },
    )
    assert moved["invalidated"] == [added["factId"]]
    assert moved["subject"]["created"] is False

    def employer(as_of: str | None) -> list[str]:
        query = {"query": "Where does Alice work?", "kind": "facts", "threshold": 0}
        found = ok("graph_search", query | ({"asOf": as_of} if as_of else {}))
        return [fact["object"] for fact in found["facts"] if fact["predicate"] == "works_at"]

    assert employer(BEFORE) == ["Acme"]
    assert employer(AFTER) == ["Globex"]
    history = ok("get_memory_object", {"name": "Alice", "includeHistory": True, "depth": 0})
    assert {f["object"]: f["status"] for f in history["facts"]} == {"Acme": "invalid", "Globex": "valid"}

    ended = ok("invalidate_memory_link", {"factId": moved["factId"], "reason": "Alice left Globex."})
    assert ended["fact"]["status"] == "invalid"
    assert ended["alreadyInvalid"] is False
    assert ok("invalidate_memory_link", {"factId": moved["factId"]})["alreadyInvalid"] is True
    assert employer(None) == []
    assert employer(AFTER) == ["Globex"]  # it ended now: it held then

    preview = ok("delete_memory_object", {"name": "Alice"})
    assert preview["deleted"] is False
    assert preview["factsAffected"] == 2
    assert sorted(preview["neighboursAffected"]) == ["Acme", "Globex"]
    status, stale = invoke("delete_memory_object", {"name": "Alice", "confirmationToken": "del_" + "0" * 32})
    assert status == 409
    assert stale["errorCode"] == "CONFLICT"
    assert stale["details"]["field"] == "confirmationToken"
    done = ok("delete_memory_object", {"name": "Alice", "confirmationToken": preview["confirmationToken"]})
    assert done["deleted"] is True
    status, gone = invoke("get_memory_object", {"name": "Alice"})
    assert status == 404
    assert gone["errorCode"] == "NOT_FOUND"
    assert gone["details"]["field"] == "name"
    assert services.outbox.pending() == []  # every index write was settled, deletions included


@pytest.mark.parametrize(
    ("tool", "body", "field", "status", "code"),
    [
        ("add_memory_link", {"subject": "A", "object": "B"}, "predicate", 400, "INVALID_INPUT"),
        (
            "add_memory_link",
            {"subject": "A", "predicate": "p", "object": "B", "layer": "team"},
            "layer",
            400,
            "INVALID_INPUT",
        ),
        ("get_memory_object", {"name": "Nobody"}, "name", 404, "NOT_FOUND"),
        ("get_memory_object", {"name": "A", "depth": 4}, "depth", 400, "INVALID_INPUT"),
        ("update_memory_object", {"name": "Nobody", "summary": "x"}, "name", 404, "NOT_FOUND"),
        ("graph_search", {"query": "x", "limit": 51}, "limit", 400, "INVALID_INPUT"),
        ("graph_search", {"query": "x", "kind": "edges"}, "kind", 400, "INVALID_INPUT"),
        ("invalidate_memory_link", {"factId": "fct_nope"}, "factId", 400, "INVALID_INPUT"),
        ("invalidate_memory_link", {"factId": "fct_" + "0" * 24}, "factId", 404, "NOT_FOUND"),
        ("delete_memory_object", {"factId": "fct_" + "0" * 24}, "factId", 404, "NOT_FOUND"),
        ("build_memory_from_text", {"content": "   "}, "content", 400, "INVALID_INPUT"),
    ],
)
def test_bad_graph_calls_get_the_envelope_naming_the_field(
    services: Services, tool: str, body: dict[str, Any], field: str, status: int, code: str
) -> None:
    got, answer = invoke(tool, body)
    assert (got, answer["errorCode"], answer["details"].get("field")) == (status, code, field), answer
    assert set(answer) == ENVELOPE_KEYS
    assert "Traceback" not in json.dumps(answer)


def test_a_shared_layer_needs_the_writer_role_and_identity_comes_from_the_authorizer(services: Services) -> None:
    body = {"subject": "Billing", "predicate": "uses", "object": "PostgreSQL", "layer": "project"}
    status, answer = invoke("add_memory_link", body, authorizer={**AUTH, "roles": ""})
    assert status == 403
    assert answer["errorCode"] == "UNAUTHORIZED"
    status, answer = invoke("graph_search", {"query": "x"}, authorizer=None)
    assert status == 403
    assert answer["errorCode"] == "UNAUTHORIZED"
    status, answer = invoke("add_memory_link", {**body, "user": "mallory"})
    assert status == 403
    assert answer["details"]["field"] == "user"


def test_build_memory_from_text_without_a_model_says_how_to_configure_one(services: Services) -> None:
    status, answer = invoke("build_memory_from_text", {"content": "Alice works at Acme."})
    assert status == 502
    assert answer["errorCode"] == "PROVIDER_ERROR"
    assert answer["retryable"] is False
    assert "ExtractorModelId" in answer["message"]
    assert "MNEMO_EXTRACTOR" in answer["message"]


# ---------------------------------------------- Bedrock Converse, stubbed ---
EXTRACTION = {
    "entities": [
        {"name": "Spring AI", "type": "technology", "summary": "A framework for AI applications."},
        {"name": "OpenAI", "type": "organization"},
        {"name": "Amazon Bedrock", "type": "technology"},
    ],
    "facts": [
        {
            "subject": "Spring AI",
            "predicate": "integrates with",
            "object": "OpenAI",
            "text": "Spring AI integrates with OpenAI.",
        },
        {
            "subject": "Spring AI",
            "predicate": "integrates_with",
            "object": "Amazon Bedrock",
            "text": "Spring AI integrates with Amazon Bedrock.",
        },
    ],
}


def converse_answer(tool_input: dict[str, Any], name: str = "record_knowledge_graph") -> dict[str, Any]:
    """A Converse response as bedrock-runtime documents it, with the model calling the extraction tool."""
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": tool_input}}],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 420, "outputTokens": 96, "totalTokens": 516},
        "metrics": {"latencyMs": 840},
    }


@pytest.fixture
def bedrock_services(tmp_path: Path) -> Iterator[tuple[Services, Stubber]]:
    """The embedded stack configured as the template configures a function that extracts (MNEMO_EXTRACTOR=bedrock,
    the model id), its bedrock-runtime client stubbed."""
    services, stubber = bedrock_extraction_services(tmp_path, EXTRACTOR_MODEL)
    set_services(services)
    with stubber:
        yield services, stubber
    set_services(None)


def expected_converse() -> dict[str, Any]:
    return {
        "modelId": EXTRACTOR_MODEL,
        "system": ANY,
        "messages": [{"role": "user", "content": [{"text": ANY}]}],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "record_knowledge_graph", "description": ANY, "inputSchema": ANY}}],
            "toolChoice": {"tool": {"name": "record_knowledge_graph"}},
        },
        "inferenceConfig": ANY,
    }


def test_build_memory_from_text_on_bedrock_converse(bedrock_services: tuple[Services, Stubber]) -> None:
    _, stubber = bedrock_services
    text = "Spring AI is a framework for building AI applications. It integrates with OpenAI and Amazon Bedrock."
    stubber.add_response("converse", converse_answer(EXTRACTION), expected_converse())
    built = ok("build_memory_from_text", {"content": text, "previousMessages": "User asked about AI frameworks."})
    stubber.assert_no_pending_responses()
    assert built["modelCalls"] == 1
    assert built["dryRun"] is False
    assert built["entities"] == ["Spring AI", "OpenAI", "Amazon Bedrock"]
    assert [(r["from"], r["relation"], r["to"], r["created"]) for r in built["relationships"]] == [
        ("Spring AI", "integrates_with", "OpenAI", True),
        ("Spring AI", "integrates_with", "Amazon Bedrock", True),
    ]
    read = ok("get_memory_object", {"name": "Spring AI"})
    assert read["entity"]["type"] == "technology"
    assert sorted(f["object"] for f in read["facts"]) == ["Amazon Bedrock", "OpenAI"]
    assert {f["source"]["kind"] for f in read["facts"]} == {"extraction"}


def test_converse_failures_are_provider_errors(
    bedrock_services: tuple[Services, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, stubber = bedrock_services
    monkeypatch.setattr(bedrock_extractor, "RETRY_FIRST_DELAY", 0.0)
    # Throttling means the model never ran, so the extractor tries again before it gives up.
    for _ in range(1 + bedrock_extractor.NOT_PROCESSED_RETRIES):
        stubber.add_client_error(
            "converse",
            service_error_code="ThrottlingException",
            service_message="Too many requests",
            http_status_code=429,
        )
    status, answer = invoke("build_memory_from_text", {"content": "Alice works at Acme."})
    assert status == 429
    assert answer["errorCode"] == "RATE_LIMITED"
    assert answer["retryable"] is True
    stubber.add_response("converse", converse_answer({"entities": "Alice", "facts": []}))
    status, answer = invoke("build_memory_from_text", {"content": "Alice works at Acme."})
    assert status == 502
    assert answer["errorCode"] == "PROVIDER_ERROR"
    assert answer["details"]["path"] == "entities"
    answer_without_tool = converse_answer({}) | {
        "output": {"message": {"role": "assistant", "content": [{"text": "Alice works at Acme."}]}},
        "stopReason": "end_turn",
    }
    stubber.add_response("converse", answer_without_tool)
    status, answer = invoke("build_memory_from_text", {"content": "Alice works at Acme."})
    assert status == 502
    assert answer["errorCode"] == "PROVIDER_ERROR"
    assert "tool use" in answer["message"]
    stubber.assert_no_pending_responses()


# ---------------------------------------------------------- Bedrock agents ---
def prop(name: str, value: Any, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "type": kind, "value": value if isinstance(value, str) else json.dumps(value)}


def function_event(function: str, parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """A function-details action group event (Bedrock user guide, agents-lambda)."""
    return {
        "messageVersion": "1.0",
        "agent": {"name": "support-agent", "id": "AGENT12345", "alias": "TSTALIASID", "version": "DRAFT"},
        "inputText": "Alice moved to Globex",
        "sessionId": "111122223333-conv-1",
        "actionGroup": "mnemo-graph",
        "sessionAttributes": ALICE,
        "promptSessionAttributes": {},
        "function": function,
        "parameters": parameters,
    }


def openapi_event(tool: str, properties: list[dict[str, Any]]) -> dict[str, Any]:
    event = function_event(tool, [])
    del event["function"]
    return {
        **event,
        "apiPath": f"/{tool}",
        "httpMethod": "POST",
        "requestBody": {"content": {"application/json": {"properties": properties}}},
    }


@pytest.fixture
def agent(services: Services) -> Callable[..., dict[str, Any]]:
    handler = _load("bedrock_graph").handler

    def run(function: str, *parameters: dict[str, Any], state: str | None = None) -> dict[str, Any]:
        event = function_event(function, list(parameters))
        answer = handler(event, FakeLambdaContext())
        assert wire_size(answer) <= MAX_RESPONSE_BYTES
        response = answer["response"]
        assert (response["actionGroup"], response["function"]) == ("mnemo-graph", function)
        assert response["functionResponse"].get("responseState") == state
        body: dict[str, Any] = json.loads(response["functionResponse"]["responseBody"]["TEXT"]["body"])
        return body

    return run


def test_the_graph_action_group_scenario(agent: Callable[..., dict[str, Any]], services: Services) -> None:
    added = agent(
        "add_memory_link",
        prop("subject", "Alice"),
        prop("predicate", "works_at"),
        prop("object", "Acme"),
        prop("subjectType", "person"),
        prop("validAt", "2024-03-01T00:00:00Z"),
        prop("exclusive", "true", "boolean"),
        prop("source", '{"kind": "conversation", "messageId": "m-1"}'),
    )
    assert added["created"]
    assert added["fact"]["layer"] == "user"  # the session's mnemoUser's layer
    assert {k: v for k, v in added["fact"]["source"].items() if v} == {"kind": "conversation", "messageId": "m-1"}
    read = agent("get_memory_object", prop("name", "Alice"), prop("depth", "1", "integer"))
    assert read["entity"]["entityId"] == added["subject"]["entityId"]
    assert len(read["facts"]) == 1
    renamed = agent("update_memory_object", prop("name", "Alice"), prop("aliases", '["Alice Smith"]', "array"))
    assert renamed["entity"]["aliases"] == ["Alice Smith"]

    moved = agent(
        "add_memory_link",
        prop("subject", "Alice Smith"),
        prop("predicate", "works_at"),
        prop("object", "Globex"),
        prop("validAt", "2025-07-01T00:00:00Z"),
        prop("exclusive", "true", "boolean"),
    )
    assert moved["invalidated"] == [added["factId"]]

    def employer(as_of: str) -> list[str]:
        found = agent(
            "graph_search",
            prop("query", "Where does Alice work?"),
            prop("kind", "facts"),
            prop("asOf", as_of),
            prop("threshold", "0", "number"),
        )
        return [fact["object"] for fact in found["facts"]]

    assert employer(BEFORE) == ["Acme"]  # the old truth
    assert employer(AFTER) == ["Globex"]  # the new one

    ended = agent("invalidate_memory_link", prop("factId", moved["factId"]), prop("reason", "Left Globex."))
    assert ended["fact"]["status"] == "invalid"
    missing = agent("invalidate_memory_link", prop("factId", "fct_" + "0" * 24), state="REPROMPT")
    assert missing["errorCode"] == "NOT_FOUND"
    assert missing["details"]["field"] == "factId"

    preview = agent("delete_memory_object", prop("name", "Alice"))
    assert preview["deleted"] is False
    assert preview["confirmationToken"].startswith("del_")
    done = agent("delete_memory_object", prop("name", "Alice"), prop("confirmationToken", preview["confirmationToken"]))
    assert done["deleted"] is True
    gone = agent("get_memory_object", prop("name", "Alice"), state="REPROMPT")
    assert gone["errorCode"] == "NOT_FOUND"
    # No model is configured in this stack: FAILURE, which the model cannot fix by changing its call.
    unconfigured = agent("build_memory_from_text", prop("content", "Alice works at Acme."), state="FAILURE")
    assert unconfigured["errorCode"] == "PROVIDER_ERROR"


def test_the_graph_action_group_over_openapi(agent: Callable[..., dict[str, Any]], services: Services) -> None:
    agent("add_memory_link", prop("subject", "Billing"), prop("predicate", "uses"), prop("object", "PostgreSQL"))
    event = openapi_event("get_memory_object", [prop("name", "Billing")])
    answer = _load("bedrock_graph").handler(event, FakeLambdaContext())
    assert answer["response"]["httpStatusCode"] == 200
    body = json.loads(answer["response"]["responseBody"]["application/json"]["body"])
    assert body["entity"]["name"] == "Billing"
    assert body["facts"][0]["object"] == "PostgreSQL"


def test_graph_reads_stay_within_bedrocks_answer_size(agent: Callable[..., dict[str, Any]], services: Services) -> None:
    """A hub entity with more facts than an answer can carry: get_memory_object and graph_search answer what fits
    and say hasMore, rather than an answer too large for the agent."""
    from helpers import ctx
    from mnemo.graph.models import AddMemoryLinkInput

    caller = ctx(user="alice", tenant="acme", project="p1", roles=("writer",), agent="AGENT12345")
    for number in range(60):
        services.graph.add_link(
            caller,
            AddMemoryLinkInput(
                subject="Payments platform",
                predicate="depends_on",
                object=f"Service {number:03d} " + "x" * 150,
                text=f"The payments platform depends on service {number:03d}, " + "which matters " * 20,
            ),
        )
    read = agent("get_memory_object", prop("name", "Payments platform"), prop("limit", "200", "integer"))
    assert read["hasMore"] is True
    assert 0 < len(read["facts"]) < 60
    found = agent(
        "graph_search",
        prop("query", "payments platform depends on service"),
        prop("threshold", "0", "number"),
        prop("limit", "50", "integer"),
    )
    assert found["success"] is True
    assert found["hasMore"] is True


def test_build_memory_from_text_through_the_action_group(bedrock_services: tuple[Services, Stubber]) -> None:
    _, stubber = bedrock_services
    handler = _load("bedrock_graph").handler
    stubber.add_response("converse", converse_answer(EXTRACTION), expected_converse())
    event = function_event("build_memory_from_text", [prop("content", "Spring AI integrates with OpenAI and Bedrock.")])
    answer = handler(event, FakeLambdaContext())
    body = json.loads(answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
    assert body["success"] is True
    assert len(body["relationships"]) == 2
    assert body["modelCalls"] == 1
    stubber.add_client_error("converse", service_error_code="AccessDeniedException", http_status_code=403)
    answer = handler(event, FakeLambdaContext())
    state = answer["response"]["functionResponse"]["responseState"]
    body = json.loads(answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
    assert state == "FAILURE"
    assert body["success"] is False


def _hub(services: Services, links: int, name_chars: int) -> None:
    from helpers import ctx
    from mnemo.graph.models import AddMemoryLinkInput

    caller = ctx(user="alice", tenant="acme", project="p1", roles=("writer",), agent="AGENT12345")
    for number in range(links):
        request = AddMemoryLinkInput(
            subject="Payments platform", predicate="depends_on", object=f"Service {number:03d} " + "x" * name_chars
        )
        services.graph.add_link(caller, request)


def test_deleting_a_hub_through_the_action_group(agent: Callable[..., dict[str, Any]], services: Services) -> None:
    """An entity with more neighbours than an answer can name can still be previewed and deleted by an agent."""
    _hub(services, 150, 180)
    preview = agent("delete_memory_object", prop("name", "Payments platform"))
    assert preview["factsAffected"] == 150
    assert preview["confirmationToken"]
    token = preview["confirmationToken"]
    assert agent("delete_memory_object", prop("name", "Payments platform"), prop("confirmationToken", token))["deleted"]


def test_a_large_extraction_through_the_action_group_answers_success(
    bedrock_services: tuple[Services, Stubber],
) -> None:
    """The model finds more facts than an answer can list: they are saved, and the agent is told so (success), not
    asked to send less (which would make it pay for the same extraction again)."""
    _, stubber = bedrock_services
    facts = [
        {
            "subject": "Payments platform",
            "predicate": "depends_on",
            "object": f"Service {n:03d} " + "x" * 150,
            "text": f"The payments platform depends on service {n:03d}.",
        }
        for n in range(100)
    ]
    stubber.add_response("converse", converse_answer({"entities": [], "facts": facts}))
    event = function_event("build_memory_from_text", [prop("content", "A long design document. " * 100)])
    answer = _load("bedrock_graph").handler(event, FakeLambdaContext())
    body = json.loads(answer["response"]["functionResponse"]["responseBody"]["TEXT"]["body"])
    assert body["success"] is True, body

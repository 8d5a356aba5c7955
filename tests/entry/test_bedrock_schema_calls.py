"""Every tool, called as a Bedrock agent would call it from the generated definitions alone, succeeds.

For each tool the call is built from its generated definition only: the parameter names, their declared
types, and their descriptions (the first allowed value, a lower bound, the ``e.g.`` example, JSON for a
string that holds JSON), every value sent as a string. What a model would take from the conversation or
from an earlier answer (an id, a path it wrote, a name it stored) comes from ``CONTEXT``. The events are
Powertools' documented Bedrock Agents fixtures (tests/fixtures/bedrock_agent, with their licence) with the
action group, operation, arguments and session attributes put in:

- OpenAPI action groups: ``requestBody.content["application/json"].properties`` from the operation's body
  schema (``<group>.openapi.json``);
- function-details action groups: ``parameters`` ``[{name, type, value}]`` from ``<group>.functions.json``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from entry.test_bedrock import load_function
from entry.test_graph_entry import EXTRACTION, EXTRACTOR_MODEL, converse_answer

from aws_events import FakeLambdaContext
from helpers import bedrock_extraction_services
from mnemo.entry.bedrock import MAX_RESPONSE_BYTES, wire_size
from mnemo.runtime import Services, set_services
from mnemo.tools.bedrock_schema import OPTIONS, action_group_name, action_groups, bedrock_functions, bedrock_openapi
from mnemo.tools.registry import load_catalog

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bedrock_agent"
#: The admin role for erase_user, which erases bob (who holds nothing): alice's conversation goes on undisturbed.
ATTRIBUTES = {"mnemoUser": "alice", "mnemoTenant": "acme", "mnemoOrg": "engineering", "mnemoRoles": "writer,admin"}
BLOCK = "mnemo:///blocks/notes.md"
State = dict[str, dict[str, Any]]

#: What a model knows from the conversation or an earlier answer, by tool and parameter (None: an optional
#: parameter it sends, with the value its description suggests).
CONTEXT: dict[str, dict[str, Callable[[State], Any]]] = {
    "memory_delete": {"memoryId": lambda s: s["memory_add"]["memoryId"]},
    "memory_history": {"memoryId": lambda s: s["memory_add"]["memoryId"]},
    "knowledge_check": {"files": lambda s: None},  # None: what the schema's example says
    "knowledge_show": {"id": lambda s: s["knowledge_query"]["items"][0]["id"]},
    "search_memories": {"query": lambda s: None},
    "file_write": {"path": lambda s: BLOCK},
    "file_edit": {"path": lambda s: BLOCK, "old": lambda s: "content", "new": lambda s: "changed"},
    "file_read": {"path": lambda s: BLOCK},
    "block_pin": {"path": lambda s: BLOCK},
    "block_unpin": {"path": lambda s: BLOCK},
    "file_delete": {"path": lambda s: BLOCK},
    "expand_prompt": {"text": lambda s: f"Read @{BLOCK} first."},
    "add_memory_link": {"subject": lambda s: "Alice", "object": lambda s: "Acme"},
    "get_memory_object": {"name": lambda s: "Alice"},
    "update_memory_object": {"name": lambda s: "Alice", "summary": lambda s: "An engineer."},
    "invalidate_memory_link": {"factId": lambda s: s["add_memory_link"]["factId"]},
    "delete_memory_object": {"name": lambda s: "Acme"},
    "erase_user": {"subjectUserId": lambda s: "bob"},
}
#: What a tool needs called before it, where the catalog's order would call it first: a conversation reads
#: or removes only what it wrote (or synced) earlier.
NEEDS: dict[str, tuple[str, ...]] = {"knowledge_query": ("sync_now",)}


def conversation_order(names: list[str]) -> list[str]:
    """Every tool named, in the catalog's order, each moved after the tools it ``NEEDS``."""
    ordered: list[str] = []

    def place(name: str) -> None:
        if name not in ordered:
            for needed in NEEDS.get(name, ()):
                place(needed)
            ordered.append(name)

    for name in names:
        place(name)
    return ordered


# ------------------------------------------------------------ from the schema ---
def _example(description: str) -> Any:
    """The value after ``e.g.``: JSON when it parses, else its first word."""
    at = description.find("e.g. ")
    if at < 0:
        return None
    text = description[at + 5 :]
    try:
        return json.JSONDecoder().raw_decode(text)[0]
    except ValueError:
        return re.split(r"[\s,;)]", text, maxsplit=1)[0].rstrip(".")


def value_for(name: str, kind: str, description: str) -> Any:
    """A value for one parameter from its declared type and description alone."""
    allowed = re.search(r"(?:One of|Always|Each item is one of): ([^.]+?)(?:,|\.|$)", description)
    if kind == "array":
        example = _example(description)
        return [allowed.group(1)] if allowed else example
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low = re.search(r"(?:Between|At least) (-?[\d.]+)", description)
        return (int if kind == "integer" else float)(low.group(1)) if low else 1
    if allowed:
        return allowed.group(1)
    if "date-time" in description or "ISO 8601" in description:
        return "2026-01-07T10:00:00Z"
    example = _example(description)
    if isinstance(example, (dict, list)) or (example and "JSON" not in description and kind == "string"):
        return example
    return "content"


def _grouped_keys(description: str) -> dict[str, tuple[str, bool]]:
    """The keys ``moreArguments`` names: key -> (its type, required)."""
    found = re.findall(
        r"(\w+) \((JSON object|JSON array|string|integer|number|boolean|array)(, required)?\)", description
    )
    return {key: (kind.removeprefix("JSON ").strip(), bool(required)) for key, kind, required in found}


def arguments(tool: str, parameters: dict[str, dict[str, Any]], state: State) -> list[dict[str, str]]:
    """The ``{name, type, value}`` list Bedrock would send: required parameters and what the context supplies."""
    known = {name: make(state) for name, make in CONTEXT.get(tool, {}).items()}
    values: dict[str, Any] = {}
    grouped: dict[str, Any] = {}
    for name, spec in parameters.items():
        kind, description = spec["type"], spec.get("description", "")
        if name == OPTIONS:
            keys = _grouped_keys(description)
            example = _example(description) if any(required for _, required in keys.values()) else {}
            grouped.update(example or {})
            grouped.update({key: value for key, value in known.items() if key in keys})
            continue
        if known.get(name) is not None:
            values[name] = known[name]
        elif spec.get("required") or name in known:
            values[name] = value_for(name, kind, description)
    if grouped:
        values[OPTIONS] = grouped
    sent = []
    for name, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value)
        if isinstance(value, bool):
            text = "true" if value else "false"
        sent.append({"name": name, "type": parameters[name]["type"], "value": text})
    return sent


# --------------------------------------------------------------------- events ---
def _fixture(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return event


def function_call(group: str, tool: str, values: list[dict[str, str]]) -> dict[str, Any]:
    event = _fixture("bedrockAgentFunctionEvent.json")
    event.update(actionGroup=action_group_name(group), function=tool, parameters=values, sessionAttributes=ATTRIBUTES)
    return event


def openapi_call(group: str, tool: str, values: list[dict[str, str]]) -> dict[str, Any]:
    event = _fixture("bedrockAgentPostEvent.json")
    event.update(actionGroup=action_group_name(group), apiPath=f"/{tool}", sessionAttributes=ATTRIBUTES)
    event["requestBody"]["content"]["application/json"]["properties"] = values
    return event


def answered(event: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The tool's answer from a successful documented response (status 200, no responseState)."""
    assert wire_size(answer) <= MAX_RESPONSE_BYTES
    response = answer["response"]
    assert response["actionGroup"] == event["actionGroup"]
    if "function" in event:
        assert response["function"] == event["function"]
        assert "responseState" not in response["functionResponse"], response
        body = response["functionResponse"]["responseBody"]["TEXT"]["body"]
    else:
        assert response["apiPath"] == event["apiPath"]
        assert response["httpStatusCode"] == 200, response
        body = response["responseBody"]["application/json"]["body"]
    parsed: dict[str, Any] = json.loads(body)
    assert parsed["success"] is True, parsed
    return parsed


# ---------------------------------------------------------------------- tests ---
@pytest.fixture
def extracting(tmp_path: Path) -> Iterator[Services]:
    """The embedded stack set up as the template sets up the graph and learning functions (a Bedrock extraction
    model, its bedrock-runtime client stubbed with botocore's Stubber, the facts strategy on), with the example
    knowledge pushed. The model is called by memory_extract (the learning group comes first), then by
    build_memory_from_text."""
    from knowledge_helpers import push_tree

    services, stubber = bedrock_extraction_services(tmp_path, EXTRACTOR_MODEL, MNEMO_EXTRACTION_STRATEGIES="facts")
    stubber.add_response("converse", converse_answer({"facts": []}, name="record_facts"))
    stubber.add_response("converse", converse_answer(EXTRACTION))
    set_services(services)
    push_tree(services, "acme")
    with stubber:
        yield services
    set_services(None)


@pytest.mark.parametrize("style", ["function", "openapi"])
def test_every_tool_succeeds_when_called_as_its_schema_says(extracting: Services, style: str) -> None:
    catalog = load_catalog()
    groups = action_groups(catalog.values())
    where = {tool.name: group for group, members in groups.items() for tool in members}
    order = conversation_order(list(catalog))
    assert sorted(order) == sorted(where), "every tool of the catalog is called, once"
    declared: dict[str, dict[str, dict[str, Any]]] = {}
    for group, members in groups.items():
        if style == "function":
            for function in bedrock_functions(members)["functions"]:
                declared[function["name"]] = function["parameters"]
            continue
        for path, item in bedrock_openapi(group, members)["paths"].items():
            body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
            required = set(body.get("required", []))
            declared[path.lstrip("/")] = {
                name: {**spec, "required": name in required} for name, spec in body["properties"].items()
            }
    state: State = {}
    for tool in order:
        group = where[tool]
        values = arguments(tool, declared[tool], state)
        event = (function_call if style == "function" else openapi_call)(group, tool, values)
        answer = load_function(group.split("-")[0]).handler(copy.deepcopy(event), FakeLambdaContext())
        state[tool] = answered(event, answer)
        if tool == "delete_memory_object":  # a preview first; the deletion takes its token
            token = state[tool]["confirmationToken"]
            values.append({"name": "confirmationToken", "type": "string", "value": token})
            event = (function_call if style == "function" else openapi_call)(group, tool, values)
            answer = load_function("graph").handler(copy.deepcopy(event), FakeLambdaContext())
            assert answered(event, answer)["deleted"] is True
    assert state["add_execution"]["success"] is True
    assert state["file_read"]["content"] == "changed"

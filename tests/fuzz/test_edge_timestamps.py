"""Every date field of every tool input, at the edges of what a datetime can hold.

A time whose conversion to UTC leaves datetime's range ("0001-01-01T00:00:00+01:00"
is 31 December of year 0 in UTC) is INVALID_INPUT naming the field, never an
overflow answered as a 5xx. The fields come from the served input schemas
(``format: date-time``), so a date field added later is covered here too.
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from fuzz.fuzz_support import Client, at_path, check_answer, check_envelope, date_time_paths, output_validator

from mnemo.tools.registry import load_catalog
from mnemo.tools.schema import input_schema

#: A valid body for each tool that has a date field; the date is set on top of it.
BASES: dict[str, dict[str, Any]] = {
    "memory_add": {"content": "The release train leaves on Thursdays"},
    "add_conversation": {"explanation": "edge", "user_input": "When?", "agent_response": "Then."},
    "add_execution": {
        "message_id": "msg_edge",
        "explanation": "edge",
        "execution_summary": "ran",
        "tools_used": [],
        "errors": [],
        "observations": "",
        "success": True,
    },
    "retrieve_conversation": {"explanation": "edge", "query": "when"},
    "retrieve_execution": {"explanation": "edge", "query": "when"},
    "add_memory_link": {"subject": "Edge subject", "predicate": "spans", "object": "Edge object"},
    "get_memory_object": {"name": "Edge subject", "includeHistory": True},
    "graph_search": {"query": "edge"},
    "invalidate_memory_link": {"factId": "fct_" + "0" * 24},  # a fact of its own is made for the accepted ones
    "build_memory_from_text": {"content": "Edge text about time.", "dryRun": True},
    "add_messages": {"messages": [{"role": "user", "content": "Edge turn about time"}]},
    "memory_context": {"query": "when"},
}
#: An end at the first instant is never after its fact's start: INVALID_INPUT naming the field, not a range error.
ENDS = {("add_memory_link", "invalidAt"), ("invalidate_memory_link", "invalidAt")}
#: An expiry must lie ahead, within MAX_EXPIRY_DAYS: every edge instant is INVALID_INPUT naming the field.
EXPIRIES = {("memory_add", "expiresAt"), ("add_messages", "expiresAt")}

DATE_FIELDS = [
    (name, path) for name, tool in sorted(load_catalog().items()) for path in date_time_paths(input_schema(tool))
]
OVERFLOWING = ("0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+23:59")
#: The first and last instants a datetime holds, written with offsets: in range once in UTC.
IN_RANGE = ("0001-01-01T01:00:00+01:00", "9999-12-31T22:59:59-01:00", "0001-01-01T00:00:00Z")


def _wire(path: tuple[str, ...]) -> str:
    return ".".join(path)


def test_the_date_fields_are_the_known_ones() -> None:
    found = {(name, _wire(path)) for name, path in DATE_FIELDS}
    assert found >= {
        ("memory_add", "occurredAt"),
        ("add_conversation", "timestamp"),
        ("add_execution", "timestamp"),
        ("retrieve_conversation", "time_range.start"),
        ("retrieve_conversation", "time_range.end"),
        ("retrieve_execution", "time_range.start"),
        ("retrieve_execution", "time_range.end"),
        ("add_memory_link", "validAt"),
        ("add_memory_link", "invalidAt"),
        ("get_memory_object", "asOf"),
        ("graph_search", "asOf"),
        ("graph_search", "knownAt"),
        ("invalidate_memory_link", "invalidAt"),
        ("build_memory_from_text", "referenceTime"),
        ("memory_add", "expiresAt"),
        ("add_messages", "expiresAt"),
        ("memory_context", "asOf"),
    }
    missing = {name for name, _ in DATE_FIELDS} - set(BASES)
    assert not missing, f"add a valid base body for {missing} so that its date fields are tested"


@pytest.mark.parametrize("value", OVERFLOWING)
@pytest.mark.parametrize(("tool", "path"), DATE_FIELDS, ids=[f"{t}-{_wire(p)}" for t, p in DATE_FIELDS])
def test_a_time_past_the_range_in_utc_is_invalid_input_naming_the_field(
    client: Client, tool: str, path: tuple[str, ...], value: str
) -> None:
    status, answer = client.call(tool, at_path(BASES[tool], path, value))
    assert status == 400, answer
    assert answer["errorCode"] == "INVALID_INPUT"
    assert answer["details"]["field"] == _wire(path)
    assert "0001-01-01" in answer["message"], answer["message"]
    assert "9999-12-31" in answer["message"], answer["message"]


@pytest.mark.parametrize("value", IN_RANGE)
@pytest.mark.parametrize(("tool", "path"), DATE_FIELDS, ids=[f"{t}-{_wire(p)}" for t, p in DATE_FIELDS])
def test_the_first_and_last_instants_are_accepted(
    client: Client, catalog: dict[str, Any], tool: str, path: tuple[str, ...], value: str
) -> None:
    body = at_path(BASES[tool], path, value)
    if "message_id" in body:  # one execution per message_id: a second with another time is a CONFLICT
        body["message_id"] = f"msg_{zlib.crc32(repr((path, value)).encode())}"
    if tool in ("invalidate_memory_link", "get_memory_object"):  # a fact that began at the first instant
        link = {**BASES["add_memory_link"], "object": f"Edge {value}", "validAt": "0001-01-01T00:00:00Z"}
        status, added = client.call("add_memory_link", link)
        assert status == 200, added
        if tool == "invalidate_memory_link":
            body["factId"] = added["factId"]
    reply = client.post_tool(tool, _json(body), kind="setup")
    answer = check_answer(reply, output=output_validator(catalog[tool]["outputSchema"]))
    if (tool, _wire(path)) in EXPIRIES or ((tool, _wire(path)) in ENDS and value != IN_RANGE[1]):
        assert reply.status == 400, answer
        assert answer["details"]["field"] == _wire(path), answer
        return
    assert reply.status == 200, answer


def test_the_envelope_of_an_overflowing_time_is_exact(client: Client) -> None:
    reply = client.post_tool("memory_add", _json({"content": "x", "occurredAt": OVERFLOWING[1]}), kind="setup")
    body = check_envelope(reply, allowed_fields={"occurredAt"})
    assert body["details"]["errors"][0]["field"] == "occurredAt"


def _json(payload: Any) -> bytes:
    import json

    return json.dumps(payload).encode()

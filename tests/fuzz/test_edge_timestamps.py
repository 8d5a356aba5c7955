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
}

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
    assert "0001-01-01" in answer["message"] and "9999-12-31" in answer["message"], answer["message"]


@pytest.mark.parametrize("value", IN_RANGE)
@pytest.mark.parametrize(("tool", "path"), DATE_FIELDS, ids=[f"{t}-{_wire(p)}" for t, p in DATE_FIELDS])
def test_the_first_and_last_instants_are_accepted(
    client: Client, catalog: dict[str, Any], tool: str, path: tuple[str, ...], value: str
) -> None:
    body = at_path(BASES[tool], path, value)
    if "message_id" in body:  # one execution per message_id: a second with another time is a CONFLICT
        body["message_id"] = f"msg_{zlib.crc32(repr((path, value)).encode())}"
    reply = client.post_tool(tool, _json(body), kind="setup")
    answer = check_answer(reply, output=output_validator(catalog[tool]["outputSchema"]))
    assert reply.status == 200, answer


def test_the_envelope_of_an_overflowing_time_is_exact(client: Client) -> None:
    reply = client.post_tool("memory_add", _json({"content": "x", "occurredAt": OVERFLOWING[1]}), kind="setup")
    body = check_envelope(reply, allowed_fields={"occurredAt"})
    assert body["details"]["errors"][0]["field"] == "occurredAt"


def _json(payload: Any) -> bytes:
    import json

    return json.dumps(payload).encode()

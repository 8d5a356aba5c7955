"""mnemo.client after API Gateway's integration timeout: a call that may have run is sent again only when
repeating it is safe (a read, or a write with the key the service stores once under)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from client_support import Answer, Script
from mnemo.client import MnemoTimeoutError, TransportError
from mnemo.client.repeat import KEYED_BATCHES, KEYED_WRITES, READ_ONLY, safe_to_repeat
from mnemo.client.transport import Transport
from mnemo.tools.registry import load_catalog

#: The body the template's INTEGRATION_TIMEOUT gateway response sends with its 504.
GATEWAY_TIMEOUT = {
    "success": False,
    "errorCode": "TIMEOUT",
    "message": "Endpoint request timed out",
    "details": {"requestId": "r1"},
    "retryable": True,
}
BUSY = {"success": False, "errorCode": "PROVIDER_ERROR", "message": "busy", "details": {}, "retryable": True}


def timed_out_then_ok() -> list[Answer]:
    return [Answer(504, json.dumps(GATEWAY_TIMEOUT).encode()), Answer(200, b'{"success": true, "id": "x"}')]


# Samples of writes and reads, not every tool: once the catalog declares each tool's rights (records read or
# read-write), they can be drawn from it.
@pytest.mark.parametrize(
    ("tool", "body"),
    [
        ("memory_add", {"content": "x"}),
        ("build_memory_from_text", {"content": "Ana works at Acme."}),
        ("sync_now", {}),
        ("file_write", {"path": "/memories/a.md", "content": "x"}),
        ("add_memory_link", {"subject": "Ana", "predicate": "works_at", "object": "Acme"}),
        ("memory_add_batch", {"items": [{"content": "x", "idempotencyKey": "k1"}, {"content": "y"}]}),
        ("memory_delete_batch", {"memoryIds": ["mem_1"]}),
    ],
)
def test_a_write_without_a_key_is_not_sent_again_after_a_gateway_timeout(
    scripted: tuple[str, Script], tool: str, body: dict[str, Any]
) -> None:
    url, script = scripted
    script.answers = timed_out_then_ok()
    with pytest.raises(MnemoTimeoutError) as raised:
        Transport(url, sleep=lambda _: None).call(tool, body)
    assert len(script.requests) == 1
    assert raised.value.retryable is False
    assert raised.value.details["outcome"] == "unknown"
    assert "may have run" in raised.value.message


@pytest.mark.parametrize(
    ("tool", "body"),
    [
        ("memory_search", {"query": "x"}),
        ("sync_status", {}),
        ("memory_add", {"content": "x", "idempotencyKey": "k1"}),
        (
            "memory_add_batch",
            {"items": [{"content": "x", "idempotencyKey": "k1"}, {"content": "y", "idempotencyKey": "k2"}]},
        ),
        ("add_conversation", {"message_id": "m1", "explanation": "e", "user_input": "u", "agent_response": "a"}),
    ],
)
def test_a_read_or_a_keyed_write_is_sent_again(scripted: tuple[str, Script], tool: str, body: dict[str, Any]) -> None:
    url, script = scripted
    script.answers = timed_out_then_ok()
    assert Transport(url, sleep=lambda _: None).call(tool, body)["id"] == "x"
    assert len(script.requests) == 2


def test_a_bare_gateway_502_or_504_counts_as_may_have_run(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    for status in (502, 504):
        script.answers = [Answer(status, b'{"message": "Internal server error"}'), Answer(200)]
        with pytest.raises(TransportError) as raised:
            Transport(url, sleep=lambda _: None).call("memory_add", {"content": "x"})
        assert raised.value.status == status
        assert raised.value.retryable is False
    assert [path for _, path, _ in script.requests] == ["/v1/tools/memory_add"] * 2
    assert len(script.answers) == 1


def test_an_answer_that_says_not_run_is_retried_for_any_write(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(503, json.dumps(BUSY).encode()), Answer(429, b""), Answer(200, b'{"success": true}')]
    assert Transport(url, sleep=lambda _: None).call("memory_add", {"content": "x"}) == {"success": True}
    assert len(script.requests) == 3


def test_no_answer_in_time_is_like_a_gateway_timeout(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    release = threading.Event()
    script.answers = [Answer(200, before=lambda: release.wait(5))] + [Answer(200)] * 3
    try:
        with pytest.raises(TransportError) as raised:
            Transport(url, timeout=0.3, sleep=lambda _: None).call("build_memory_from_text", {"content": "x"})
    finally:
        release.set()
    assert raised.value.details["outcome"] == "unknown"
    assert not raised.value.retryable
    assert len(script.requests) == 1


def test_the_lists_name_catalog_tools_and_the_keys_their_requests_carry() -> None:
    catalog = load_catalog(experimental=True)
    assert set(catalog) >= READ_ONLY
    for tool, key in KEYED_WRITES.items():
        properties = catalog[tool].request.model_json_schema(by_alias=True)["properties"]
        assert key in properties, (tool, key)
    for tool, (items, keys) in KEYED_BATCHES.items():
        schema = catalog[tool].request.model_json_schema(by_alias=True)
        item = schema["$defs"][schema["properties"][items]["items"]["$ref"].rsplit("/", 1)[1]]
        for names in keys:
            assert names[0] in item["properties"], (tool, names)
    assert not safe_to_repeat("memory_add", {"content": "x"})
    message = {"role": "user", "content": "x", "id": "m-1"}
    assert safe_to_repeat("add_messages", {"messages": [{**message, "at": "2025-03-03T09:00:00Z"}]})
    assert not safe_to_repeat("add_messages", {"messages": [message]})  # the service would stamp a new time
    assert not safe_to_repeat("unknown_tool", {})

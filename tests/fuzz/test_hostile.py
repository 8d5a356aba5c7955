"""Hand-written hostile requests to the real local server, one test each.

Each answer is the error envelope with a 4xx (never a 5xx, never HTML, never a
stack trace), naming the field at fault; where a request is legitimate though
odd (JSON sent as text/plain, NUL inside a memory's text) the answer is a 2xx
that validates against the tool's output schema. After each test the server
still answers /health.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fuzz.fuzz_support import (
    Client,
    Reply,
    check_answer,
    check_envelope,
    healthy,
    output_validator,
    parse_raw_response,
    raw_socket_request,
)

from mnemo.tools.registry import load_catalog


@pytest.fixture(autouse=True)
def _still_healthy(client: Client) -> Iterator[None]:
    yield
    healthy(client)


def post(client: Client, tool: str, body: bytes | str, headers: dict[str, str | bytes] | None = None) -> Reply:
    raw = body.encode() if isinstance(body, str) else body
    return client.post_tool(tool, raw, headers, kind="hostile")


def refused(reply: Reply, code: str = "INVALID_INPUT", field: str | None = None) -> dict[str, Any]:
    envelope = check_envelope(reply)
    assert envelope["errorCode"] == code, envelope
    if field is not None:
        assert envelope["details"].get("field") == field, envelope
    return envelope


JSON = "Content-Type: application/json\r\n"


def raw_request(base_url: str, head: str, body: bytes = b"") -> Reply:
    return parse_raw_response(raw_socket_request(base_url, head.encode("latin-1") + b"\r\n\r\n" + body))


MEMORY = {"content": "The staging database is Postgres 16"}
EXECUTION = {
    "message_id": "msg_hostile",
    "explanation": "e",
    "execution_summary": "s",
    "tools_used": [],
    "errors": [],
    "observations": "",
    "success": True,
}


# ------------------------------------------------------------------ size ---
def test_a_10_mb_body(client: Client) -> None:
    body = json.dumps({"content": "x" * (10 << 20)})
    refused(post(client, "memory_add", body), field="body")


def test_a_declared_length_far_past_what_is_sent(base_url: str) -> None:
    head = (
        "POST /v1/tools/memory_add HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000000000000"
    )
    refused(raw_request(base_url, head, b'{"content": "x"}'), field="body")


def test_json_nested_10000_deep(client: Client) -> None:
    refused(post(client, "memory_add", "[" * 10_000 + "]" * 10_000), field="body")


def test_json_nested_10000_deep_inside_a_field(client: Client) -> None:
    body = '{"content": "x", "metadata": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}"
    refused(post(client, "memory_add", body), field="body")


def test_json_nested_past_the_limit_but_parseable_names_the_field(client: Client) -> None:
    body = '{"content": "x", "metadata": {"k": ' + "[" * 500 + "]" * 500 + "}}"
    envelope = refused(post(client, "memory_add", body), field="metadata")
    assert "64 levels" in envelope["message"]


def test_json_as_deep_as_allowed_is_accepted(client: Client, catalog: dict[str, Any]) -> None:
    body = '{"content": "nested metadata", "metadata": {"k": ' + "[" * 60 + "]" * 60 + "}}"
    reply = post(client, "memory_add", body)
    check_answer(reply, output=output_validator(catalog["memory_add"]["outputSchema"]))
    assert reply.status == 200


# -------------------------------------------------------------- encoding ---
@pytest.mark.parametrize(
    "raw",
    [b'{"content": "\xff\xfe"}', b"\xc3\x28", b'{"content": "\xed\xa0\x80"}', b"\x00", b"\xef\xbb\xbf{}"],
    ids=["ff-fe", "bad-continuation", "encoded-surrogate", "nul-byte", "bom"],
)
def test_invalid_utf8_bytes(client: Client, raw: bytes) -> None:
    refused(post(client, "memory_add", raw), field="body")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"content": "\\ud800"}', "content"),
        ('{"content": "ok", "tags": ["a", "b\\udfff"]}', "tags.1"),
        ('{"content": "ok", "metadata": {"\\udc00": 1}}', "metadata"),
        ('{"content": "ok", "metadata": {"k": {"v": "\\ud83d"}}}', "metadata.k.v"),
    ],
    ids=["content", "tag", "metadata-key", "metadata-value"],
)
def test_lone_surrogates_in_strings_and_keys(client: Client, body: str, field: str) -> None:
    refused(post(client, "memory_add", body), field=field)


@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("memorize_new_topic", {"topic": "a\u0000b", "tags": [], "summary": "s", "content": "c"}, "topic"),
        ("memorize_new_topic", {"topic": "line\nbreak", "tags": [], "summary": "s", "content": "c"}, "topic"),
        ("recall_memory", {"topic": "\u0007\u001b[2J"}, "topic"),
        ("knowledge_check", {"files": [{"path": "a\u0000.py", "content": ""}]}, "files.0.path"),
        ("memory_add", {"content": "x", "\u0000": 1}, "\u0000"),
        ("memory_add", {"content": "x", "con\u0000tent": "y"}, "con\u0000tent"),
    ],
    ids=["topic-nul", "topic-newline", "topic-escape", "file-path-nul", "nul-key", "key-with-nul"],
)
def test_nul_and_control_characters_where_they_are_refused(
    client: Client, tool: str, body: dict[str, Any], field: str
) -> None:
    refused(post(client, tool, json.dumps(body)), field=field)


@pytest.mark.parametrize(
    ("tool", "body"),
    [
        ("memory_add", {"content": "nul \u0000 and bell \u0007 inside", "metadata": {"\u0000": "\u001f"}}),
        ("memory_search", {"query": "\u0000\u0001\u0002", "threshold": 0}),
        ("add_conversation", {"explanation": "\u0000", "user_input": "a\u0000b", "agent_response": "\u007f"}),
        ("knowledge_query", {"query": "\u0000"}),
    ],
    ids=["memory-text-and-metadata-key", "search-query", "conversation", "knowledge-query"],
)
def test_nul_and_control_characters_inside_text(
    client: Client, catalog: dict[str, Any], tool: str, body: dict[str, Any]
) -> None:
    """Text may hold any character JSON can: stored and answered intact, or refused with the envelope."""
    reply = post(client, tool, json.dumps(body))
    check_answer(reply, output=output_validator(catalog[tool]["outputSchema"]), allowed_fields=set(body))


# ----------------------------------------------------------------- shape ---
@pytest.mark.parametrize(
    "body", ["[]", '[{"content": "x"}]', '"content"', "42", "-1.5", "null", "true", '""', "[null]"]
)
def test_a_body_that_is_not_an_object(client: Client, body: str) -> None:
    refused(post(client, "memory_add", body), field="body")


@pytest.mark.parametrize("body", ["", " ", "\n\t", "{", '{"content": "x",}', "{'content': 'x'}", "content=x"])
def test_a_body_that_is_not_json(client: Client, body: str) -> None:
    refused(post(client, "memory_add", body), field="body")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None]
)
@pytest.mark.parametrize("body", [b'{"content": "x", "layer": "user"}', b"content=x&layer=user"])
def test_a_tool_call_that_is_not_application_json_is_refused(
    client: Client, content_type: str | None, body: bytes
) -> None:
    """A web page can send these cross-site without a CORS preflight, so no tool reads them (415)."""
    headers: dict[str, str | bytes] = {} if content_type is None else {"Content-Type": content_type}
    reply = client.request("POST", "/v1/tools/memory_add", body, headers, kind="hostile")
    assert reply.status == 415
    refused(reply, field="Content-Type")


def test_duplicate_json_keys(client: Client) -> None:
    refused(post(client, "memory_add", '{"content": "a", "content": "b"}'), field="content")


def test_duplicate_json_keys_nested(client: Client) -> None:
    body = '{"explanation": "e", "query": "q", "time_range": {"start": "2024-01-01T00:00:00Z", "start": "x"}}'
    refused(post(client, "retrieve_conversation", body), field="time_range.start")


def test_duplicate_json_keys_cannot_smuggle_an_identity(client: Client) -> None:
    body = '{"content": "x", "user_id": "local", "user_id": "mallory"}'
    refused(post(client, "memory_add", body), field="user_id")


def test_an_identity_claimed_in_the_body(client: Client) -> None:
    refused(post(client, "memory_add", '{"content": "x", "user_id": "mallory"}'), code="UNAUTHORIZED", field="user_id")


# ---------------------------------------------------------------- numbers ---
@pytest.mark.parametrize(
    ("tool", "base", "field", "token"),
    [
        ("memory_search", {"query": "q"}, "limit", str(10**18)),
        ("memory_search", {"query": "q"}, "limit", "-1"),
        ("memory_search", {"query": "q"}, "limit", "0"),
        ("memory_search", {"query": "q"}, "limit", "1.5"),
        ("memory_search", {"query": "q"}, "limit", "NaN"),
        ("memory_search", {"query": "q"}, "limit", "Infinity"),
        ("memory_search", {"query": "q"}, "limit", "-Infinity"),
        ("memory_search", {"query": "q"}, "limit", "1e999"),
        ("memory_search", {"query": "q"}, "limit", "1" + "0" * 5000),
        ("memory_search", {"query": "q"}, "threshold", "NaN"),
        ("memory_search", {"query": "q"}, "threshold", "1e308"),
        ("retrieve_conversation", {"query": "q", "explanation": "e"}, "max_results", str(10**9)),
        ("retrieve_conversation", {"query": "q", "explanation": "e"}, "max_results", "-5"),
        ("retrieve_conversation", {"query": "q", "explanation": "e"}, "max_results", "2.5"),
        ("retrieve_conversation", {"query": "q", "explanation": "e"}, "max_results", "Infinity"),
        ("retrieve_execution", {"query": "q", "explanation": "e"}, "max_results", str(10**9)),
        ("search_memories", {"query": "q"}, "limit", str(10**18)),
        ("knowledge_query", {"query": "q"}, "limit", "-(10)"),
        ("add_execution", EXECUTION, "duration_ms", "-1"),
        ("add_execution", EXECUTION, "duration_ms", "1e999"),
        ("refine_memory", {"topic": "t"}, "expectedVersion", str(-(10**18))),
        ("memorize_general_info", {"content": ""}, "expectedVersion", "NaN"),
    ],
)
def test_huge_negative_fractional_and_non_finite_numbers(
    client: Client, tool: str, base: dict[str, Any], field: str, token: str
) -> None:
    body = json.dumps(base)[:-1] + (", " if base else "") + f'"{field}": {token}' + "}"
    if token == "-(10)":
        refused(post(client, tool, body), field="body")  # not JSON at all
    else:
        refused(post(client, tool, body), field=field)


# ---------------------------------------------------------------- cursors ---
def _b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.fixture(scope="module")
def a_real_cursor(client: Client) -> tuple[str, dict[str, Any]]:
    """A cursor acme/alice got from a paged search, and the search it belongs to."""
    for index in range(4):
        status, _ = client.call(
            "memory_add", {"content": f"paging fact number {index} about kiwis"}, tenant="acme", user="alice"
        )
        assert status == 200
    search = {"query": "kiwis", "limit": 1, "threshold": 0}
    status, page = client.call("memory_search", search, tenant="acme", user="alice")
    assert status == 200, page
    assert page["hasMore"], page
    assert page["nextCursor"], page
    return page["nextCursor"], search


@pytest.mark.parametrize(
    "cursor",
    [
        "!!!not base64!!!",
        "AAAA",
        "x" * 512,
        _b64(b"\xff\xfe\x00"),
        _b64([]),
        _b64("a string"),
        _b64({"o": 1}),
        _b64({"o": "one", "f": "x"}),
        _b64({"o": 1, "f": "0000000000000000"}),
        _b64({"o": -1, "f": "0000000000000000"}),
        _b64({"o": None, "f": None}),
        base64.urlsafe_b64encode(b'{"o": NaN, "f": "0000000000000000"}').decode(),
        "\u0000",
        "../../../../etc/passwd",
    ],
)
def test_forged_and_garbage_cursors(client: Client, cursor: str) -> None:
    refused(post(client, "memory_search", json.dumps({"query": "kiwis", "cursor": cursor})), field="cursor")


def test_a_cursor_longer_than_allowed(client: Client) -> None:
    refused(post(client, "memory_search", json.dumps({"query": "kiwis", "cursor": "A" * 513})), field="cursor")


@pytest.mark.parametrize("offset", ["1e999", "-1e999", "Infinity", "-Infinity"])
def test_a_forged_cursor_with_a_non_finite_offset(client: Client, offset: str) -> None:
    cursor = base64.urlsafe_b64encode(f'{{"o": {offset}, "f": "0000000000000000"}}'.encode()).decode()
    refused(post(client, "memory_search", json.dumps({"query": "kiwis", "cursor": cursor})), field="cursor")


def test_the_real_cursor_pages_for_its_owner(client: Client, a_real_cursor: tuple[str, dict[str, Any]]) -> None:
    cursor, search = a_real_cursor
    status, page = client.call("memory_search", {**search, "cursor": cursor}, tenant="acme", user="alice")
    assert status == 200, page
    assert len(page["results"]) == 1, page


@pytest.mark.parametrize(
    "identity",
    [{"tenant": "globex", "user": "alice"}, {"tenant": "acme", "user": "bob"}, {"tenant": "globex", "user": "bob"}],
    ids=["other-tenant", "other-user", "other-tenant-and-user"],
)
def test_another_callers_cursor(
    client: Client, a_real_cursor: tuple[str, dict[str, Any]], identity: dict[str, str]
) -> None:
    cursor, search = a_real_cursor
    headers: dict[str, str | bytes] = {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    refused(post(client, "memory_search", json.dumps({**search, "cursor": cursor}), headers), field="cursor")


def test_a_cursor_for_another_query(client: Client, a_real_cursor: tuple[str, dict[str, Any]]) -> None:
    cursor, search = a_real_cursor
    body = json.dumps({**search, "query": "something else", "cursor": cursor})
    refused(post(client, "memory_search", body, {"X-Mnemo-Tenant": "acme", "X-Mnemo-User": "alice"}), field="cursor")


# ---------------------------------------------------------------- headers ---
def test_a_64_kb_identity_header(client: Client) -> None:
    reply = post(client, "memory_search", '{"query": "q"}', {"X-Mnemo-User": "u" * (64 << 10)})
    refused(reply, code="UNAUTHORIZED", field="user")


def test_a_60_kb_identity_header(client: Client) -> None:
    reply = post(client, "memory_search", '{"query": "q"}', {"X-Mnemo-User": "u" * (60 << 10)})
    refused(reply, code="UNAUTHORIZED", field="user")


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-Mnemo-User", "ünï".encode()),
        ("X-Mnemo-User", "名前".encode()),
        ("X-Mnemo-Tenant", "ü".encode("latin-1")),
        ("X-Mnemo-Project", "caf\u00e9".encode()),
        ("X-Mnemo-Tenant", b"has space"),
    ],
)
def test_non_ascii_identity_headers(client: Client, header: str, value: bytes) -> None:
    refused(post(client, "memory_search", '{"query": "q"}', {header: value}), code="UNAUTHORIZED")


def test_non_ascii_roles_grant_nothing(client: Client) -> None:
    reply = post(client, "memory_add", json.dumps({**MEMORY, "layer": "company"}), {"X-Mnemo-Roles": "wrïter".encode()})
    refused(reply, code="UNAUTHORIZED")


def test_a_hundred_and_fifty_headers_are_read(base_url: str) -> None:
    extra = "".join(f"\r\nX-Filler-{index}: x" for index in range(150))
    head = f"POST /v1/tools/memory_search HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}Content-Length: 14{extra}"
    assert raw_request(base_url, head, b'{"query": "q"}').status == 200


def test_a_request_line_of_70_000_bytes(base_url: str) -> None:
    head = f"POST /v1/tools/{'a' * 70_000} HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}Content-Length: 0"
    refused(raw_request(base_url, head), code="NOT_FOUND")


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", "0x10", "1_0", "99999999999999999999999"])
def test_a_malformed_content_length(base_url: str, length: str) -> None:
    head = f"POST /v1/tools/memory_search HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}Content-Length: {length}"
    refused(raw_request(base_url, head, b'{"query": "q"}'), field="Content-Length")


def test_two_different_content_lengths(base_url: str) -> None:
    head = f"POST /v1/tools/memory_search HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}Content-Length: 14\r\nContent-Length: 2"
    refused(raw_request(base_url, head, b'{"query": "q"}'), field="Content-Length")


def test_a_chunked_body_is_read(base_url: str) -> None:
    body = b'{"query": "q"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = (
        f"POST /v1/tools/memory_search HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}"
        "Transfer-Encoding: chunked\r\nConnection: close"
    )
    reply = raw_request(base_url, head, chunked)
    assert reply.status == 200, reply.text[:500]


@pytest.mark.parametrize("chunks", [b"zz\r\n{}\r\n0\r\n\r\n", b"ffffffff\r\n{}", b"-1\r\n\r\n"])
def test_a_malformed_chunked_body(base_url: str, chunks: bytes) -> None:
    head = f"POST /v1/tools/memory_search HTTP/1.1\r\nHost: 127.0.0.1\r\n{JSON}Transfer-Encoding: chunked"
    refused(raw_request(base_url, head, chunks), field="body")


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "CONNECT", "FOO"])
def test_a_method_no_route_answers(client: Client, method: str) -> None:
    refused(client.request(method, "/v1/tools/memory_add", None, kind="hostile"), code="NOT_FOUND")


def test_head_is_answered_without_a_body(client: Client) -> None:
    reply = client.request("HEAD", "/health", None, kind="hostile")
    assert reply.status == 200
    assert reply.raw == b""
    reply = client.request("HEAD", "/v1/tools/memory_add", None, kind="hostile")
    assert reply.status == 404
    assert reply.raw == b""


# ------------------------------------------------------------------ names ---
@pytest.mark.parametrize(
    "name", ["nope", "MEMORY_ADD", "memory_add%20", "memory_add%00", "memory-add", "x" * 5000, "%F0%9F%92%A9"]
)
def test_unknown_tool_names(client: Client, name: str) -> None:
    envelope = refused(post(client, name, '{"content": "x"}'), code="NOT_FOUND")
    assert "memory_add" in envelope["details"].get("available", []) or "No route" in envelope["message"]


def test_no_tool_name_at_all(client: Client) -> None:
    refused(client.request("POST", "/v1/tools/", b"{}", kind="hostile"), code="NOT_FOUND")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/tools/..%2f..",
        "/v1/tools/..%2f..%2fhealth",
        "/v1/tools/%2e%2e/%2e%2e/health",
        "/v1/tools/../../etc/passwd",
        "/v1/tools/..",
        "/v1/tools/memory_search/../memory_delete",
        "/v1/tools/memory_search%2f..%2fmemory_delete",
        "/v1/tools/memory_search/",
        "/v1/tools//memory_search",
        "/v1/tools/memory_search?name=memory_delete",
    ],
)
def test_path_traversal_in_the_tool_name(client: Client, path: str) -> None:
    body = b'{"memoryId": "mem_x", "query": "q"}'
    reply = client.request("POST", path, body, {"Content-Type": "application/json"}, kind="hostile")
    if path.endswith(("?name=memory_delete", "memory_search/")):  # the same route as without: memory_search runs
        assert reply.status == 400
        assert check_envelope(reply)["details"]["field"] == "memoryId"
    else:
        refused(reply, code="NOT_FOUND")


@pytest.mark.parametrize("path", ["/v1/tools/..%2f..", "/v1/../etc/passwd", "/docs/../../README.md", "/%00"])
def test_path_traversal_on_get(client: Client, path: str) -> None:
    refused(client.request("GET", path, None, kind="hostile"), code="NOT_FOUND")


# ------------------------------------------------------------- file paths ---
HOSTILE_FILE_PATHS = [
    "../x",
    "docs/../../x",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    "..%2f..%2fetc%2fpasswd",
    "%2e%2e/x",
    "docs/./x",
    "docs//x",
    "..\\..\\x",
    "C:\\Windows\\win.ini",
    "\\\\server\\share\\x",
    "file:///etc/passwd",
    "s3://bucket/x",
    "http://169.254.169.254/latest/meta-data",
    "mnemo:/blocks/x",
    "mnemo:///blocks/../../x",
    "mnemo:///../blocks/x",
    "mnemo:///etc/passwd",
    "mnemo://other-tenant/blocks/x",
    "mnemo://t=acme|user|u=bob/blocks/x",
    "mnemo:///blocks/x%00",
    "knowledge://../../x",
    "topic://../x",
    "docs/\u0000x",
    "docs/\u202ex",
    "docs/\u200bx",
    "\ufeffdocs/x",
    "docs/x\u2028",
    "docs/\ud800",
    "a/" * 600 + "x",
]
#: Every tool whose request names a path, from the catalog, with the other fields each one requires.
FILE_TOOLS_BY_PATH = [name for name, tool in load_catalog().items() if "path" in tool.request.model_fields]
BESIDES_PATH: dict[str, dict[str, Any]] = {"file_write": {"content": "x"}, "file_edit": {"old": "a", "new": "b"}}


@pytest.mark.parametrize("path", HOSTILE_FILE_PATHS, ids=repr)
@pytest.mark.parametrize("tool", FILE_TOOLS_BY_PATH)
def test_hostile_file_paths_on_every_tool_with_a_path(client: Client, tool: str, path: str) -> None:
    refused(post(client, tool, json.dumps({"path": path, **BESIDES_PATH.get(tool, {})})), field="path")


@pytest.mark.parametrize("marker", ["@../x", "@/etc/passwd", "@@../../x", "@mnemo:///blocks/../x", "@s3://b/x"])
def test_hostile_expand_prompt_markers(client: Client, marker: str) -> None:
    refused(post(client, "expand_prompt", json.dumps({"text": f"see {marker} now"})), field="text")


@pytest.mark.parametrize("cursor", ["!!!", _b64({"a": "x"}), _b64({"a": 1, "f": "mnemo:///"}), _b64([]), "\u0000"])
def test_forged_file_list_cursors(client: Client, cursor: str) -> None:
    refused(post(client, "file_list", json.dumps({"path": "mnemo:///", "cursor": cursor})), field="cursor")


# ------------------------------------------------------------------ graph ---
ACME = {"tenant": "acme", "user": "alice"}
GLOBEX = {"tenant": "globex", "user": "alice"}
BOB = {"tenant": "acme", "user": "bob"}


def _headers(identity: dict[str, str]) -> dict[str, str | bytes]:
    return {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}


@pytest.fixture(scope="module")
def acme_graph(client: Client) -> dict[str, Any]:
    """acme/alice's entity and fact, with a preview token of another of her entities."""
    status, added = client.call(
        "add_memory_link",
        {"subject": "Hostile Alice", "predicate": "works_at", "object": "Hostile Acme", "text": "secret-link"},
        **ACME,
    )
    assert status == 200, added
    status, other = client.call("delete_memory_object", {"name": "Hostile Acme"}, **ACME)
    assert status == 200, other
    assert other["confirmationToken"], other
    return {"entity": added["subject"]["entityId"], "fact": added["factId"], "otherToken": other["confirmationToken"]}


def _acme_unchanged(client: Client, acme_graph: dict[str, Any]) -> None:
    status, read = client.call("get_memory_object", {"entityId": acme_graph["entity"]}, **ACME)
    assert status == 200, read
    assert read["entity"]["version"] == 1, read
    assert read["entity"]["summary"] == "", read
    assert [fact["factId"] for fact in read["facts"]] == [acme_graph["fact"]], read
    assert read["facts"][0]["invalidAt"] is None


@pytest.mark.parametrize("identity", [GLOBEX, BOB], ids=["other-tenant", "other-user"])
@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("get_memory_object", {"entityId": "{entity}"}, "entityId"),
        ("get_memory_object", {"entityId": "{entity}", "layer": "user"}, "entityId"),
        ("update_memory_object", {"entityId": "{entity}", "summary": "taken over"}, "entityId"),
        ("delete_memory_object", {"entityId": "{entity}"}, "entityId"),
        ("delete_memory_object", {"entityId": "{entity}", "confirmationToken": "{otherToken}"}, "entityId"),
        ("delete_memory_object", {"factId": "{fact}"}, "factId"),
        ("invalidate_memory_link", {"factId": "{fact}"}, "factId"),
        (
            "add_memory_link",
            {"subject": "x", "predicate": "p", "object": "y", "invalidates": ["{fact}"]},
            "invalidates",
        ),
        ("get_memory_object", {"name": "Hostile Alice"}, "name"),
        ("update_memory_object", {"name": "hostile alice", "newName": "Mallory"}, "name"),
    ],
)
def test_graph_ids_and_names_of_another_scope(
    client: Client, acme_graph: dict[str, Any], identity: dict[str, str], tool: str, body: dict[str, Any], field: str
) -> None:
    """Another tenant's or user's entity and fact ids (and names) are unknown here: NOT_FOUND, nothing changes."""
    text = json.dumps(body)
    for key, value in acme_graph.items():
        text = text.replace("{" + key + "}", value)
    refused(post(client, tool, text, _headers(identity)), code="NOT_FOUND", field=field)
    _acme_unchanged(client, acme_graph)


def test_graph_search_of_another_scope_finds_nothing(client: Client, acme_graph: dict[str, Any]) -> None:
    for identity in (GLOBEX, BOB):
        status, found = client.call("graph_search", {"query": "secret-link Hostile Alice", "threshold": 0}, **identity)
        assert status == 200, found
        assert found["entities"] == [], found
        assert found["facts"] == [], found


def test_a_confirmation_token_of_another_entity(client: Client, acme_graph: dict[str, Any]) -> None:
    body = json.dumps({"entityId": acme_graph["entity"], "confirmationToken": acme_graph["otherToken"]})
    refused(post(client, "delete_memory_object", body, _headers(ACME)), code="CONFLICT", field="confirmationToken")
    for token in ("del_" + "0" * 32, "x" * 65, "\u0000", ""):
        body = json.dumps({"entityId": acme_graph["entity"], "confirmationToken": token})
        reply = post(client, "delete_memory_object", body, _headers(ACME))
        assert check_envelope(reply)["details"]["field"] == "confirmationToken"
    _acme_unchanged(client, acme_graph)


@pytest.mark.parametrize(
    "forged",
    [
        "ent_" + "0" * 24,
        "ent_" + "F" * 24,
        "ent_" + "0" * 23,
        "ent_../../x",
        "ent_#EDGE#x",
        "fct_" + "0" * 24,
        "GRAPH|t=acme|user|u=alice",
        "ENT#ent_" + "0" * 24,
        "\u0000",
    ],
)
def test_forged_entity_ids(client: Client, forged: str) -> None:
    reply = post(client, "get_memory_object", json.dumps({"entityId": forged}), _headers(ACME))
    envelope = check_envelope(reply)
    assert envelope["details"]["field"] == "entityId", envelope
    assert envelope["errorCode"] == ("NOT_FOUND" if forged == "ent_" + "0" * 24 else "INVALID_INPUT"), envelope


@pytest.mark.parametrize(
    "name",
    [
        "a|t=acme|user|u=bob",
        "|",
        "GRAPH|t=acme|user|u=alice",
        "#",
        "ENT#x",
        "EDGE#ent_000000000000000000000000#works_at#",
        "LINK#*",
        "x\u0000y",
        "\u0007\u001b[2J",
        "\u202eevil",
        "x\u2028y",
        "%00",
        "名前",
    ],
    ids=repr,
)
def test_graph_names_with_separators_and_control_characters(client: Client, catalog: dict[str, Any], name: str) -> None:
    """Names are hashed into keys: any text is one entity of the caller's own scope, or refused, never a 5xx."""
    body = {"subject": name, "predicate": name, "object": f"{name} object", "subjectType": name}
    reply = post(client, "add_memory_link", json.dumps(body), _headers(BOB))
    answer = check_answer(
        reply, output=output_validator(catalog["add_memory_link"]["outputSchema"]), allowed_fields=set(body)
    )
    if reply.status != 200:
        return
    status, read = client.call("get_memory_object", {"name": name, "depth": 3}, **BOB)
    assert status == 200, read
    assert read["entity"]["entityId"] == answer["subject"]["entityId"], read
    for identity in (ACME, GLOBEX):
        status, other = client.call("get_memory_object", {"name": name}, **identity)
        assert status == 404, other
    status, found = client.call("graph_search", {"query": name, "threshold": 0}, **ACME)
    assert status == 200
    assert all(e["entityId"] != answer["subject"]["entityId"] for e in found["entities"])


@pytest.mark.parametrize("depth", [str(10**18), "-1", "4", "1.5", "NaN", "1e999", "null", '"deep"'])
def test_graph_depth_out_of_range(client: Client, acme_graph: dict[str, Any], depth: str) -> None:
    body = json.dumps({"entityId": acme_graph["entity"]})[:-1] + f', "depth": {depth}}}'
    refused(post(client, "get_memory_object", body, _headers(ACME)), field="depth")


@pytest.mark.parametrize(
    "moment",
    [
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        "10000-01-01T00:00:00Z",
        "2024-13-01T00:00:00Z",
        "2024-01-01T00:00:00+25:00",
        "-2024-01-01T00:00:00Z",
        "",
        "now",
        "1e20",
    ],
)
@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ("get_memory_object", "asOf"),
        ("graph_search", "asOf"),
        ("graph_search", "knownAt"),
        ("add_memory_link", "validAt"),
        ("invalidate_memory_link", "invalidAt"),
    ],
)
def test_graph_times_out_of_range(
    client: Client, acme_graph: dict[str, Any], tool: str, field: str, moment: str
) -> None:
    base: dict[str, Any] = {
        "get_memory_object": {"entityId": acme_graph["entity"]},
        "graph_search": {"query": "q"},
        "add_memory_link": {"subject": "Time Subject", "predicate": "p", "object": "Time Object"},
        "invalidate_memory_link": {"factId": acme_graph["fact"]},
    }[tool]
    refused(post(client, tool, json.dumps({**base, field: moment}), _headers(ACME)), field=field)
    _acme_unchanged(client, acme_graph)


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"])
def test_graph_times_at_the_ends_of_the_range(client: Client, catalog: dict[str, Any], moment: str) -> None:
    for tool, body in (
        ("graph_search", {"query": "Hostile Alice", "asOf": moment, "knownAt": moment, "includeInvalid": True}),
        ("get_memory_object", {"name": "Hostile Alice", "asOf": moment, "includeHistory": True}),
    ):
        reply = post(client, tool, json.dumps(body), _headers(ACME))
        check_answer(reply, output=output_validator(catalog[tool]["outputSchema"]))
        assert reply.status in (200, 404), reply.text[:500]


def test_invalidates_with_21_ids(client: Client, acme_graph: dict[str, Any]) -> None:
    ids = [f"fct_{n:024x}" for n in range(21)]
    body = {"subject": "Hostile Alice", "predicate": "works_at", "object": "Elsewhere", "invalidates": ids}
    refused(post(client, "add_memory_link", json.dumps(body), _headers(ACME)), field="invalidates")
    body["invalidates"] = [acme_graph["fact"]] * 20 + ["not-an-id"]
    envelope = refused(post(client, "add_memory_link", json.dumps(body), _headers(ACME)))
    assert envelope["details"]["field"].startswith("invalidates"), envelope
    _acme_unchanged(client, acme_graph)


@pytest.mark.parametrize(
    ("tool", "body", "field"),
    [
        ("add_memory_link", {"subject": "x" * 201, "predicate": "p", "object": "y"}, "subject"),
        ("add_memory_link", {"subject": "  ", "predicate": "p", "object": "y"}, "subject"),
        ("add_memory_link", {"subject": "x", "predicate": "p" * 101, "object": "y"}, "predicate"),
        ("add_memory_link", {"subject": "x", "predicate": "p", "object": "y", "text": " "}, "text"),
        ("add_memory_link", {"subject": "x", "predicate": "p", "object": "y", "layer": "galaxy"}, "layer"),
        ("update_memory_object", {"name": "Hostile Alice", "aliases": ["a"] * 21}, "aliases"),
        ("graph_search", {"query": "q", "types": ["t"] * 21}, "types"),
        ("graph_search", {"query": "q", "layers": []}, "layers"),
        ("build_memory_from_text", {"content": "x" * 48_001}, "content"),
    ],
    ids=[
        "long-subject",
        "blank-subject",
        "long-predicate",
        "blank-text",
        "layer",
        "aliases",
        "types",
        "layers",
        "content",
    ],
)
def test_graph_fields_past_their_limits(client: Client, tool: str, body: dict[str, Any], field: str) -> None:
    refused(post(client, tool, json.dumps(body), _headers(ACME)), field=field)

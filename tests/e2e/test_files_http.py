"""The file tools (seed 004) over real HTTP, on both adapter sets: `mnemo serve` on its embedded default
(SQLite and a local directory) and `mnemo serve --aws-endpoint` on DynamoDB and S3 in a moto server.

Each test takes a tenant of its own, so one server per adapter set serves the whole module. The block
budget is small (MNEMO_BLOCK_BUDGET_TOKENS), and every expected number is computed from the answers'
``tokens`` fields, never from a guess of how the counter counts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from adapter_servers import Server, ServerOptions
from jsonschema import Draft202012Validator

from helpers import http_request
from mnemo.tools.registry import get_tool, load_catalog
from mnemo.tools.schema import output_schema

BUDGET = 400
ENVELOPE = {"success", "errorCode", "message", "details", "retryable"}
TABLE = "records-files-e2e"
BUCKET = "mnemo-files-e2e"

DECISIONS = "mnemo:///blocks/decisions.md"
LARGE = "mnemo:///blocks/large-doc.md"


def _decision(n: int) -> str:
    return f"- Decision {n}: the orders service {n} keeps its data in PostgreSQL 16, backed up nightly.\n"


FIRST = "# Decisions\n\n" + _decision(1) + "[END]\n"
APPENDED = "".join(_decision(n) for n in range(2, 9))
COMPACTED = "# Decisions\n\n" + "".join(f"- D{n}: orders {n} in PostgreSQL 16.\n" for n in range(1, 9)) + "[END]\n"
LARGE_SMALL = "# Large doc\n\nTo be written.\n"
LARGE_BIG = "# Large doc\n\n" + " ".join(f"word{n % 10}" for n in range(170)) + "\n"


# ------------------------------------------------------------------ servers ---
@pytest.fixture(scope="module")
def server_options() -> ServerOptions:
    """The servers of tests/e2e/conftest.py's ``server`` fixture, with this module's small block budget."""
    return ServerOptions(TABLE, BUCKET, {"MNEMO_BLOCK_BUDGET_TOKENS": str(BUDGET)})


# -------------------------------------------------------------------- calls ---
def who(tenant: str, user: str = "alice", **ids: str) -> dict[str, str]:
    return {"tenant": tenant, "user": user, "roles": "writer"} | ids


def call(url: str, tool: str, body: dict[str, Any], identity: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """One tool call; a 200 must match the tool's output schema, anything else be exactly the envelope."""
    headers = {"Content-Type": "application/json"}
    headers |= {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    status, answer = http_request(url, "POST", f"/v1/tools/{tool}", body, headers)
    assert isinstance(answer, dict), f"{tool}: HTTP {status} answered {answer!r}"
    if status == 200:
        Draft202012Validator(output_schema(get_tool(tool))).validate(answer)
        assert answer["success"] is True
    else:
        assert set(answer) == ENVELOPE, answer
        assert answer["success"] is False, answer
    return status, answer


def ok(url: str, tool: str, body: dict[str, Any], identity: dict[str, str]) -> dict[str, Any]:
    status, answer = call(url, tool, body, identity)
    assert status == 200, f"{tool} {body}: HTTP {status} {answer}"
    return answer


def budget_error(answer: dict[str, Any], *, field: str, path: str, current: int, size: int) -> None:
    """The seed's back-pressure error, exactly: 409 CONFLICT, not retryable, with the numbers to act on."""
    assert answer["errorCode"] == "CONFLICT", answer
    assert answer["retryable"] is False, answer
    details = answer["details"]
    assert details["reason"] == "BLOCK_BUDGET_EXCEEDED", details
    assert details["field"] == field, details
    assert details["path"] == path, details
    assert (details["current"], details["limit"], details["size"]) == (current, BUDGET, size), details
    assert details["wouldBe"] > BUDGET, details
    assert details["unit"] == "tokens", details
    assert details["yours"] is True, details
    advice = details["advice"].lower()
    assert "compact" in advice, details
    assert "unpin" in advice, details
    assert "budget exceeded" in answer["message"].lower(), answer["message"]


# ------------------------------------------------------------ seed workflow ---
def test_seed_workflow_create_append_compact_exceed_unpin_retry(server: Server, tenant: str) -> None:
    me = who(tenant, agent="coder")
    url = server.url

    # Create a block: not pinned yet.
    created = ok(url, "file_write", {"path": DECISIONS, "content": FIRST, "expectedVersion": 0}, me)
    assert (created["version"], created["created"], created["kind"]) == (1, True, "block")
    assert created["pinned"] is False
    assert created["pinnedTokens"] == 0
    assert created["budgetTokens"] == BUDGET
    assert created["bytes"] == len(FIRST.encode())
    assert created["tokens"] > 0

    # Append via file_edit: the end marker replaced by new lines and the marker.
    appended = ok(url, "file_edit", {"path": DECISIONS, "old": "[END]", "new": APPENDED + "[END]"}, me)
    assert (appended["version"], appended["created"], appended["replacements"]) == (2, False, 1)
    grown = appended["tokens"]
    assert grown > created["tokens"]
    read = ok(url, "file_read", {"path": DECISIONS}, me)
    assert read["content"] == FIRST.replace("[END]", APPENDED + "[END]")
    assert (read["version"], read["tokens"], read["pinned"], read["totalLines"]) == (2, grown, False, 11)
    assert read["hasMore"] is False
    assert read["nextOffset"] is None

    # Pin it, then a second block in front of it.
    pinned = ok(url, "block_pin", {"path": DECISIONS}, me)
    assert (pinned["pinned"], pinned["changed"], pinned["position"], pinned["pinnedTokens"]) == (True, True, 0, grown)
    small = ok(url, "file_write", {"path": LARGE, "content": LARGE_SMALL}, me)["tokens"]
    front = ok(url, "block_pin", {"path": LARGE, "position": 0}, me)
    assert (front["position"], front["pinnedTokens"], front["pinnedCount"]) == (0, grown + small, 2)
    again = ok(url, "block_pin", {"path": LARGE}, me)
    assert (again["changed"], again["position"], again["pinnedTokens"]) == (False, 0, grown + small)

    # Compact via file_write: a shorter version, and the pinned total follows it.
    compacted = ok(url, "file_write", {"path": DECISIONS, "content": COMPACTED, "expectedVersion": 2}, me)
    compact = compacted["tokens"]
    assert compact < grown
    assert compacted["version"] == 3
    assert compacted["pinned"] is True
    assert compacted["pinnedTokens"] == compact + small

    # Budget exceeded: growing a pinned block past the budget is refused, and nothing is written.
    status, refused = call(url, "file_write", {"path": LARGE, "content": LARGE_BIG}, me)
    assert status == 409, refused
    big = refused["details"]["size"]
    assert big <= BUDGET < compact + big, f"test data: {big} tokens must fit alone but not beside {compact}"
    budget_error(refused, field="content", path=LARGE, current=compact + small, size=big)
    assert refused["details"]["wouldBe"] == compact + big
    unchanged = ok(url, "file_read", {"path": LARGE}, me)
    assert (unchanged["version"], unchanged["content"], unchanged["tokens"]) == (1, LARGE_SMALL, small)
    context = ok(url, "pinned_context", {}, me)
    assert context["totalTokens"] == compact + small
    assert [b["version"] for b in context["blocks"]] == [1, 3]
    listed = ok(url, "file_list", {"path": "mnemo:///blocks/"}, me)
    assert {e["path"]: e["version"] for e in listed["entries"]} == {DECISIONS: 3, LARGE: 1}

    # Then unpin, and the retried write succeeds.
    unpinned = ok(url, "block_unpin", {"path": DECISIONS}, me)
    assert (unpinned["pinned"], unpinned["changed"], unpinned["pinnedTokens"], unpinned["pinnedCount"]) == (
        False,
        True,
        small,
        1,
    )
    assert ok(url, "block_unpin", {"path": DECISIONS}, me)["changed"] is False
    retried = ok(url, "file_write", {"path": LARGE, "content": LARGE_BIG}, me)
    assert (retried["version"], retried["tokens"], retried["pinned"], retried["pinnedTokens"]) == (2, big, True, big)
    assert ok(url, "file_read", {"path": LARGE}, me)["content"] == LARGE_BIG

    # Pinning the compacted block back is checked against the budget too (the path is what is at fault).
    status, refused_pin = call(url, "block_pin", {"path": DECISIONS}, me)
    assert status == 409
    budget_error(refused_pin, field="path", path=DECISIONS, current=big, size=compact)
    context = ok(url, "pinned_context", {}, me)
    assert [b["path"] for b in context["blocks"]] == [LARGE]
    assert context["totalTokens"] == big

    # The history is kept: the first version reads back.
    first = ok(url, "file_read", {"path": DECISIONS, "version": 1}, me)
    assert first["content"] == FIRST
    assert first["version"] == 1


def test_a_growing_edit_of_a_pinned_block_is_refused_before_anything_is_written(server: Server, tenant: str) -> None:
    me = who(tenant, agent="coder")
    url = server.url
    ok(url, "file_write", {"path": LARGE, "content": LARGE_SMALL}, me)
    ok(url, "block_pin", {"path": LARGE}, me)
    status, refused = call(url, "file_edit", {"path": LARGE, "old": "To be written.", "new": LARGE_BIG * 2}, me)
    assert status == 409
    size = refused["details"]["size"]
    assert size > BUDGET, refused
    assert refused["details"]["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert refused["retryable"] is False
    after = ok(url, "file_read", {"path": LARGE}, me)
    assert (after["version"], after["content"]) == (1, LARGE_SMALL)
    # A write that does not grow the file passes whatever the budget says.
    shrunk = ok(url, "file_edit", {"path": LARGE, "old": "To be written.", "new": "Done."}, me)
    assert shrunk["version"] == 2
    assert shrunk["pinned"] is True
    assert shrunk["pinnedTokens"] == shrunk["tokens"]


def test_a_budget_refused_edit_names_a_field_of_file_edit(server: Server, tenant: str) -> None:
    me = who(tenant, agent="coder")
    ok(server.url, "file_write", {"path": LARGE, "content": LARGE_SMALL}, me)
    ok(server.url, "block_pin", {"path": LARGE}, me)
    edit = {"path": LARGE, "old": "To be written.", "new": LARGE_BIG * 2}
    status, refused = call(server.url, "file_edit", edit, me)
    assert status == 409, refused
    assert refused["details"]["field"] in {"new", "old", "path"}, refused


def test_expected_version_and_edit_conflicts(server: Server, tenant: str) -> None:
    me = who(tenant)
    url = server.url
    ok(url, "file_write", {"path": DECISIONS, "content": "a [END] b [END]\n"}, me)
    status, stale = call(url, "file_write", {"path": DECISIONS, "content": "x", "expectedVersion": 0}, me)
    assert status == 409
    assert stale["retryable"] is False  # the same call fails again: read, then write
    assert stale["details"]["field"] == "expectedVersion"
    assert stale["details"]["currentVersion"] == 1
    status, twice = call(url, "file_edit", {"path": DECISIONS, "old": "[END]", "new": "."}, me)
    assert status == 409
    assert twice["details"]["field"] == "old"
    assert twice["details"]["occurrences"] == 2
    status, absent = call(url, "file_edit", {"path": DECISIONS, "old": "nowhere", "new": "."}, me)
    assert status == 404
    assert absent["details"]["field"] == "old"
    every = ok(url, "file_edit", {"path": DECISIONS, "old": "[END]", "new": "<E>", "replaceAll": True}, me)
    assert every["replacements"] == 2
    assert every["version"] == 2
    assert ok(url, "file_read", {"path": DECISIONS}, me)["content"] == "a <E> b <E>\n"


# -------------------------------------------------- workspace, topics, expand ---
API_DOC = "".join(f"line {n} of the API doc\n" for n in range(1, 8))


def test_workspace_topic_expand_and_pinned_context(server: Server, tenant: str) -> None:
    me = who(tenant, agent="coder", project="checkout")
    url = server.url

    # A workspace file: written, edited, read in pages of lines.
    written = ok(url, "file_write", {"path": "docs/api.md", "content": API_DOC}, me)
    assert (written["kind"], written["version"], written["created"]) == ("workspace", 1, True)
    assert written["pinned"] is None
    assert written["budgetTokens"] is None
    edited = ok(url, "file_edit", {"path": "docs/api.md", "old": "line 4 of", "new": "line FOUR of"}, me)
    assert edited["version"] == 2
    assert edited["replacements"] == 1
    whole = API_DOC.replace("line 4 of", "line FOUR of")
    page = ok(url, "file_read", {"path": "docs/api.md", "offset": 2, "limit": 3}, me)
    assert page["content"] == "".join(whole.splitlines(keepends=True)[2:5])
    assert (page["totalLines"], page["offset"], page["returnedLines"]) == (7, 2, 3)
    assert (page["hasMore"], page["nextOffset"], page["version"]) == (True, 5, 2)
    rest = ok(url, "file_read", {"path": "docs/api.md", "offset": page["nextOffset"], "limit": 3}, me)
    assert rest["content"] == "".join(whole.splitlines(keepends=True)[5:])
    assert rest["hasMore"] is False
    assert rest["nextOffset"] is None
    assert rest["returnedLines"] == 2
    status, past = call(url, "file_read", {"path": "docs/api.md", "offset": 8}, me)
    assert status == 400
    assert past["details"]["field"] == "offset"
    assert ok(url, "file_read", {"path": "docs/api.md", "version": 1}, me)["content"] == API_DOC
    listed = ok(url, "file_list", {"path": "docs/"}, me)
    assert [(e["path"], e["kind"], e["version"]) for e in listed["entries"]] == [("docs/api.md", "workspace", 2)]

    # A topic note through topic://, visible to the topic tools too.
    note = "# Deployment\n\nBlue green on Tuesdays.\n"
    topic = ok(url, "file_write", {"path": "topic://deployment", "content": note}, me)
    assert (topic["kind"], topic["created"]) == ("topic", True)
    assert ok(url, "recall_memory", {"topic": "deployment"}, me)["content"] == note

    # Blocks that reference each other and the workspace; pinned in an order of our own.
    ok(
        url,
        "file_write",
        {"path": DECISIONS, "content": "# Decisions\n\nSee docs/api.md and topic://deployment.\n"},
        me,
    )
    prefs = "mnemo:///blocks/prefs.md"
    ok(url, "file_write", {"path": prefs, "content": "# Preferences\n\nShort answers.\n"}, me)
    read = ok(url, "file_read", {"path": DECISIONS}, me)
    refs = {(r["path"], r["kind"], r["exists"]) for r in read["references"]}
    assert refs == {("docs/api.md", "workspace", True), ("topic://deployment", "topic", True)}, read["references"]
    ok(url, "block_pin", {"path": DECISIONS}, me)
    ok(url, "block_pin", {"path": prefs, "position": 0}, me)
    context = ok(url, "pinned_context", {}, me)
    heads = {b["path"]: b for b in context["blocks"]}
    assert [b["path"] for b in context["blocks"]] == [prefs, DECISIONS]
    expected = "\n\n".join(
        f'<block path="{path}" tokens="{heads[path]["tokens"]}" version="1">\n'
        + ok(url, "file_read", {"path": path}, me)["content"].rstrip("\n")
        + "\n</block>"
        for path in (prefs, DECISIONS)
    )
    assert context["context"] == expected
    assert context["totalTokens"] == sum(b["tokens"] for b in context["blocks"])
    assert context["count"] == 2
    assert context["totalChars"] == len(expected)
    assert context["hasMore"] is False

    # expand_prompt: @path and @@name, each wrapped with its path and version.
    text = "Implement auth following @@decisions and update @docs/api.md, see @topic://deployment."
    expanded = ok(url, "expand_prompt", {"text": text}, me)
    decisions = ok(url, "file_read", {"path": DECISIONS}, me)["content"].rstrip("\n")
    assert expanded["text"] == (
        f'Implement auth following <file path="{DECISIONS}" version="1">\n{decisions}\n</file> and update '
        f'<file path="docs/api.md" version="2">\n{whole.rstrip(chr(10))}\n</file>, see '
        f'<file path="topic://deployment" version="1">\n{note.rstrip(chr(10))}\n</file>.'
    )
    assert [(e["marker"], e["path"], e["kind"]) for e in expanded["expansions"]] == [
        ("@@decisions", DECISIONS, "block"),
        ("@docs/api.md", "docs/api.md", "workspace"),
        ("@topic://deployment", "topic://deployment", "topic"),
    ]
    assert expanded["totalChars"] == len(expanded["text"])
    assert expanded["missing"] == []
    untouched = "mail alice@example.com about @here and `@@decisions` in code"
    assert ok(url, "expand_prompt", {"text": untouched}, me)["text"] == untouched

    # A missing reference: 404 naming text and the marker; or kept, with onMissing "keep".
    status, missing = call(url, "expand_prompt", {"text": "Follow @@nope and @docs/missing.md"}, me)
    assert status == 404
    assert missing["errorCode"] == "NOT_FOUND"
    assert missing["details"]["field"] == "text"
    assert missing["details"]["marker"] == "@@nope"
    assert "@@nope" in missing["message"]
    kept = ok(url, "expand_prompt", {"text": "Follow @@nope and @@prefs", "onMissing": "keep"}, me)
    assert kept["missing"] == ["@@nope"]
    assert kept["text"].startswith("Follow @@nope and <file path=")
    status, capped = call(url, "expand_prompt", {"text": "@docs/api.md", "maxChars": 20}, me)
    assert status == 400
    assert capped["details"]["field"] == "maxChars"

    # Search finds the block by its content; a workspace file is not a block.
    found = ok(url, "file_search", {"query": "short answers preferences", "threshold": 0}, me)
    assert found["results"]
    assert found["results"][0]["path"] == prefs
    assert found["results"][0]["pinned"] is True

    # Delete: the block leaves the pinned context, and its history is kept.
    deleted = ok(url, "file_delete", {"path": prefs}, me)
    assert deleted["unpinnedFor"] == 1
    assert deleted["version"] == 2
    assert [b["path"] for b in ok(url, "pinned_context", {}, me)["blocks"]] == [DECISIONS]
    status, gone = call(url, "file_read", {"path": prefs}, me)
    assert status == 404
    assert gone["details"]["field"] == "path"
    rewritten = ok(url, "file_write", {"path": prefs, "content": "Back.\n"}, me)
    assert rewritten["version"] == 3
    assert rewritten["created"] is True
    ws_deleted = ok(url, "file_delete", {"path": "docs/api.md"}, me)
    assert ws_deleted["kind"] == "workspace"
    assert ok(url, "file_list", {"path": ""}, me)["entries"] == []
    status, read_only = call(url, "file_write", {"path": "knowledge://ADR-042", "content": "x"}, me)
    assert status == 400
    assert read_only["details"]["field"] == "path"


def test_a_topic_note_reads_back_through_file_read(server: Server, tenant: str) -> None:
    me = who(tenant, project="checkout")
    note = "# Deployment\n\nBlue green on Tuesdays.\n"
    ok(server.url, "file_write", {"path": "topic://deployment", "content": note}, me)
    read = ok(server.url, "file_read", {"path": "topic://deployment"}, me)
    assert (read["content"], read["kind"], read["version"]) == (note, "topic", 1)


@pytest.mark.parametrize("server", ["moto"], indirect=True)  # what it looks at exists on the AWS adapters only
def test_on_aws_blocks_are_dynamodb_items_and_workspace_files_s3_objects(server: Server, tenant: str) -> None:
    assert server.moto is not None
    me = who(tenant, agent="coder", project="checkout")
    ok(server.url, "file_write", {"path": DECISIONS, "content": FIRST}, me)
    ok(server.url, "file_write", {"path": "docs/api.md", "content": API_DOC}, me)
    ok(server.url, "file_write", {"path": "docs/api.md", "content": API_DOC + "more\n"}, me)
    items = server.moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    heads = [i for i in items if tenant in i["pk"]["S"] and i["sk"]["S"] in ("F#blocks/decisions.md", "F#docs/api.md")]
    assert sorted(i["pk"]["S"].split("|")[0] for i in heads) == ["ASSET", "WS"], heads
    s3 = server.moto.client("s3")
    versions = s3.list_object_versions(Bucket=BUCKET, Prefix="workspace/")["Versions"]
    mine = [v for v in versions if tenant in v["Key"] and v["Key"].endswith("/docs/api.md")]
    assert len(mine) == 2, [v["Key"] for v in versions]
    latest = s3.get_object(Bucket=BUCKET, Key=mine[0]["Key"])["Body"].read().decode()
    assert latest == API_DOC + "more\n"


# ------------------------------------------------------------- path escapes ---
ESCAPES = [
    "../x",
    "docs/../../x",
    "/etc/passwd",
    "~/x",
    "..%2fx",
    "%2e%2e/x",
    "docs/./x",
    "docs//x",
    "docs\\..\\x",
    "C:\\x",
    "C:/x",
    "\\\\server\\share\\x",
    "file:///etc/passwd",
    "s3://bucket/x",
    "http://169.254.169.254/latest",
    "mnemo:/blocks/x",
    "mnemo:///blocks/../../x",
    "mnemo:///blocks/..",
    "mnemo:///../blocks/x",
    "mnemo:///x.md",
    "mnemo:///etc/passwd",
    "mnemo://other-tenant/blocks/x",
    "mnemo://t=acme|user|u=bob/blocks/x",
    "mnemo://project/../user/blocks/x",
    "mnemo:///blocks/x%2f..%2f..%2fy",
    "knowledge://../x",
    "topic://../x",
    "topic://a/b",
    "docs/\u202egpj.exe",
    "docs/\u200b../x",
    "\ufeff../x",
    "docs/x\u0000",
    "docs/\u2028x",
    "docs/ x",
    "docs/x ",
]


@pytest.mark.parametrize("path", ESCAPES, ids=repr)
def test_path_escapes_are_400_naming_path_on_every_tool(server: Server, tenant: str, path: str) -> None:
    """Every tool whose request names a path (from the catalog) refuses the escape; expand_prompt's markers too."""
    me = who(tenant, agent="coder", project="checkout")
    besides_path: dict[str, dict[str, Any]] = {
        "file_write": {"content": "escaped"},
        "file_edit": {"old": "a", "new": "b"},
    }
    path_tools = [name for name, tool in load_catalog().items() if "path" in tool.request.model_fields]
    bodies = [(tool, {"path": path, **besides_path.get(tool, {})}) for tool in path_tools]
    for tool, body in bodies:
        status, answer = call(server.url, tool, body, me)
        assert status == 400, f"{tool} {path!r}: {status} {answer}"
        assert answer["errorCode"] == "INVALID_INPUT", f"{tool} {path!r}: {status} {answer}"
        assert answer["details"]["field"] == "path", f"{tool} {path!r}: {answer}"
        assert "path" in answer["message"], f"{tool} {path!r}: {answer}"
    for marker in (f"@{path}", f"@@{path}"):
        text = f"see {marker} now"
        status, answer = call(server.url, "expand_prompt", {"text": text}, me)
        if status == 200:  # not a marker at all (no '/' or '.' in it): left as text
            assert answer["text"] == text, f"expand_prompt {marker!r}: {answer}"
            assert answer["expansions"] == [], f"expand_prompt {marker!r}: {answer}"
        else:
            assert status in (400, 404), f"expand_prompt {marker!r}: {answer}"
            assert answer["details"]["field"] == "text", f"expand_prompt {marker!r}: {answer}"
    assert ok(server.url, "file_list", {"path": ""}, me)["entries"] == []


LOOKALIKES = ["\uff0e\uff0e/x", "..\uff0fx", "..\u2215x", "\u2024\u2024/x", "docs/e\u0301.md"]


@pytest.mark.parametrize("path", LOOKALIKES, ids=repr)
def test_lookalike_dots_and_slashes_stay_literal_names_inside_the_scope(server: Server, tenant: str, path: str) -> None:
    """Nothing is decoded or folded (NFKC): a fullwidth '..' is a name, refused or stored as it is, never '..'."""
    me = who(tenant, project="checkout")
    ok(server.url, "file_write", {"path": "x", "content": "the real x"}, me)
    status, answer = call(server.url, "file_write", {"path": path, "content": "lookalike"}, me)
    if status == 400:
        assert answer["details"]["field"] == "path"
    else:
        assert status == 200, answer
        assert ok(server.url, "file_read", {"path": path}, me)["content"] == "lookalike"
    assert ok(server.url, "file_read", {"path": "x"}, me)["content"] == "the real x"
    other = who(tenant, project="billing")
    assert ok(server.url, "file_list", {"path": ""}, other)["entries"] == []
    for name in ("x", "../x"):
        status, answer = call(server.url, "file_read", {"path": name}, other)
        assert status in (400, 404)
        assert "lookalike" not in json.dumps(answer)


def test_over_long_paths_and_segments(server: Server, tenant: str) -> None:
    me = who(tenant, project="checkout")
    for path in ("a/" * 600 + "x", "d/" + "x" * 256):
        status, answer = call(server.url, "file_write", {"path": path, "content": "x"}, me)
        assert status == 400, answer
        assert answer["details"]["field"] == "path", answer


# --------------------------------------------------------------- isolation ---
SECRET = "sec-alice-agent-0042"
USER_SECRET = "sec-alice-user-0043"
WORKSPACE_SECRET = "sec-checkout-0044"


def test_other_callers_and_spliced_identity_headers_cannot_reach_alices_files(server: Server, tenant: str) -> None:
    url = server.url
    alice = who(tenant, agent="coder", project="checkout")
    ok(url, "file_write", {"path": DECISIONS, "content": f"# Decisions\n\n{SECRET}\n"}, alice)
    ok(url, "file_write", {"path": "mnemo://user/blocks/mine.md", "content": f"user {USER_SECRET}\n"}, alice)
    ok(url, "file_write", {"path": "docs/api.md", "content": f"workspace {WORKSPACE_SECRET}\n"}, alice)
    ok(url, "block_pin", {"path": DECISIONS}, alice)
    assert SECRET in ok(url, "pinned_context", {}, alice)["context"]

    honest = [
        who(tenant, "bob", agent="coder", project="billing"),  # another user, another project
        who(tenant, "bob"),
        who(tenant, agent="other", project="billing"),  # alice's other agent, in another project
        who("globex", agent="coder", project="checkout"),  # the same ids in another tenant
        who(tenant + ".eu", agent="coder", project="checkout"),
    ]
    spliced = [
        {**alice, "user": "bob|user|u=alice"},
        {**alice, "user": "bob", "agent": "coder|agent|u=alice"},
        {**alice, "tenant": f"{tenant}|user|u=alice", "user": "bob"},
        {**alice, "user": "bob", "project": "checkout|user|u=alice"},
    ]
    path_like = [
        who(tenant, "bob", project="../checkout"),
        who(tenant, "bob", project="billing/../checkout"),
        who(tenant, "bob/../alice", agent="coder"),
        who(f"globex/../{tenant}", agent="coder", project="checkout"),
        who(tenant, "alice/", agent="coder"),
    ]
    probes: list[tuple[str, dict[str, Any]]] = [
        ("file_read", {"path": DECISIONS}),
        ("file_read", {"path": "mnemo://user/blocks/mine.md"}),
        ("file_read", {"path": "mnemo://agent/blocks/decisions.md"}),
        ("file_read", {"path": "docs/api.md"}),
        ("file_list", {"path": ""}),
        ("file_list", {"path": "mnemo:///"}),
        ("file_list", {"path": "mnemo://user/"}),
        ("file_search", {"query": f"decisions {SECRET} {USER_SECRET}", "threshold": 0}),
        ("pinned_context", {}),
        ("expand_prompt", {"text": "@@decisions @docs/api.md @mnemo://user/blocks/mine.md", "onMissing": "keep"}),
        ("file_edit", {"path": DECISIONS, "old": SECRET, "new": "stolen"}),
        ("file_delete", {"path": "docs/api.md"}),
        ("block_unpin", {"path": DECISIONS}),
    ]
    for identity in (*honest, *spliced, *path_like):
        for tool, body in probes:
            status, answer = call(url, tool, body, identity)
            shown = json.dumps(answer)
            hidden = [SECRET, WORKSPACE_SECRET]
            if identity["user"] != "alice" or identity["tenant"] != tenant:  # her other agents read her user layer
                hidden.append(USER_SECRET)
            for secret in hidden:
                assert secret not in shown, f"LEAK: {tool} as {identity} answered {shown[:1000]}"
            if identity in spliced:
                assert status in (400, 403), f"{tool} as {identity}: HTTP {status} {answer}"
            if tool == "file_list" and status == 200 and (body["path"] != "mnemo://user/" or USER_SECRET in hidden):
                assert answer["entries"] == [], f"{tool} as {identity}: {answer}"
            if tool == "pinned_context" and status == 200:
                assert answer["blocks"] == [], answer
                assert answer["context"] == "", answer

    # Alice still has everything, unchanged.
    assert ok(url, "file_read", {"path": DECISIONS}, alice)["version"] == 1
    assert ok(url, "file_read", {"path": "docs/api.md"}, alice)["version"] == 1
    assert [b["path"] for b in ok(url, "pinned_context", {}, alice)["blocks"]] == [DECISIONS]
    # A teammate in her project shares the workspace, not her blocks.
    teammate = who(tenant, "bob", agent="coder", project="checkout")
    assert ok(url, "file_read", {"path": "docs/api.md"}, teammate)["content"] == f"workspace {WORKSPACE_SECRET}\n"
    assert call(url, "file_read", {"path": DECISIONS}, teammate)[0] == 404
    reader = {**teammate, "roles": "reader"}
    status, denied = call(url, "file_write", {"path": "docs/api.md", "content": "overwritten"}, reader)
    assert status == 403
    assert denied["errorCode"] == "UNAUTHORIZED"


def test_a_project_block_is_shared_and_its_pins_show_only_inside_the_project(server: Server, tenant: str) -> None:
    url = server.url
    alice = who(tenant, agent="coder", project="checkout")
    bob = who(tenant, "bob", agent="coder", project="checkout")
    shared = "mnemo://project/blocks/conventions.md"
    ok(url, "file_write", {"path": shared, "content": "# Conventions\n\nSnake case.\n"}, alice)
    assert ok(url, "file_read", {"path": shared}, bob)["content"] == "# Conventions\n\nSnake case.\n"
    ok(url, "block_pin", {"path": shared}, bob)
    assert [b["path"] for b in ok(url, "pinned_context", {}, bob)["blocks"]] == [shared]
    elsewhere = ok(url, "pinned_context", {}, {**bob, "project": "billing"})
    assert elsewhere["blocks"] == []
    assert elsewhere["inactive"] == 1
    assert "Snake" not in elsewhere["context"]
    status, denied = call(url, "file_write", {"path": shared, "content": "x"}, {**bob, "roles": "reader"})
    assert status == 403
    assert denied["errorCode"] == "UNAUTHORIZED"


def test_growing_a_shared_block_is_checked_against_every_pinners_budget(server: Server, tenant: str) -> None:
    url = server.url
    alice = who(tenant, agent="coder", project="checkout")
    bob = who(tenant, "bob", agent="reviewer", project="checkout")
    shared = "mnemo://project/blocks/conventions.md"
    small = ok(url, "file_write", {"path": shared, "content": LARGE_SMALL}, alice)["tokens"]
    assert ok(url, "block_pin", {"path": shared}, bob)["pinnedTokens"] == small
    status, refused = call(url, "file_write", {"path": shared, "content": LARGE_BIG * 2}, alice)
    assert status == 409, refused
    assert refused["retryable"] is False, refused
    details = refused["details"]
    assert (details["reason"], details["yours"], details["current"], details["limit"]) == (
        "BLOCK_BUDGET_EXCEEDED",
        False,
        small,
        BUDGET,
    )
    assert details["wouldBe"] == details["size"] > BUDGET
    assert "unpin" in details["advice"]
    assert ok(url, "file_read", {"path": shared}, bob)["version"] == 1
    ok(url, "block_unpin", {"path": shared}, bob)
    assert ok(url, "file_write", {"path": shared, "content": LARGE_BIG * 2}, alice)["version"] == 2

"""The file tools' core (seed 004) in process, on both adapter sets: the embedded one (SQLite and a local
directory) and DynamoDB + S3 on a serial moto server, their tables built from template.yaml.

Calls go through the tools (``Tool.invoke``), so identity handling and the camelCase wire shape are part
of what is tested. Token numbers come from ``words(n)``: n short words separated by single spaces, which
the documented counter charges n tokens (tests/unit/test_tokens.py pins that rule down).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, drained
from knowledge_helpers import push_tree
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.budget import wire_bytes
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.files.pins import PIN_SET, PINS_PREFIX
from mnemo.files.scopes import pinner_key
from mnemo.files.store import ASSET_PREFIX, CONTENT, HEAD, PINNERS
from mnemo.files.tokens import count_tokens
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import get_tool

BOT = ctx(agent="bot")  # alice's agent "bot" in tenant acme
WRITER = ctx(agent="bot", project="p1", roles=("writer",))
READER = ctx(user="bob", agent="helper", project="p1")
BLOCK = "mnemo:///blocks/decisions.md"
SHARED = "mnemo://project/blocks/shared.md"

_names = itertools.count()
Build = Callable[..., Services]


# ------------------------------------------------------------------ stacks ---
@pytest.fixture(params=["embedded", "aws"])
def stack(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Build]:
    """A builder of stacks on one adapter set: ``stack(budget)`` a fresh one, ``stack(budget, like=s)`` the
    same data as ``s`` seen with another block budget."""
    kind = request.param
    tables: list[str] = []
    if kind == "aws":
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)

    def build(budget: int = 100_000, like: Services | None = None) -> Services:
        number = next(_names)
        if like is not None:
            built = Services(like.settings.model_copy(update={"block_budget_tokens": budget}))
        elif kind == "embedded":
            built = Services(Settings(data_dir=tmp_path / f"s{number}", embedder="hashing", block_budget_tokens=budget))
        else:
            server = shared_moto_server()
            table, bucket = f"files-records-{number}", f"files-blobs-{number}"
            create_records_table(server.client("dynamodb"), table, stream=False)
            assert ensure_bucket(server.client("s3"), bucket, REGION) is True
            tables.append(table)
            settings = dynamodb_settings(
                server, table, tmp_path / f"s{number}", blobs="s3", blob_bucket=bucket, block_budget_tokens=budget
            )
            built = Services(settings)
        set_services(built)
        return built

    try:
        yield build
    finally:
        set_services(None)
        for table in tables:
            shared_moto_server().client("dynamodb").delete_table(TableName=table)


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Build]:
    def build(budget: int = 100_000, like: Services | None = None) -> Services:
        if like is not None:
            built = Services(like.settings.model_copy(update={"block_budget_tokens": budget}))
        else:
            built = Services(
                Settings(data_dir=tmp_path / f"e{next(_names)}", embedder="hashing", block_budget_tokens=budget)
            )
        set_services(built)
        return built

    yield build
    set_services(None)


# ----------------------------------------------------------------- helpers ---
def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def error_of(run: Callable[[], Any]) -> MnemoError:
    with pytest.raises(MnemoError) as raised:
        run()
    return raised.value


def failed(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> MnemoError:
    return error_of(lambda: call(services, context, tool, payload))


def words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


def write(services: Services, path: str, content: str, context: RequestContext = BOT, **extra: Any) -> dict[str, Any]:
    return call(services, context, "file_write", {"path": path, "content": content, **extra})


def read(services: Services, path: str, context: RequestContext = BOT, **extra: Any) -> dict[str, Any]:
    return call(services, context, "file_read", {"path": path, **extra})


def pin(services: Services, path: str, context: RequestContext = BOT, **extra: Any) -> dict[str, Any]:
    return call(services, context, "block_pin", {"path": path, **extra})


def pinned(services: Services, context: RequestContext = BOT, **extra: Any) -> dict[str, Any]:
    return call(services, context, "pinned_context", extra)


def pin_record(services: Services, context: RequestContext) -> Any:
    return services.records.get(PINS_PREFIX + pinner_key(context), PIN_SET)


def asset_pk(context: RequestContext, layer: str) -> str:
    return ASSET_PREFIX + context.scope_key(layer)


def real_pinned_total(services: Services, context: RequestContext) -> tuple[int, int]:
    """(the pin set's recorded total, the sum of the pinned files' real tokens as their heads say)."""
    record = pin_record(services, context)
    if record is None:
        return 0, 0
    real = 0
    for entry in record.data["pins"]:
        head = services.records.get(entry["pk"], HEAD + entry["name"])
        real += int(head.data["tokens"]) if head is not None and not head.data.get("deleted") else 0
        assert head is None or head.data.get("deleted") or int(entry["tokens"]) == int(head.data["tokens"])
    return int(record.data["total"]), real


# --------------------------------------------------------------------- read ---
def test_read_pages_by_lines_with_total_has_more_and_next_offset(stack: Build) -> None:
    services = stack()
    lines = [f"line {n}\n" for n in range(10)]
    write(services, BLOCK, "".join(lines) + "tail without newline")
    whole = read(services, BLOCK)
    assert whole["totalLines"] == 11
    assert whole["returnedLines"] == 11
    assert whole["hasMore"] is False
    assert whole["nextOffset"] is None
    assert whole["content"] == "".join(lines) + "tail without newline"
    page = read(services, BLOCK, offset=2, limit=3)
    assert page["content"] == "line 2\nline 3\nline 4\n"
    assert (page["offset"], page["returnedLines"], page["totalLines"]) == (2, 3, 11)
    assert page["hasMore"] is True
    assert page["nextOffset"] == 5
    assert page["tokens"] == whole["tokens"] == count_tokens(whole["content"])
    parts, offset = [], 0
    while True:
        answer = read(services, BLOCK, offset=offset, limit=4)
        parts.append(answer["content"])
        if not answer["hasMore"]:
            break
        offset = answer["nextOffset"]
    assert "".join(parts) == whole["content"]
    assert len(parts) == 3
    last = read(services, BLOCK, offset=10, limit=5)
    assert last["content"] == "tail without newline"
    assert last["hasMore"] is False
    assert last["nextOffset"] is None
    at_end = read(services, BLOCK, offset=11)
    assert at_end["content"] == ""
    assert at_end["returnedLines"] == 0
    assert at_end["hasMore"] is False
    past = failed(services, BOT, "file_read", {"path": BLOCK, "offset": 12})
    assert past.code == "INVALID_INPUT"
    assert past.details["field"] == "offset"
    assert past.details["totalLines"] == 11


def test_read_of_a_missing_file_is_not_found_naming_path(stack: Build) -> None:
    services = stack()
    for path in (BLOCK, "src/none.py", "mnemo://user/skills/none.md"):
        error = failed(services, WRITER, "file_read", {"path": path})
        assert error.code == "NOT_FOUND", path
        assert error.details["field"] == "path", path


def test_empty_and_crlf_files_read_back_as_written(stack: Build) -> None:
    services = stack()
    assert write(services, BLOCK, "")["tokens"] == 0
    empty = read(services, BLOCK)
    assert (empty["content"], empty["totalLines"], empty["hasMore"]) == ("", 0, False)
    write(services, "notes/crlf.txt", "a\r\nb\r\n", WRITER)
    answer = read(services, "notes/crlf.txt", WRITER, offset=1)
    assert answer["content"] == "b\r\n"
    assert answer["totalLines"] == 2


# --------------------------------------------------------------------- edit ---
def test_edit_needs_old_exactly_once_or_replace_all(stack: Build) -> None:
    services = stack()
    write(services, BLOCK, "# Decisions\n\n- one\n- two\n[END]\n")
    missing = failed(services, BOT, "file_edit", {"path": BLOCK, "old": "- three", "new": "x"})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "old"
    assert missing.details["occurrences"] == 0
    twice = failed(services, BOT, "file_edit", {"path": BLOCK, "old": "\n- ", "new": "\n* "})
    assert twice.code == "CONFLICT"
    assert twice.details["field"] == "old"
    assert twice.details["occurrences"] == 2
    unchanged = read(services, BLOCK)
    assert unchanged["version"] == 1
    assert unchanged["content"] == "# Decisions\n\n- one\n- two\n[END]\n"
    appended = call(services, BOT, "file_edit", {"path": BLOCK, "old": "[END]", "new": "- three\n[END]"})
    assert appended["version"] == 2
    assert appended["replacements"] == 1
    assert appended["created"] is False
    assert appended["tokens"] == count_tokens("# Decisions\n\n- one\n- two\n- three\n[END]\n")
    every = call(services, BOT, "file_edit", {"path": BLOCK, "old": "\n- ", "new": "\n* ", "replaceAll": True})
    assert every["replacements"] == 3
    assert every["version"] == 3
    assert "3 replacements" in every["message"]
    assert read(services, BLOCK)["content"] == "# Decisions\n\n* one\n* two\n* three\n[END]\n"
    gone = failed(services, BOT, "file_edit", {"path": "mnemo:///blocks/none.md", "old": "a", "new": "b"})
    assert gone.code == "NOT_FOUND"
    assert gone.details["field"] == "path"


def test_edit_works_on_workspace_files_too(stack: Build) -> None:
    services = stack()
    write(services, "src/auth.py", "def login():\n    return False\n", WRITER)
    edited = call(services, WRITER, "file_edit", {"path": "src/auth.py", "old": "False", "new": "True"})
    assert edited["kind"] == "workspace"
    assert edited["version"] == 2
    assert read(services, "src/auth.py", WRITER)["content"] == "def login():\n    return True\n"
    twice = failed(services, WRITER, "file_edit", {"path": "src/auth.py", "old": "e", "new": "E"})
    assert twice.code == "CONFLICT"
    assert twice.details["occurrences"] == 3  # d-e-f, r-e-turn, Tru-e


# ----------------------------------------------------------- expectedVersion ---
@pytest.mark.parametrize("path", [BLOCK, "src/app.py", SHARED])
def test_expected_version_refuses_a_stale_write_edit_or_delete(stack: Build, path: str) -> None:
    services = stack()
    created = write(services, path, "v1 [END]", WRITER, expectedVersion=0)
    assert created["created"] is True
    assert created["version"] == 1
    again = failed(services, WRITER, "file_write", {"path": path, "content": "other", "expectedVersion": 0})
    assert again.code == "CONFLICT"
    assert again.details["field"] == "expectedVersion"
    assert again.details["currentVersion"] == 1
    assert write(services, path, "v2 [END]", WRITER, expectedVersion=1)["version"] == 2
    for tool, extra in (
        ("file_write", {"content": "stale"}),
        ("file_edit", {"old": "[END]", "new": "stale [END]"}),
        ("file_delete", {}),
    ):
        stale = failed(services, WRITER, tool, {"path": path, "expectedVersion": 1, **extra})
        assert stale.code == "CONFLICT", tool
        assert stale.details["field"] == "expectedVersion", tool
        assert stale.details["currentVersion"] == 2
    assert read(services, path, WRITER)["content"] == "v2 [END]"
    assert read(services, path, WRITER)["version"] == 2
    edited = call(services, WRITER, "file_edit", {"path": path, "old": "[END]", "new": "x [END]", "expectedVersion": 2})
    assert edited["version"] == 3
    assert call(services, WRITER, "file_delete", {"path": path, "expectedVersion": 3})["version"] == 4


def test_expected_version_zero_on_a_never_written_file_creates_it(stack: Build) -> None:
    services = stack()
    stale = failed(services, BOT, "file_write", {"path": BLOCK, "content": "x", "expectedVersion": 3})
    assert stale.code == "CONFLICT"
    assert stale.details["currentVersion"] == 0
    assert services.records.get(asset_pk(BOT, "agent"), HEAD + "blocks/decisions.md") is None


# ------------------------------------------------------------------ history ---
def test_version_reads_earlier_versions_and_a_block_keeps_the_last_20(stack: Build) -> None:
    services = stack()
    for n in range(1, 23):
        assert write(services, BLOCK, f"content {n}\n")["version"] == n
    for n in (3, 10, 21, 22):
        answer = read(services, BLOCK, version=n)
        assert answer["content"] == f"content {n}\n"
        assert answer["version"] == n
    for n in (1, 2):
        gone = failed(services, BOT, "file_read", {"path": BLOCK, "version": n})
        assert gone.code == "NOT_FOUND", n
        assert gone.details["field"] == "version", n
    beyond = failed(services, BOT, "file_read", {"path": BLOCK, "version": 23})
    assert beyond.code == "NOT_FOUND"
    assert beyond.details["field"] == "version"
    kept = services.records.query(asset_pk(BOT, "agent"), CONTENT + "blocks/decisions.md#", limit=100)
    assert sorted({int(item.sk.split("#")[2]) for item in kept}) == list(range(3, 23))


def test_a_workspace_file_keeps_every_version(stack: Build) -> None:
    services = stack()
    for n in range(1, 23):
        write(services, "docs/api.md", f"api {n}\n", WRITER)
    assert read(services, "docs/api.md", WRITER, version=1)["content"] == "api 1\n"
    assert read(services, "docs/api.md", WRITER, version=22)["content"] == "api 22\n"


@pytest.mark.parametrize("path", [BLOCK, "src/app.py"])
def test_delete_then_recreate_continues_versions(stack: Build, path: str) -> None:
    services = stack()
    write(services, path, "first", WRITER)
    write(services, path, "second", WRITER)
    deleted = call(services, WRITER, "file_delete", {"path": path})
    assert deleted["version"] == 3
    assert deleted["unpinnedFor"] == 0
    assert failed(services, WRITER, "file_read", {"path": path}).code == "NOT_FOUND"
    assert failed(services, WRITER, "file_delete", {"path": path}).code == "NOT_FOUND"
    edit = failed(services, WRITER, "file_edit", {"path": path, "old": "second", "new": "x"})
    assert edit.code == "NOT_FOUND"
    assert path not in [entry["path"] for entry in call(services, WRITER, "file_list", {"path": ""})["entries"]]
    recreated = write(services, path, "third", WRITER, expectedVersion=0)
    assert recreated["version"] == 4
    assert recreated["created"] is True
    assert read(services, path, WRITER)["content"] == "third"
    assert read(services, path, WRITER, version=2)["content"] == "second"
    tombstone = failed(services, WRITER, "file_read", {"path": path, "version": 3})
    assert tombstone.code == "NOT_FOUND"


# ------------------------------------------------------------------- budget ---
def test_pin_over_budget_fails_before_anything_is_written(stack: Build) -> None:
    services = stack(100)
    for name, size in (("a", 60), ("b", 30), ("c", 50)):
        assert write(services, f"mnemo:///blocks/{name}.md", words(size))["tokens"] == size
    assert pin(services, "mnemo:///blocks/a.md")["pinnedTokens"] == 60
    assert pin(services, "mnemo:///blocks/b.md")["pinnedTokens"] == 90
    before = pin_record(services, BOT)
    error = failed(services, BOT, "block_pin", {"path": "mnemo:///blocks/c.md"})
    assert error.code == "CONFLICT"
    assert error.details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert {key: error.details[key] for key in ("current", "limit", "size", "wouldBe", "yours")} == {
        "current": 90,
        "limit": 100,
        "size": 50,
        "wouldBe": 140,
        "yours": True,
    }
    assert "unpin" in error.details["advice"]
    assert error.retryable is False
    after = pin_record(services, BOT)
    assert (after.version, after.data) == (before.version, before.data)
    listed = services.records.get(asset_pk(BOT, "agent"), PINNERS + "blocks/c.md")
    assert listed is None or listed.data["pinnedBy"] == []
    context = pinned(services)
    assert context["totalTokens"] == 90
    assert [b["path"] for b in context["blocks"]] == [
        "mnemo:///blocks/a.md",
        "mnemo:///blocks/b.md",
    ]


@pytest.mark.parametrize("tool", ["file_write", "file_edit"])
def test_growing_a_pinned_block_over_budget_fails_before_anything_is_written(stack: Build, tool: str) -> None:
    services = stack(100)
    assert write(services, "mnemo:///blocks/a.md", words(59) + " end")["tokens"] == 60
    write(services, "mnemo:///blocks/b.md", words(30))
    pin(services, "mnemo:///blocks/a.md")
    pin(services, "mnemo:///blocks/b.md")
    head_before = services.records.get(asset_pk(BOT, "agent"), HEAD + "blocks/a.md")
    assert head_before is not None
    pins_before = pin_record(services, BOT)
    payload: dict[str, Any] = (
        {"path": "mnemo:///blocks/a.md", "content": words(71)}
        if tool == "file_write"
        else {"path": "mnemo:///blocks/a.md", "old": "end", "new": words(12)}
    )
    error = failed(services, BOT, tool, payload)
    assert error.code == "CONFLICT"
    assert error.details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert (error.details["current"], error.details["limit"], error.details["size"]) == (90, 100, 71)
    assert error.details["wouldBe"] == 101
    assert error.details["yours"] is True
    assert error.details["advice"]
    assert error.details["path"] == "mnemo:///blocks/a.md"
    head_after = services.records.get(asset_pk(BOT, "agent"), HEAD + "blocks/a.md")
    assert head_after is not None
    assert (head_after.version, head_after.data) == (head_before.version, head_before.data)
    assert read(services, "mnemo:///blocks/a.md")["content"] == words(59) + " end"
    assert failed(services, BOT, "file_read", {"path": "mnemo:///blocks/a.md", "version": 2}).code == "NOT_FOUND"
    assert pin_record(services, BOT).data == pins_before.data
    # unpin one, and the very same write passes
    unpinned = call(services, BOT, "block_unpin", {"path": "mnemo:///blocks/b.md"})
    assert unpinned["changed"] is True
    assert unpinned["pinnedTokens"] == 60
    retried = call(services, BOT, tool, payload)
    assert retried["version"] == 2
    assert retried["pinned"] is True
    assert retried["pinnedTokens"] == 71
    assert retried["budgetTokens"] == 100
    assert pinned(services)["totalTokens"] == 71 == real_pinned_total(services, BOT)[1]


def test_a_shrinking_write_passes_even_over_budget(stack: Build) -> None:
    roomy = stack(200)
    write(roomy, "mnemo:///blocks/a.md", words(60))
    write(roomy, "mnemo:///blocks/b.md", words(30))
    pin(roomy, "mnemo:///blocks/a.md")
    pin(roomy, "mnemo:///blocks/b.md")
    tight = stack(50, like=roomy)  # the budget setting lowered: 90 pinned against 50
    shrunk = write(tight, "mnemo:///blocks/a.md", words(59))
    assert shrunk["pinnedTokens"] == 89
    assert shrunk["budgetTokens"] == 50
    assert shrunk["version"] == 2
    same = write(tight, "mnemo:///blocks/a.md", words(59, "other"))
    assert same["tokens"] == 59
    assert same["version"] == 3  # not growing: passes
    grow = failed(tight, BOT, "file_write", {"path": "mnemo:///blocks/b.md", "content": words(31)})
    assert grow.details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert grow.details["current"] == 89
    assert (grow.details["limit"], grow.details["wouldBe"]) == (50, 90)
    call(tight, BOT, "block_unpin", {"path": "mnemo:///blocks/a.md"})
    assert write(tight, "mnemo:///blocks/b.md", words(31))["pinnedTokens"] == 31
    assert real_pinned_total(tight, BOT) == (31, 31)


def test_an_unpinned_block_grows_freely_and_a_pin_then_checks_its_size(stack: Build) -> None:
    services = stack(100)
    assert write(services, BLOCK, words(500))["pinned"] is False
    error = failed(services, BOT, "block_pin", {"path": BLOCK})
    assert (error.details["current"], error.details["size"], error.details["wouldBe"]) == (0, 500, 500)


def test_a_project_block_pinned_by_two_agents_checks_both_budgets(stack: Build) -> None:
    services = stack(100)
    other = ctx(user="bob", agent="b", project="p1")
    write(services, SHARED, words(20), WRITER)
    write(services, "mnemo:///blocks/own.md", words(70), other)
    pin(services, "mnemo:///blocks/own.md", other)
    assert pin(services, SHARED, other)["pinnedTokens"] == 90
    assert pin(services, SHARED, WRITER)["pinnedTokens"] == 20
    error = failed(services, WRITER, "file_write", {"path": SHARED, "content": words(40)})
    assert error.code == "CONFLICT"
    assert error.details["reason"] == "BLOCK_BUDGET_EXCEEDED"
    assert error.details["yours"] is False
    assert (error.details["current"], error.details["wouldBe"]) == (90, 110)
    assert error.details["size"] == 40
    assert error.details["limit"] == 100
    assert read(services, SHARED, WRITER)["content"] == words(20)
    assert pinned(services, other)["totalTokens"] == 90
    assert pinned(services, WRITER)["totalTokens"] == 20
    grown = write(services, SHARED, words(25), WRITER)
    assert grown["pinnedTokens"] == 25
    assert grown["pinned"] is True
    assert pinned(services, other)["totalTokens"] == 95
    assert real_pinned_total(services, other) == (95, 95)
    deleted = call(services, WRITER, "file_delete", {"path": SHARED})
    assert deleted["unpinnedFor"] == 2
    assert pinned(services, WRITER)["count"] == 0
    assert pinned(services, WRITER)["totalTokens"] == 0
    left = pinned(services, other)
    assert left["count"] == 1
    assert left["totalTokens"] == 70
    assert real_pinned_total(services, other) == (70, 70)
    assert real_pinned_total(services, WRITER) == (0, 0)
    assert services.records.get(asset_pk(WRITER, "project"), PINNERS + "blocks/shared.md") is None


# ----------------------------------------------------------- pinned context ---
def test_pinned_context_order_positions_moves_and_totals(stack: Build) -> None:
    services = stack()
    contents = {"x": "# X\nfirst block\n", "y": "# Y\nsecond", "z": "# Z\n\nthird block here\n\n"}
    for name, content in contents.items():
        write(services, f"mnemo:///blocks/{name}.md", content)
        pin(services, f"mnemo:///blocks/{name}.md")
    moved = pin(services, "mnemo:///blocks/z.md", position=0)
    assert moved["changed"] is True
    assert moved["position"] == 0
    assert "moved" in moved["message"]
    again = pin(services, "mnemo:///blocks/y.md")
    assert again["changed"] is False
    assert again["position"] == 2
    assert again["pinnedCount"] == 3
    answer = pinned(services)
    order = ["z", "x", "y"]
    assert [block["path"] for block in answer["blocks"]] == [f"mnemo:///blocks/{n}.md" for n in order]
    assert [block["position"] for block in answer["blocks"]] == [0, 1, 2]
    tokens = {name: count_tokens(content) for name, content in contents.items()}
    assert [block["tokens"] for block in answer["blocks"]] == [tokens[n] for n in order]
    assert answer["totalTokens"] == sum(tokens.values())
    assert answer["count"] == 3
    expected = "\n\n".join(
        f'<block path="mnemo:///blocks/{n}.md" tokens="{tokens[n]}" version="1">\n'
        + contents[n].rstrip("\n")
        + "\n</block>"
        for n in order
    )
    assert answer["context"] == expected
    assert answer["totalChars"] == len(expected)
    assert answer["hasMore"] is False
    call(services, BOT, "block_unpin", {"path": "mnemo:///blocks/x.md"})
    again_unpin = call(services, BOT, "block_unpin", {"path": "mnemo:///blocks/x.md"})
    assert again_unpin["changed"] is False
    assert again_unpin["pinnedCount"] == 2
    after = pinned(services)
    assert [block["path"] for block in after["blocks"]] == ["mnemo:///blocks/z.md", "mnemo:///blocks/y.md"]
    assert after["totalTokens"] == tokens["z"] + tokens["y"]
    last = pin(services, "mnemo:///blocks/x.md", position=99)
    assert last["position"] == 2
    assert read(services, "mnemo:///blocks/x.md")["pinned"] is True
    listed = call(services, BOT, "file_list", {"path": "mnemo:///blocks/"})["entries"]
    assert [entry["pinned"] for entry in listed] == [True, True, True]


def test_pinning_is_for_stored_assets_only_and_needs_the_file(stack: Build) -> None:
    services = stack()
    write(services, "src/a.py", "x", WRITER)
    workspace = failed(services, WRITER, "block_pin", {"path": "src/a.py"})
    assert workspace.code == "INVALID_INPUT"
    assert workspace.details["field"] == "path"
    assert failed(services, WRITER, "block_pin", {"path": "topic://deploy"}).code == "INVALID_INPUT"
    missing = failed(services, WRITER, "block_pin", {"path": BLOCK})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "path"
    assert pin_record(services, WRITER) is None


def test_a_project_pin_shows_only_inside_that_project(stack: Build) -> None:
    services = stack()
    write(services, SHARED, words(5), WRITER)
    pin(services, SHARED, WRITER)
    elsewhere = pinned(services, ctx(agent="bot", project="p2"))
    assert elsewhere["count"] == 0
    assert elsewhere["inactive"] == 1
    assert "shared" not in elsewhere["context"]
    assert pinned(services, WRITER)["count"] == 1


# -------------------------------------------------------------------- topics ---
def test_topic_paths_map_onto_the_topic_service(stack: Build) -> None:
    services = stack()
    path = "topic://deployment-process"
    created = write(services, path, "# How we deploy\n\nBlue green on Tuesdays.\n", WRITER)
    assert created["kind"] == "topic"
    assert created["created"] is True
    assert created["version"] == 1
    recalled = call(services, WRITER, "recall_memory", {"topic": "deployment-process"})
    assert recalled["summary"] == "How we deploy"
    assert recalled["content"].startswith("# How we deploy")
    assert recalled["version"] == 1
    refined = write(services, path, "# How we deploy\n\nBlue green on Thursdays.\n", WRITER, expectedVersion=1)
    assert refined["version"] == 2
    assert refined["created"] is False
    stale = failed(services, WRITER, "file_write", {"path": path, "content": "x", "expectedVersion": 1})
    assert stale.code == "CONFLICT"
    assert stale.details["field"] == "expectedVersion"
    edited = call(services, WRITER, "file_edit", {"path": path, "old": "Thursdays", "new": "Fridays"})
    assert edited["version"] == 3
    assert edited["replacements"] == 1
    recalled = call(services, WRITER, "recall_memory", {"topic": "deployment-process"})
    assert "Fridays" in recalled["content"]
    assert recalled["version"] == 3
    assert recalled["summary"] == "How we deploy"
    missing_old = failed(services, WRITER, "file_edit", {"path": path, "old": "Mondays", "new": "x"})
    assert missing_old.code == "NOT_FOUND"
    assert missing_old.details["field"] == "old"
    listed = call(services, WRITER, "file_list", {"path": "topic://"})
    assert [entry["path"] for entry in listed["entries"]] == [path]
    denied = failed(services, READER, "file_write", {"path": path, "content": "x"})
    assert denied.code == "UNAUTHORIZED"
    stale_delete = failed(services, WRITER, "file_delete", {"path": path, "expectedVersion": 2})
    assert stale_delete.code == "CONFLICT"
    assert stale_delete.details["field"] == "expectedVersion"
    call(services, WRITER, "file_delete", {"path": path})
    assert failed(services, WRITER, "recall_memory", {"topic": "deployment-process"}).code == "NOT_FOUND"
    again = failed(services, WRITER, "file_delete", {"path": path})
    assert again.code == "NOT_FOUND"
    assert again.details["field"] == "path"
    bad = failed(services, WRITER, "file_write", {"path": "topic://a/b", "content": "x"})
    assert bad.code == "INVALID_INPUT"
    assert bad.details["field"] == "path"


def test_topic_paths_read_like_files(embedded: Build) -> None:
    services = embedded()
    write(services, "topic://deploy", "# How we deploy\nBlue green.\n", WRITER)
    answer = read(services, "topic://deploy", WRITER)
    assert answer["content"] == "# How we deploy\nBlue green.\n"
    assert answer["kind"] == "topic"
    assert answer["version"] == 1
    assert answer["totalLines"] == 2


def test_topic_paths_expand_in_prompts(stack: Build) -> None:
    services = stack()
    write(services, "topic://deploy", "# How we deploy\nBlue green.\n", WRITER)
    expanded = call(services, WRITER, "expand_prompt", {"text": "Follow @topic://deploy."})
    assert expanded["text"] == 'Follow <file path="topic://deploy" version="1">\n# How we deploy\nBlue green.\n</file>.'
    assert expanded["expansions"][0]["kind"] == "topic"


# ----------------------------------------------------------------- knowledge ---
ENGINEER = ctx(org="engineering", team="payments", project="checkout-api", agent="bot", roles=("writer",))
ADR = "knowledge://adr-042-database-selection"


def test_knowledge_paths_are_readable_and_never_writable(stack: Build) -> None:
    services = stack()
    assert push_tree(services, ENGINEER.tenant) > 0
    services.sync.sync(ENGINEER.tenant, SyncNowInput())
    answer = read(services, ADR, ENGINEER)
    assert answer["kind"] == "knowledge"
    assert "PostgreSQL" in answer["content"]
    assert answer["version"] is None
    assert answer["totalLines"] == len(answer["content"].splitlines())
    listed = [entry["path"] for entry in call(services, ENGINEER, "file_list", {"path": "knowledge://"})["entries"]]
    assert ADR in listed
    expanded = call(services, ENGINEER, "expand_prompt", {"text": f"Respect @{ADR} please"})
    assert "PostgreSQL" in expanded["text"]
    assert expanded["expansions"][0]["path"] == ADR
    for tool, extra in (
        ("file_write", {"content": "hijacked"}),
        ("file_edit", {"old": "PostgreSQL", "new": "MongoDB"}),
        ("file_delete", {}),
    ):
        error = failed(services, ENGINEER, tool, {"path": ADR, **extra})
        assert error.code == "INVALID_INPUT", tool
        assert error.details["field"] == "path", tool
    assert read(services, ADR, ENGINEER)["content"] == answer["content"]
    missing = failed(services, ENGINEER, "file_read", {"path": "knowledge://no-such-item"})
    assert missing.code == "NOT_FOUND"
    assert missing.details["field"] == "path"
    stranger = failed(services, ctx(tenant="globex", org="engineering", agent="bot"), "file_read", {"path": ADR})
    assert stranger.code == "NOT_FOUND"


def test_file_list_of_knowledge_pages_past_the_first_hundred_items(embedded: Build, tmp_path: Path) -> None:
    from knowledge_helpers import doc

    services = embedded()
    root = tmp_path / "many"
    (root / "company").mkdir(parents=True)
    for n in range(105):
        (root / "company" / f"policy-{n:03d}.md").write_bytes(doc(f"policy-{n:03d}"))
    assert push_tree(services, "acme", root=root) == 105
    services.sync.sync("acme", SyncNowInput())
    seen, cursor = [], None
    while True:
        answer = call(
            services, BOT, "file_list", {"path": "knowledge://", "limit": 40} | ({"cursor": cursor} if cursor else {})
        )
        seen += [entry["path"] for entry in answer["entries"]]
        if not answer["hasMore"]:
            break
        cursor = answer["nextCursor"]
    assert len(seen) == len(set(seen))
    assert "knowledge://policy-000" in seen
    assert sorted(seen) == [f"knowledge://policy-{n:03d}" for n in range(105)]


# ----------------------------------------------------------------- isolation ---
OWNER = ctx(agent="bot", project="p1", roles=("writer",))
STRANGERS = {
    "another tenant": ctx(tenant="globex", agent="bot", project="p1", roles=("writer",)),
    "another user": ctx(user="bob", agent="bot", project="p2", roles=("writer",)),
    "another agent of the same user": ctx(agent="other", project="p2", roles=("writer",)),
}


@pytest.mark.parametrize("who", sorted(STRANGERS))
def test_others_cannot_reach_each_others_blocks_files_or_pins(stack: Build, who: str) -> None:
    services = stack()
    stranger = STRANGERS[who]
    write(services, "mnemo:///blocks/secret.md", "zanzibar ferries leave at dawn\n", OWNER)
    write(services, "mnemo:///skills/secret.md", "zanzibar skill\n", OWNER)
    write(services, "src/secret.py", "ZANZIBAR = 1\n", OWNER)
    pin(services, "mnemo:///blocks/secret.md", OWNER)
    for path in ("mnemo:///blocks/secret.md", "mnemo://agent/blocks/secret.md", "mnemo://user/blocks/secret.md"):
        assert failed(services, stranger, "file_read", {"path": path}).code == "NOT_FOUND", path
        assert failed(services, stranger, "block_pin", {"path": path}).code == "NOT_FOUND", path
        assert failed(services, stranger, "file_delete", {"path": path}).code == "NOT_FOUND", path
    assert failed(services, stranger, "file_read", {"path": "src/secret.py"}).code == "NOT_FOUND"
    for folder in ("mnemo:///", "mnemo:///blocks/", "mnemo://user/", ""):
        assert call(services, stranger, "file_list", {"path": folder})["entries"] == [], folder
    assert call(services, stranger, "file_search", {"query": "zanzibar ferries", "threshold": 0})["results"] == []
    for text in ("@@secret", "@src/secret.py", "@mnemo:///blocks/secret.md"):
        error = failed(services, stranger, "expand_prompt", {"text": text})
        assert error.code == "NOT_FOUND"
        assert error.details["marker"] == text
    context = pinned(services, stranger)
    assert context["count"] == 0
    assert context["totalTokens"] == 0
    assert context["inactive"] == 0
    assert call(services, stranger, "block_unpin", {"path": "mnemo:///blocks/secret.md"})["changed"] is False
    # the owner still has all of it: the checks above could have failed
    assert read(services, "mnemo:///blocks/secret.md", OWNER)["pinned"] is True
    assert pinned(services, OWNER)["count"] == 1
    found = call(services, OWNER, "file_search", {"query": "zanzibar ferries", "threshold": 0})["results"]
    assert found[0]["path"] == "mnemo:///blocks/secret.md"


def test_a_personal_workspace_is_the_users_own(stack: Build) -> None:
    services = stack()
    alice, bob = ctx(), ctx(user="bob")
    write(services, "notes/todo.md", "alice's list", alice)
    assert failed(services, bob, "file_read", {"path": "notes/todo.md"}).code == "NOT_FOUND"
    assert call(services, bob, "file_list", {"path": ""})["entries"] == []
    assert failed(services, ctx(project="p1"), "file_read", {"path": "notes/todo.md"}).code == "NOT_FOUND"
    assert read(services, "notes/todo.md", ctx(agent="any"))["content"] == "alice's list"


def test_agents_of_one_user_share_the_user_layer_only(stack: Build) -> None:
    services = stack()
    first, second = ctx(agent="one"), ctx(agent="two")
    write(services, "mnemo://user/skills/ddd.md", "shared skill", first)
    write(services, "mnemo:///skills/ddd.md", "first's own skill", first)
    assert read(services, "mnemo://user/skills/ddd.md", second)["content"] == "shared skill"
    assert failed(services, second, "file_read", {"path": "mnemo:///skills/ddd.md"}).code == "NOT_FOUND"
    assert read(services, "mnemo:///skills/ddd.md", ctx())["content"] == "shared skill"  # no agent: the user's


def test_project_files_need_the_writer_role_to_change(stack: Build) -> None:
    services = stack()
    write(services, SHARED, "shared [END]", WRITER)
    write(services, "src/app.py", "app [END]", WRITER)
    for path in (SHARED, "src/app.py", "mnemo://project/skills/new.md", "src/new.py"):
        for tool, extra in (
            ("file_write", {"content": "x"}),
            ("file_edit", {"old": "[END]", "new": "x"}),
            ("file_delete", {}),
        ):
            if tool != "file_write" and "new" in path:
                continue
            error = failed(services, READER, tool, {"path": path, **extra})
            assert error.code == "UNAUTHORIZED", (path, tool, error)
    assert read(services, SHARED, READER)["content"] == "shared [END]"
    assert read(services, "src/app.py", READER)["content"] == "app [END]"
    assert pin(services, SHARED, READER)["pinned"] is True  # reading (and pinning) needs no role
    assert read(services, SHARED, WRITER)["version"] == 1


def test_missing_ids_are_invalid_input_naming_them(stack: Build) -> None:
    services = stack()
    anonymous = ctx(user=None)
    error = failed(services, anonymous, "file_write", {"path": BLOCK, "content": "x"})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "user"
    error = failed(services, anonymous, "file_write", {"path": "src/a.py", "content": "x"})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "project"
    error = failed(services, ctx(), "file_read", {"path": SHARED})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "project"
    assert failed(services, anonymous, "pinned_context", {}).details["field"] == "user"
    error = failed(services, ctx(), "file_write", {"path": "mnemo://agent/blocks/x.md", "content": "x"})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "agent"


# ----------------------------------------------------------------- expansion ---
def test_expand_prompt_markers_code_recursion_missing_and_max_chars(stack: Build) -> None:
    services = stack()
    write(services, "mnemo:///blocks/a.md", "A mentions @@b and @src/b.py\n", WRITER)
    write(services, "mnemo:///skills/b.md", "skill B", WRITER)
    write(services, "src/b.py", "print('b')\n", WRITER)
    answer = call(services, WRITER, "expand_prompt", {"text": "Use @@a, @@b and @src/b.py. Mail alice@example.com"})
    assert answer["text"] == (
        'Use <file path="mnemo:///blocks/a.md" version="1">\nA mentions @@b and @src/b.py\n</file>, '
        '<file path="mnemo:///skills/b.md" version="1">\nskill B\n</file> and '
        '<file path="src/b.py" version="1">\nprint(\'b\')\n</file>. Mail alice@example.com'
    )
    assert [e["marker"] for e in answer["expansions"]] == ["@@a", "@@b", "@src/b.py"]
    assert [e["kind"] for e in answer["expansions"]] == ["block", "skill", "workspace"]
    assert answer["totalChars"] == len(answer["text"])
    assert answer["tokens"] == count_tokens(answer["text"])
    code = "Keep `@@a` and\n```\n@src/b.py\n```\nand @here as they are"
    assert call(services, WRITER, "expand_prompt", {"text": code})["text"] == code
    missing = failed(services, WRITER, "expand_prompt", {"text": "Use @@nothing"})
    assert missing.code == "NOT_FOUND"
    assert missing.details["marker"] == "@@nothing"
    assert "mnemo:///blocks/nothing.md" in missing.details["tried"]
    kept = call(services, WRITER, "expand_prompt", {"text": "Use @@nothing and @@a", "onMissing": "keep"})
    assert kept["missing"] == ["@@nothing"]
    assert kept["text"].startswith("Use @@nothing and <file")
    too_long = failed(services, WRITER, "expand_prompt", {"text": "Use @@a", "maxChars": 30})
    assert too_long.code == "INVALID_INPUT"
    assert too_long.details["field"] == "maxChars"
    assert too_long.details["chars"] > 30
    bad = failed(services, WRITER, "expand_prompt", {"text": "Read @../etc/passwd now"})
    assert bad.code == "INVALID_INPUT"
    assert bad.details["field"] == "text"


def test_read_lists_the_references_a_file_mentions(stack: Build) -> None:
    services = stack()
    write(services, "mnemo:///blocks/b.md", "B", WRITER)
    write(services, "mnemo:///blocks/r.md", "See mnemo:///blocks/b.md, src/db/schema.sql and topic://nope.", WRITER)
    references = read(services, "mnemo:///blocks/r.md", WRITER)["references"]
    assert references == [
        {"path": "mnemo:///blocks/b.md", "kind": "block", "exists": True},
        {"path": "src/db/schema.sql", "kind": "workspace", "exists": False},
        {"path": "topic://nope", "kind": "topic", "exists": False},
    ]
    write(services, "src/db/schema.sql", "CREATE TABLE orders ();", WRITER)
    assert read(services, "mnemo:///blocks/r.md", WRITER)["references"][1]["exists"] is True
    other = read(services, "mnemo:///blocks/r.md", WRITER.model_copy(update={"project": "p9"}))
    assert other["references"][1]["exists"] is False  # another project's workspace


def test_at_most_200_files_are_pinned(embedded: Build) -> None:
    services = embedded()
    for n in range(200):
        write(services, f"mnemo:///blocks/p{n:03d}.md", "x")
        pin(services, f"mnemo:///blocks/p{n:03d}.md")
    write(services, "mnemo:///blocks/one-more.md", "x")
    error = failed(services, BOT, "block_pin", {"path": "mnemo:///blocks/one-more.md"})
    assert error.code == "INVALID_INPUT"
    assert error.details["field"] == "path"
    assert pinned(services)["count"] == 200


# ----------------------------------------------------------- response budget ---
def budgeted(context: RequestContext, budget: int = 4096) -> RequestContext:
    return context.model_copy(update={"response_budget": budget})


def test_file_read_fits_the_response_budget_and_the_parts_reassemble(embedded: Build) -> None:
    services = embedded()
    content = "".join(f"line {n:04d} " + ("é" if n % 3 else "x") * 60 + "\n" for n in range(300))
    write(services, "docs/big.md", content, WRITER)
    small = budgeted(WRITER)
    parts, offset, answers = [], 0, 0
    while True:
        answer = read(services, "docs/big.md", small, offset=offset)
        assert wire_bytes(answer) <= 4096
        assert answer["totalLines"] == 300
        answers += 1
        parts.append(answer["content"])
        assert answer["returnedLines"] == answer["content"].count("\n")
        if not answer["hasMore"]:
            break
        assert answer["nextOffset"] == offset + answer["returnedLines"]
        offset = answer["nextOffset"]
    assert "".join(parts) == content
    assert answers > 5


def test_pinned_context_fits_the_response_budget_and_the_parts_reassemble(embedded: Build) -> None:
    services = embedded()
    for n in range(3):
        write(services, f"mnemo:///blocks/b{n}.md", f"# Block {n}\n" + "ü → data " * 400)
        pin(services, f"mnemo:///blocks/b{n}.md")
    whole = pinned(services)["context"]
    parts, offset = [], 0
    while True:
        answer = pinned(services, budgeted(BOT), offset=offset)
        assert wire_bytes(answer) <= 4096
        assert answer["totalChars"] == len(whole)
        assert answer["count"] == 3
        parts.append(answer["context"])
        if not answer["hasMore"]:
            break
        offset = answer["nextOffset"]
    assert "".join(parts) == whole
    assert len(parts) > 3


def test_pinned_context_of_many_pinned_files_still_comes_in_parts(embedded: Build) -> None:
    services = embedded()
    for n in range(60):
        path = f"mnemo:///blocks/{'long-name-' * 15}{n:02d}.md"
        write(services, path, f"block {n}")
        pin(services, path)
    whole = pinned(services)
    parts, offset = [], 0
    while True:
        answer = pinned(services, budgeted(BOT, 8192), offset=offset)
        assert wire_bytes(answer) <= 8192
        parts.append(answer["context"])
        if not answer["hasMore"]:
            break
        offset = answer["nextOffset"]
    assert "".join(parts) == whole["context"]


def test_expand_prompt_fits_the_response_budget_and_the_parts_reassemble(embedded: Build) -> None:
    services = embedded()
    write(services, "mnemo:///blocks/a.md", "A: " + '"quoted" \\ ' * 500)
    write(services, "src/b.py", "print('b')\n" * 300, WRITER)
    text = "Use @@a and @src/b.py, then answer."
    whole = call(services, WRITER, "expand_prompt", {"text": text})
    assert whole["hasMore"] is False
    assert whole["text"].endswith("</file>, then answer.")
    parts, offset = [], 0
    while True:
        answer = call(services, budgeted(WRITER), "expand_prompt", {"text": text, "offset": offset})
        assert wire_bytes(answer) <= 4096
        assert answer["totalChars"] == len(whole["text"])
        parts.append(answer["text"])
        if not answer["hasMore"]:
            break
        offset = answer["nextOffset"]
    assert "".join(parts) == whole["text"]
    assert len(parts) >= 3


def test_file_list_fits_the_response_budget_and_the_pages_reassemble(embedded: Build) -> None:
    services = embedded()
    names = sorted(f"src/module_{n:03d}/file_{'ß' * 20}_{n}.py" for n in range(60))
    for name in names:
        write(services, name, f"# {name}\n", WRITER)
    everything = call(services, WRITER, "file_list", {"path": "src/", "limit": 1000})
    assert [entry["path"] for entry in everything["entries"]] == names
    assert everything["hasMore"] is False
    seen, cursor, pages = [], None, 0
    while True:
        payload: dict[str, Any] = {"path": "src/"} | ({"cursor": cursor} if cursor else {})
        answer = call(services, budgeted(WRITER), "file_list", payload)
        assert wire_bytes(answer) <= 4096
        assert answer["count"] == len(answer["entries"]) > 0
        seen += [entry["path"] for entry in answer["entries"]]
        pages += 1
        if not answer["hasMore"]:
            assert answer["nextCursor"] is None
            break
        cursor = answer["nextCursor"]
    assert seen == names
    assert pages > 3
    by_limit, cursor = [], None
    while True:
        answer = call(
            services, WRITER, "file_list", {"path": "src/", "limit": 7} | ({"cursor": cursor} if cursor else {})
        )
        by_limit += [entry["path"] for entry in answer["entries"]]
        if not answer["hasMore"]:
            break
        cursor = answer["nextCursor"]
    assert by_limit == names
    foreign = failed(services, WRITER, "file_list", {"path": "docs/", "cursor": cursor or "x"})
    assert foreign.code == "INVALID_INPUT"
    assert foreign.details["field"] == "cursor"


def test_file_list_pages_over_deleted_files_and_folders(stack: Build) -> None:
    services = stack()
    for n in range(10):
        write(services, f"d/f{n}.txt", f"file {n}", WRITER)
    write(services, "d/sub/g.txt", "nested", WRITER)
    write(services, "dx.txt", "not in d/", WRITER)
    for n in range(1, 9):
        call(services, WRITER, "file_delete", {"path": f"d/f{n}.txt"})
    seen, cursor = [], None
    while True:
        answer = call(
            services, WRITER, "file_list", {"path": "d/", "limit": 1} | ({"cursor": cursor} if cursor else {})
        )
        seen += [entry["path"] for entry in answer["entries"]]
        if not answer["hasMore"]:
            break
        cursor = answer["nextCursor"]
    assert seen == ["d/f0.txt", "d/f9.txt", "d/sub/g.txt"]
    assert [e["path"] for e in call(services, WRITER, "file_list", {"path": "d"})["entries"]] == seen
    root = call(services, WRITER, "file_list", {"path": ""})["entries"]
    assert [e["path"] for e in root] == [*seen, "dx.txt"]
    assert root[0]["sha256"] == __import__("hashlib").sha256(b"file 0").hexdigest()
    assert root[0]["version"] == 1
    write(services, "mnemo:///blocks/b.md", "b", WRITER)
    write(services, "mnemo:///skills/s.md", "s", WRITER)
    write(services, "mnemo://project/blocks/p.md", "p", WRITER)
    mine = call(services, WRITER, "file_list", {"path": "mnemo:///"})["entries"]
    assert [(e["path"], e["kind"]) for e in mine] == [
        ("mnemo:///blocks/b.md", "block"),
        ("mnemo:///skills/s.md", "skill"),
    ]
    project = call(services, WRITER, "file_list", {"path": "mnemo://project/"})["entries"]
    assert [e["path"] for e in project] == ["mnemo://project/blocks/p.md"]


# ------------------------------------------------------------ search, index ---
def test_file_search_finds_a_block_by_content_and_not_another_scopes(stack: Build) -> None:
    services = stack()
    write(services, "mnemo:///blocks/ferries.md", "The zanzibar ferries leave at dawn from the north pier.\n")
    write(services, "mnemo:///blocks/other.md", "Completely unrelated text about accounting ledgers.\n")
    write(services, "mnemo:///blocks/ferries.md", "Zanzibar ferries", ctx(user="bob"))
    found = call(services, BOT, "file_search", {"query": "zanzibar ferries dawn"})
    assert found["results"][0]["path"] == "mnemo:///blocks/ferries.md"
    assert found["results"][0]["kind"] == "block"
    assert found["results"][0]["snippet"].startswith("The zanzibar ferries")
    assert all(result["path"].startswith("mnemo:///") for result in found["results"])
    assert found["totalCount"] == len(found["results"])
    bob = call(services, ctx(user="bob"), "file_search", {"query": "zanzibar ferries dawn", "threshold": 0})
    assert [result["snippet"] for result in bob["results"]] == ["Zanzibar ferries"]
    call(services, BOT, "file_delete", {"path": "mnemo:///blocks/ferries.md"})
    gone = call(services, BOT, "file_search", {"query": "zanzibar ferries dawn", "threshold": 0})
    assert "mnemo:///blocks/ferries.md" not in [result["path"] for result in gone["results"]]


def test_reindex_rebuilds_the_blocks_namespace_after_clearing_it(stack: Build) -> None:
    services = stack()
    write(services, "mnemo:///blocks/ferries.md", "The zanzibar ferries leave at dawn.\n")
    write(services, SHARED, "zanzibar harbour rules for the project\n", WRITER)
    write(services, "mnemo:///blocks/gone.md", "zanzibar deleted note\n")
    call(services, BOT, "file_delete", {"path": "mnemo:///blocks/gone.md"})

    def paths() -> set[str]:
        answer = call(services, WRITER, "file_search", {"query": "zanzibar", "threshold": 0})
        return {result["path"] for result in answer["results"]}

    assert paths() == {"mnemo:///blocks/ferries.md", "mnemo://project/blocks/shared.md"}
    services.index.clear("blocks")
    assert paths() == set()
    assert services.block_index.reindex() == 2
    assert paths() == {"mnemo:///blocks/ferries.md", "mnemo://project/blocks/shared.md"}


def test_a_write_whose_indexing_fails_still_succeeds_and_a_drain_indexes_it(
    stack: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = stack()

    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("index down")

    def found(text: str) -> list[str]:
        answer = call(services, BOT, "file_search", {"query": text, "threshold": 0})
        return [result["path"] for result in answer["results"]]

    with monkeypatch.context() as patch:
        patch.setattr(services.index, "upsert", down)
        written = write(services, BLOCK, "The zanzibar gateway runs in Dublin.\n")
        assert written["version"] == 1
    assert read(services, BLOCK)["content"] == "The zanzibar gateway runs in Dublin.\n"
    assert [marker["family"] for marker in services.outbox.pending()] == ["blocks"]
    assert found("zanzibar gateway") == []
    assert drained(services.outbox) == (1, 0)
    assert found("zanzibar gateway") == [BLOCK]
    assert services.outbox.pending() == []
    with monkeypatch.context() as patch:
        patch.setattr(services.index, "delete", down)
        call(services, BOT, "file_delete", {"path": BLOCK})
    assert [marker["family"] for marker in services.outbox.pending()] == ["blocks"]
    assert drained(services.outbox) == (1, 0)
    assert services.index.lexical("blocks", "zanzibar", {"scope": [BOT.scope_key("agent")]}, 10) == []

"""What a file tool's path may be (mnemo.files.paths): every accepted form, every refused one, and the
property that no accepted workspace name reaches outside its scope's blob prefix or onto another's key."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from helpers import ctx
from mnemo.adapters.local.blobs import LocalBlobStore
from mnemo.blob_keys import check_blob_key
from mnemo.errors import InvalidInput, MnemoError
from mnemo.files.paths import MAX_PATH_CHARS, MAX_SEGMENT_BYTES, FilePath, parse_path
from mnemo.files.scopes import workspace_location
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool, load_catalog


def refused(raw: str, *, folder: bool = False) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        parse_path(raw, folder=folder)
    assert raised.value.details["field"] == "path", raised.value.details
    return raised.value


# ------------------------------------------------------------------ accepted ---
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("mnemo:///blocks/decisions.md", FilePath("asset", "blocks/decisions.md", "")),
        ("mnemo:///skills/ddd.md", FilePath("asset", "skills/ddd.md", "")),
        ("mnemo:///blocks/team/notes.md", FilePath("asset", "blocks/team/notes.md", "")),
        ("mnemo://user/skills/ddd.md", FilePath("asset", "skills/ddd.md", "user")),
        ("mnemo://agent/blocks/a.md", FilePath("asset", "blocks/a.md", "agent")),
        ("mnemo://project/blocks/x.md", FilePath("asset", "blocks/x.md", "project")),
        ("MNEMO:///blocks/x.md", FilePath("asset", "blocks/x.md", "")),
        ("src/auth.py", FilePath("workspace", "src/auth.py")),
        ("docs/api.md", FilePath("workspace", "docs/api.md")),
        ("README", FilePath("workspace", "README")),
        (".github/workflows/ci.yml", FilePath("workspace", ".github/workflows/ci.yml")),
        ("a..b/c...d", FilePath("workspace", "a..b/c...d")),
        ("docs/naïve résumé.md", FilePath("workspace", "docs/naïve résumé.md")),
        ("docs/中文.md", FilePath("workspace", "docs/中文.md")),
        ("knowledge://ADR-042", FilePath("knowledge", "ADR-042")),
        ("knowledge://adr-042-database-selection", FilePath("knowledge", "adr-042-database-selection")),
        ("topic://deployment-process", FilePath("topic", "deployment-process")),
        ("TOPIC://deploy", FilePath("topic", "deploy")),
    ],
)
def test_accepted_file_paths(raw: str, expected: FilePath) -> None:
    assert parse_path(raw) == expected


@pytest.mark.parametrize(
    ("raw", "uri", "kind"),
    [
        ("mnemo:///blocks/x.md", "mnemo:///blocks/x.md", "block"),
        ("mnemo://project/skills/x.md", "mnemo://project/skills/x.md", "skill"),
        ("src/a.py", "src/a.py", "workspace"),
        ("knowledge://ADR-042", "knowledge://ADR-042", "knowledge"),
        ("topic://deploy", "topic://deploy", "topic"),
        ("Mnemo:///blocks/x.md", "mnemo:///blocks/x.md", "block"),
    ],
)
def test_uri_and_kind_are_normalised(raw: str, uri: str, kind: str) -> None:
    path = parse_path(raw)
    assert (path.uri, path.kind) == (uri, kind)


def test_names_are_stored_in_nfc_so_two_spellings_are_one_file() -> None:
    decomposed = parse_path("docs/cafe\u0301.md")
    composed = parse_path("docs/caf\u00e9.md")
    assert decomposed == composed
    assert decomposed.name == "docs/caf\u00e9.md"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", FilePath("workspace", "")),
        ("src/", FilePath("workspace", "src/")),
        ("src/db/", FilePath("workspace", "src/db/")),
        ("mnemo:///", FilePath("asset", "", "")),
        ("mnemo:///blocks/", FilePath("asset", "blocks/", "")),
        ("mnemo:///blocks", FilePath("asset", "blocks/", "")),
        ("mnemo://project/", FilePath("asset", "", "project")),
        ("mnemo://user/skills/", FilePath("asset", "skills/", "user")),
        ("topic://", FilePath("topic", "")),
        ("knowledge://", FilePath("knowledge", "")),
    ],
)
def test_accepted_folders_for_a_listing(raw: str, expected: FilePath) -> None:
    assert parse_path(raw, folder=True) == expected


def test_the_longest_segment_and_path_are_accepted() -> None:
    assert parse_path("a" * MAX_SEGMENT_BYTES).name == "a" * MAX_SEGMENT_BYTES
    assert parse_path("é" * (MAX_SEGMENT_BYTES // 2)).name == "é" * 127  # 254 bytes
    longest = "/".join(["abcdefg"] * 128)[:MAX_PATH_CHARS].rstrip("/")
    longest += "x" * (MAX_PATH_CHARS - len(longest))
    assert len(longest) == MAX_PATH_CHARS
    assert parse_path(longest).name == longest


# ------------------------------------------------------------------- refused ---
REFUSED = [
    # unknown schemes
    "s3://bucket/key",
    "file:///etc/passwd",
    "http://example.com/x",
    "https://example.com/x",
    "ikigai://x",
    "ftp://host/x",
    "javascript://alert",
    "C:/Windows/system32",
    "C:\\Windows\\system32",
    "data:text/plain,hi",
    # absolute paths and home
    "/etc/passwd",
    "/src/auth.py",
    "//server/share",
    "~/secrets",
    "~",
    # parent and current segments
    "..",
    "../x",
    "a/../../b",
    "src/..",
    ".",
    "./a",
    "a/./b",
    "a/.",
    # empty segments
    "a//b",
    "a/",
    "/",
    # backslashes and encodings (nothing is decoded)
    "a\\b",
    "..\\x",
    "%2e%2e/x",
    "%2E%2E/etc",
    "a%2fb",
    "a%00b",
    # NUL, control and invisible characters
    "a\x00b",
    "a\x01b",
    "a\tb",
    "a\nb",
    "a\rb",
    "a\x7fb",
    "a\u0085b",
    "a\u200bb",
    "a\u200db",
    "a\u202eb",
    "a\u2066b",
    "a\ufeffb",
    "a\u00adb",
    "a\u2060b",
    "a\u2028b",
    "a\u2029b",
    "a\ud800b",
    # characters with a meaning elsewhere
    "a#b",
    "a?b",
    "a*b",
    'a"b',
    "a<b",
    "a>b",
    "a|b",
    "a:b",
    # blanks around a segment
    " a",
    "a ",
    "a/ b",
    "a\u00a0",
    "\u3000a",
    # mnemo:// authorities and folders that do not exist
    "mnemo://evil/blocks/x.md",
    "mnemo://evil/",
    "mnemo://PROJECT/blocks/x.md",
    "mnemo:///other/x",
    "mnemo:///x.md",
    "mnemo:///",
    "mnemo:///blocks",
    "mnemo:///blocks/",
    "mnemo:///blocks/x.md/",
    "mnemo:///blocks/../skills/x.md",
    "mnemo:///blocks/a/../../x",
    "mnemo:///blocks/%2e%2e/x",
    "mnemo:///blocks/a#b",
    "mnemo://project/../user/blocks/x.md",
    "mnemo://user@evil/blocks/x.md",
    "mnemo:/blocks/x.md",
    "mnemo:blocks/x.md",
    "mnemo:////blocks/x.md",
    # knowledge:// and topic:// with anything but an id or a name
    "knowledge://",
    "knowledge://../x",
    "knowledge://a/b",
    "knowledge://a b",
    "knowledge://a#b",
    "knowledge://" + "a" * 129,
    "knowledge:ADR-042",
    "topic://",
    "topic://..",
    "topic://a/b",
    "topic://a\x00b",
    "topic://" + "x" * 129,
    "topic:deploy",
    # nothing at all
    "",
]


@pytest.mark.parametrize("raw", REFUSED, ids=[repr(raw)[:40] for raw in REFUSED])
def test_refused_paths_are_invalid_input_naming_path(raw: str) -> None:
    error = refused(raw)
    assert error.code == "INVALID_INPUT"
    assert error.message.startswith("path")


@pytest.mark.parametrize("raw", ["s3://b/", "/", "../", "a//", "mnemo://evil/", "mnemo:///other/", "%2e%2e/", "a\\b/"])
def test_refused_folders(raw: str) -> None:
    refused(raw, folder=True)


def test_over_long_paths_and_segments_are_refused() -> None:
    refused("a" * (MAX_SEGMENT_BYTES + 1))
    refused("é" * 128)  # 256 bytes in 128 characters
    refused("src/" + "中" * 86)  # 258 bytes
    refused("/".join(["abcdefg"] * 200))  # over MAX_PATH_CHARS characters
    refused("mnemo:///blocks/" + "x" * MAX_PATH_CHARS)


@pytest.mark.parametrize("invisible", ["\u3164", "\uffa0", "\u115f", "\u2800"])
def test_invisible_letters_are_refused(invisible: str) -> None:
    refused(f"docs/a{invisible}b.md")


def test_the_error_quotes_the_refused_path_without_decoding_it() -> None:
    error = refused("%2e%2e/etc/passwd")
    assert error.details["path"] == "%2e%2e/etc/passwd"
    assert "'%'" in error.message
    assert "U+200B" in refused("a\u200bb").message
    assert len(refused("x" * 5000).details["path"]) <= 200


@pytest.mark.parametrize("field", ["text", "path"])
def test_the_field_named_is_the_one_the_caller_gives(field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_path("../x", field=field)
    assert raised.value.details["field"] == field


# ----------------------------------------------------------- through the tools ---
ESCAPES = ["../etc/passwd", "/etc/passwd", "s3://bucket/x", "mnemo://evil/blocks/x", "%2e%2e/x", "a\\..\\b", "a\x00b"]


#: Every tool whose request names a path, from the catalog, with the other fields each one requires.
PATH_TOOLS = [name for name, tool in load_catalog().items() if "path" in tool.request.model_fields]
BESIDES_PATH: dict[str, dict[str, Any]] = {"file_write": {"content": "x"}, "file_edit": {"old": "a", "new": "b"}}


@pytest.mark.parametrize("raw", ESCAPES)
@pytest.mark.parametrize("tool", PATH_TOOLS)
def test_every_tool_with_a_path_refuses_an_escape_naming_path(services: Services, tool: str, raw: str) -> None:
    extra = BESIDES_PATH.get(tool, {})
    with pytest.raises(MnemoError) as raised:
        get_tool(tool).invoke(services, ctx(agent="a1", project="p1", roles=("writer",)), {"path": raw, **extra})
    assert raised.value.code == "INVALID_INPUT"
    assert raised.value.details.get("field") == "path"


def test_an_over_long_path_through_a_tool_names_path(services: Services) -> None:
    with pytest.raises(MnemoError) as raised:
        get_tool("file_read").invoke(services, ctx(), {"path": "a" * (MAX_PATH_CHARS + 1)})
    assert raised.value.code == "INVALID_INPUT"
    assert raised.value.details.get("field") == "path"


# ----------------------------------------------------------------- property ---
#: Mostly characters a name may hold (so that most names are accepted), now and then any character at all.
SAFE_CHARS = st.sampled_from(list(string.ascii_letters + string.digits + ".-_~+=,@!()[]{}'$&;") + list("éß中😀ü"))
ANY_CHARS = st.characters(codec="utf-8", blacklist_characters="/", max_codepoint=0x2FFFF)
SEGMENTS = st.text(SAFE_CHARS, min_size=1, max_size=12) | st.text(SAFE_CHARS | ANY_CHARS, min_size=1, max_size=6)
NAMES = st.lists(SEGMENTS | st.sampled_from(["..", ".", "", "%2e%2e", "a..", "~"]), min_size=1, max_size=5).map(
    "/".join
)
SCOPES = [
    ctx(tenant="acme", project="p1"),
    ctx(tenant="acme", project="p1/../p2"),
    ctx(tenant="acme", user="bob"),
    ctx(tenant="acme:x", user="u/v", project=None),
]


def _accepted(raw: str) -> FilePath | None:
    try:
        path = parse_path(raw)
    except InvalidInput:
        return None
    return path if path.store == "workspace" else None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(NAMES, NAMES, st.sampled_from(SCOPES))
def test_no_accepted_workspace_name_leaves_its_prefix_or_shares_a_key(first: str, second: str, scope: Any) -> None:
    one, other = _accepted(first), _accepted(second)
    assume(one is not None)
    assert one is not None
    where = workspace_location(scope)
    assert where.blob_prefix is not None
    key = where.blob_key(one.name)
    assert key.startswith(where.blob_prefix)
    assert len(key) > len(where.blob_prefix)
    parts = check_blob_key(key)  # a valid blob key: no empty, '.' or '..' segment, only safe characters
    assert parts[: where.blob_prefix.count("/")] == where.blob_prefix.rstrip("/").split("/")
    root = Path("/blobs")
    resolved = LocalBlobStore.__new__(LocalBlobStore)
    resolved._root = root
    folder = resolved._dir(key)
    assert folder.resolve().is_relative_to((root / where.blob_prefix).resolve())
    if other is not None and other.name != one.name:
        assert where.blob_key(other.name) != key
    for elsewhere in SCOPES:
        if elsewhere != scope:
            assert not key.startswith(workspace_location(elsewhere).blob_prefix or "")


@pytest.mark.parametrize("identity", [{"project": ".."}, {"project": "."}, {"user": "..", "project": None}])
def test_a_dot_identity_still_has_a_workspace(services: Services, identity: dict[str, Any]) -> None:
    writer = ctx(**({"project": None} | identity), roles=("writer",))
    get_tool("file_write").invoke(services, writer, {"path": "src/a.py", "content": "x = 1\n"})
    assert get_tool("file_read").invoke(services, writer, {"path": "src/a.py"})["content"] == "x = 1\n"


_stored: dict[str, Services] = {}


@settings(max_examples=40, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=4))
def test_accepted_names_once_stored_live_under_the_scope_prefix_and_read_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    from helpers import make_services

    if "stack" not in _stored:
        _stored["stack"] = make_services(tmp_path_factory.mktemp("paths"))
    services = _stored["stack"]
    writer = ctx(tenant="acme", project="p1", roles=("writer",))
    where = workspace_location(writer)
    root = services.settings.data_dir / "blobs"
    prefix_dir = (root / (where.blob_prefix or "")).resolve()
    written: dict[str, str] = {}
    for raw in names:
        path = _accepted(raw)
        if path is None:
            continue
        content = f"content of {path.name!r}"
        try:
            get_tool("file_write").invoke(services, writer, {"path": raw, "content": content})
        except MnemoError as error:
            # a name that is a folder of another (a/b next to a) is the only refusal an accepted name may meet
            assert error.code in {"CONFLICT", "INVALID_INPUT"}, error
            continue
        written[path.name] = content
    for name, content in written.items():
        assert get_tool("file_read").invoke(services, writer, {"path": name})["content"] == content
    for stored in root.rglob("*"):
        if stored.is_file() and "workspace" in stored.parts:
            assert stored.resolve().is_relative_to(prefix_dir), stored

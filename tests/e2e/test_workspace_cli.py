"""`mnemo workspace push|pull DIR`, run as a user would run them: the console script over a data directory
(SQLite and a local blob folder), and against DynamoDB + S3 on a moto server."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, SerialMotoServer, create_records_table

#: The installed console script (the venv's `mnemo`), not a module run.
MNEMO = [str(Path(sys.executable).with_name("mnemo"))] if Path(sys.executable).with_name("mnemo").exists() else []
if not MNEMO:
    MNEMO = [shutil.which("mnemo") or "mnemo"]

#: What the workspace takes: relative path -> bytes.
TEXT_FILES: dict[str, bytes] = {
    "README.md": b"# Shop\n\nThe order service.\n",
    "src/app/main.py": b"import os\r\n\r\nprint('windows line ends stay')\r\n",
    "src/app/__init__.py": b"",
    "src/app/deep/er/still/config.toml": b"[db]\nhost = 'localhost'\n",
    "docs/\u00fcn\u00efcode caf\u00e9.md": "Caf\u00e9 na\u00efve \u2014 \u65e5\u672c\u8a9e \U0001f642\n".encode(),
    "\u65e5\u672c\u8a9e/\u30e1\u30e2.txt": "\ufeffa BOM and no final newline".encode(),
    "-leading-dash.txt": b"dash\n",
    "limit.txt": "\u00e9".encode() * 1_000_000,  # exactly the limit in characters (2,000,000 bytes)
}
#: What push must skip: relative path -> (bytes, how the report names it, words its reason holds).
SKIPPED: dict[str, tuple[bytes, str, str]] = {
    "logo.png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "logo.png", "not UTF-8 text"),
    "latin1.txt": (b"caf\xe9\n", "latin1.txt", "not UTF-8 text"),
    ".env": (b"SECRET=1\n", ".env", "hidden file"),
    ".hidden/notes.md": (b"hidden\n", ".hidden/", "hidden folder"),
    ".git/config": (b"[core]\n", ".git/", "hidden folder"),
    "src/__pycache__/main.cpython-312.pyc": (b"cached\n", "src/__pycache__/", "__pycache__ folder"),
    "node_modules/pkg/index.js": (b"module.exports = 1\n", "node_modules/", "node_modules folder"),
    "bad#name.txt": (b"refused\n", "bad#name.txt", "name refused by the path rules"),
    "big.txt": (b"a" * 1_000_001, "big.txt", "1,000,000-character limit"),
}


def clean_environ() -> dict[str, str]:
    """The test process's environment without any MNEMO_* setting that could change whose workspace is used."""
    return {key: value for key, value in os.environ.items() if not key.startswith("MNEMO_")}


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**clean_environ(), **env}, timeout=120)


def call(tool: str, body: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    done = run("call", tool, json.dumps(body), env=env)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def make_tree(root: Path, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        target = root.joinpath(*relative.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def tree_of(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative posix path -> bytes), hidden ones included."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink()
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "MNEMO_DATA_DIR": str(tmp_path / "data"),
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_TENANT": "acme",
        "MNEMO_USER": "dana",
        "MNEMO_PROJECT": "shop",
        "MNEMO_ROLES": "writer",
    }


def test_push_pull_round_trip_skips_what_the_workspace_cannot_hold(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "source"
    make_tree(source, TEXT_FILES | {path: data for path, (data, _, _) in SKIPPED.items()})

    pushed = run("workspace", "push", str(source), env=env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    count = len(TEXT_FILES)
    summary = pushed.stdout.splitlines()[-1]
    assert summary.startswith(f"pushed {count} files ({count} new, 0 changed), 0 unchanged, ")
    assert " 0 failed (workspace of project shop, tenant acme)" in summary
    skipped = [line for line in pushed.stdout.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == len(SKIPPED), skipped
    for _, shown, reason in SKIPPED.values():
        assert any(line.startswith(f"skipped {shown}: ") and reason in line for line in skipped), (shown, skipped)
    assert f"{len(SKIPPED)} skipped, 0 failed" in summary
    assert f"push {count}/{count} " in pushed.stderr  # the progress reached the end (plain lines: not a TTY)
    assert "Traceback" not in pushed.stderr

    listing = call("file_list", {"path": "", "limit": 1000}, env)
    assert sorted(entry["path"] for entry in listing["entries"]) == sorted(TEXT_FILES)

    copy = tmp_path / "copy"
    pulled = run("workspace", "pull", str(copy), env=env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert pulled.stdout.startswith(f"pulled {count} files, 0 unchanged, 0 failed into {copy}")
    assert tree_of(copy) == TEXT_FILES  # byte for byte; nothing skipped came back, nothing else was written

    again = run("workspace", "push", str(source), env=env)
    assert again.returncode == 0, again.stdout
    assert again.stdout.splitlines()[-1].startswith(f"pushed 0 files (0 new, 0 changed), {count} unchanged, "), (
        again.stdout
    )
    assert "push " not in again.stderr
    inodes = {relative: (copy / relative).stat().st_ino for relative in TEXT_FILES}
    unchanged = run("workspace", "pull", str(copy), env=env)
    assert unchanged.stdout.startswith(f"pulled 0 files, {count} unchanged, 0 failed"), unchanged.stdout
    assert {relative: (copy / relative).stat().st_ino for relative in TEXT_FILES} == inodes  # none rewritten


def test_more_files_than_one_listing_page(tmp_path: Path, env: dict[str, str]) -> None:
    """file_list pages at 1,000 entries: push and pull follow nextCursor to the end."""
    files = {f"d{n % 7}/f{n:04d}.txt": f"file {n}\n".encode() for n in range(1_050)}
    source = tmp_path / "source"
    make_tree(source, files)
    first = run("workspace", "push", str(source), env=env)
    assert first.returncode == 0, first.stdout
    assert first.stdout.startswith("pushed 1050 files (1050 new, "), first.stdout
    again = run("workspace", "push", str(source), env=env)
    assert again.stdout.startswith("pushed 0 files (0 new, 0 changed), 1050 unchanged"), again.stdout
    pulled = run("workspace", "pull", str(tmp_path / "copy"), env=env)
    assert pulled.stdout.startswith("pulled 1050 files, 0 unchanged, 0 failed"), pulled.stdout
    assert tree_of(tmp_path / "copy") == files


def test_a_changed_file_becomes_a_new_version_and_dry_run_writes_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "source"
    make_tree(source, TEXT_FILES)
    assert run("workspace", "push", str(source), env=env).returncode == 0
    copy = tmp_path / "copy"
    assert run("workspace", "pull", str(copy), env=env).returncode == 0
    (source / "src/app/main.py").write_bytes(b"print('second')\n")
    (source / "docs/new.md").write_bytes(b"new\n")

    dry = run("workspace", "push", str(source), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "would write docs/new.md (new)" in dry.stdout
    assert "would write src/app/main.py (changed)" in dry.stdout
    assert dry.stdout.splitlines()[-1].startswith(
        f"dry run: would push 2 files (1 new, 1 changed), {len(TEXT_FILES) - 1}"
    )
    assert call("file_read", {"path": "src/app/main.py"}, env)["version"] == 1
    assert call("file_read", {"path": "docs/new.md"}, env)["errorCode"] == "NOT_FOUND"

    pushed = run("workspace", "push", str(source), env=env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert pushed.stdout.splitlines()[-1].startswith("pushed 2 files (1 new, 1 changed), ")
    latest = call("file_read", {"path": "src/app/main.py"}, env)
    assert (latest["version"], latest["content"]) == (2, "print('second')\n")
    first = call("file_read", {"path": "src/app/main.py", "version": 1}, env)
    assert first["content"] == TEXT_FILES["src/app/main.py"].decode()

    refreshed = run("workspace", "pull", str(copy), env=env)
    assert refreshed.stdout.startswith(f"pulled 2 files, {len(TEXT_FILES) - 1} unchanged, 0 failed")
    assert tree_of(copy) == tree_of(source)


def test_prefix_pushes_into_a_folder_and_pulls_it_back_alone(tmp_path: Path, env: dict[str, str]) -> None:
    docs = tmp_path / "docs"
    make_tree(docs, {"api.md": b"# API\n", "guides/setup.md": b"setup\n"})
    other = tmp_path / "other"
    make_tree(other, {"top.txt": b"top\n"})
    assert run("workspace", "push", str(other), env=env).returncode == 0
    pushed = run("workspace", "push", str(docs), "--prefix", "manual/", env=env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    listing = call("file_list", {"path": ""}, env)
    assert [entry["path"] for entry in listing["entries"]] == ["manual/api.md", "manual/guides/setup.md", "top.txt"]

    copy = tmp_path / "copy"
    pulled = run("workspace", "pull", str(copy), "--prefix", "manual", env=env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert tree_of(copy) == tree_of(docs)

    refused = run("workspace", "push", str(docs), "--prefix", "/etc", env=env)
    assert refused.returncode == 1
    assert "INVALID_INPUT: prefix: " in refused.stderr
    refused = run("workspace", "pull", str(copy), "--prefix", "mnemo:///blocks", env=env)
    assert refused.returncode == 1
    assert "INVALID_INPUT: prefix: " in refused.stderr


#: Names the path rules accept, however odd they look on a disk: pull must write every one.
LEGAL_NAMES = {
    ".config/settings.json": '{"hidden": "but legal in the workspace"}\n',
    "..dots/a..b.txt": "two dots inside a name are not '..'\n",
    "-dash.txt": "starts with a dash\n",
    "with space/x y.txt": "spaces inside\n",
    "a~b/~tilde.md": "a tilde that is not the first character\n",
    "emoji-\U0001f642/\u00e9t\u00e9.txt": "\u00e9t\u00e9 \U0001f642\n",
    "deep/" + "/".join(f"d{n}" for n in range(12)) + "/leaf.txt": "deep\n",
    "empty.txt": "",
}


def test_pull_writes_every_legal_name_and_never_escapes_dir(tmp_path: Path, env: dict[str, str]) -> None:
    for name, content in {**LEGAL_NAMES, "escape/stolen.txt": "must not leave DIR\n"}.items():
        written = call("file_write", {"path": name, "content": content}, env)
        assert written["success"], written
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "escape").symlink_to(outside, target_is_directory=True)
    (target / "mine.txt").write_bytes(b"a local file the workspace does not have\n")

    pulled = run("workspace", "pull", str(target), env=env)
    assert pulled.returncode == 1, pulled.stdout + pulled.stderr
    assert list(outside.iterdir()) == []
    failed = [line for line in pulled.stderr.splitlines() if line.startswith("failed ")]
    assert len(failed) == 1, failed
    assert failed[0].startswith("failed escape/stolen.txt: would be written outside"), failed
    assert pulled.stdout.startswith(f"pulled {len(LEGAL_NAMES)} files, 0 unchanged, 1 failed")
    expected = {name: content.encode() for name, content in LEGAL_NAMES.items()}
    assert tree_of(target) == {**expected, "mine.txt": b"a local file the workspace does not have\n"}


def test_pull_reports_a_file_that_a_local_folder_is_in_the_way_of(tmp_path: Path, env: dict[str, str]) -> None:
    assert call("file_write", {"path": "notes", "content": "a file\n"}, env)["success"]
    assert call("file_write", {"path": "other.txt", "content": "fine\n"}, env)["success"]
    target = tmp_path / "target"
    (target / "notes").mkdir(parents=True)
    pulled = run("workspace", "pull", str(target), env=env)
    assert pulled.returncode == 1
    assert "failed notes: a folder of that name is in the way" in pulled.stderr
    assert (target / "other.txt").read_bytes() == b"fine\n"
    blocked = run("workspace", "pull", str(target / "other.txt"), env=env)
    assert blocked.returncode == 2
    assert "not a directory" in blocked.stderr


def test_push_without_the_writer_role_fails_cleanly(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "source"
    make_tree(source, {"a.md": b"a\n", "b/c.md": b"c\n"})
    reader = {**env, "MNEMO_ROLES": "reader"}
    refused = run("workspace", "push", str(source), env=reader)
    assert refused.returncode == 1
    assert "UNAUTHORIZED" in refused.stderr
    assert "writer" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert call("file_list", {"path": ""}, reader)["entries"] == []
    dry = run("workspace", "push", str(source), "--dry-run", env=reader)
    assert dry.returncode == 1
    assert "UNAUTHORIZED" in dry.stderr
    # The same push with the role goes through, and the reader can pull what it wrote.
    assert run("workspace", "push", str(source), env=env).returncode == 0
    pulled = run("workspace", "pull", str(tmp_path / "copy"), env=reader)
    assert pulled.returncode == 0
    assert tree_of(tmp_path / "copy") == tree_of(source)


def test_push_of_a_missing_directory_is_a_usage_error(tmp_path: Path, env: dict[str, str]) -> None:
    done = run("workspace", "push", str(tmp_path / "nope"), env=env)
    assert done.returncode == 2
    assert "not a directory" in done.stderr


def test_a_failed_write_is_named_with_its_error_and_the_rest_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process, so that one write can fail as a concurrent change makes it fail (CONFLICT)."""
    from mnemo import cli
    from mnemo.errors import Conflict
    from mnemo.runtime import Services, set_services
    from mnemo.settings import Settings

    for key in [key for key in os.environ if key.startswith("MNEMO_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MNEMO_USER", "dana")
    services = Services(Settings(data_dir=tmp_path / "data", embedder="hashing"))
    real_write = services.files.write

    def flaky(context: Any, request: Any) -> Any:
        if request.path == "b.md":
            raise Conflict("b.md is at version 3, not at version 0; read it again and retry", {"field": "path"})
        return real_write(context, request)

    monkeypatch.setattr(services.files, "write", flaky)
    set_services(services)
    try:
        make_tree(tmp_path / "source", {"a.md": b"a\n", "b.md": b"b\n", "c.md": b"c\n"})
        code = cli.main(["workspace", "push", str(tmp_path / "source")])
    finally:
        set_services(None)
    out, err = capsys.readouterr()
    assert code == 1
    assert "failed b.md: CONFLICT: b.md is at version 3" in err
    assert out.splitlines()[-1].startswith("pushed 2 files (3 new, 0 changed), 0 unchanged, 0 skipped, 1 failed")


def test_progress_updates_one_line_on_a_terminal_and_prints_lines_otherwise() -> None:
    from mnemo.cli.progress import FILES, Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    progress = Progress("push", 2, terminal, FILES)
    progress.update(1, "src/a.py")
    progress.update(2, "src/" + "x" * 300 + ".py")
    progress.close()
    text = terminal.getvalue()
    assert text.count("\r") == 2
    assert text.endswith("\n")
    assert text.count("\n") == 1
    assert "] 1/2 src/a.py" in text
    assert "] 2/2 …" in text
    assert "xxx.py" in text
    assert all(len(line) <= shutil.get_terminal_size((80, 24)).columns for line in text.strip().split("\r"))

    plain = io.StringIO()
    progress = Progress("pull", 2, plain, FILES)
    progress.update(1, "a")
    progress.update(2, "b")
    progress.close()
    assert plain.getvalue() == "pull 1/2 a\npull 2/2 b\n"


# ---------------------------------------------------------- DynamoDB + S3 ---
TABLE = "records-workspace-cli"
BUCKET = "mnemo-workspace-cli"


@pytest.fixture(scope="module")
def moto() -> Any:
    from mnemo.adapters.aws.bootstrap import ensure_bucket

    server = SerialMotoServer()
    create_records_table(server.client("dynamodb"), TABLE, stream=False)
    ensure_bucket(server.client("s3"), BUCKET, REGION)
    yield server
    server.close()


def test_push_and_pull_on_dynamodb_and_s3(moto: SerialMotoServer, tmp_path: Path) -> None:
    env = {
        "MNEMO_RECORDS": "dynamodb",
        "MNEMO_RECORDS_TABLE": TABLE,
        "MNEMO_BLOBS": "s3",
        "MNEMO_BLOB_BUCKET": BUCKET,
        "MNEMO_AWS_ENDPOINT": moto.url,
        "MNEMO_AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "MNEMO_DATA_DIR": str(tmp_path / "data"),  # the local vector index only: files go to DynamoDB and S3
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_TENANT": "acme",
        "MNEMO_USER": "dana",
        "MNEMO_PROJECT": "shop",
    }
    files = {
        "README.md": b"# Shop\n",
        "src/app/main.py": b"print('hi')\r\n",
        "src/app/__init__.py": b"",
        "docs/caf\u00e9 \u65e5\u672c.md": "caf\u00e9 \U0001f642\n".encode(),
    }
    source = tmp_path / "source"
    make_tree(source, files | {"logo.png": b"\x89PNG\x00", ".git/HEAD": b"ref\n"})
    pushed = run("workspace", "push", str(source), env=env)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert pushed.stdout.splitlines()[-1].startswith("pushed 4 files (4 new, 0 changed), 0 unchanged, 2 skipped")

    keys = [obj["Key"] for obj in moto.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert len(keys) == len(files), keys
    assert all(key.startswith("workspace/") for key in keys), keys
    items = moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    heads = {item["sk"]["S"] for item in items if item["pk"]["S"].startswith("WS|")}
    assert {f"F#{name}" for name in files} <= heads

    copy = tmp_path / "copy"
    pulled = run("workspace", "pull", str(copy), env=env)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert tree_of(copy) == files

    again = run("workspace", "push", str(source), env=env)
    assert again.stdout.splitlines()[-1].startswith("pushed 0 files (0 new, 0 changed), 4 unchanged")
    (source / "src/app/main.py").write_bytes(b"print('bye')\n")
    changed = run("workspace", "push", str(source), env=env)
    assert changed.stdout.splitlines()[-1].startswith("pushed 1 files (0 new, 1 changed), 3 unchanged")
    read = call("file_read", {"path": "src/app/main.py"}, env)
    assert (read["version"], read["content"]) == (2, "print('bye')\n")
    versions = moto.client("s3").list_object_versions(Bucket=BUCKET)["Versions"]
    assert len(versions) == len(files) + 1  # S3 keeps the first version too


def test_a_decomposed_unicode_name_is_stored_composed_and_stays_unchanged(tmp_path: Path, env: dict[str, str]) -> None:
    """The path rules keep names in NFC: a macOS-style (NFD) name maps onto the same workspace file."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "cafe\u0301.md").write_bytes(b"coffee\n")
    assert run("workspace", "push", str(source), env=env).returncode == 0
    assert [entry["path"] for entry in call("file_list", {"path": ""}, env)["entries"]] == ["caf\u00e9.md"]
    again = run("workspace", "push", str(source), env=env)
    assert again.stdout.startswith("pushed 0 files (0 new, 0 changed), 1 unchanged"), again.stdout
    (source / "caf\u00e9.md").write_bytes(b"tea\n")  # the composed spelling too: one of the two is skipped
    both = run("workspace", "push", str(source), env=env)
    assert "the same workspace path as" in both.stdout
    assert both.returncode == 0

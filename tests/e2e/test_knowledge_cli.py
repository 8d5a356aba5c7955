"""`mnemo knowledge validate|push` and `mnemo sync`, run as a user would run them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from knowledge_helpers import EXAMPLE_COUNT, EXAMPLES

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_validate_accepts_the_example_repository() -> None:
    done = run("knowledge", "validate", str(EXAMPLES))
    assert done.returncode == 0, done.stdout
    assert f"{EXAMPLE_COUNT} valid items" in done.stdout
    assert "0 errors" in done.stdout


def test_validate_names_the_file_and_field_of_each_problem(tmp_path: Path) -> None:
    (tmp_path / "company").mkdir()
    (tmp_path / "company" / "bad-status.md").write_text(
        "---\nid: p\ntype: policy\ntitle: T\nsummary: S\nstatus: done\n---\nx\n"
    )
    (tmp_path / "company" / "no-front-matter.md").write_text("# just markdown\n")
    (tmp_path / "company" / "ok.md").write_text(
        "---\nid: ok\ntype: spec\ntitle: T\nsummary: S\nsupersedes: gone\n---\nx\n"
    )
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ignored.md").write_text("not in a layer folder: not a knowledge file\n")
    done = run("knowledge", "validate", str(tmp_path))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert any(line.startswith("company/bad-status.md: status: ") for line in lines), lines
    assert any(line.startswith("company/no-front-matter.md: frontMatter: ") for line in lines), lines
    assert "company/ok.md: supersedes: no item 'gone' in the repository" in lines
    assert lines[-1] == "1 valid items (0 constraints), 3 errors"


def test_push_then_sync_then_call(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path / "data"), "MNEMO_EMBEDDER": "hashing", "MNEMO_TENANT": "acme"}
    pushed = run("knowledge", "push", str(EXAMPLES), "--author", "dana", "--message", "first", env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert f"pushed {EXAMPLE_COUNT} files, 0 unchanged" in pushed.stdout
    assert f"] {EXAMPLE_COUNT}/{EXAMPLE_COUNT} " in pushed.stderr  # the progress bar reached the end
    again = run("knowledge", "push", str(EXAMPLES), env=env)
    assert f"pushed 0 files, {EXAMPLE_COUNT} unchanged" in again.stdout

    synced = run("sync", env=env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert json.loads(synced.stdout)["result"]["added"] == EXAMPLE_COUNT

    checked = run(
        "call", "knowledge_check", '{"dependencies": [{"name": "mysql2"}]}', env={**env, "MNEMO_ORG": "engineering"}
    )
    assert json.loads(checked.stdout)["passed"] is False

    shown = run("call", "knowledge_show", '{"id": "policy-secrets-handling", "includeHistory": true}', env=env)
    assert json.loads(shown.stdout)["history"][0] == {
        "version": json.loads(shown.stdout)["history"][0]["version"],
        "timestamp": json.loads(shown.stdout)["history"][0]["timestamp"],
        "author": "dana",
        "message": "first",
    }


def test_push_refuses_an_invalid_tree_and_prune_removes_what_is_gone(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path / "data"), "MNEMO_EMBEDDER": "hashing"}
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES, tree)
    assert run("knowledge", "push", str(tree), env=env).returncode == 0
    (tree / "company" / "policy-license-headers.md").unlink()
    (tree / "company" / "broken.md").write_text("---\nid: b\n---\n")
    refused = run("knowledge", "push", str(tree), "--prune", env=env)
    assert refused.returncode == 1
    assert "company/broken.md" in refused.stderr
    assert "nothing pushed" in refused.stderr
    (tree / "company" / "broken.md").unlink()
    pruned = run("knowledge", "push", str(tree), "--prune", env=env)
    assert pruned.returncode == 0
    assert "1 removed" in pruned.stdout
    synced = json.loads(run("sync", env=env).stdout)
    assert synced["result"]["added"] == EXAMPLE_COUNT - 1

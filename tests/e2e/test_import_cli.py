"""`mnemo import FILE`, run as a user would run it, on a temporary data directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**os.environ, **env})


def jsonl(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def search(env: dict[str, str], query: str) -> list[dict[str, Any]]:
    done = run("call", "memory_search", json.dumps({"query": query, "threshold": 0, "limit": 100}), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return list(json.loads(done.stdout)["results"])


def test_import_adds_deduplicates_and_a_second_run_replays(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path / "data"), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    facts = [
        {"content": f"Imported fact {n}: queue {n} drains into bucket {n * 7}", "tags": ["import"]} for n in range(9)
    ]
    source = jsonl(
        tmp_path / "memories.jsonl",
        {"mnemoExport": 1, "kind": "memories"},
        *facts,
        "",
        facts[0],  # the same line again: deduplicated
        {"content": "Dana's standup is at nine", "occurredAt": "2024-03-01T09:00:00Z", "metadata": {"from": "csv"}},
    )
    done = run("import", str(source), "--batch", "4", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert {key: summary[key] for key in ("lines", "added", "deduplicated", "replayed", "queuedForIndex")} == {
        "lines": 11,
        "added": 10,
        "deduplicated": 1,
        "replayed": 0,
        "queuedForIndex": 0,
    }
    assert summary["perSecond"] > 0
    found = search(env, "imported fact queue drains bucket")
    assert sorted(r["content"] for r in found if "Imported" in r["content"]) == sorted(f["content"] for f in facts)
    assert all(r["tags"] == ["import"] for r in found if "Imported" in r["content"])
    # Another user does not see them: identity came from the environment.
    assert search({**env, "MNEMO_USER": "eve"}, "imported fact queue") == []

    again = run("import", str(source), env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout) | {"seconds": 0, "perSecond": 0} == summary | {
        "added": 0,
        "deduplicated": 0,
        "replayed": 11,
        "seconds": 0,
        "perSecond": 0,
    }
    assert len(search(env, "imported fact queue drains bucket standup")) == 10


def test_a_bad_line_is_refused_with_its_number_and_field_and_nothing_is_written(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path / "data"), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    source = jsonl(
        tmp_path / "bad.jsonl",
        {"content": "A good first line about the printer"},
        "",
        {"content": "A good line about the printer toner"},
        {"content": "Tags must be a list", "tags": "printer"},
    )
    done = run("import", str(source), env=env)
    assert done.returncode == 1
    envelope = json.loads(done.stdout)
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["line"] == 4
    assert envelope["details"]["field"] == "tags"
    assert envelope["message"].startswith("line 4: tags")
    assert search(env, "printer toner line") == []

    jsonl(source, {"content": "fine"}, "{not json")
    broken = json.loads(run("import", str(source), env=env).stdout)
    assert broken["details"]["line"] == 2
    assert broken["details"]["field"] == "body"

    jsonl(source, {"mnemoExport": 3, "kind": "memories"}, {"content": "from the future"})
    future = json.loads(run("import", str(source), env=env).stdout)
    assert future["details"]["line"] == 1
    assert future["details"]["field"] == "mnemoExport"

    jsonl(source, {"content": "fine"}, {"content": "claims another user", "user": "eve"})
    claimed = json.loads(run("import", str(source), env=env).stdout)
    assert claimed["errorCode"] == "UNAUTHORIZED"
    assert claimed["details"] == {"field": "user", "line": 2}
    assert search(env, "fine future claims") == []


def test_a_layer_the_caller_cannot_write_is_refused_naming_the_line(tmp_path: Path) -> None:
    env = {
        "MNEMO_DATA_DIR": str(tmp_path / "data"),
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_USER": "dana",
        "MNEMO_TEAM": "platform",
        "MNEMO_ROLES": "reader",
    }
    source = jsonl(
        tmp_path / "team.jsonl",
        {"content": "Dana's own note about the on-call pager"},
        {"content": "The team rotates the on-call pager weekly", "layer": "team"},
    )
    done = run("import", str(source), env=env)
    assert done.returncode == 1
    envelope = json.loads(done.stdout)
    assert envelope["errorCode"] == "UNAUTHORIZED"
    assert envelope["details"]["line"] == 2
    assert envelope["details"]["field"] == "layer"
    assert search(env, "on-call pager") == []
    allowed = run("import", str(source), env={**env, "MNEMO_ROLES": "writer"})
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert json.loads(allowed.stdout)["added"] == 2


def test_every_local_entry_point_runs_one_blas_thread_unless_told_otherwise() -> None:
    """`mnemo` (serve, call, mcp, import) sets OPENBLAS_NUM_THREADS=1 before numpy loads; a caller's value stands."""
    probe = "import os, mnemo.cli, numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    unset = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    given = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env={**env, "OPENBLAS_NUM_THREADS": "2"}
    )
    assert (unset.stdout.strip(), given.stdout.strip()) == ("1", "2")


def test_a_store_failure_mid_import_answers_an_envelope_not_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "index.sqlite3").write_bytes(b"this is not an SQLite database" * 100)  # a damaged index file
    env = {"MNEMO_DATA_DIR": str(data), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    source = jsonl(tmp_path / "memories.jsonl", {"content": "Dana's standup is at nine"})

    done = run("import", str(source), env=env)

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    answer = json.loads(done.stdout)
    assert answer["success"] is False
    assert answer["errorCode"] == "PROVIDER_ERROR"
    assert "import again resumes it" in answer["message"]

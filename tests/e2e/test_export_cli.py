"""`mnemo export` and `mnemo import` of a whole tenant, run as a user would run them, between data directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from helpers import make_services
from portability_support import file_counts, lines, populate

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, data: Path, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    settings = {"MNEMO_DATA_DIR": str(data), "MNEMO_EMBEDDER": "hashing", **env}
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, input=stdin, env={**os.environ, **settings})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("source")
    populate(make_services(data))
    return data


def _added(summary: dict[str, Any]) -> dict[str, int]:
    found = {family: row["added"] for family, row in summary["records"].items() if row["added"]}
    return found | {f"blob:{family}": row["added"] for family, row in summary["blobs"].items() if row["added"]}


def test_export_then_import_moves_the_tenant(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme.jsonl"
    exported = run("export", "--tenant", "acme", "-o", str(out), data=source)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    summary = json.loads(exported.stdout)
    assert summary["kind"] == "tenant"
    assert summary["records"] == {
        family: count for family, count in file_counts(out).items() if not family.startswith("blob:")
    }
    assert not out.with_name("acme.jsonl.partial").exists()

    target = tmp_path / "target"
    imported = run("import", str(out), data=target, MNEMO_HASHING_DIMENSIONS="128")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    answer = json.loads(imported.stdout)
    assert answer["format"] == 2
    assert answer["lines"] == len(lines(out)) - 1
    assert _added(answer) == file_counts(out)
    assert answer["indexPending"] == 0

    found = run(
        "call",
        "memory_search",
        json.dumps({"query": "Lisbon"}),
        data=target,
        MNEMO_TENANT="acme",
        MNEMO_USER="bob",
        MNEMO_HASHING_DIMENSIONS="128",
    )
    assert found.returncode == 0, found.stdout + found.stderr
    assert json.loads(found.stdout)["results"][0]["content"] == "Bob works from Lisbon"

    again = run("import", str(out), data=target, MNEMO_HASHING_DIMENSIONS="128")
    assert _added(json.loads(again.stdout)) == {}


def test_export_to_stdout_and_import_from_stdin(source: Path, tmp_path: Path) -> None:
    exported = run("export", "--tenant", "acme", "--user", "bob", data=source)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout.splitlines()[0])["kind"] == "user"
    # the summary goes to stderr, after any progress lines a slow run may write there
    assert json.loads(exported.stderr[exported.stderr.index("{\n") :])["selection"]["user"] == "bob"
    imported = run("import", "-", data=tmp_path / "target", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert json.loads(imported.stdout)["records"]["memories"]["added"] >= 1


def test_a_cut_off_file_is_refused_with_the_envelope_and_nothing_is_written(source: Path, tmp_path: Path) -> None:
    out = tmp_path / "acme.jsonl"
    run("export", "--tenant", "acme", "-o", str(out), data=source)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(f"{json.dumps(line)}\n" for line in lines(out)[:-1]))
    target = tmp_path / "target"
    refused = run("import", str(cut), data=target)
    assert refused.returncode == 1
    envelope = json.loads(refused.stdout)
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == "file"
    assert "Traceback" not in refused.stdout + refused.stderr
    assert not (target / "blobs").exists() or not any((target / "blobs").rglob("*.versions"))


def test_a_users_export_of_shared_layers_is_refused(source: Path) -> None:
    refused = run("export", "--tenant", "acme", "--user", "bob", "--layer", "project", data=source)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert json.loads(refused.stderr)["details"] == {"field": "layer", "layer": "project"}


def test_export_schema_is_a_json_schema_every_line_meets(source: Path, tmp_path: Path) -> None:
    printed = run("export", "--schema", data=source)
    assert printed.returncode == 0
    schema = json.loads(printed.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    out = tmp_path / "acme.jsonl"
    run("export", "--tenant", "acme", "--layer", "project", "--layer", "team", "-o", str(out), data=source)
    for line in lines(out):
        jsonschema.validate(line, schema)
    assert lines(out)[0]["selection"]["layers"] == ["project", "team"]

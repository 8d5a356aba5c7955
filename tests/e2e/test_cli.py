"""The `mnemo` command, run as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_tools_json_lists_every_tool_with_valid_schemas() -> None:
    done = run("tools", "--json")
    assert done.returncode == 0
    listing = json.loads(done.stdout)
    assert {"memory_add", "memory_search", "memory_delete"} <= {tool["name"] for tool in listing}
    for tool in listing:
        assert tool["description"]
        Draft202012Validator.check_schema(tool["inputSchema"])
        Draft202012Validator.check_schema(tool["outputSchema"])


def test_openapi_command_prints_a_valid_document() -> None:
    done = run("openapi")
    assert done.returncode == 0
    validate_openapi(json.loads(done.stdout))


def test_call_round_trip_with_identity_from_the_environment(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    added = run("call", "memory_add", '{"content": "Dana reviews pull requests before lunch"}', env=env)
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["memoryId"]
    found = run("call", "memory_search", '{"query": "pull requests review", "threshold": 0}', env=env)
    assert [r["memoryId"] for r in json.loads(found.stdout)["results"]] == [memory_id]
    stranger = run(
        "call", "memory_search", '{"query": "pull requests", "threshold": 0}', env={**env, "MNEMO_USER": "eve"}
    )
    assert json.loads(stranger.stdout)["results"] == []
    reindexed = run("reindex", env=env)
    assert reindexed.returncode == 0
    assert "reindexed 1 memories" in reindexed.stdout


def test_call_with_bad_input_prints_the_envelope_and_fails(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing"}
    done = run("call", "memory_search", '{"query": "x", "limit": 0}', env=env)
    assert done.returncode == 1
    envelope = json.loads(done.stdout)
    assert envelope["errorCode"] == "INVALID_INPUT"
    assert envelope["details"]["field"] == "limit"
    done = run("call", "memory_add", "{oops", env=env)
    assert done.returncode == 1
    assert json.loads(done.stdout)["details"]["field"] == "body"
    done = run("call", "nope", "{}", env=env)
    assert done.returncode == 1
    assert json.loads(done.stdout)["errorCode"] == "NOT_FOUND"


def _drop_blocks_index(data_dir: Path) -> None:
    import sqlite3

    with sqlite3.connect(data_dir / "index.sqlite3") as index:
        index.execute("DELETE FROM vectors WHERE namespace = 'blocks'")


def _found_blocks(env: dict[str, str]) -> list[str]:
    done = run("call", "file_search", '{"query": "blue green deploy canary", "threshold": 0}', env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return [match["path"] for match in json.loads(done.stdout)["results"]]


def test_reindex_restores_a_deleted_blocks_index(tmp_path: Path) -> None:
    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    body = {"path": "mnemo:///blocks/runbook.md", "content": "Deploys are blue green with a canary first.\n"}
    written = run("call", "file_write", json.dumps(body), env=env)
    assert written.returncode == 0, written.stdout
    assert _found_blocks(env) == ["mnemo:///blocks/runbook.md"]
    _drop_blocks_index(tmp_path)
    assert _found_blocks(env) == []
    reindexed = run("reindex", env=env)
    assert reindexed.returncode == 0, reindexed.stderr
    assert ", 1 blocks and skills, " in reindexed.stdout, reindexed.stdout
    assert _found_blocks(env) == ["mnemo:///blocks/runbook.md"]


def test_reindex_pending_drains_the_blocks_family(tmp_path: Path) -> None:
    """A block whose index write never happened (its outbox marker still queued) is indexed by --pending."""
    from mnemo.files.index import BlockIndex
    from mnemo.runtime import Services
    from mnemo.settings import Settings

    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing", "MNEMO_USER": "dana"}
    body = {"path": "mnemo:///blocks/runbook.md", "content": "Deploys are blue green with a canary first.\n"}
    assert run("call", "file_write", json.dumps(body), env=env).returncode == 0
    _drop_blocks_index(tmp_path)
    services = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    (head,) = [item for item in services.records.scan("ASSET|") if item.sk.startswith("F#")]
    services.records.write([services.outbox.marker("blocks", BlockIndex.reference(head.pk, head.data["name"]))])
    assert _found_blocks(env) == []
    drained = run("reindex", "--pending", env=env)
    assert drained.returncode == 0, drained.stdout + drained.stderr
    assert drained.stdout.startswith("indexed 1 blocks; 0 still pending"), drained.stdout
    assert _found_blocks(env) == ["mnemo:///blocks/runbook.md"]

"""`mnemo export` of a selection that holds nothing says so and exits 3, as its help documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import make_services
from mnemo.context import RequestContext
from mnemo.memory.models import MemoryAddInput

MNEMO = [sys.executable, "-m", "mnemo.cli"]


def run(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    settings = {"MNEMO_DATA_DIR": str(data), "MNEMO_EMBEDDER": "hashing"}
    return subprocess.run([*MNEMO, *args], capture_output=True, text=True, env={**os.environ, **settings})


def test_a_tenant_that_holds_nothing_is_said_and_exits_3(tmp_path: Path) -> None:
    services = make_services(tmp_path / "data")
    services.memory.add(RequestContext(tenant="local", user="ann"), MemoryAddInput(content="Ann deploys on Fridays"))
    out = tmp_path / "acme.jsonl"

    empty = run("export", "--tenant", "acme", "-o", str(out), data=tmp_path / "data")

    assert empty.returncode == 3, empty.stderr
    assert empty.stderr.splitlines()[-1] == (
        "nothing to export: tenant 'acme' holds no records and no files "
        "(the local server's tenant is 'local' unless X-Mnemo-Tenant named another)"
    )
    assert json.loads(empty.stdout)["records"] == {}
    # Still a whole export, of nothing: a header and an end line.
    assert [json.loads(line)["type"] for line in out.read_text().splitlines()] == ["header", "end"]


def test_an_empty_user_of_a_tenant_that_holds_something_is_said_too(tmp_path: Path) -> None:
    services = make_services(tmp_path / "data")
    services.memory.add(RequestContext(tenant="local", user="ann"), MemoryAddInput(content="Ann deploys on Fridays"))

    empty = run("export", "--user", "bob", data=tmp_path / "data")

    assert empty.returncode == 3
    assert (
        empty.stderr.splitlines()[-1] == "nothing to export: tenant 'local', user 'bob' holds no records and no files"
    )


def test_a_tenant_that_holds_something_exits_0_and_says_nothing_more(tmp_path: Path) -> None:
    services = make_services(tmp_path / "data")
    services.memory.add(RequestContext(tenant="local", user="ann"), MemoryAddInput(content="Ann deploys on Fridays"))

    exported = run("export", "-o", str(tmp_path / "local.jsonl"), data=tmp_path / "data")

    assert exported.returncode == 0, exported.stderr
    assert "nothing to export" not in exported.stderr
    assert json.loads(exported.stdout)["records"]["memories"] > 0


def test_the_help_documents_the_exit_status() -> None:
    shown = subprocess.run([*MNEMO, "export", "--help"], capture_output=True, text=True)
    assert "Exit status: 0 when something was exported; 3 when the selection holds nothing" in " ".join(
        shown.stdout.split()
    )

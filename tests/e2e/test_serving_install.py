"""`make run` installs only what serving needs: the package with its `local` and `outline` extras, and the
model package. `mnemo serve` must start and answer with nothing else importable.

What the serving install leaves out is worked out from the installed metadata: every distribution the
full install (`local,aws,tracing,outline,langchain,dev`) pulls in, minus every one the serving install pulls in.
A ``sitecustomize`` on ``PYTHONPATH`` makes their modules unimportable in the server's process (as they
are in a serving-only environment), then the server is driven over HTTP: every family the README shows
with curl, the knowledge sync, the experimental outline, and MCP.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from helpers import free_port

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]


def makefile_extras(stamp: str) -> tuple[str, ...]:
    """The extras the Makefile's rule for ``stamp`` installs (``pip install -e ".[a,b]"``)."""
    rule = re.search(rf"^\$\(VENV\)/{re.escape(stamp)}:.*?\n((?:\t.*\n|#.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert rule, f"no rule for {stamp} in the Makefile"
    (extras,) = re.findall(r'pip install -e "\.\[([a-z,]+)\]"', rule.group(1))
    return tuple(extras.split(","))


SERVING = makefile_extras(".installed-serve")  # what `make run` installs
FULL = makefile_extras(".installed")  # what `make test` installs

BLOCKER = """\
import sys

BLOCKED = frozenset({names!r})


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in the serving install)", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(extras: Iterable[str]) -> set[str]:
    """Every distribution that installing mnemo with ``extras`` installs (as installed here)."""
    found: set[str] = set()
    pending: list[tuple[str, frozenset[str]]] = [("mnemo", frozenset(extras))]
    done: set[tuple[str, frozenset[str]]] = set()
    while pending:
        name, wanted = pending.pop()
        if (_key(name), wanted) in done:
            continue
        done.add((_key(name), wanted))
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # a platform's dependency that is not this platform's
        found.add(_key(name))
        for line in requires:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in {"", *wanted}):
                pending.append((requirement.name, frozenset(requirement.extras)))
    return found


def left_out_modules() -> set[str]:
    """Top-level modules of the distributions only the full install brings."""
    serving, full = closure(SERVING), closure(FULL)
    left_out = full - serving
    modules = set()
    for module, distributions in metadata.packages_distributions().items():
        keys = {_key(d) for d in distributions}
        if keys & left_out and not keys & serving and module.isidentifier():
            modules.add(module)
    return modules


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], set[str]]:
    names = left_out_modules()
    folder = tmp_path_factory.mktemp("serving-only")
    (folder / "sitecustomize.py").write_text(BLOCKER.format(names=sorted(names)))
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    env["PYTHONPATH"] = str(folder)
    return env, names


def test_the_full_install_brings_what_serving_leaves_out(blocked: tuple[dict[str, str], set[str]]) -> None:
    env, names = blocked
    assert "local" in SERVING
    assert set(SERVING) < set(FULL)
    assert {"boto3", "moto", "pytest", "mypy", "langchain", "matplotlib"} <= names
    assert not {"numpy", "onnxruntime", "faiss", "tree_sitter", "uvicorn", "starlette", "mcp"} & names
    refused = subprocess.run([sys.executable, "-c", "import boto3"], env=env, capture_output=True, text=True)
    assert "not in the serving install" in refused.stderr  # the guard holds in a child process


def call(url: str, tool: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/v1/tools/{tool}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return dict(json.loads(answer.read()))
    except urllib.error.HTTPError as refused:  # the envelope, to show in the assertion
        return dict(json.loads(refused.read()))


@pytest.fixture(scope="module")
def server(blocked: tuple[dict[str, str], set[str]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env, _ = blocked
    port = free_port()
    data = tmp_path_factory.mktemp("data")
    command = [sys.executable, "-m", "mnemo.cli", "serve", "--port", str(port), "--data-dir", str(data)]
    log = data / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, "--knowledge", str(ROOT / "examples" / "knowledge"), "--experimental"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(f"{url}/health", timeout=2)
                    break
                except OSError:
                    assert process.poll() is None, log.read_text()
                    time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)
    text = log.read_text()
    assert "not in the serving install" not in text, text
    assert "ModuleNotFoundError" not in text, text


def test_serve_answers_every_family_with_only_the_serving_install(server: str) -> None:
    added = call(server, "memory_add", {"content": "The staging DB is Postgres 16"})
    assert added["success"] is True
    found = call(server, "memory_search", {"query": "which database runs staging?"})
    assert [hit["memoryId"] for hit in found["results"]] == [added["memoryId"]]
    checked = call(server, "knowledge_check", {"dependencies": [{"name": "mysql2"}]}, **{"X-Mnemo-Org": "engineering"})
    assert checked["passed"] is False
    assert call(server, "sync_now", {})["success"] is True
    project = {"X-Mnemo-Project": "checkout-api"}
    code = "def token_matches(a, b):\n    return a == b\n\n\ndef check(a):\n    return token_matches(a, 'x')\n"
    assert call(server, "file_write", {"path": "src/auth.py", "content": code}, **project)["success"] is True
    outline = call(server, "outline_file", {"file": "src/auth.py", "language": "python"}, **project)
    assert outline["success"] is True, outline
    assert not outline.get("skipped"), outline
    assert "token_matches" in json.dumps(outline)
    link = {"subject": "Alice", "predicate": "works at", "object": "Acme"}
    assert call(server, "add_memory_link", link)["success"] is True
    conversation = {"user_input": "Weather in Paris?", "agent_response": "Rain.", "explanation": "keep it"}
    assert call(server, "add_conversation", conversation)["success"] is True


def test_mcp_answers_with_only_the_serving_install(server: str) -> None:
    request = urllib.request.Request(
        f"{server}/mcp",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        listed = json.loads(answer.read())
    assert "memory_search" in {tool["name"] for tool in listed["result"]["tools"]}

"""Every example in README.md runs as written, on what a fresh clone holds, against a real `mnemo serve`.

- An example is a fenced block in bash, sh, console or python. The line ``<!-- example: NAME -->`` above it
  names it, and ``RUN`` or ``NOT_RUN`` (with the reason) below says what happens to that name. A block
  without a name, a name listed nowhere, or a fenced block with no language fails the test: a new example
  is either run here or given a reason.
- The server is started as `make run` starts it (``mnemo serve --data-dir .mnemo --knowledge
  examples/knowledge``, the default bge model), in a temporary folder holding what a clone holds beside
  the commands: ``examples/`` and ``tests/`` (links to this checkout) and ``.venv`` (a link to the
  environment running this test, which `make test` made).
- The one rewrite: the port. ``8765`` in a block becomes the server's free port, the moto example's 5000
  and 8766 become free ports, and ``MNEMO_URL`` names the server for ``examples/memory-session.sh``.
  Nothing else in a block is changed.
- Blocks run in README order and share one state, as a reader running them one after the other would: the
  same server and data folder, and one namespace for the python blocks.
- A shell block runs under ``bash -euo pipefail`` and must exit 0. Every tool answer it prints must be
  ``"success": true``, and each answer the README shows in a ``# {...}`` comment must be met by one of the
  block's answers: each ``"key": value`` in the comment whose value is a string, an integer, a boolean,
  null, ``[]`` or ``{}`` (no ``…`` in it) is found in that answer (scores and timings are left out).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mnemo.tools.registry import FAMILIES

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PORT = "8765"
EXAMPLE_LANGUAGES = {"bash", "sh", "console", "python"}
DATA_LANGUAGES = {"json", "text"}
INSPECTOR = ROOT / "tests" / "mcp_clients" / "node_modules" / ".bin" / "mcp-inspector"

#: Examples this test does not run, and why.
NOT_RUN = {
    "make-run": "installs and starts the server this test starts itself with the same command (mnemo serve "
    "--data-dir .mnemo --knowledge examples/knowledge)",
    "make-test": "this test is part of it",
    "python-strands": "Strands pins an older MCP SDK than the service, so it lives in its own virtual "
    "environment; tests/e2e/test_client_strands.py runs these calls there against a real server",
    "python-openai-agents": "the OpenAI Agents SDK lives in its own virtual environment and the block asks a real "
    "model; tests/e2e/test_client_openai_agents.py runs these calls there with a scripted model against a real "
    "server",
    "python-strands-session": "Strands lives in its own virtual environment and the block asks a real model; "
    "tests/e2e/test_client_strands_session.py runs such agents there with a scripted model against a real server",
    "sam-deploy": "deploys to an AWS account; tests/infra/test_rehearsal.py runs the sam build output on moto",
    "learning-serve": "starts the server on an Ollama model, which this machine has not got; "
    "tests/e2e/test_learning_readme.py starts the same server on a scripted OpenAI-compatible model",
    "learning-curl": "needs that model server: tests/e2e/test_learning_readme.py runs this block as written against "
    "`mnemo serve` on a scripted OpenAI-compatible model",
    "import-aws": "writes to a real DynamoDB table and S3 bucket (an AWS account); the same import into "
    "DynamoDB and S3 on moto is tests/service/test_portability.py's round trip",
}


@dataclass(frozen=True)
class Block:
    name: str | None
    language: str
    text: str
    line: int


def blocks(markdown: str = README.read_text()) -> list[Block]:
    """Every fenced block, with the example name on the line above it (if any)."""
    found: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = re.fullmatch(r"```(\S*)\s*", lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        marker = re.fullmatch(r"<!-- example: ([a-z0-9-]+) -->", lines[index - 1].strip()) if index else None
        text = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(marker.group(1) if marker else None, opening.group(1), text, index + 1))
        index = end + 1
    return found


def examples() -> dict[str, Block]:
    return {block.name: block for block in blocks() if block.name}


RUN = [
    "memory-curl",
    "memory-session",
    "cli",
    "knowledge-curl",
    "conversations-curl",
    "topics-curl",
    "files-curl",
    "graph-curl",
    "lifecycle-curl",
    "python-client",
    "python-langchain",
    "mcp-inspector",
    "context-curl",
    "python-langgraph",
    "mcp-recall",
    "bedrock-definitions",
    "moto",
    "export",
]


# ------------------------------------------------------------- the README's shape ---
def test_every_example_is_named_and_either_run_or_not_run_with_a_reason() -> None:
    every = blocks()
    assert [b.line for b in every if not b.language] == [], "give every fenced block a language"
    unknown = [(b.line, b.language) for b in every if b.language not in EXAMPLE_LANGUAGES | DATA_LANGUAGES]
    assert unknown == [], "a fenced block in a language this test does not know"
    unnamed = [b.line for b in every if b.language in EXAMPLE_LANGUAGES and not b.name]
    assert unnamed == [], "an example without <!-- example: NAME --> above it (then list it in RUN or NOT_RUN)"
    names = [b.name for b in every if b.name]
    assert len(names) == len(set(names)), "two examples with one name"
    assert not set(RUN) & set(NOT_RUN)
    assert sorted(names) == sorted([*RUN, *NOT_RUN]), "README examples and this test's lists differ"
    assert [n for n in names if n in RUN] == RUN, "RUN is in README order (later blocks use earlier ones' state)"


def _commands(text: str) -> Iterator[str]:
    """The block's commands, continuation lines joined (a quoted body spanning lines stays with its command)."""
    command = ""
    for line in text.splitlines():
        if not command and (not line.strip() or line.lstrip().startswith("#")):
            continue
        command += line + "\n"
        if line.endswith("\\") or command.replace("\\'", "").count("'") % 2:
            continue
        yield command
        command = ""


def test_every_curl_to_a_tool_sends_a_json_content_type() -> None:
    missing = []
    for block in blocks():
        if block.language not in EXAMPLE_LANGUAGES:
            continue
        variables = dict(re.findall(r"^(\w+)='([^']*)'", block.text, re.MULTILINE))
        for command in _commands(block.text):
            if "curl" not in command or "/v1/tools/" not in command:
                continue
            used = " ".join(variables.get(name, "") for name in re.findall(r"\$(\w+)", command))
            if not re.search(r"Content-Type: ?application/json", command + used):
                missing.append((block.name, command.splitlines()[0]))
    assert missing == []


# ------------------------------------------------------------------- the server ---
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_health(url: str, process: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.2)
    # A server block runs in a process group of its own: stop all of it, or a background child (moto_server) keeps
    # the output pipe open and reading it would wait forever.
    if os.getpgid(process.pid) == process.pid:
        os.killpg(process.pid, signal.SIGKILL)
    else:
        process.kill()
    try:
        output = process.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        output = "(its output was still held open after it was stopped)"
    pytest.fail(f"the server at {url} did not answer /health: {output}")


@dataclass
class Clone:
    """A folder laid out as a fresh clone is, beside a running `make run`-like server."""

    folder: Path
    port: int
    env: dict[str, str]
    python: dict[str, Any]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rewrite(self, text: str) -> str:
        return text.replace(f":{PORT}", f":{self.port}")


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clone]:
    folder = tmp_path_factory.mktemp("clone")
    for name in ("examples", "tests"):
        (folder / name).symlink_to(ROOT / name)
    (folder / ".venv").symlink_to(Path(sys.prefix))
    assert (folder / ".venv" / "bin" / "mnemo").exists(), "the environment running the tests has no mnemo command"
    # The reader's environment: no MNEMO_* identity or store settings carried over from the test run.
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    port = free_port()
    env["MNEMO_URL"] = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [".venv/bin/mnemo", "serve", "--port", str(port), "--data-dir", ".mnemo", "--knowledge", "examples/knowledge"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    made = Clone(folder, port, env, {})
    wait_for_health(made.url, server, 120)
    try:
        yield made
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# ---------------------------------------------------------------- the checks ---
def answers(stdout: str) -> list[Any]:
    """The JSON documents a block printed, in order (curl prints them back to back); other text is skipped."""
    decoder = json.JSONDecoder()
    found, index = [], 0
    while index < len(stdout):
        if stdout[index] in "{[":
            try:
                value, end = decoder.raw_decode(stdout, index)
            except json.JSONDecodeError:
                index += 1
                continue
            found.append(value)
            index = end
        else:
            index += 1
    return found


SCALAR = r'"(?:[^"\\…]|\\.)*"|-?\d+(?![.\d])|true|false|null|\[\]|\{\}'


def shown_answers(text: str) -> list[list[tuple[str, Any]]]:
    """Each ``# {...}`` comment (with its continuation comment lines) as the pairs it shows for certain."""
    shown: list[list[tuple[str, Any]]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        comment = re.match(r"#\s?(.*)", line.strip())
        if comment and comment.group(1).startswith("{"):
            current = [comment.group(1)]
            shown.append([])
        elif comment and current is not None and line.strip().startswith("#  "):
            current.append(comment.group(1))
        else:
            current = None
            continue
        pairs = re.findall(rf'"(\w+)":\s*({SCALAR})(?=\s*[,}}\]]|\s*$)', comment.group(1))
        shown[-1].extend((key, json.loads(value)) for key, value in pairs)
    return [pairs for pairs in shown if pairs]


def holds(answer: Any, key: str, value: Any) -> bool:
    if isinstance(answer, dict):
        if key in answer and answer[key] == value and type(answer[key]) is type(value):
            return True
        return any(holds(item, key, value) for item in answer.values())
    if isinstance(answer, list):
        return any(holds(item, key, value) for item in answer)
    return False


def run_shell(clone: Clone, block: Block) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", clone.rewrite(block.text)],
        cwd=clone.folder,
        env=clone.env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def check_answers(block: Block, stdout: str) -> list[Any]:
    printed = answers(stdout)
    tool_answers = [a for a in printed if isinstance(a, dict) and "success" in a]
    assert [a for a in tool_answers if a["success"] is not True] == []
    for pairs in shown_answers(block.text):
        assert any(all(holds(a, k, v) for k, v in pairs) for a in tool_answers), (
            f"{block.name}: no answer shows {pairs}:\n{stdout}"
        )
    return printed


# ---------------------------------------------------------------- the examples ---
def test_the_examples_run(clone: Clone) -> None:
    """One test: the blocks depend on each other's state, so they run in one go, in README order."""
    found = examples()
    for name in RUN:
        RUNNERS.get(name, run_curl)(clone, found[name])


def run_curl(clone: Clone, block: Block) -> None:
    done = run_shell(clone, block)
    assert answers(done.stdout), f"{block.name} printed no answer"
    check_answers(block, done.stdout)


def run_session(clone: Clone, block: Block) -> None:
    done = run_shell(clone, block)
    printed = check_answers(block, done.stdout)
    assert len(printed) == 5, done.stdout
    assert printed[3]["results"], done.stdout  # the project's database memory is found


def run_cli(clone: Clone, block: Block) -> None:
    done = run_shell(clone, block)
    out = done.stdout
    assert "reindexed " in out
    assert json.loads((clone.folder / "openapi.json").read_text())["openapi"].startswith("3.0")
    imported = next(a for a in answers(out) if isinstance(a, dict) and "added" in a and "perSecond" in a)
    assert imported["added"] + imported["deduplicated"] + imported["replayed"] == 4
    for path in (ROOT / "examples" / "workspace").rglob("*"):
        if path.is_file():
            copied = clone.folder / "copy" / path.relative_to(ROOT / "examples" / "workspace")
            assert copied.read_bytes() == path.read_bytes()


def run_python(clone: Clone, block: Block) -> None:
    exec(compile(clone.rewrite(block.text), f"README.md:{block.line}", "exec"), clone.python)


def run_python_client(clone: Clone, block: Block) -> None:
    run_python(clone, block)
    hits = clone.python["hits"]
    assert hits
    assert hits[0]["content"] == "The staging DB is Postgres 16"


def run_langchain(clone: Clone, block: Block) -> None:
    """The README leaves the chat model to the reader (``model``): here, one that answers a fixed script of
    tool calls, so the agent's whole loop runs with no language model."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool

    offered: list[str] = []

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
            offered.extend(convert_to_openai_tool(tool)["function"]["name"] for tool in tools)
            return self

    call = {"name": "memory_search", "args": {"query": "which database runs staging?"}, "id": "call_1"}
    script = [AIMessage(content="", tool_calls=[call]), AIMessage(content="Staging runs Postgres 16.")]
    replies = iter(script)
    clone.python["model"] = ScriptedModel(messages=replies)
    run_python(clone, block)
    assert set(offered) == {"memory_add", "memory_search", "knowledge_check"}
    assert next(replies, None) is None, "the agent did not run its loop to the end (tool call, then answer)"


def run_inspector(clone: Clone, block: Block) -> None:
    assert shutil.which("node"), "node (20 or later) must be on PATH"
    assert INSPECTOR.exists(), "the pinned MCP clients are not installed: run `make mcp-clients`"
    lines = block.text.splitlines()
    command_lines = [lines[0].removeprefix("$ ")]
    while command_lines[-1].endswith("\\"):
        command_lines.append(lines[len(command_lines)])
    shown = "\n".join(lines[len(command_lines) :])
    done = run_shell(clone, Block(block.name, "bash", "\n".join(command_lines) + "\n", block.line))
    printed = json.loads(done.stdout)
    assert printed["isError"] is True
    envelope = json.loads(printed["content"][0]["text"])
    assert (envelope["errorCode"], envelope["details"]["field"]) == ("INVALID_INPUT", "limit")
    assert envelope["message"] in shown


def run_bedrock_definitions(clone: Clone, block: Block) -> None:
    run_shell(clone, block)
    written = sorted(path.name for path in (clone.folder / "build" / "bedrock").iterdir())
    families = FAMILIES
    assert written == sorted(f"{f}.{kind}.json" for f in families for kind in ("openapi", "functions"))


def run_moto(clone: Clone, block: Block) -> None:
    """A server block: started, asked, stopped. Its two ports are rewritten to free ones."""
    moto, serve = free_port(), free_port()
    text = block.text.replace("5000", str(moto)).replace("8766", str(serve))
    assert text != block.text
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", text],
        cwd=clone.folder,
        env=clone.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: moto_server and mnemo serve stop together
    )
    try:
        url = f"http://127.0.0.1:{serve}"
        wait_for_health(url, process, 120)
        request = urllib.request.Request(
            f"{url}/v1/tools/memory_add",
            data=json.dumps({"content": "Stored in DynamoDB on moto"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            assert json.loads(answer.read())["success"] is True
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert (clone.folder / ".mnemo-moto").is_dir(), "the moto example keeps its own data folder"


def run_export(clone: Clone, block: Block) -> None:
    done = run_shell(clone, block)
    summary = json.loads(done.stdout)
    assert summary["selection"]["tenant"] == "local"
    assert summary["records"]["memories"] > 0
    assert summary["blobs"]["knowledge"] >= 13
    header = json.loads((clone.folder / "local.jsonl").read_text().splitlines()[0])
    assert header["type"] == "header"
    assert header["selection"]["tenant"] == "local"


def run_langgraph(clone: Clone, block: Block) -> None:
    run_python(clone, block)
    store = clone.python["store"]
    assert store.get(("memories", "food"), "pizza").value == {"text": "Alice likes pizza with olives"}
    answer = clone.python["graph"].invoke({"messages": [("user", "What food do I like?")]})
    assert answer["messages"][-1].content == "Alice likes pizza with olives"


def run_recall(clone: Clone, block: Block) -> None:
    """The recall prompt through the Inspector CLI: memory_context's text as one user message."""
    assert INSPECTOR.exists(), "the pinned MCP clients are not installed: run `make mcp-clients`"
    command = block.text.removeprefix("$ ")
    done = run_shell(clone, Block(block.name, "bash", command, block.line))
    printed = json.loads(done.stdout)
    message = printed["messages"][0]
    assert message["role"] == "user"
    assert "functional programming" in message["content"]["text"]


RUNNERS = {
    "python-langgraph": run_langgraph,
    "mcp-recall": run_recall,
    "memory-session": run_session,
    "cli": run_cli,
    "python-client": run_python_client,
    "python-langchain": run_langchain,
    "mcp-inspector": run_inspector,
    "bedrock-definitions": run_bedrock_definitions,
    "moto": run_moto,
    "export": run_export,
}

"""Adding a tool takes its own files and `make docs`: a throwaway tool, in a copy of the repository.

In a temporary copy, a new tool (``memory_count``: how many memories a layer holds) is written as a
contributor would: its request and response models, its service function, its catalog entry with its
rights, and its test. Four files. Then ``mnemo generate`` (what ``make docs`` runs) writes everything
else, and this test checks what followed without another hand-written line:

- template.yaml gains the tool's function (granted exactly what its entry declares), its routes on both
  APIs, API Gateway's permission, its log group, and the memory action group's schema, and no alarm of its
  own (the API's 5xx and the account's throttles already watch it); cfn-lint finds nothing wrong with it;
- functions/memory_count/app.py, docs/tools.md, the client's typed method and catalog.json, and the tool
  counts of the README and docs follow;
- the tool's own test passes, and so do the copy's "every tool" tests of the catalog, the template and the
  Bedrock schemas, which now include it; its generated Lambda entry answers an API Gateway event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from repo_copy import copy_repository, run_in, snapshot

ROOT = Path(__file__).resolve().parents[2]
CFN_LINT = ROOT / ".venv" / "sam" / "bin" / "cfn-lint"

MODELS = '''"""memory_count's request and answer."""

from __future__ import annotations

from pydantic import Field

from mnemo.context import Layer
from mnemo.models import ToolRequest, ToolResponse


class MemoryCountInput(ToolRequest):
    layer: Layer = Field("user", description="The layer to count: agent, user, session, project, team, org or company.")


class MemoryCountOutput(ToolResponse):
    count: int = Field(description="How many memories the layer holds.")
    layer: Layer
'''

SERVICE = '''"""memory_count: the memories of one layer, counted a page at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.memory.count_models import MemoryCountInput, MemoryCountOutput
from mnemo.memory.models import MemoryListInput

if TYPE_CHECKING:
    from mnemo.memory.service import MemoryService


def count_layer(memory: MemoryService, context: RequestContext, request: MemoryCountInput) -> MemoryCountOutput:
    """How many memories the caller's layer holds (as memory_list lists them)."""
    total, cursor = 0, None
    while True:
        page = memory.list_layer(context, MemoryListInput(layer=request.layer, limit=100, cursor=cursor))
        total += len(page.memories)
        if not page.has_more:
            return MemoryCountOutput(count=total, layer=request.layer)
        cursor = page.next_cursor
'''

CATALOG_ENTRY = '''

from mnemo.memory.count_models import MemoryCountInput, MemoryCountOutput  # noqa: E402
from mnemo.memory.counting import count_layer  # noqa: E402


@tool("memory", rights=Rights(records="read"))
def memory_count(services: Services, context: RequestContext, request: MemoryCountInput) -> MemoryCountOutput:
    """[SPECIFICATION] Count the memories of one layer.

    Tool exposure: `memory_count`

    Use this to see how much is remembered in a layer before listing it.

    **Usage:**
    ```json
    {"layer": "user"}
    ```

    **Returns:**
    ```json
    {"success": true, "count": 3, "layer": "user"}
    ```

    **Errors:**
    - INVALID_INPUT: an unknown layer, or one whose ids are not in the request context.

    @see mnemo.memory.counting.count_layer
    """
    return count_layer(services.memory, context, request)
'''

TEST = '''"""memory_count counts the caller's layer only."""

from helpers import ctx
from mnemo.memory.models import MemoryAddInput
from mnemo.tools.registry import get_tool


def test_memory_count_counts_the_callers_layer(services):
    alice, bob = ctx("alice"), ctx("bob")
    for n in range(3):
        services.memory.add(alice, MemoryAddInput(content=f"Alice fact number {n} about topic {n * 7}"))
    services.memory.add(bob, MemoryAddInput(content="Bob's only fact"))
    assert get_tool("memory_count").invoke(services, alice, {"layer": "user"})["count"] == 3
    assert get_tool("memory_count").invoke(services, bob, {})["count"] == 1
'''

#: The contributor's files: (path, text, append?).
WRITTEN = (
    ("layers/shared/mnemo/memory/count_models.py", MODELS, False),
    ("layers/shared/mnemo/memory/counting.py", SERVICE, False),
    ("layers/shared/mnemo/tools/memory.py", CATALOG_ENTRY, True),
    ("tests/service/test_memory_count.py", TEST, False),
)


@pytest.fixture(scope="module")
def added(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], set[str]]:
    """The copy with the tool added and `mnemo generate` run: (copy, files written by hand, files generated)."""
    copy = tmp_path_factory.mktemp("new-tool")
    copy_repository(copy)
    before = snapshot(copy)
    for relative, text, append in WRITTEN:
        path = copy / relative
        path.write_text((path.read_text() if append else "") + text)
    by_hand = snapshot(copy)
    found = run_in(copy, "-c", "import mnemo, mnemo_codegen; print(mnemo.__file__); print(mnemo_codegen.__file__)")
    files = found.stdout.split()
    assert len(files) == 2, found.stdout + found.stderr
    assert all(file.startswith(str(copy)) for file in files), found.stdout  # the copy's packages, not ours
    generated = run_in(copy, "-m", "mnemo.cli", "generate", "--root", str(copy))
    assert generated.returncode == 0, generated.stdout + generated.stderr
    after = snapshot(copy)
    hand_written = {name for name in by_hand if before.get(name) != by_hand[name]}
    generated_files = {name for name in after if by_hand.get(name) != after[name]}
    return copy, hand_written, generated_files


def test_a_new_tool_is_at_most_six_hand_written_files(added: tuple[Path, set[str], set[str]]) -> None:
    _, hand_written, _ = added
    assert hand_written == {relative for relative, _, _ in WRITTEN}
    assert len(hand_written) <= 6


def test_make_docs_writes_everything_else(added: tuple[Path, set[str], set[str]]) -> None:
    copy, _, generated = added
    assert generated == {
        "template.yaml",
        "functions/memory_count/app.py",
        "docs/tools.md",
        "layers/shared/mnemo/client/tools.py",
        "layers/shared/mnemo/client/catalog.json",
        "README.md",  # its tool and function counts
        "docs/deploy.md",  # its function count
        "docs/security.md",  # its tool counts
    }
    checked = run_in(copy, "-m", "mnemo.cli", "generate", "--root", str(copy), "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert 'tool_handler("memory_count", family="memory")' in (copy / "functions/memory_count/app.py").read_text()
    assert "### `memory_count`" in (copy / "docs/tools.md").read_text()
    assert "def memory_count(" in (copy / "layers/shared/mnemo/client/tools.py").read_text()
    listing = json.loads((copy / "layers/shared/mnemo/client/catalog.json").read_text())
    assert "memory_count" in json.dumps(listing)
    # memory_count only reads: the client may send it again after an unknown outcome.
    assert '"memory_count",' in (copy / "layers/shared/mnemo/client/tools.py").read_text().split("REPEATABLE")[1]


def test_the_template_gives_the_tool_its_function_and_nothing_more(added: tuple[Path, set[str], set[str]]) -> None:
    from mnemo_codegen.cloudformation_yaml import load_template

    copy, _, _ = added
    doc = load_template((copy / "template.yaml").read_text())
    resources = doc["Resources"]
    function = resources["MemoryCountFunction"]["Properties"]
    assert function["CodeUri"] == "functions/memory_count/"
    statements = [statement for policy in function["Policies"] for statement in policy["Statement"]]
    assert [statement["Sid"] for statement in statements] == ["RecordsRead"]  # it declared reads only
    for kind in ("ApiPermission", "LogGroup"):
        assert f"MemoryCount{kind}" in resources
    for api in ("MnemoApi", "MnemoHttpApi"):
        assert "/v1/tools/memory_count" in resources[api]["Properties"]["DefinitionBody"]["paths"]
    alarms = json.dumps({name: r for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"})
    assert '"MemoryCountFunction"' not in alarms and '"BedrockMemoryFunction"' in alarms
    memory_group = resources["BedrockAgent"]["Properties"]["ActionGroups"][0]
    assert "memory_count" in [each["Name"] for each in memory_group["FunctionSchema"]["Functions"]]
    assert "memory_count" in resources["BedrockMemoryFunction"]["Properties"]["Description"]


@pytest.mark.skipif(not CFN_LINT.exists(), reason="cfn-lint is installed by `make sam-install` (make test runs it)")
def test_cfn_lint_finds_nothing_wrong_with_the_new_template(added: tuple[Path, set[str], set[str]]) -> None:
    copy, _, _ = added
    linted = subprocess.run(
        [str(CFN_LINT), "template.yaml"], cwd=copy, capture_output=True, text=True, timeout=600, check=False
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_the_tools_test_and_the_every_tool_tests_pass_in_the_copy(added: tuple[Path, set[str], set[str]]) -> None:
    copy, _, _ = added
    suites = [
        "tests/service/test_memory_count.py",
        "tests/catalog/test_catalog.py",
        "tests/infra/test_template.py",
        "tests/infra/test_template_rights.py",
        "tests/infra/test_bedrock_template.py",
        "tests/infra/test_generated.py",
    ]
    ran = run_in(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *suites, timeout=1200)
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout


def test_the_generated_entry_answers_an_api_gateway_event(
    added: tuple[Path, set[str], set[str]], tmp_path: Path
) -> None:
    copy, _, _ = added
    script = (
        "import json, runpy\n"
        "from aws_events import FakeLambdaContext, rest_event\n"
        "entry = runpy.run_path('functions/memory_count/app.py')\n"
        "event = rest_event('memory_count', {'layer': 'user'}, {'tenant': 'acme', 'user': 'alice'})\n"
        "answer = entry['handler'](event, FakeLambdaContext())\n"
        "print(json.dumps(answer))\n"
    )
    env_data = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "hashing"}
    ran = subprocess.run(
        [sys.executable, "-c", script],
        cwd=copy,
        env={
            **os.environ,
            **env_data,
            "PYTHONPATH": os.pathsep.join([str(copy / "layers" / "shared"), str(copy / "tests" / "support")]),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    answer = json.loads(ran.stdout.strip().splitlines()[-1])
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"]) == {"success": True, "count": 0, "layer": "user"}

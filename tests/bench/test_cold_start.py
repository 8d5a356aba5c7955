"""A tool function's cold start loads its own family alone, and bench/cold_start.py --built calls every tool well.

The family: a tool's generated Lambda entry names its family (``tool_handler(name, family=...)``), so a
function's module, imported in a fresh Python process as a Lambda container imports it, then answering one
call on the embedded stack, loads that family's tool module and no other, nor the memory package unless its
tool is a memory tool. A family that is not one (or not the tool's) changes nothing: the tool is found in
catalog order, and an unknown name is refused as before.

The benchmark: the arguments --built sends each tool function (its spec's Usage example, or its case in
``BUILT_CASES``) are valid requests of that tool, so a tool whose request changes fails here rather than in a
15-minute run; and its reading of ``python -X importtime`` logs (what a cold start loads beyond a baseline),
on a log written by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cold_start import (
    BUILT_CASES,
    POOLS,
    STREAM_FUNCTIONS,
    Case,
    _stream_event,
    beyond,
    importtime_modules,
    package_of,
    usage_example,
)

from mnemo.errors import NotFound
from mnemo.tools.registry import get_tool, load_catalog

ROOT = Path(__file__).resolve().parents[2]

HANDLER = """
import json, sys, tempfile, pathlib, importlib.util
sys.path.insert(0, "tests/support")
from aws_events import FakeLambdaContext, rest_event
from helpers import make_services
from mnemo.runtime import set_services
set_services(make_services(pathlib.Path(tempfile.mkdtemp())))
spec = importlib.util.spec_from_file_location("fn", "functions/{tool}/app.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
answer = module.handler(rest_event("{tool}", {body!r}, {{"tenant": "acme", "user": "a"}}), FakeLambdaContext())
print(json.dumps({{"status": answer["statusCode"], "modules": sorted(sys.modules)}}), file=sys.stderr)
"""


def run_function(tool: str, body: dict[str, Any], **environment: str) -> dict[str, Any]:
    """``tool``'s function imported and called once in a fresh Python process: its status and its modules."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "POWERTOOLS_", "AWS_LAMBDA_"))}
    env.update(environment)
    code = HANDLER.format(tool=tool, body=json.dumps(body))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.startswith("{") and '"modules"' in line]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def test_a_named_family_is_imported_first_and_a_wrong_or_unknown_one_changes_nothing() -> None:
    catalog = load_catalog(experimental=True)
    assert get_tool("file_read", "files") is catalog["file_read"]
    assert get_tool("file_read", "memory") is catalog["file_read"]  # found all the same, in catalog order
    assert get_tool("file_read", "os") is catalog["file_read"]  # not a family: never imported
    with pytest.raises(NotFound) as refused:
        get_tool("no_such_tool", "files")
    assert "memory_add" in refused.value.details["available"]


@pytest.mark.parametrize(
    ("tool", "body", "environment", "status"),
    [
        ("file_read", {"path": "notes/none.md"}, {}, 404),  # a file that is not there: an answer all the same
        ("sync_status", {}, {}, 200),
        ("graph_search", {"query": "Where does Alice work?"}, {}, 200),
        ("outline_project", {"language": "python"}, {"MNEMO_EXPERIMENTAL": "true"}, 200),
        ("memory_add_batch", {"items": [{"content": "Deploys freeze in December"}]}, {}, 200),
    ],
)
def test_a_function_loads_its_own_family_and_no_other(
    tool: str, body: dict[str, Any], environment: dict[str, str], status: int
) -> None:
    report = run_function(tool, body, **environment)
    assert report["status"] == status
    family = load_catalog(experimental=True)[tool].family
    loaded = sorted(m for m in report["modules"] if m.startswith("mnemo.tools.") and m.count(".") == 2)
    assert loaded == sorted({f"mnemo.tools.{family}", "mnemo.tools.registry", "mnemo.tools.rights"})


def test_a_function_of_another_family_leaves_the_memory_package_unloaded() -> None:
    report = run_function("file_read", {"path": "notes/none.md"})
    assert report["status"] == 404
    assert [m for m in report["modules"] if m == "mnemo.memory" or m.startswith("mnemo.memory.")] == []
    assert "mnemo.files.service" in report["modules"]


#: An id of each pool's kind, as the pools hold them (the objects themselves exist only during a run).
POOL_IDS = {
    "memory": "mem_3f9a1c0d2b7e4a6f8c1d2e3f",
    "topic": "cold-start-0123456789",
    "block": "mnemo:///blocks/cold-0123456789.md",
    "pinned": "mnemo:///blocks/pinned-0123456789.md",
    "fact": "fct_5b1e0c9a7d3f4e2a8c6b0d1e",
}


def test_the_benchmarks_arguments_are_valid_requests_of_every_tool() -> None:
    catalog = load_catalog(experimental=True)
    assert set(POOL_IDS) == set(POOLS)
    assert set(BUILT_CASES) <= set(catalog) | {"outline_sync", *STREAM_FUNCTIONS}
    for name, tool in catalog.items():
        case = BUILT_CASES.get(name, Case())
        taken = [POOL_IDS[case.pool]] * case.takes if case.pool else []
        tool.parse(case.body(usage_example(name), taken))  # InvalidInput when it is not
    for pool in POOLS.values():
        catalog[pool.tool].parse(pool.body())
        if pool.then is not None:
            catalog[pool.then[0]].parse(pool.then[1](POOL_IDS["pinned"]))


def test_the_stream_functions_get_a_stream_record_of_a_new_memory() -> None:
    """What the change events function and the indexer are called with: one record, as Lambda hands it."""
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    from mnemo.entry.change_events import change_of

    inserted, removed = (_stream_event(name)["Records"] for name in STREAM_FUNCTIONS)
    added, gone = change_of(DynamoDBRecord(inserted[0])), change_of(DynamoDBRecord(removed[0]))
    assert (len(inserted), len(removed)) == (1, 1)
    assert added.inserted and added.sk.startswith("MEM#mem_") and added.new and added.new["memoryId"] in added.sk
    assert gone.removed and gone.old is not None and not gone.by_service


LOG = """import time: self [us] | cumulative | imported package
import time:       120 |        120 |     _io
import time:      2000 |       2000 |   botocore.session
import time:       500 |       2500 | botocore
import time:      3000 |       3000 |     mnemo.files.models
import time:       700 |        700 |     mnemo.tools.files
import time:      1500 |       1500 |     mnemo.memory.models
import time:       900 |       6100 |   mnemo.memory
import time:     40000 |      40000 |   opensearchpy.client
import time:      1000 |      41000 | opensearchpy
"""


def test_an_importtime_log_is_read_as_each_modules_own_time() -> None:
    modules = importtime_modules(LOG)
    assert modules["opensearchpy"] == 1000
    assert modules["mnemo.files.models"] == 3000
    assert "imported package" not in modules


def test_what_a_cold_start_loads_beyond_a_baseline_is_summed_by_package() -> None:
    assert package_of("mnemo.tools.files") == "mnemo.tools.files"
    assert package_of("mnemo.memory.models") == "mnemo.memory"
    assert package_of("opensearchpy.client") == "opensearchpy"
    baseline = {"_io": 120, "botocore.session": 2000, "botocore": 500}
    assert beyond(importtime_modules(LOG), baseline, top=3) == [
        ("opensearchpy", 41.0),
        ("mnemo.files", 3.0),
        ("mnemo.memory", 2.4),
    ]


def test_the_built_mode_runs_in_smoke_mode_on_the_sam_build(tmp_path: Path) -> None:
    """`bench/cold_start.py --built --smoke`: `sam build` of the template, then the smoke functions and both
    baselines, each in fresh python3.12 processes on the build, answering every call with a 200. Only the exit
    status and the JSON's shape are checked, never a figure."""
    results = tmp_path / "results"
    env = {**os.environ, "MNEMO_BENCH_RESULTS": str(results)}
    done = subprocess.run(
        [sys.executable, "bench/cold_start.py", "--built", "--smoke"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    payload = json.loads((results / "cold-start-built-rest.json").read_text())
    functions = payload["functions"]
    assert set(functions) == {"bare", "bare+sdk", "memory_add", "memory_search", "file_read", "build_memory_from_text"}
    for name, figures in functions.items():
        assert figures["samples"], name
        assert figures["medians"]["modules"] > 0, name

"""bench/deploy_cost.py's SnapStart row (docs/deploy.md, "SnapStart"), against hand computations.

The row's two parts: the idle floor (one cached snapshot of each function behind the API, all month) and, per
million calls of a tool, each cold start's restore less the INIT it no longer runs. The functions and their
memory are counted here from the catalog (each tool's declared memory, else the template's Globals) and MCP's,
not by the benchmark's own reading of the template; the rates are checked against AWS's worked example.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cost_model import DEFAULT_MIX, PRICES, SECONDS_A_MONTH, SHAPES, cold_share, derive_case

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, load_catalog
from mnemo_codegen.template_names import function_id

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def deploy_cost() -> Iterator[ModuleType]:
    """bench/deploy_cost.py as a module: what its import sets for its own run (Lambda's variables, its template
    reader in aws_fixtures) is undone here."""
    import aws_fixtures

    saved, reader = dict(os.environ), aws_fixtures.load_template
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import deploy_cost as module
    finally:
        os.environ.clear()
        os.environ.update(saved)
        aws_fixtures.load_template = reader
    yield module


@pytest.fixture(scope="module")
def template(deploy_cost: ModuleType) -> dict[str, Any]:
    loaded: dict[str, Any] = deploy_cost.load_template()
    return loaded


def test_the_rates_reproduce_awss_worked_example(deploy_cost: ModuleType) -> None:
    """AWS's pricing page: a 1 GB function cached 31 days (2,678,400 s) is $4.03; 74,400 restores, $10.40."""
    prices = deploy_cost.SNAPSTART_PRICES
    assert round(1 * 2_678_400 * prices["cache_gb_second"], 2) == 4.03
    assert round(74_400 * 1 * prices["restore_gb"], 2) == 10.40


def test_the_idle_floor_is_a_month_of_each_api_functions_snapshot(
    deploy_cost: ModuleType, template: dict[str, Any]
) -> None:
    default = template["Globals"]["Function"]["MemorySize"]
    mcp = template["Resources"]["McpFunction"]["Properties"]["MemorySize"]
    core = [tool for tool in load_catalog(experimental=True).values() if tool.family not in EXPERIMENTAL_FAMILIES]
    megabytes = {function_id(tool): tool.runtime.memory or default for tool in core} | {"McpFunction": mcp}
    # By hand: every function's memory, cached 730 hours at $0.0000015046 per GB-second.
    gigabytes = sum(megabytes.values()) / 1024
    expected = gigabytes * 730 * 3600 * 0.0000015046
    assert deploy_cost.snapstart_functions(template, {"SnapStart": "on"}) == megabytes
    assert deploy_cost.snapstart_functions(template, {}) == {}  # off: nothing cached
    dev = derive_case(template, "dev", {})
    init = {tool: (500.0, 300.0) for tool in dev.memory_mb}
    row = deploy_cost.snapstart_option(template, dev, 1_000_000, init)
    assert row["idle floor"] == pytest.approx(expected, rel=1e-12)
    assert SECONDS_A_MONTH == 730 * 3600


def test_each_cold_start_restores_the_snapshot_instead_of_running_init(
    deploy_cost: ModuleType, template: dict[str, Any]
) -> None:
    """A million calls of memory_search at a million calls a month (bursts): as many cold starts as the model
    counts, each restoring 256 MB ($0.0001397998 a GB) and running no INIT (500 ms of 256 MB at the Arm price).
    The first call's extra over a warm one (300 ms) stays: nothing about it changes."""
    dev = derive_case(template, "dev", {})
    shape = SHAPES["bursts"]
    share = DEFAULT_MIX["memory_search"]
    rate = 1_000_000 * share / shape.active_seconds
    cold = cold_share(rate, shape.session_calls * share, shape.session_seconds) * 1e6
    restore = cold * 0.25 * 0.0001397998
    init = cold * 0.5 * 0.25 * PRICES["lambda_arm_gb_second"]
    for first_call in (300.0, 900.0):
        lines = deploy_cost.snapstart_per_million(
            dev, "memory_search", 1_000_000, {"memory_search": (500.0, first_call)}
        )
        assert lines == pytest.approx({"SnapStart restores": restore, "Lambda INIT (cold starts)": -init}, rel=1e-12)
    assert dev.memory_mb["memory_search"] == 256 and restore > init > 0  # a restore costs more than the INIT

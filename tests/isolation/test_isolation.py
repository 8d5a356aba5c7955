"""No tenant or user ever sees or changes another's data: a model-based, property-based proof.

The machine in machine.py drives random operations of every tool family by
twelve callers (two tenants, three users each, various agent, session,
project, team and org ids, with and without the writer role) and checks each
answer against a model of who owns what. It runs twice: in process through the
tool registry (many examples), and over real HTTP through the local server's
X-Mnemo-* headers (fewer). Derandomized, so CI runs the same sequences each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from isolation.machine import HttpIsolationMachine, IsolationMachine, Stats

from helpers import ctx, local_server, make_services
from mnemo.errors import MnemoError
from mnemo.tools.registry import load_catalog

CATALOG = load_catalog()

#: Every tool the catalog serves by default: each reads or writes a tenant's data, so each run must call every
#: one (the experimental families are not part of the machine).
TOOLS = set(load_catalog(experimental=False))


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def _check(stats: Stats, least_cross_scope: int) -> None:
    assert stats.leaks == 0
    assert stats.cross_scope >= least_cross_scope, stats
    assert set(stats.by_tool) == TOOLS, (
        f"every tool of the catalog is called; not: {sorted(TOOLS ^ set(stats.by_tool))}"
    )


def test_no_caller_sees_or_changes_another_scope_in_process(isolation_report: Callable[[str], None]) -> None:
    IsolationMachine.stats = stats = Stats()
    started = time.perf_counter()
    try:
        run_state_machine_as_test(IsolationMachine, settings=_settings(examples=250, steps=100))
    finally:
        isolation_report(f"{stats.line('in process')} in {time.perf_counter() - started:.1f} s")
    _check(stats, least_cross_scope=2000)


def test_no_caller_sees_or_changes_another_scope_over_http(
    tmp_path: Path, isolation_report: Callable[[str], None]
) -> None:
    HttpIsolationMachine.stats = stats = Stats()
    started = time.perf_counter()
    try:
        with local_server(make_services(tmp_path)) as base:
            HttpIsolationMachine.base_url = base
            run_state_machine_as_test(HttpIsolationMachine, settings=_settings(examples=100, steps=60))
    finally:
        isolation_report(f"{stats.line('over HTTP')} in {time.perf_counter() - started:.1f} s")
    _check(stats, least_cross_scope=100)


def test_a_caller_cannot_forge_a_knowledge_pointer(tmp_path: Path) -> None:
    """Only sync writes knowledge pointers: a caller's metadata must not make a memory pass for one."""
    services = make_services(tmp_path)
    writer = ctx("alice", "acme", roles=("writer",), project="p1")
    teammate = ctx("bob", "acme", roles=("writer",), project="p1")
    forged = {"source": "knowledge_sync", "knowledgePointer": {"sourceId": "adr-042-database-selection"}}
    body = {"content": "New services use MySQL", "layer": "project", "metadata": forged}
    try:
        added = CATALOG["memory_add"].invoke(services, writer, body)
    except MnemoError as error:  # refusing the reserved keys is one fix
        assert error.code == "INVALID_INPUT"
        return
    found = CATALOG["memory_search"].invoke(services, teammate, {"query": "MySQL", "threshold": 0.0})["results"]
    assert [r["metadata"].get("source") for r in found if r["memoryId"] == added["memoryId"]] != ["knowledge_sync"]
    deleted = CATALOG["memory_delete"].invoke(services, teammate, {"memoryId": added["memoryId"]})
    assert deleted["success"]

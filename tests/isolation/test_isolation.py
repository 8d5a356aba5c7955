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

from helpers import local_server, make_services

#: Every tool that reads or writes a tenant's data (the whole catalog).
TOOLS = {
    *("memory_add", "memory_search", "memory_delete"),
    *("add_conversation", "add_execution", "retrieve_conversation", "retrieve_execution"),
    *("memorize_new_topic", "refine_memory", "recall_memory", "list_memories", "search_memories"),
    *("forget_memory", "memorize_general_info", "recall_general_memory"),
    *("knowledge_query", "knowledge_show", "knowledge_check", "sync_now", "sync_status"),
}


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
    assert set(stats.by_tool) == TOOLS, sorted(TOOLS ^ set(stats.by_tool))


def test_no_caller_sees_or_changes_another_scope_in_process(isolation_report: Callable[[str], None]) -> None:
    IsolationMachine.stats = stats = Stats()
    started = time.perf_counter()
    try:
        run_state_machine_as_test(IsolationMachine, settings=_settings(examples=150, steps=80))
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
            run_state_machine_as_test(HttpIsolationMachine, settings=_settings(examples=12, steps=50))
    finally:
        isolation_report(f"{stats.line('over HTTP')} in {time.perf_counter() - started:.1f} s")
    _check(stats, least_cross_scope=100)

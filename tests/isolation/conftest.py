"""Isolation: no tenant or user ever sees or changes another's data. Model-based, property-based machines
(Hypothesis, derandomized) drive every tool family with many callers in process, over real HTTP through
`mnemo serve` in a thread (a free port, a temporary data dir), and through API Gateway events; nothing else
is started. Slow by design (minutes): each test file runs whole on one pytest-xdist worker.

The isolation suite's figures, printed in pytest's terminal summary (through tests/support/run_summary.py,
so that a run on pytest-xdist workers prints them too)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from run_summary import add_summary_line


@pytest.fixture
def isolation_report(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> Callable:
    """Report one summary line: printed (pytest -s), recorded as a property and shown in the terminal summary."""

    def report(line: str) -> None:
        print(line)
        record_property("isolation", line)
        add_summary_line(request.config, "isolation", line)

    return report

"""The isolation suite's figures, printed in pytest's terminal summary."""

from __future__ import annotations

from collections.abc import Callable

import pytest

SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture
def isolation_report(request: pytest.FixtureRequest, record_property: Callable[[str, object], None]) -> Callable:
    """Report one summary line: printed (pytest -s), recorded as a property and shown in the terminal summary."""

    def report(line: str) -> None:
        print(line)
        record_property("isolation", line)
        request.config.stash.setdefault(SUMMARY, []).append(line)

    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(SUMMARY, [])
    if lines:
        terminalreporter.section("isolation")
        for line in lines:
            terminalreporter.write_line(line)

"""Lines a suite adds to pytest's terminal summary (the isolation figures, the fuzz counts), printed once at
the end of the run whether it ran in one process or on pytest-xdist workers.

A worker's own terminal summary is never shown, and the controller process collects no tests, so it never
loads a kind's conftest.py: each worker sends the lines it gathered to the controller with its results
(``workeroutput``), and this plugin, loaded by the root conftest.py in every process, prints them.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Section title -> (separator character, lines), in the order first reported.
SECTIONS = pytest.StashKey[dict[str, tuple[str, list[str]]]]()
_WORKER_KEY = "run_summary_sections"


def add_summary_line(config: pytest.Config, section: str, line: str, sep: str = "=") -> None:
    """Print ``line`` under a ``section`` heading (drawn with ``sep``) in the terminal summary."""
    sections = config.stash.setdefault(SECTIONS, {})
    sections.setdefault(section, (sep, []))[1].append(line)


@pytest.hookimpl(trylast=True)  # after the kinds' own sessionfinish hooks have added their lines
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_WORKER_KEY] = {
            title: [sep, lines] for title, (sep, lines) in session.config.stash.get(SECTIONS, {}).items()
        }


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown when the run is not distributed
def pytest_testnodedown(node: Any, error: Any) -> None:
    sent: dict[str, list[Any]] = getattr(node, "workeroutput", {}).get(_WORKER_KEY, {})
    for title, (sep, lines) in sent.items():
        for line in lines:
            add_summary_line(node.config, title, line, sep)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for title, (sep, lines) in config.stash.get(SECTIONS, {}).items():
        terminalreporter.write_sep(sep, title)
        for line in lines:
            terminalreporter.write_line(line)

"""How pytest-xdist shares the suite between its workers when run with ``--dist loadfile`` (as `make test`
runs it).

A test file is one unit of work, run whole and in its own order on one worker, so module- and session-scoped
fixtures (a `mnemo serve` or moto server per module, the osmem-server, the rehearsal's `sam build`, the bge
model) are built once per file or once per worker, never once per test, and a file's last test can check
what its earlier ones did (the fuzz budget). On top of that:

- each folder of ``ONE_UNIT`` runs whole on one worker: the fuzz suite prints one summary line that adds
  up the requests of all its files, with one digest of the generated ones;
- the units of ``FIRST``, which take minutes, are handed out before the rest, so that no worker is left
  running one of them alone at the end; the rest follow in collection order, ending with the many short
  unit files, which even out the workers' last minutes.

A slow file missing from ``FIRST`` only makes the run end later; a run without xdist (``-p no:xdist``,
``-n 0``) is not changed at all.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Folders that run as one unit of work.
ONE_UNIT = ("tests/fuzz/",)
#: The units that took longest (a minute to six on the busy 2-core machine; the rehearsal longer from a
#: fresh clone, whose `sam build` has no cache), the longest first.
FIRST = (
    "tests/fuzz/",
    "tests/service/test_outage_and_concurrency.py",
    "tests/infra/test_rehearsal.py",
    "tests/infra/test_new_tool.py",
    "tests/bench/test_bench_smoke.py",
    "tests/contract/test_graph_contract.py",
    "tests/isolation/test_isolation.py",
    "tests/service/test_files.py",
    "tests/e2e/test_workspace_cli.py",
    "tests/e2e/test_crash_recovery.py",
    "tests/contract/test_record_store.py",
)


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its ONE_UNIT folder, or its file."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in ONE_UNIT if path.startswith(folder)), path)


def _rank(scope: str) -> int:
    return FIRST.index(scope) if scope in FIRST else len(FIRST)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Only on a worker (each collects the same items and sorts them the same way): the controller hands
    # out units in the order of this collection.
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: _rank(scope_of(item.nodeid)))  # stable: files keep their own order


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown when the run is not distributed
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None  # the other modes as xdist makes them
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        """``loadfile`` with the ONE_UNIT folders as units, handed out in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    # Collection order, not xdist's default of the units with most tests first.
    config.option.loadscopereorder = False
    return FileScheduling(config, log)

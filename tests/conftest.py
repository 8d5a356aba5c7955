"""Shared fixtures: embedded stacks on temporary directories, used by more than one kind of test.

Each kind's folder (unit, contract, e2e, entry, fuzz, infra, isolation, catalog, outline, service, bench) has a
conftest.py that says what it tests and what it may start, and holds the fixtures only it uses; the
helpers the tests import are in tests/support (on pytest's pythonpath).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import make_services
from mnemo.runtime import Services, set_services

# The run's plugins (tests/support): summary lines that reach the terminal from pytest-xdist workers too,
# and how the suite is shared between those workers.
pytest_plugins = ["run_summary", "xdist_scopes"]


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    """A fresh embedded stack with the hashing embedder, installed as the process default."""
    built = make_services(tmp_path)
    set_services(built)
    yield built
    set_services(None)


@pytest.fixture(scope="session")
def bge_services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    """The embedded stack with the real bge-small model (loaded once per session)."""
    return make_services(tmp_path_factory.mktemp("bge"), embedder="bge")

"""Shared fixtures: embedded stacks on temporary directories, and a real local server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import make_services
from mnemo.runtime import Services, set_services


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

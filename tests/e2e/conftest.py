"""Fixtures shared by the end-to-end tests: the client's scripted server, the console's server and browser."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client_support import Script, scripted_server
from console_support import Browser, browser
from helpers import local_server
from mnemo.runtime import Services


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    """A scripted HTTP server (tests/client_support.py) and the script it answers from."""
    script = Script()
    with scripted_server(script) as url:
        yield url, script


@pytest.fixture
def console_server(services: Services) -> Iterator[str]:
    """`mnemo serve` on a free port over a data directory of its own, for the console's browser tests."""
    with local_server(services) as url:
        yield url


@pytest.fixture
def console(console_server: str) -> Iterator[Browser]:
    """Debian's chromium on the console's server (tests/console_support.py)."""
    with browser(console_server) as driven:
        yield driven

"""Fixtures shared by the end-to-end client tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client_support import Script, scripted_server


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    """A scripted HTTP server (tests/client_support.py) and the script it answers from."""
    script = Script()
    with scripted_server(script) as url:
        yield url, script

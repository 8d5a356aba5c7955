"""Fixtures of the fuzz suite: the real local HTTP server over a temporary data dir, per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz.fuzz_support import FUZZ_KINDS, REQUESTS, SENT, Client

from helpers import local_server, make_services


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`mnemo serve` in a thread with the hashing embedder and an empty data dir of its own."""
    data_dir: Path = tmp_path_factory.mktemp("fuzz")
    with local_server(make_services(data_dir)) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[Client]:
    made = Client(base_url)
    yield made
    made.close()


@pytest.fixture(scope="module")
def catalog(client: Client) -> dict[str, dict[str, Any]]:
    """Each tool's listing (inputSchema, outputSchema) as GET /v1/tools serves it."""
    reply = client.request("GET", "/v1/tools", kind="setup")
    assert reply.status == 200
    return {tool["name"]: tool for tool in reply.json()["tools"]}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REQUESTS:
        return
    fuzzed = sum(REQUESTS[kind] for kind in FUZZ_KINDS)
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(REQUESTS.items()))
    terminalreporter.write_sep("-", "fuzz")
    terminalreporter.write_line(
        f"fuzz: {fuzzed} generated requests to the local server ({kinds}); digest {SENT.hexdigest()[:16]}"
    )

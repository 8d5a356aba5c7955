"""End to end: the service as its users meet it, over real sockets and processes. `mnemo serve` over HTTP
(in a thread or as the real command, on free ports and temporary data dirs), `mnemo mcp` over stdio with the
official MCP SDK client and the pinned MCP clients of tests/mcp_clients (Node), the CLI commands, the Python
client (and its LangChain and Strands adapters, Strands in a virtual environment of its own), the README's
examples as written, and Swagger UI and the console in a headless chromium. The AWS adapter set runs on moto
servers of the suite's own; the `bge` model tests load the real embedding model.

Fixtures of this kind: the scripted HTTP server the client tests answer from, the console's server and
browser, and the `mnemo serve` per adapter set that a module shares between its tests (each test on a tenant
of its own)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from adapter_servers import ADAPTER_SETS, Server, ServerOptions, serving

from client_support import Script, scripted_server
from console_support import Browser, browser
from helpers import local_server
from mnemo.runtime import Services


@pytest.fixture
def scripted() -> Iterator[tuple[str, Script]]:
    """A scripted HTTP server (tests/support/client_support.py) and the script it answers from."""
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
    """Debian's chromium on the console's server (tests/support/console_support.py)."""
    with browser(console_server) as driven:
        yield driven


@pytest.fixture(scope="module")
def server_options() -> ServerOptions:
    """What ``server`` starts with; a module overrides it to name its table and bucket or add settings."""
    return ServerOptions()


@pytest.fixture(scope="module", params=ADAPTER_SETS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, server_options: ServerOptions
) -> Iterator[Server]:
    """`mnemo serve` on the embedded adapter set, then on DynamoDB and S3 in a moto server: one per module."""
    with serving(request.param, tmp_path_factory.mktemp(f"serve-{request.param}"), server_options) as started:
        yield started


@pytest.fixture
def tenant(request: pytest.FixtureRequest) -> str:
    """A tenant of this test's own: the servers are shared by the whole module."""
    return "t-" + re.sub(r"[^A-Za-z0-9.-]", "-", request.node.name)[:120]

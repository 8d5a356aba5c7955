"""Helpers the tests import (conftest.py holds only fixtures)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.settings import Settings


def make_services(data_dir: Path, embedder: str = "hashing") -> Services:
    return Services(Settings(data_dir=data_dir, embedder=embedder))  # type: ignore[arg-type]


def ctx(user: str | None = "alice", tenant: str = "acme", roles: tuple[str, ...] = (), **ids: str) -> RequestContext:
    return RequestContext(tenant=tenant, user=user, roles=frozenset(roles), **ids)


@contextmanager
def local_server(services: Services) -> Iterator[str]:
    """`mnemo serve` in a thread on a free port, over ``services``; yields its base URL."""
    from mnemo.entry.local_server import serve_in_thread
    from mnemo.runtime import set_services

    set_services(services)
    server, thread = serve_in_thread("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        set_services(None)

"""Helpers the tests import (conftest.py holds only fixtures)."""

from __future__ import annotations

from pathlib import Path

from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.settings import Settings


def make_services(data_dir: Path, embedder: str = "hashing") -> Services:
    return Services(Settings(data_dir=data_dir, embedder=embedder))  # type: ignore[arg-type]


def ctx(user: str | None = "alice", tenant: str = "acme", roles: tuple[str, ...] = (), **ids: str) -> RequestContext:
    return RequestContext(tenant=tenant, user=user, roles=frozenset(roles), **ids)

"""boto3 clients, created lazily and once per container (and per settings)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any

_lock = threading.Lock()


@cache
def _session() -> Any:
    import boto3

    return boto3.session.Session()


def aws_client(service: str, region: str | None = None, endpoint: str | None = None) -> Any:
    """A botocore client with standard retries; ``endpoint`` points every service at e.g. a moto server."""
    with _lock:
        return _cached_client(service, region, endpoint)


@cache
def _cached_client(service: str, region: str | None, endpoint: str | None) -> Any:
    from botocore.config import Config

    config = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=3, read_timeout=10)
    return _session().client(service, region_name=region, endpoint_url=endpoint, config=config)


class LazyClient:
    """Holds a client factory and calls it on first use only, so cold starts build no unused client."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        self._client_factory = client_factory
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

"""AWS SDK clients, created lazily and once per container (and per settings).

They are botocore's own clients, made from a botocore session: the same clients boto3 hands out (boto3's
``Session.client`` makes them through botocore), without importing boto3, which loads s3transfer and its
resource layer on the way (tens of milliseconds of every cold start that makes a client).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import Any

_lock = threading.Lock()


@cache
def botocore_session() -> Any:
    """One botocore session per process (sessions are not cheap to make): the clients' and the OpenSearch
    signer's, so a cold start loads its configuration and resolves its credentials once."""
    import botocore.session

    return botocore.session.get_session()


def aws_client(service: str, region: str | None = None, endpoint: str | None = None) -> Any:
    """A botocore client with standard retries; ``endpoint`` points every service at e.g. a moto server."""
    with _lock:
        return _cached_client(service, region, endpoint)


@cache
def _cached_client(service: str, region: str | None, endpoint: str | None) -> Any:
    """One client per service, region and endpoint: five attempts, a 10 s read timeout."""
    return _client(service, region, endpoint, {"max_attempts": 5, "mode": "standard"}, read_timeout=10)


def _client(
    service: str, region: str | None, endpoint: str | None, retries: dict[str, Any], read_timeout: float
) -> Any:
    """A new client with these retries and timeouts (3 s to connect).

    Without botocore's client-side parameter validation, which botocore documents as a switch "for performance
    reasons": every request is built by an adapter from checked values, and AWS validates it anyway (its
    ValidationException maps as any other error). It costs about a fifth of a DynamoDB call's CPU on this
    machine (docs/deploy.md, "What one call costs")."""
    from botocore.config import Config

    config = Config(retries=retries, connect_timeout=3, read_timeout=read_timeout, parameter_validation=False)
    return botocore_session().create_client(service, region_name=region, endpoint_url=endpoint, config=config)


def model_client(region: str | None, endpoint: str | None, read_timeout: float) -> Any:
    """A bedrock-runtime client for generation (Converse): one attempt per call, read timeout ``read_timeout``.

    botocore's standard retry mode repeats a request after a read timeout and after any 500, 502, 503 or
    504 (``botocore.retries.standard.TransientRetryableChecker``). A generation that outlives the timeout
    has usually been run, and billed, by the model, so a repeat pays for it again and runs past the
    caller's deadline: the caller (``BedrockExtractor``) retries only the answers that say the request was
    not processed. Embeddings keep ``aws_client``'s retries: a repeated embedding is a repeated read.
    """
    return _client("bedrock-runtime", region, endpoint, {"total_max_attempts": 1, "mode": "standard"}, read_timeout)


class LazyClient:
    """Holds a client factory and calls it on first use only, so cold starts build no unused client."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        self._client_factory = client_factory
        self._client: Any = None

    @property
    def client(self) -> Any:
        """The SDK client, made on first use and kept. Not part of any port: tests and benchmarks meter or
        stub it; services never touch it."""
        if self._client is None:
            self._client = self._client_factory()
        return self._client

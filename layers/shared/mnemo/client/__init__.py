"""A typed Python client for Mnemo's tools over HTTP, sync and async.

    from mnemo.client import MnemoClient, LocalIdentity
    mnemo = MnemoClient("http://127.0.0.1:8765", auth=LocalIdentity(user="alice", project="checkout-api"))
    mnemo.memory_add(content="The staging DB is Postgres 16", layer="project")
    mnemo.memory_search(query="which database runs staging?")

Auth: ``LocalIdentity`` (mnemo serve's X-Mnemo-* headers), ``ApiKey`` or ``SigV4`` (IAM, botocore).
Answers are the tool's JSON; the error envelope is raised as ``mnemo.client.errors`` classes, and answers
marked retryable (and requests that got no answer at all) are retried with backoff. After an answer that
leaves open whether the call ran (API Gateway's 504 at its integration timeout, a 502, no answer in time)
only reads and keyed writes are sent again: give ``memory_add`` an ``idempotency_key`` (and
``add_conversation`` a ``message_id``) so that a retry stores once (mnemo/client/repeat.py).
The methods are generated from the catalog (mnemo/client/tools.py).
"""

from __future__ import annotations

from typing import Any

from mnemo.client.errors import (
    ConflictError,
    InvalidInputError,
    MnemoClientError,
    MnemoTimeoutError,
    NotFoundError,
    ProviderError,
    RateLimitedError,
    TransportError,
    UnauthorizedError,
)
from mnemo.client.tools import TOOL_NAMES, AsyncTools, SyncTools
from mnemo.client.transport import ApiKey, Auth, LocalIdentity, SigV4, Transport

__all__ = [
    "TOOL_NAMES",
    "ApiKey",
    "AsyncMnemoClient",
    "Auth",
    "ConflictError",
    "InvalidInputError",
    "LocalIdentity",
    "MnemoClient",
    "MnemoClientError",
    "MnemoTimeoutError",
    "NotFoundError",
    "ProviderError",
    "RateLimitedError",
    "SigV4",
    "TransportError",
    "UnauthorizedError",
]


class MnemoClient(SyncTools):
    def __init__(self, base_url: str, *, auth: Auth | None = None, timeout: float = 30.0, retries: int = 3) -> None:
        self.transport = Transport(base_url, auth=auth, timeout=timeout, retries=retries)

    def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        """Any tool by name, with its JSON body."""
        return self.transport.call(tool, body)


class AsyncMnemoClient(AsyncTools):
    """The same methods as coroutines (each attempt runs in a worker thread, the waits between retries on the
    event loop: nothing blocks it, and a cancelled call is not sent again)."""

    def __init__(self, base_url: str, *, auth: Auth | None = None, timeout: float = 30.0, retries: int = 3) -> None:
        self.transport = Transport(base_url, auth=auth, timeout=timeout, retries=retries)

    async def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.transport.call_async(tool, body)

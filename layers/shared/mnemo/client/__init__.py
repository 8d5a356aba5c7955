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

A hosted agent serving many users signs as itself (its IAM role, listed in the deployment's
``TrustedDelegateArns``) and names the end user per call (mnemo/client/delegation.py):

    hosted = MnemoClient(api_url, auth=SigV4("eu-west-1"))
    alice = hosted.on_behalf_of(user="alice", agent="support-bot", session="chat-42")
    alice.memory_search(query="open tickets")   # X-Mnemo-User: alice, ... signed with the request

or fixes one user for the whole client: ``MnemoClient(..., on_behalf_of=Delegation(user="alice"))``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any, Self

from mnemo.client.delegation import Delegation, IdentityValueError, role_names
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
    "Delegation",
    "IdentityValueError",
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


class _Delegating:
    """What both clients share: the transport, and acting for an end user."""

    transport: Transport

    def __init__(
        self,
        base_url: str,
        *,
        auth: Auth | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        on_behalf_of: Delegation | None = None,
    ) -> None:
        self.transport = Transport(base_url, auth=auth, timeout=timeout, retries=retries, delegation=on_behalf_of)

    @property
    def delegation(self) -> Delegation | None:
        """Who this client acts for, or None when it calls as itself."""
        return self.transport.delegation

    def on_behalf_of(
        self,
        user: str,
        *,
        agent: str | None = None,
        session: str | None = None,
        project: str | None = None,
        team: str | None = None,
        org: str | None = None,
        roles: Iterable[str] | None = None,
    ) -> Self:
        """A client acting for this identity, sharing this one's settings and credentials (cheap: build one
        per request). It names the whole identity: nothing is kept from this client's own ``on_behalf_of``,
        so no id of one user carries over to another. Ids are checked now (``IdentityValueError``)."""
        named_roles = None if roles is None else role_names(roles)
        delegation = Delegation(user, agent, session, project, team, org, named_roles)
        view = copy.copy(self)
        view.transport = dataclasses.replace(self.transport, delegation=delegation)
        return view

    def in_session(self, session: str) -> Self:
        """A client whose calls name ``session`` (a framework's thread, conversation or session id), the rest
        of the identity unchanged. Only an identity that names its session per call can: ``LocalIdentity``
        and a delegate's ``on_behalf_of``. With ``ApiKey``, a plain ``SigV4`` caller or a token, the session
        is the credential's own: ``ValueError`` rather than silently mixing sessions. Ids are checked now."""
        if isinstance(session, str) and session == self.session:
            return self
        view = copy.copy(self)
        if self.transport.delegation is not None:
            delegation = dataclasses.replace(self.transport.delegation, session=session)
            view.transport = dataclasses.replace(self.transport, delegation=delegation)
        elif isinstance(self.transport.auth, LocalIdentity):
            checked = Delegation(self.transport.auth.user or "local", session=session)
            view.transport = dataclasses.replace(
                self.transport, auth=dataclasses.replace(self.transport.auth, session=checked.session)
            )
        else:
            raise ValueError(
                "in_session needs an identity that names its session per call (LocalIdentity, or a delegate's "
                "on_behalf_of): this client's credential fixes its own session"
            )
        return view

    @property
    def session(self) -> str | None:
        """The session this client's calls name, when it names one."""
        if self.transport.delegation is not None:
            return self.transport.delegation.session
        auth = self.transport.auth
        return auth.session if isinstance(auth, LocalIdentity) else None


class MnemoClient(_Delegating, SyncTools):
    """``on_behalf_of``: the end user every call names, for a trusted delegate (``auth=SigV4``); refused
    with ``LocalIdentity`` (which names the identity itself) and with ``ApiKey`` (which cannot delegate)."""

    def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        """Any tool by name, with its JSON body."""
        return self.transport.call(tool, body)


class AsyncMnemoClient(_Delegating, AsyncTools):
    """The same methods as coroutines (each attempt runs in a worker thread, the waits between retries on the
    event loop: nothing blocks it, and a cancelled call is not sent again)."""

    async def call(self, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self.transport.call_async(tool, body)

"""HTTP to a Mnemo deployment: the caller's credentials, JSON in and out, retries on retryable answers.

Standard library only (``urllib``), so the client installs without the service's dependencies; SigV4
signing imports botocore when it is used.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mnemo.client.delegation import Delegation
from mnemo.client.errors import MnemoClientError, RateLimitedError, TransportError, from_envelope
from mnemo.client.repeat import outcome_unknown, safe_to_repeat

#: Statuses that say "try again" even without an envelope (a gateway's own 502/503/504, throttling); after
#: a 502 or 504 only a call that is safe to repeat is sent again (mnemo.client.repeat).
RETRY_STATUSES = frozenset({429, 502, 503, 504})


class Auth(Protocol):
    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        """Headers that authenticate this request."""
        ...


class Signer(Auth, Protocol):
    """An ``Auth`` whose proof covers the request's other headers (SigV4): the transport hands it every header
    it will send, so that the identity a delegate names (``X-Mnemo-*``) is signed with the rest."""

    def sign(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` with those that authenticate the request, the signature covering all of them."""
        ...


@dataclass(frozen=True)
class LocalIdentity:
    """``mnemo serve``'s identity headers (X-Mnemo-*): for a local server, or behind a trusted proxy."""

    user: str | None = None
    tenant: str | None = None
    agent: str | None = None
    session: str | None = None
    project: str | None = None
    team: str | None = None
    org: str | None = None
    roles: tuple[str, ...] = ()

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        found = {
            f"X-Mnemo-{name.title()}": value
            for name in ("tenant", "user", "agent", "session", "project", "team", "org")
            if (value := getattr(self, name))
        }
        if self.roles:
            found["X-Mnemo-Roles"] = ",".join(self.roles)
        return found


@dataclass(frozen=True)
class ApiKey:
    """API Gateway's API key (the template's AuthMode API_KEY)."""

    key: str

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        return {"x-api-key": self.key}


@dataclass
class SigV4:
    """IAM: each request signed with SigV4 for execute-api (the template's AuthMode IAM); credentials from
    botocore's chain (environment, profile, role) unless given, looked up once and refreshed by botocore."""

    region: str
    service: str = "execute-api"
    credentials: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def _credentials(self) -> Any:
        with self._lock:
            if self.credentials is None:
                from botocore.session import Session

                self.credentials = Session().get_credentials()
            return self.credentials

    def headers(self, method: str, url: str, body: bytes) -> dict[str, str]:
        return self.sign(method, url, body, {"Content-Type": "application/json"})

    def sign(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        """Signs every header given (botocore's SigV4Auth leaves out only hop-by-hop and tracing ones such as
        Connection, Expect, User-Agent), so the Authorization's SignedHeaders lists the X-Mnemo-* ones."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = self._credentials()
        if credentials is None:
            raise TransportError("SigV4: no AWS credentials found (environment, profile or role)")
        request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
        SigV4Auth(credentials, self.service, self.region).add_auth(request)
        return dict(request.headers.items())


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect comes back as the 3xx it is: following it would re-send the call as a GET without its body,
    perhaps to another host, with the caller's credentials."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


@dataclass
class Transport:
    base_url: str
    auth: Auth | None = None
    timeout: float = 30.0
    #: Attempts after the first for an answer that says it may be retried.
    retries: int = 3
    backoff: float = 0.2
    sleep: Callable[[float], None] = time.sleep
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    #: The end user a trusted delegate acts for, sent as ``X-Mnemo-*`` headers on every request (and signed
    #: with it under SigV4). ``LocalIdentity`` names the identity itself, and an API key cannot delegate:
    #: with either, a delegation is refused here rather than sent twice or refused by the service.
    delegation: Delegation | None = None

    def __post_init__(self) -> None:
        if self.delegation is None:
            return
        if not isinstance(self.delegation, Delegation):
            raise TypeError(f"on_behalf_of takes a Delegation, not {type(self.delegation).__name__}")
        if isinstance(self.auth, LocalIdentity):
            raise ValueError(
                "on_behalf_of is for a deployed delegate (auth=SigV4); LocalIdentity already names the identity "
                "in the same X-Mnemo-* headers: give one or the other"
            )
        if isinstance(self.auth, ApiKey):
            raise ValueError(
                "on_behalf_of needs auth=SigV4: only an IAM role listed in TrustedDelegateArns may name the "
                "end user; the service refuses an API key caller that does"
            )

    def call(self, tool: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST /v1/tools/{tool}; the answer's JSON, or the envelope raised as its exception class."""
        attempt = 0
        while True:
            try:
                return self.once(tool, body)
            except MnemoClientError as error:
                self.sleep(self.delay(error, attempt, tool, body))
                attempt += 1

    async def call_async(self, tool: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``call`` for an event loop: each attempt in a worker thread, the waits on the loop, so a cancelled
        call sends nothing more."""
        attempt = 0
        while True:
            try:
                return await asyncio.to_thread(self.once, tool, body)
            except MnemoClientError as error:
                await asyncio.sleep(self.delay(error, attempt, tool, body))
                attempt += 1

    def delay(
        self, error: MnemoClientError, attempt: int, tool: str | None = None, body: Mapping[str, Any] | None = None
    ) -> float:
        """How long to wait before attempt ``attempt + 1``; re-raises ``error`` when it is not to be retried:
        not retryable, out of attempts, or a call that may have run (a 502/504, a TIMEOUT, no answer in
        time) and is not safe to repeat (``mnemo.client.repeat``)."""
        if not error.retryable or attempt >= self.retries:
            raise error
        if outcome_unknown(error.code, error.status, error.details) and (
            tool is None or not safe_to_repeat(tool, body or {})
        ):
            error.details.setdefault("outcome", "unknown")
            error.retryable = False
            error.message += " (the call may have run; not sent again: check before repeating it)"
            error.args = (error.message,)
            raise error
        delay = self.backoff * (2**attempt) * (1 + random.random())
        wait = error.details.get("retryAfterSeconds")
        return max(delay, float(wait)) if isinstance(wait, int | float) else delay

    def once(self, tool: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One attempt."""
        url = f"{self.base_url.rstrip('/')}/v1/tools/{tool}"
        raw = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **self.extra_headers}
        if self.delegation is not None:
            headers.update(self.delegation.headers())
        if callable(sign := getattr(self.auth, "sign", None)):  # a Signer: the identity headers signed too
            headers.update(sign("POST", url, raw, headers))
        elif self.auth is not None:
            headers.update(self.auth.headers("POST", url, raw))
        request = urllib.request.Request(url, data=raw, headers=headers, method="POST")
        try:
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    status, raw = response.status, response.read()
            except urllib.error.HTTPError as error:
                with error:
                    status, raw = error.code, error.read()
        # http.client's errors (a cut-off body, a garbled status line) are not wrapped by urllib
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
            reason = error.reason if isinstance(error, urllib.error.URLError) else error
            # Sent and not answered in time: the service may be running it, as after a gateway's 504.
            details = {"outcome": "unknown"} if isinstance(reason, TimeoutError) else {}
            raise TransportError(f"no answer from {url}: {error!r}", retryable=True, details=details) from error
        return _answer(status, raw)


def _answer(status: int, raw: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(raw) if raw else None
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("success") is False:
        raise from_envelope(payload, status)
    if status == 429:
        raise RateLimitedError("throttled", retryable=True, status=status)
    if status >= 400 or not isinstance(payload, dict):
        retryable = status in RETRY_STATUSES
        raise TransportError(
            f"HTTP {status} without the error envelope: {raw[:200]!r}", retryable=retryable, status=status
        )
    return payload

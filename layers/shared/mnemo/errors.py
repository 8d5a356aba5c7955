"""The one error envelope every front door answers with.

``{"success": false, "errorCode", "message", "details", "retryable"}``; the
HTTP status is derived from the code so that no door invents its own mapping
(the HTTP server's own refusals, before any tool, are listed in TRANSPORT_STATUS).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HTTP_STATUS: dict[str, int] = {
    "INVALID_INPUT": 400,
    "UNAUTHORIZED": 403,
    "NOT_FOUND": 404,
    "CONFLICT": 409,
    "RATE_LIMITED": 429,
    "PROVIDER_ERROR": 502,
    "TIMEOUT": 504,
}

#: The HTTP refusals a server makes before a request reaches a tool, each INVALID_INPUT naming one of
#: these fields: the only statuses not derived from the code (``mnemo serve``; API Gateway has its own).
TRANSPORT_STATUS: dict[int, frozenset[str]] = {
    408: frozenset({"body"}),  # the body did not arrive in time
    415: frozenset({"Content-Type"}),  # a tool call that is not application/json
    431: frozenset({"headers"}),  # a request head too large to read
    501: frozenset({"Transfer-Encoding"}),  # a transfer coding other than chunked
    505: frozenset({"request"}),  # an HTTP version other than 1.x
}

RETRYABLE = {"PROVIDER_ERROR", "RATE_LIMITED", "TIMEOUT", "CONFLICT"}


class MnemoError(Exception):
    """A failure a client may see. Anything else is reported as PROVIDER_ERROR."""

    code = "PROVIDER_ERROR"
    #: Whether the same call may succeed later; None: as the code says (RETRYABLE).
    retryable: bool | None = None

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = dict(details or {})

    @property
    def status(self) -> int:
        """The HTTP status a front door answers with for this error's code."""
        return HTTP_STATUS[self.code]

    def envelope(self) -> dict[str, Any]:
        """The error envelope every front door answers: ``success`` false, ``errorCode``, ``message``, ``details`` and
        ``retryable`` (from the code unless the error says otherwise)."""
        return {
            "success": False,
            "errorCode": self.code,
            "message": self.message,
            "details": self.details,
            "retryable": self.code in RETRYABLE if self.retryable is None else self.retryable,
        }


class InvalidInput(MnemoError):
    code = "INVALID_INPUT"


class UnsupportedMediaType(InvalidInput):
    """A body in a media type the door does not read: HTTP 415, still INVALID_INPUT naming Content-Type."""

    @property
    def status(self) -> int:
        """HTTP 415; the error code stays INVALID_INPUT."""
        return 415


class RequestTimeout(InvalidInput):
    """A request that did not arrive in time (a client sending its body too slowly): HTTP 408; sending it
    again may work."""

    retryable = True

    @property
    def status(self) -> int:
        """HTTP 408; the error code stays INVALID_INPUT."""
        return 408


class Unauthorized(MnemoError):
    code = "UNAUTHORIZED"


class NotFound(MnemoError):
    code = "NOT_FOUND"


class Conflict(MnemoError):
    """The stored state changed while the call ran (a race): the same call may succeed when sent again."""

    code = "CONFLICT"


class ConflictingRequest(Conflict):
    """A call that disagrees with what is stored (a stale expectedVersion, a name already taken, an id
    stored with other content, an ambiguous edit): sent again unchanged it fails the same way, so it is not
    retryable; the caller reads again or changes the request."""

    retryable = False


class BudgetExceeded(ConflictingRequest):
    """A write or pin that would take a pinned total past its budget: the caller must free space first."""


class RateLimited(MnemoError):
    code = "RATE_LIMITED"


class ProviderError(MnemoError):
    code = "PROVIDER_ERROR"


class Timeout(MnemoError):
    code = "TIMEOUT"


def invalid_field(field: str, message: str, **details: Any) -> InvalidInput:
    """INVALID_INPUT whose message starts with ``field`` and whose details name it (plus ``details``)."""
    return InvalidInput(f"{field}: {message}", {"field": field, **details})


def from_validation_errors(errors: Iterable[Mapping[str, Any]], *, drop_prefix: str | None = None) -> InvalidInput:
    """Turn pydantic-style errors (loc, msg, type) into INVALID_INPUT naming each field."""
    problems: list[dict[str, Any]] = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        if drop_prefix and loc and loc[0] == drop_prefix:
            loc = loc[1:]
        if error.get("type") == "json_invalid":
            problems.append({"field": "body", "message": "Request body is not valid JSON", "type": "json_invalid"})
            continue
        field = ".".join(loc) or "body"
        problems.append({"field": field, "message": str(error.get("msg", "invalid")), "type": error.get("type", "")})
    if not problems:
        problems.append({"field": "body", "message": "invalid request", "type": "invalid"})
    first = problems[0]
    return InvalidInput(
        f"{first['field']}: {first['message']}",
        {"field": first["field"], "errors": problems},
    )

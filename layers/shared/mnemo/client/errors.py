"""The error envelope as exceptions: one class per errorCode, each carrying the envelope's fields."""

from __future__ import annotations

from typing import Any


class MnemoClientError(Exception):
    """An answer with ``success: false``, or a transport failure (``code`` TRANSPORT)."""

    code = "ERROR"

    def __init__(
        self, message: str, *, details: dict[str, Any] | None = None, retryable: bool = False, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        self.retryable = retryable
        self.status = status

    @property
    def field(self) -> str | None:
        """The request field the error names, when it names one."""
        found = self.details.get("field")
        return found if isinstance(found, str) else None


class InvalidInputError(MnemoClientError):
    code = "INVALID_INPUT"


class UnauthorizedError(MnemoClientError):
    code = "UNAUTHORIZED"


class NotFoundError(MnemoClientError):
    code = "NOT_FOUND"


class ConflictError(MnemoClientError):
    code = "CONFLICT"


class RateLimitedError(MnemoClientError):
    code = "RATE_LIMITED"


class ProviderError(MnemoClientError):
    code = "PROVIDER_ERROR"


class MnemoTimeoutError(MnemoClientError):
    code = "TIMEOUT"


class TransportError(MnemoClientError):
    """No answer from the service (connection refused or reset, DNS, a body that is not the envelope)."""

    code = "TRANSPORT"


_BY_CODE: dict[str, type[MnemoClientError]] = {
    cls.code: cls
    for cls in (
        InvalidInputError,
        UnauthorizedError,
        NotFoundError,
        ConflictError,
        RateLimitedError,
        ProviderError,
        MnemoTimeoutError,
    )
}


def from_envelope(envelope: dict[str, Any], status: int | None) -> MnemoClientError:
    """The exception for an error envelope (an unknown code still raises, as the base class)."""
    cls = _BY_CODE.get(str(envelope.get("errorCode")), MnemoClientError)
    details = envelope.get("details")
    return cls(
        str(envelope.get("message", "")),
        details=details if isinstance(details, dict) else {},
        retryable=bool(envelope.get("retryable", False)),
        status=status,
    )

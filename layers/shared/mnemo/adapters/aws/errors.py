"""AWS failures as Mnemo errors: a client sees a retryable envelope, never a botocore trace."""

from __future__ import annotations

from mnemo.errors import MnemoError, ProviderError, RateLimited, Timeout

_THROTTLING = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "SlowDown",
}


def provider_error(service: str, error: Exception) -> MnemoError:
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "Unknown")
        if code in _THROTTLING:
            return RateLimited(f"{service} is throttling requests", {"service": service, "awsCode": code})
        return ProviderError(f"{service} failed", {"service": service, "awsCode": code})
    if isinstance(error, ConnectTimeoutError | ReadTimeoutError):
        return Timeout(f"{service} timed out", {"service": service})
    return ProviderError(f"{service} is unreachable", {"service": service, "type": type(error).__name__})

"""AWS failures as Mnemo errors: a client sees a retryable envelope, never a botocore trace."""

from __future__ import annotations

from mnemo import telemetry
from mnemo.errors import MnemoError, ProviderError, RateLimited, Timeout

_THROTTLING = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "SlowDown",
}
#: A service answering that the work itself ran out of time (Bedrock: the model took too long).
_TIMEOUTS = {"ModelTimeoutException", "RequestTimeout", "RequestTimeoutException"}


def provider_error(service: str, error: Exception) -> MnemoError:
    """The envelope for a botocore failure: RateLimited (throttled), Timeout, or ProviderError."""
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "Unknown")
        if code in _THROTTLING:
            telemetry.count(f"{service}Throttles")  # after the client's own retries: a throttle a caller felt
            return RateLimited(f"{service} is throttling requests", {"service": service, "awsCode": code})
        if code in _TIMEOUTS:
            return Timeout(f"{service} took too long to answer", {"service": service, "awsCode": code})
        return ProviderError(f"{service} failed", {"service": service, "awsCode": code})
    if isinstance(error, ConnectTimeoutError | ReadTimeoutError):
        return Timeout(f"{service} timed out", {"service": service})
    return ProviderError(f"{service} is unreachable", {"service": service, "type": type(error).__name__})

"""OpenSearch failures as Mnemo errors: a client sees a retryable envelope, never a trace."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from mnemo import telemetry
from mnemo.errors import MnemoError, ProviderError, RateLimited, Timeout


def error_type(error: Any) -> str:
    """The ``type`` of an error object in an OpenSearch answer (or the error as text)."""
    if isinstance(error, Mapping):
        return str(error.get("type", "unknown"))
    return str(error or "unknown")


def status_of(error: Exception) -> int:
    """The HTTP status a client exception carries, or 0."""
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else 0


def error_type_of(error: Exception) -> str:
    """The OpenSearch error type of a transport error (e.g. ``index_not_found_exception``), else ""."""
    from mnemo.adapters.aws.opensearch.http import TransportError

    if isinstance(error, TransportError):
        return str(error.error)
    return ""


def is_missing_index(error: Exception) -> bool:
    """True when the request failed because its index does not exist."""
    from mnemo.adapters.aws.opensearch.http import NotFoundError

    return isinstance(error, NotFoundError) and error_type_of(error) in ("index_not_found_exception", "404")


def status_error(status: int, kind: str) -> MnemoError:
    """The envelope for an HTTP status: RateLimited for 429, ProviderError for anything else."""
    details = {"service": "opensearch", "status": status, "type": kind}
    if status == 429:
        telemetry.count("OpenSearchThrottles")
        return RateLimited("OpenSearch is throttling requests", details)
    if status >= 500:
        return ProviderError("OpenSearch failed", details)
    if status in (401, 403):
        return ProviderError("OpenSearch refused the request's credentials", details)
    return ProviderError("OpenSearch rejected the request", details)


def bulk_error(response: Mapping[str, Any]) -> MnemoError | None:
    """The error a bulk answer's failed items make; None when every item succeeded.

    A delete of a document that is already gone (404) is no failure.
    """
    if not response.get("errors"):
        return None
    failures: Counter[tuple[int, str]] = Counter()
    for item in response.get("items", []):
        operation, result = next(iter(item.items()))
        status = int(result.get("status", 500))
        if operation == "delete" and status == 404:
            continue  # already gone
        if status >= 300 or "error" in result:
            failures[(status, error_type(result.get("error")))] += 1
    if not failures:
        return None
    statuses = {status for status, _ in failures}
    details = {"failed": sum(failures.values()), "errors": sorted({kind for _, kind in failures})}
    if 429 in statuses:
        telemetry.count("OpenSearchThrottles")
        return RateLimited("OpenSearch is throttling writes", {"service": "opensearch", **details})
    if any(status >= 500 for status in statuses):
        return ProviderError("OpenSearch failed to write documents", {"service": "opensearch", **details})
    return ProviderError("OpenSearch rejected documents", {"service": "opensearch", **details})


#: What a timed-out request answers: on Serverless, most likely a collection scaled to zero waking up.
WAKE_MESSAGE = (
    "The vector index did not answer within {seconds:g} s: an OpenSearch Serverless collection waking "
    "from idle takes 10-30 s; retry"
)


def timed_out(seconds: float | None) -> Timeout:
    """The retryable TIMEOUT of a request that waited ``seconds`` (named in the message and details)."""
    details: dict[str, Any] = {"service": "opensearch", "wakeSeconds": [10, 30]}
    if seconds is None:
        return Timeout("OpenSearch timed out; the vector index may be waking from idle (10-30 s); retry", details)
    return Timeout(WAKE_MESSAGE.format(seconds=seconds), {**details, "waitedSeconds": seconds})


@contextmanager
def translated(timeout: float | None = None) -> Iterator[None]:
    """OpenSearch and transport failures as Mnemo errors: retryable envelopes, never a trace.

    ``timeout``: the seconds the requests inside may wait, named by the TIMEOUT a timed-out one answers.
    """
    from mnemo.adapters.aws.opensearch.http import ConnectionError as OpenSearchConnectionError
    from mnemo.adapters.aws.opensearch.http import ConnectionTimeout, OpenSearchException, TransportError

    try:
        yield
    except (MnemoError, ValueError):
        raise
    except ConnectionTimeout:
        raise timed_out(timeout) from None
    except OpenSearchConnectionError:
        raise ProviderError("OpenSearch is unreachable", {"service": "opensearch"}) from None
    except TransportError as error:
        raise status_error(status_of(error) or 500, str(error.error)) from None
    except OpenSearchException as error:
        raise ProviderError(
            "OpenSearch client failed", {"service": "opensearch", "type": type(error).__name__}
        ) from None
    except Exception as error:  # e.g. botocore failing to sign
        raise ProviderError(
            "OpenSearch request failed", {"service": "opensearch", "type": type(error).__name__}
        ) from None

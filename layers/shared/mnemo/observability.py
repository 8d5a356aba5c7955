"""One Logger, one set of Metrics and one Tracer for every door (Powertools).

**Logs.** ``logger`` is the only Powertools Logger (service ``mnemo``). The
domain's ``logging.getLogger(__name__)`` loggers are its children
(``mnemo.memory.service``...), so their lines leave through the same JSON
handler with the same keys. :func:`door` stamps each invocation with its
correlation id (``correlation_id``): the API Gateway request id, the Bedrock
agent's ``sessionId``, the EventBridge event id, or the first stream record's
``eventID``; :func:`tool_call` adds ``tool`` to every line written while a tool
runs, in whatever thread runs it.

**Metrics.** CloudWatch embedded metric format (EMF), namespace
``POWERTOOLS_METRICS_NAMESPACE``, printed once at the end of each Lambda
invocation. Every metric has the one dimension set ``[service]`` (what alarms
read); only ``Errors`` is also printed by ``[service, errorCode]``, in a
document of its own. CloudWatch bills a custom metric per name and set of
dimension values ($0.30 a month each, by the hour it receives data), so a
dimension must say what nothing free says: no ``tool`` dimension, since a
tool's own function is its own ``FunctionName`` in AWS/Lambda's free
``Invocations``, ``Errors`` and ``Duration``; the tool of each line is in the
logs (``tool``), MCP's and the Bedrock action groups' included. For the same
reason no latency is emitted: Lambda's free ``Duration`` says it per function,
and each call's ``latencyMs`` is in its DEBUG line. A call that records nothing
prints no document. Metrics:

- ``Errors`` (Count): a tool call answered with an error envelope (which
  Lambda counts as a success), and by its ``errorCode``;
- ``DeduplicatedAdds`` (Count): an add that found a near-identical memory;
- ``EmbeddingTokens`` (Count): Titan's ``inputTextTokenCount``;
- ``ModelInputTokens`` / ``ModelOutputTokens`` (Count): Converse's ``usage``;
- ``<Service>Throttles`` (Count): a provider refused for rate (``OpenSearchThrottles``,
  ``BedrockThrottles``, ``DynamoDBThrottles``, ``S3Throttles``, ``EventBridgeThrottles``),
  after the client's own retries;
- ``IndexOutboxDepth`` / ``IndexOutboxDeadLetters`` (Count): the index outbox after a drain;
- ``IndexerFailedRecords`` (Count): stream records handed back to Lambda for a retry;
- ``Extraction*`` (Count): the extraction function's notices, wake-ups and failures, and each
  strategy's tokens, failures and decisions; ``ChangeEventsFailedRecords`` (Count): the change
  events function's records handed back.

Adapters count through ``mnemo.telemetry``, which this module points at the
invocation's metrics while a door runs. Outside a door (the local server, the
CLI, tests calling services) nothing is recorded and nothing is printed.

**Traces.** With ``Tracing: Active`` a Powertools Tracer wraps each handler and
patches boto3/botocore and ``http.client`` (DynamoDB, S3, Bedrock and the
OpenSearch HTTP calls become subsegments). It exists only inside Lambda and
unless ``POWERTOOLS_TRACE_DISABLED`` is true; elsewhere aws-xray-sdk is never
imported.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging import correlation_paths

from mnemo import telemetry
from mnemo.errors import MnemoError

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics, Tracer

SERVICE = "mnemo"
#: The namespace when the environment names none (the template sets ``Mnemo/<stage>``).
DEFAULT_NAMESPACE = "Mnemo"

#: Inside Lambda both streams reach CloudWatch Logs; elsewhere stdout may be a protocol (``mnemo mcp``
#: speaks MCP over stdio) or a command's output, so the lines go to stderr.
logger = Logger(service=SERVICE, stream=sys.stdout if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else sys.stderr)

# Where each door's correlation id lives in its event (JMESPath, as Powertools reads it).
API_GATEWAY = correlation_paths.API_GATEWAY_REST
BEDROCK_AGENT = "sessionId"
EVENTBRIDGE = correlation_paths.EVENT_BRIDGE
#: The indexer takes both the schedule (an EventBridge event) and stream batches.
SCHEDULE_OR_STREAM = "id || Records[0].eventID"

#: What X-Ray patches: the AWS SDK and the standard library's HTTP client, which urllib3 (OpenSearch) uses.
TRACED_MODULES = ("boto3", "botocore", "httplib")
_ERROR_CODE = re.compile(r"^[A-Z][A-Z_]{0,31}$")

Handler = TypeVar("Handler", bound=Callable[..., Any])

_metrics: Metrics | None = None
_tracer: Tracer | None = None
#: Tracing is on but aws-xray-sdk is not installed (warned once).
_tracer_missing = False
#: True while a door runs an invocation: only then are metrics kept (and printed at its end).
_recording = False
#: The error codes of the invocation's tool calls not yet printed, and how many calls answered each.
_error_codes: dict[str, int] = {}


def metrics() -> Metrics:
    """The process's Metrics (Powertools keeps one metric set per process anyway)."""
    global _metrics
    if _metrics is None:
        from aws_lambda_powertools import Metrics

        namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE
        _metrics = Metrics(namespace=namespace, service=SERVICE)
    return _metrics


def tracing_enabled() -> bool:
    """Inside Lambda, unless ``POWERTOOLS_TRACE_DISABLED`` says otherwise (SAM local is left to Powertools)."""
    disabled = os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in ("1", "true", "yes", "on")
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME")) and not disabled


def tracer() -> Tracer | None:
    """The process's Tracer, created on first use; None where tracing is off (aws-xray-sdk not imported).

    The shared layer leaves aws-xray-sdk out (the template's Tracing parameter is Disabled by default);
    a layer built for Tracing Active adds it (docs/deploy.md, "Tracing"). Without it the function runs
    untraced, with a warning, rather than failing every invocation: Lambda still records its own segment.
    """
    global _tracer, _tracer_missing
    if _tracer is None and not _tracer_missing and tracing_enabled():
        from aws_lambda_powertools import Tracer

        try:
            _tracer = Tracer(service=SERVICE, patch_modules=TRACED_MODULES)
        except ImportError as error:
            _tracer_missing = True
            logger.warning(
                "tracing is on but the layer has no X-Ray SDK (aws-xray-sdk): running untraced",
                extra={"missing": getattr(error, "name", None) or str(error)},
            )
    return _tracer


def _record(name: str, value: float, unit: str) -> None:
    metrics().add_metric(name=name, unit=unit, value=value)


def count(name: str, value: float = 1, unit: str = "Count") -> None:
    """A door's own figure for this invocation; unlike ``telemetry.count`` a zero is kept (a gauge at 0)."""
    if _recording:
        _record(name, value, unit)


def _publish() -> None:
    """Print what the invocation recorded as one EMF document, or nothing when it recorded nothing; then
    the errors by code, a document per code (Powertools gives a document one list of dimension sets, and the
    code must not become a dimension of every other metric)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    emf = metrics()
    if emf.metric_set:
        emf.flush_metrics()
    else:
        emf.clear_metrics()
    codes = dict(_error_codes)
    _error_codes.clear()
    for code, calls in codes.items():
        with single_metric(
            name="Errors",
            unit=MetricUnit.Count,
            value=calls,
            namespace=emf.namespace,
            default_dimensions={"service": SERVICE},
        ) as metric:
            metric.add_dimension(name="errorCode", value=code)


def door(correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """Decorate a Lambda handler: correlated logs, the invocation's metrics printed at its end, a trace."""

    def decorate(handler: Handler) -> Handler:
        traced = tracer()
        inner: Callable[..., Any] = (
            traced.capture_lambda_handler(handler, capture_response=False) if traced is not None else handler
        )

        @functools.wraps(handler)
        def recorded(event: Any, context: Any) -> Any:
            global _recording
            previous = telemetry.install(_record)
            _recording = True
            try:
                return inner(event, context)
            finally:
                _recording = False
                telemetry.install(previous)
                try:
                    _publish()
                except Exception:  # a metric that cannot be serialised must not turn an answer into an error
                    logger.exception("metrics could not be published")

        logged = logger.inject_lambda_context(recorded, correlation_id_path=correlation_id_path, clear_state=True)
        return cast(Handler, logged)

    return decorate


# ---------------------------------------------------------------- tool calls ---
@dataclass
class ToolCall:
    """What a door learns about one tool call while it runs."""

    #: The tool's name as the door read it (at most 64 characters): a log key, never a metric dimension.
    tool: str
    error_code: str | None = None
    deduplicated: bool = False

    def failed(self, code: str) -> None:
        """The call is answered with an error envelope carrying ``code``."""
        self.error_code = code if _ERROR_CODE.match(code) else "PROVIDER_ERROR"

    def answered(self, result: Mapping[str, Any]) -> None:
        """The call's JSON answer: an add that found its duplicate says so (``deduplicated``)."""
        if result.get("deduplicated") is True:
            self.deduplicated = True


_CALL: ContextVar[ToolCall | None] = ContextVar("mnemo_tool_call", default=None)


def current_call() -> ToolCall | None:
    return _CALL.get()


def failed(code: str) -> None:
    """Note an error envelope for the tool call under way in this thread, if any."""
    call = _CALL.get()
    if call is not None:
        call.failed(code)


def answered(result: Mapping[str, Any]) -> None:
    """Note the answer of the tool call under way in this thread, if any."""
    call = _CALL.get()
    if call is not None:
        call.answered(result)


@contextmanager
def tool_call(name: str | None) -> Iterator[ToolCall]:
    """Measure one tool call: ``tool`` in its log lines, its latency in a DEBUG line; its outcome in the
    invocation's metrics (by ``[service]``, the tool in no dimension).

    An exception leaving the block counts as the error it carries (PROVIDER_ERROR
    for anything not a MnemoError) and goes on its way.
    """
    call = ToolCall((name or "")[:64])
    token = _CALL.set(call)
    logger.thread_safe_append_keys(tool=call.tool)
    started = time.perf_counter()
    try:
        yield call
    except MnemoError as error:
        call.failed(error.code)
        raise
    except Exception:
        call.failed("PROVIDER_ERROR")
        raise
    finally:
        elapsed = (time.perf_counter() - started) * 1000.0
        logger.debug("tool call", extra={"latencyMs": round(elapsed, 1), "errorCode": call.error_code})
        logger.thread_safe_remove_keys(["tool"])
        _CALL.reset(token)
        if _recording:
            _record_call(call)


def _record_call(call: ToolCall) -> None:
    emf = metrics()
    if call.error_code is not None:
        emf.add_metric(name="Errors", unit="Count", value=1)
        _error_codes[call.error_code] = _error_codes.get(call.error_code, 0) + 1
    if call.deduplicated:
        emf.add_metric(name="DeduplicatedAdds", unit="Count", value=1)

"""The deployed stack's monthly cost, from template.yaml's settings and the counts bench/deploy_cost.py measures.

Used by bench/deploy_cost.py (and tests/bench/test_cost_model.py). Two halves:

* ``derive_case(template, name, parameters)`` reads what the bill depends on from template.yaml, its intrinsic
  functions and conditions resolved for one set of parameters (the rehearsal's Resolver): which API serves the
  tools (a REST or an HTTP API, from the API a tool's invoke permission names), whether each function traces,
  its MemorySize and its logging configuration, the alarms that exist and the metrics each reads, the
  collection group's minimum capacity, the scheduled invocations, and the extraction queues polled.
* The arithmetic: dollars per million calls of a tool by line item, the monthly total at a volume and a call
  mix, the idle floor, AgentCore Memory's price for the same calls, and the break-even. Each rule that
  depends on the volume is a function of its own (X-Ray's default sampling, the share of cold starts, the
  share of time an OpenSearch component that scales to zero stays awake, the hours a custom metric is emitted).

Nothing here measures: the per-invocation counts (requests, DynamoDB units, Titan tokens, CPU time, log bytes,
EMF metrics) come from the run (``measured``), the prices from PRICES, and every assumption that is not a
price or a count is a named constant below, stated in docs/deploy.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rehearsal_template import Resolver

# --------------------------------------------------------------- prices ---
#: US East (N. Virginia) list prices, without free tiers. Each figure's source is the stored copy
#: read with the project's search tool on 2026-11-26 (the publication date of the page where it
#: shows one); "unconfirmed" where no AWS page in that store gave the number. docs/deploy.md, "Sources".
PRICES: dict[str, float] = {
    # REST API, first 333 million requests a month: $3.50 per million; HTTP API, first 300 million:
    # $1.00 per million. AWS whitepaper "Best Practices for Designing Amazon API Gateway Private APIs
    # and Private Integration", Cost optimization, Table 4,
    # https://docs.aws.amazon.com/pt_br/whitepapers/latest/best-practices-api-gateway-private-apis-integration/cost-optimization.html
    "apigw_rest_per_million": 3.50,
    "apigw_http_per_million": 1.00,
    # Lambda, Arm: $0.0000133334 per GB-second (first 7.5 billion GB-s a month), $0.20 per million
    # requests: https://cloudchipr.com/blog/aws-lambda-pricing ("US East (N. Virginia)", 2024) and
    # https://git.mcrn.ar/mariano/lambda_local_runner/src/commit/957e45b8adae23ce50b966346229585b5df18b4d/docs/lambdas-md/lambda-13-cost.md
    # (the AWS page https://aws.amazon.com/lambda/pricing/ was stored without its price table).
    # The INIT phase is billed as duration since August 1, 2025.
    "lambda_request_per_million": 0.20,
    "lambda_arm_gb_second": 0.0000133334,
    # DynamoDB on-demand after the 50% cut of November 1, 2024: $0.625 per million write request
    # units, $0.125 per million read request units: https://airbyte.com/data-engineering-resources/dynamodb-pricing
    # (2025-07-21) and https://www.jusdb.com/blog/dynamodb-cost-optimization-a-comprehensive-guide-by-jusdb
    # (2025-08-19). The unit rules are AWS's own: https://aws.amazon.com/dynamodb/pricing/on-demand/
    "dynamodb_wru_per_million": 0.625,
    "dynamodb_rru_per_million": 0.125,
    # Titan Text Embeddings V2: $0.02 per million input tokens on Amazon Bedrock, as OpenRouter
    # passes it through "with no markup on the provider's price":
    # https://openrouter.ai/amazon/titan-embed-text-v2/providers (2026). Unconfirmed on an AWS page.
    "titan_v2_per_1k_tokens": 0.00002,
    # OpenSearch Serverless: $0.24 per OCU-hour, $0.024 per GB-month of managed storage:
    # https://cloudburn.io/blog/amazon-opensearch-pricing (March 2026) and
    # https://awsnegotiations.com/opensearch-serverless-cost (February 2026). Taken to apply to NextGen
    # collection groups too (no separate NextGen rate was found in the store).
    "opensearch_ocu_hour": 0.24,
    "opensearch_storage_gb_month": 0.024,
    # CloudWatch Logs: $0.50 per GB ingested (standard class):
    # https://hykell.com/kb/platform-specific-guides/aws-cloudwatch-logs-pricing
    "cloudwatch_logs_ingest_gb": 0.50,
    "cloudwatch_logs_storage_gb_month": 0.03,
    # CloudWatch: $0.10 per standard-resolution alarm metric a month (an alarm over a metric math
    # expression is billed per metric it reads), https://c3x.dev/resources/aws/aws_cloudwatch_metric_alarm;
    # $0.30 per custom metric a month, first 10,000, prorated by the hour
    # (https://signoz.io/guides/cloudwatch-pricing, 2026-02-15).
    "cloudwatch_alarm_metric_month": 0.10,
    "cloudwatch_custom_metric_month": 0.30,
    # X-Ray: $5.00 per million traces recorded (first 100,000 a month free, left out here):
    # https://aws.amazon.com/de/xray/pricing/. Default sampling rule: the first request each second, then
    # 5% of the rest: https://awsnegotiations.com/x-ray-pricing-strategy.html
    "xray_trace_per_million": 5.00,
    # SQS: $0.40 per million standard-queue requests, $0.50 per million FIFO requests:
    # https://cloudburn.io/blog/amazon-sqs-pricing (US East, 2026-03-14).
    "sqs_standard_per_million": 0.40,
    "sqs_fifo_per_million": 0.50,
    # S3 Standard: $0.005 per 1,000 PUT, COPY, POST and LIST requests, $0.0004 per 1,000 GET and the others
    # (DELETE free): https://www.cloudkaramchari.com/blog/understanding-per-1000-put-copy-post-or-list-requests-in-amazon-s3-pricing/
    # for the first; the GET figure unconfirmed in the store (https://aws.amazon.com/s3/pricing/ not stored).
    "s3_write_list_per_1k": 0.005,
    "s3_read_per_1k": 0.0004,
    # AgentCore Memory: $0.25 per 1,000 new short-term memory events, $0.50 per 1,000 long-term memory
    # retrievals, $0.75 per 1,000 long-term records a month (built-in strategies). Third-party copies
    # of https://aws.amazon.com/bedrock/agentcore/pricing/ (not itself stored):
    # https://www.factualminds.com/blog/amazon-bedrock-agentcore-pricing-12-components/ (2026-06-13)
    "agentcore_event_per_1k": 0.25,
    "agentcore_retrieval_per_1k": 0.50,
    "agentcore_record_month_per_1k": 0.75,
}

# ---------------------------------------------------------- assumptions ---
HOURS_A_MONTH = 730
SECONDS_A_MONTH = HOURS_A_MONTH * 3600
#: Lambda gives a function one vCPU at 1,769 MB and CPU in proportion below that
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html): CPU time measured here
#: (one core of this machine taken as one vCPU) is scaled by 1769 / MemorySize, INIT's import too.
FULL_VCPU_MB = 1769
#: In-region service latency per request, ms (low, high): assumptions, not measured here (moto and
#: osmem answer on loopback). A function's requests are taken one after another (they are).
LATENCY_MS = {
    "dynamodb": (4.0, 10.0),
    "bedrock-runtime": (30.0, 100.0),
    "opensearch": (15.0, 50.0),
    "s3": (10.0, 30.0),
}
#: How long an idle execution environment stays warm, and how long one lives at most: assumptions
#: (Lambda documents neither; 5-15 minutes idle and a few hours are what is commonly observed).
KEEP_WARM_SECONDS = 7 * 60
ENVIRONMENT_LIFETIME_SECONDS = 2 * 3600
#: The INIT duration (ms of one vCPU) when bench/results/cold-start*.json gives none: a stated figure.
DEFAULT_INIT_MS = 800.0
#: The INIT phase runs unthrottled (two vCPUs, even at the smallest memory sizes), as measured by
#: https://bitesizedserverless.com/bite/when-is-the-lambda-init-phase-free-and-when-is-it-billed/ (a third
#: party; AWS does not document it): the import is billed at the time measured here, not scaled down to
#: the function's share of a vCPU. False bills it scaled like the invocation (1769 / MemorySize).
INIT_UNTHROTTLED = True
#: X-Ray's default rule, as Lambda applies it for each function: a reservoir of one request a second,
#: then a fixed rate of the rest.
XRAY_RESERVOIR_PER_SECOND = 1.0
XRAY_FIXED_RATE = 0.05
#: OpenSearch Serverless scales an idle collection group to zero after 10 minutes without a request
#: (NextGen groups with minimum 0; search and indexing apart). Awake, a component is billed at least
#: this many OCUs (assumption: the docs say a wake brings back one indexing and two search workers,
#: not their OCUs; 0.5 is the smallest a Classic vector collection takes).
SCALE_TO_ZERO_IDLE_SECONDS = 600
AWAKE_OCU = 0.5
#: Calls a second one OCU sustains (assumption, not measured: moto and osmem say nothing about OCUs).
#: Past the minimum, OCUs follow the load up to the group's maximum.
OCU_CALLS_PER_SECOND = {"indexing": 20.0, "search": 20.0}
#: Index storage assumed for the floor (GB). Storage grows with what is kept; left out of the per-call figures.
INDEX_STORAGE_GB = 1.0
#: The call mix of the monthly figures: half memory_add, half memory_search.
DEFAULT_MIX = {"memory_add": 0.5, "memory_search": 0.5}
#: Idle time: calls come in sessions (an agent's conversation) of SESSION_CALLS calls over SESSION_SECONDS,
#: the sessions at random over the month (Poisson). One call a session is calls spread evenly (no idle time
#: beyond chance). This decides how long a scale-to-zero collection stays awake and how many calls start cold.
SESSION_CALLS = 20
SESSION_SECONDS = 600
#: Lambda's event source mapping long-polls each SQS queue with 5 pollers, 20 s each (3 requests a minute).
SQS_POLLERS = 5
SQS_RECEIVES_PER_POLLER_MINUTE = 3
#: The platform lines of one invocation: the Text format, and JSON at system log level INFO or DEBUG
#: (at WARN and above there are none). The XRAY line only with active tracing.
PLATFORM_TEXT = (
    "START RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72 Version: $LATEST\n"
    "END RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72\n"
    "REPORT RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72\tDuration: 123.45 ms\tBilled Duration: 124 ms\t"
    "Memory Size: 512 MB\tMax Memory Used: 118 MB\t\n"
)
PLATFORM_TEXT_XRAY = "XRAY TraceId: 1-674a1b2c-0123456789abcdef01234567\tSegmentId: 0123456789abcdef\tSampled: true\t\n"
PLATFORM_JSON = (
    '{"time":"2026-11-28T12:00:00.000Z","type":"platform.start","record":{"requestId":'
    '"52fdfc07-2182-154f-163f-5f0f9a621d72","version":"$LATEST"}}\n'
    '{"time":"2026-11-28T12:00:00.124Z","type":"platform.report","record":{"requestId":'
    '"52fdfc07-2182-154f-163f-5f0f9a621d72","metrics":{"durationMs":123.45,"billedDurationMs":124,'
    '"memorySizeMB":512,"maxMemoryUsedMB":118},"status":"success"}}\n'
)
#: The functions the model follows, by the CodeUri folder that names them.
FUNCTIONS = ("memory_add", "memory_search", "indexer", "knowledge_sync")
TOOLS = ("memory_add", "memory_search")
GOAL_PER_MILLION = 5.0
GOAL_IDLE_FLOOR = 15.0


# ------------------------------------------------------------ the template ---
class TemplateResolver(Resolver):
    """The rehearsal's Resolver, where a resource stands for itself: Ref X is "X", GetAtt X.A is "X.A"."""

    def ref(self, name: str) -> Any:
        try:
            return super().ref(name)
        except KeyError:
            return name

    def get_att(self, resource: str, attribute: str) -> str:
        return f"{resource}.{attribute}"


@dataclass(frozen=True)
class Case:
    """What the bill depends on, read from template.yaml for one set of parameters."""

    name: str
    parameters: dict[str, str]
    #: "REST" or "HTTP": the API whose invoke permission names each tool's function.
    api: dict[str, str]
    tracing: dict[str, bool]
    memory_mb: dict[str, int]
    #: Bytes of Lambda's own lines per invocation (LogFormat, SystemLogLevel, tracing).
    platform_log_bytes: dict[str, int]
    #: LoggingConfig ApplicationLogLevel (JSON format), None when Lambda does not filter.
    application_log_level: str | None
    #: Each alarm that exists in this case: its logical id and the metrics it reads.
    alarm_metrics: dict[str, int]
    #: Minimum OCUs (indexing, search); (0, 0) when the group scales to zero. None: no collection.
    ocu_min: tuple[float, float] | None
    ocu_max: tuple[float, float]
    #: Scheduled invocations a month, by function.
    schedules: dict[str, float]
    #: Extraction queues polled (name -> FIFO?), only when their event source mapping is enabled.
    polled_queues: dict[str, bool]
    batch_size: int = 1
    batch_window_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def scale_to_zero(self) -> bool:
        return self.ocu_min is not None and self.ocu_min == (0.0, 0.0)


def _present(resolver: Resolver, resource: Mapping[str, Any]) -> bool:
    return "Condition" not in resource or resolver.condition(resource["Condition"])


def _function_ids(template: Mapping[str, Any]) -> dict[str, str]:
    """Logical id of each function the model follows, by its CodeUri folder."""
    found: dict[str, str] = {}
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        folder = str((resource.get("Properties") or {}).get("CodeUri", "")).rstrip("/").rsplit("/", 1)[-1]
        if folder in FUNCTIONS:
            found[folder] = logical_id
    return found


def _setting(template: Mapping[str, Any], logical_id: str, name: str, default: Any) -> Any:
    """A function's property, else Globals.Function's (SAM's merge: a map property is merged key by key)."""
    own = (template["Resources"][logical_id].get("Properties") or {}).get(name)
    shared = (template.get("Globals", {}).get("Function") or {}).get(name)
    if isinstance(own, dict) and isinstance(shared, dict):
        return {**shared, **own}
    return own if own is not None else (shared if shared is not None else default)


def schedule_per_month(expression: str) -> float:
    """Invocations a month of an EventBridge ``rate(...)`` or ``cron(...)`` expression (cron: its minute
    and hour fields, every day)."""
    rate = re.fullmatch(r"rate\((\d+)\s+(minute|minutes|hour|hours|day|days)\)", expression.strip())
    if rate:
        seconds = {"minute": 60, "hour": 3600, "day": 86400}[rate.group(2).rstrip("s")]
        return SECONDS_A_MONTH / (int(rate.group(1)) * seconds)
    cron = re.fullmatch(r"cron\((\S+)\s+(\S+)\s+.*\)", expression.strip())
    if cron:

        def count(field_text: str, span: int) -> int:
            if field_text in ("*", "?"):
                return span
            if "/" in field_text:
                start, step = field_text.split("/", 1)
                return len(range(0 if start in ("*", "") else int(start), span, int(step)))
            return len(field_text.split(","))

        return count(cron.group(1), 60) * count(cron.group(2), 24) * HOURS_A_MONTH / 24
    raise ValueError(f"unknown schedule expression {expression!r}")


def _api_types(template: Mapping[str, Any], resolver: Resolver, functions: Mapping[str, str]) -> dict[str, str]:
    apis = {
        logical_id: ("HTTP" if resource["Type"] in ("AWS::Serverless::HttpApi", "AWS::ApiGatewayV2::Api") else "REST")
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type")
        in ("AWS::Serverless::Api", "AWS::ApiGateway::RestApi", "AWS::Serverless::HttpApi", "AWS::ApiGatewayV2::Api")
        and _present(resolver, resource)
    }
    found: dict[str, str] = {}
    for tool in TOOLS:
        for resource in template["Resources"].values():
            properties = resource.get("Properties") or {}
            if (
                resource.get("Type") != "AWS::Lambda::Permission"
                or properties.get("Principal") != "apigateway.amazonaws.com"
                or not _present(resolver, resource)
                or resolver.resolve(properties.get("FunctionName")) != functions[tool]
            ):
                continue
            arn = str(resolver.resolve(properties.get("SourceArn", "")))
            named = [api for api in apis if re.search(rf":{re.escape(api)}/", arn)]
            if named:
                found[tool] = apis[named[0]]
        if tool not in found:
            raise ValueError(f"no API Gateway permission of {tool}'s function names a deployed API")
    return found


def _alarm_metrics(resource: Mapping[str, Any], resolver: Resolver) -> int:
    """Metrics one alarm is billed for: each metric a metric math alarm reads, else its one metric (an
    anomaly detection band bills three)."""
    properties = resolver.resolve(resource.get("Properties") or {})
    queries = properties.get("Metrics")
    if not queries:
        return 1
    metrics = sum(1 for query in queries if "MetricStat" in query)
    bands = sum(1 for query in queries if "ANOMALY_DETECTION_BAND" in str(query.get("Expression", "")))
    return metrics + 2 * bands


def _ocu(template: Mapping[str, Any], resolver: Resolver) -> tuple[tuple[float, float] | None, tuple[float, float]]:
    groups = [
        r
        for r in template["Resources"].values()
        if r.get("Type") == "AWS::OpenSearchServerless::CollectionGroup" and _present(resolver, r)
    ]
    collections = [
        r
        for r in template["Resources"].values()
        if r.get("Type") == "AWS::OpenSearchServerless::Collection" and _present(resolver, r)
    ]
    if not collections:
        return None, (0.0, 0.0)  # an existing OpenSearch domain: not this stack's bill
    properties = resolver.resolve(groups[0].get("Properties") or {}) if groups else {}
    limits = {str(k).lower(): v for k, v in (properties.get("CapacityLimits") or {}).items()}
    standby = str(properties.get("StandbyReplicas", "DISABLED")).upper() == "ENABLED"
    nextgen = "NEXT" in str(properties.get("Generation", "")).upper()

    def limit(kind: str, bound: str) -> float | None:
        for key, value in limits.items():
            if key.startswith(bound) and kind in key:
                return float(value)
        return None

    maximum = (limit("index", "max") or 96.0, limit("search", "max") or 96.0)
    low = (limit("index", "min"), limit("search", "min"))
    if low[0] is not None and low[1] is not None:
        return (low[0], low[1]), maximum
    if nextgen:  # NextGen groups default to a minimum of 0
        return (low[0] or 0.0, low[1] or 0.0), maximum
    floor = 1.0 if standby else 0.5  # a Classic vector collection: 0.5 + 0.5 OCU, doubled by standby replicas
    return (floor, floor), maximum


def derive_case(template: Mapping[str, Any], name: str, parameters: Mapping[str, str]) -> Case:
    """Read the bill's inputs from ``template`` with ``parameters`` (the rest at their defaults)."""
    resolver = TemplateResolver(template, parameters=dict(parameters), refs={}, attributes={})
    functions = _function_ids(template)
    tracing, memory, platform = {}, {}, {}
    application_level: str | None = None
    for function, logical_id in functions.items():
        traced = str(resolver.resolve(_setting(template, logical_id, "Tracing", "PassThrough"))) == "Active"
        tracing[function] = traced
        memory[function] = int(resolver.resolve(_setting(template, logical_id, "MemorySize", 128)))
        logging = resolver.resolve(_setting(template, logical_id, "LoggingConfig", {}) or {})
        if str(logging.get("LogFormat", "Text")) == "JSON":
            system = str(logging.get("SystemLogLevel", "INFO")).upper()
            platform[function] = len(PLATFORM_JSON) if system in ("DEBUG", "INFO") else 0
            if function in TOOLS and logging.get("ApplicationLogLevel"):
                application_level = str(logging["ApplicationLogLevel"]).upper()
        else:
            platform[function] = len(PLATFORM_TEXT) + (len(PLATFORM_TEXT_XRAY) if traced else 0)
    alarms = {
        logical_id: _alarm_metrics(resource, resolver)
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::CloudWatch::Alarm" and _present(resolver, resource)
    }
    schedules: dict[str, float] = {}
    batch_size, window = 1, 0.0
    for function, logical_id in functions.items():
        events = resolver.resolve((template["Resources"][logical_id].get("Properties") or {}).get("Events") or {})
        for event in events.values():
            if event.get("Type") in ("Schedule", "ScheduleV2") and event["Properties"].get("Enabled", True) not in (
                False,
                "false",
            ):
                expression = event["Properties"].get("Schedule") or event["Properties"].get("ScheduleExpression")
                schedules[function] = schedules.get(function, 0.0) + schedule_per_month(str(expression))
            if function == "indexer" and event.get("Type") == "DynamoDB":
                batch_size = int(event["Properties"].get("BatchSize", 100))
                window = float(event["Properties"].get("MaximumBatchingWindowInSeconds", 0))
    queues = {
        logical_id: bool(resolver.resolve((resource.get("Properties") or {}).get("FifoQueue", False)) in (True, "true"))
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::SQS::Queue" and _present(resolver, resource)
    }
    polled: dict[str, bool] = {}
    for resource in template["Resources"].values():
        if resource.get("Type") == "AWS::Lambda::EventSourceMapping" and _present(resolver, resource):
            properties = resolver.resolve(resource.get("Properties") or {})
            source = str(properties.get("EventSourceArn", "")).split(".", 1)[0]
            if source in queues and properties.get("Enabled", True) not in (False, "false"):
                polled[source] = queues[source]
    ocu_min, ocu_max = _ocu(template, resolver)
    return Case(
        name=name,
        parameters=dict(parameters),
        api=_api_types(template, resolver, functions),
        tracing=tracing,
        memory_mb=memory,
        platform_log_bytes=platform,
        application_log_level=application_level,
        alarm_metrics=alarms,
        ocu_min=ocu_min,
        ocu_max=ocu_max,
        schedules=schedules,
        polled_queues=polled,
        batch_size=batch_size,
        batch_window_seconds=window,
    )


# ------------------------------------------------------------ volume rules ---
def xray_sampled_share(per_second: float) -> float:
    """The share of a function's invocations X-Ray's default rule records at ``per_second`` (Poisson
    arrivals): the first each second (if any), then 5% of the rest."""
    if per_second <= 0:
        return 1.0
    reservoir = 1 - math.exp(-per_second) if XRAY_RESERVOIR_PER_SECOND == 1.0 else min(per_second, 1.0)
    return (reservoir + XRAY_FIXED_RATE * max(0.0, per_second - reservoir)) / per_second


def cold_share(per_second: float, calls_per_session: float = 1.0, session_seconds: float = 0.0) -> float:
    """The share of a function's invocations that start a new execution environment: the first call of a
    session that comes after KEEP_WARM_SECONDS without one (sessions at random, ``calls_per_session`` of this
    function's calls each, ``session_seconds`` long), and one an ENVIRONMENT_LIFETIME_SECONDS of the time an
    environment is alive."""
    if per_second <= 0:
        return 1.0
    calls_per_session = max(1.0, calls_per_session)
    sessions = per_second / calls_per_session
    after_quiet = math.exp(-sessions * KEEP_WARM_SECONDS) / calls_per_session
    alive = 1 - math.exp(-sessions * (session_seconds + KEEP_WARM_SECONDS))
    recycled = alive / (ENVIRONMENT_LIFETIME_SECONDS * per_second)
    return min(1.0, after_quiet + recycled)


def awake_share(sessions_per_second: float, session_seconds: float = 0.0) -> float:
    """The share of the month a scale-to-zero component is up, sessions of requests (each ``session_seconds``
    long) arriving at random at ``sessions_per_second``: it goes down SCALE_TO_ZERO_IDLE_SECONDS after the
    last request of the last session, so it is down when no session began in the last session length plus
    that idle time."""
    if sessions_per_second <= 0:
        return 0.0
    return 1 - math.exp(-sessions_per_second * (session_seconds + SCALE_TO_ZERO_IDLE_SECONDS))


def hours_share(per_hour: float) -> float:
    """The share of hours with at least one emission (custom metrics are billed by the hour)."""
    return 1 - math.exp(-per_hour) if per_hour > 0 else 0.0


def sqs_polling_requests_month(queues: int) -> float:
    return queues * SQS_POLLERS * SQS_RECEIVES_PER_POLLER_MINUTE * 60 * HOURS_A_MONTH


# ---------------------------------------------------------------- money ---
def _service(request: str) -> str:
    return request.split(":", 1)[0]


def duration_ms(cost: Mapping[str, Any], memory_mb: int, *, high: bool) -> float:
    """Billed time of one invocation: its CPU time scaled to the function's share of a vCPU, plus the
    requests' in-region latency, one after another."""
    scaled = float(cost["cpuMs"]) * FULL_VCPU_MB / memory_mb
    waiting = sum(
        count * LATENCY_MS[_service(name)][1 if high else 0]
        for name, count in cost["requests"].items()
        if _service(name) in LATENCY_MS
    )
    return scaled + waiting


def s3_requests(requests: Mapping[str, float]) -> float:
    """Dollars of the S3 requests among ``requests`` (PUT, COPY, POST and LIST at one rate, DELETE free,
    GET and the rest at the other)."""
    dollars = 0.0
    for name, count in requests.items():
        if _service(name) != "s3":
            continue
        operation = name.split(":", 1)[1]
        if operation.startswith("Delete"):
            continue
        heavy = operation.startswith(("Put", "Copy", "Post", "List", "CreateMultipart", "UploadPart", "Complete"))
        dollars += count / 1000 * PRICES["s3_write_list_per_1k" if heavy else "s3_read_per_1k"]
    return dollars


def cold_start_ms(init: float | tuple[float, float], memory_mb: int) -> float:
    """What a cold start adds to an invocation's billed time: the INIT phase (the import), which runs with
    the burst of CPU Lambda gives INIT whatever the memory (INIT_UNTHROTTLED), and the first call's extra
    over a warm one, which runs at the function's share of a vCPU. ``init`` is (INIT ms, first-call extra ms)
    or INIT ms alone."""
    phase, first = init if isinstance(init, tuple) else (init, 0.0)
    scale = 1.0 if INIT_UNTHROTTLED else FULL_VCPU_MB / memory_mb
    return phase * scale + first * FULL_VCPU_MB / memory_mb


def _gb_seconds(ms: float, memory_mb: int) -> float:
    return memory_mb / 1024 * ms / 1000


def invocation_lines(
    case: Case,
    function: str,
    cost: Mapping[str, Any],
    per_second: float,
    init_ms: float | tuple[float, float],
    *,
    high: bool,
    calls_per_session: float = 1.0,
    session_seconds: float = 0.0,
) -> dict[str, float]:
    """Dollars of ONE invocation of ``function`` (its counts ``cost``) at ``per_second`` invocations, by line."""
    p = PRICES
    memory = case.memory_mb[function]
    init_gb_seconds = _gb_seconds(cold_start_ms(init_ms, memory), memory)
    return {
        "Lambda requests": p["lambda_request_per_million"] / 1e6,
        "Lambda duration": _gb_seconds(duration_ms(cost, memory, high=high), memory) * p["lambda_arm_gb_second"],
        "Lambda INIT (cold starts)": cold_share(per_second, calls_per_session, session_seconds)
        * init_gb_seconds
        * p["lambda_arm_gb_second"],
        "DynamoDB writes": float(cost["wru"]) * p["dynamodb_wru_per_million"] / 1e6,
        "DynamoDB reads": float(cost["rru"]) * p["dynamodb_rru_per_million"] / 1e6,
        "Titan tokens": float(cost["titanTokens"]) / 1000 * p["titan_v2_per_1k_tokens"],
        "S3 requests": s3_requests(cost["requests"]),
        "CloudWatch Logs": (float(cost["logBytes"]) + case.platform_log_bytes[function])
        / 2**30
        * p["cloudwatch_logs_ingest_gb"],
        "X-Ray traces": (xray_sampled_share(per_second) * p["xray_trace_per_million"] / 1e6)
        if case.tracing[function]
        else 0.0,
    }


def records_per_indexer_invocation(case: Case, adds_per_second: float) -> float:
    """Stream records a batch holds: what arrives in the batching window, at least 1, at most BatchSize."""
    return min(float(case.batch_size), max(1.0, adds_per_second * case.batch_window_seconds))


#: The lines of an indexer invocation paid once a batch (the others are paid for each record).
PER_INVOCATION = ("Lambda requests", "Lambda INIT (cold starts)", "X-Ray traces")


def tool_per_million(
    case: Case,
    measured: Mapping[str, Any],
    tool: str,
    calls_per_month: float,
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
    session_calls: float = SESSION_CALLS,
) -> dict[str, float]:
    """Dollars per million calls of ``tool`` by line item, at ``calls_per_month`` calls of ``mix``: what each
    call adds (the month's custom metrics, alarms and OCUs are not per call: see ``monthly``)."""
    rate = calls_per_month * mix[tool] / SECONDS_A_MONTH
    per_session = session_calls * mix[tool]
    seconds = SESSION_SECONDS if session_calls > 1 else 0.0
    api = case.api[tool]
    lines = {f"API Gateway {api}": PRICES["apigw_rest_per_million" if api == "REST" else "apigw_http_per_million"]}
    own = invocation_lines(
        case,
        tool,
        measured[tool],
        rate,
        init_ms[tool],
        high=high,
        calls_per_session=per_session,
        session_seconds=seconds,
    ).items()
    for name, amount in own:
        lines[name] = amount * 1e6
    records_per_add = float(measured.get("indexerRecordsPerAdd", 1.0))
    if tool == "memory_add" and records_per_add > 0:
        # The stream indexer: the stream records an add hands it (those its filter passes), each record's
        # counts, and its per-invocation ones once a batch.
        indexer = measured["indexer"]
        records = float(indexer.get("records", 1.0))
        per_record = {key: indexer[key] / records for key in ("rru", "wru", "titanTokens", "cpuMs", "logBytes")}
        per_record["requests"] = {k: v / records for k, v in indexer["requests"].items()}
        record_rate = rate * records_per_add
        batch = records_per_indexer_invocation(case, record_rate)
        one = invocation_lines(
            case,
            "indexer",
            per_record,
            record_rate / batch,
            init_ms["indexer"],
            high=high,
            calls_per_session=per_session * records_per_add / batch,
            session_seconds=seconds,
        )
        platform = case.platform_log_bytes["indexer"] / 2**30 * PRICES["cloudwatch_logs_ingest_gb"]
        for name, amount in one.items():
            if name in PER_INVOCATION:
                amount /= batch
            elif name == "CloudWatch Logs":  # the record's own lines, Lambda's once a batch
                amount = amount - platform + platform / batch
            lines[name] = lines.get(name, 0.0) + amount * records_per_add * 1e6
    return lines


def ocu_month(
    case: Case,
    adds_per_second: float,
    searches_per_second: float,
    *,
    session_calls: float = SESSION_CALLS,
    session_seconds: float = SESSION_SECONDS,
) -> float:
    """OpenSearch Serverless OCUs billed a month: each component's minimum, or, when it scales to zero,
    AWAKE_OCU for the share of the month it is up; or what the load needs, up to the group's maximum."""
    if case.ocu_min is None:
        return 0.0
    sessions = (adds_per_second + searches_per_second) / max(1.0, session_calls)
    total = 0.0
    for minimum, maximum, rate, kind in zip(
        case.ocu_min, case.ocu_max, (adds_per_second, searches_per_second), ("indexing", "search"), strict=True
    ):
        needed = rate / OCU_CALLS_PER_SECOND[kind]
        if minimum > 0:
            ocus = min(maximum, max(minimum, needed))
        elif rate > 0:
            ocus = awake_share(sessions, session_seconds) * min(maximum, max(AWAKE_OCU, needed))
        else:
            ocus = 0.0
        total += ocus * HOURS_A_MONTH * PRICES["opensearch_ocu_hour"]
    return total


def custom_metrics_month(measured: Mapping[str, Any], rates: Mapping[str, float]) -> float:
    """The custom metrics (EMF) the calls emit, each billed for the hours it is emitted in: a metric that
    several functions emit (the same name and dimensions) is one metric."""
    emitters: dict[str, float] = {}
    for phase, rate in rates.items():
        for metric in measured.get("emf", {}).get(phase, []):
            emitters[metric] = emitters.get(metric, 0.0) + rate
    return sum(hours_share(rate * 3600) for rate in emitters.values()) * PRICES["cloudwatch_custom_metric_month"]


def idle_floor(
    case: Case, measured: Mapping[str, Any], init_ms: Mapping[str, float | tuple[float, float]]
) -> dict[str, float]:
    """What a month costs with no calls at all, by line."""
    p = PRICES
    floor: dict[str, float] = {}
    wakes = False
    scheduled = 0.0
    metrics = 0.0
    for function, per_month in case.schedules.items():
        cost = measured.get("scheduled", {}).get(function)
        if cost is None:
            raise KeyError(f"no measured scheduled invocation of {function}")
        rate = per_month / SECONDS_A_MONTH
        scheduled += per_month * sum(
            invocation_lines(case, function, cost, rate, init_ms[function], high=True).values()
        )
        wakes = wakes or any(_service(name) == "opensearch" for name in cost["requests"])
        emitted = len(measured.get("emf", {}).get(f"scheduled:{function}", []))
        metrics += emitted * hours_share(rate * 3600) * p["cloudwatch_custom_metric_month"]
    if case.ocu_min is not None:
        if case.scale_to_zero and not wakes:
            floor["OpenSearch OCUs"] = 0.0
        elif case.scale_to_zero:
            floor["OpenSearch OCUs (woken by the schedules)"] = AWAKE_OCU * 2 * HOURS_A_MONTH * p["opensearch_ocu_hour"]
        else:
            floor["OpenSearch OCUs"] = sum(case.ocu_min) * HOURS_A_MONTH * p["opensearch_ocu_hour"]
        floor["OpenSearch storage"] = INDEX_STORAGE_GB * p["opensearch_storage_gb_month"]
    floor["CloudWatch alarms"] = sum(case.alarm_metrics.values()) * p["cloudwatch_alarm_metric_month"]
    floor["scheduled invocations (drain, sync)"] = scheduled
    floor["custom metrics of the schedules (EMF)"] = metrics
    floor["SQS polling (extraction queues)"] = sum(
        sqs_polling_requests_month(1) * p["sqs_fifo_per_million" if fifo else "sqs_standard_per_million"] / 1e6
        for fifo in case.polled_queues.values()
    )
    return floor


def monthly(
    case: Case,
    measured: Mapping[str, Any],
    calls_per_month: float,
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
) -> dict[str, float]:
    """A month's bill at ``calls_per_month`` calls of ``mix``: the calls, the OCUs, the custom metrics the
    calls emit, and the idle floor's other lines."""
    bill: dict[str, float] = {}
    rates = {tool: calls_per_month * share / SECONDS_A_MONTH for tool, share in mix.items()}
    for tool in mix:
        per_million = tool_per_million(case, measured, tool, calls_per_month, init_ms, mix=mix, high=high)
        bill[f"{tool} calls"] = sum(per_million.values()) * calls_per_month * mix[tool] / 1e6
    floor = idle_floor(case, measured, init_ms)
    floor_ocu = sum(v for k, v in floor.items() if k.startswith("OpenSearch OCUs"))
    bill["OpenSearch OCUs"] = max(
        floor_ocu, ocu_month(case, rates.get("memory_add", 0.0), rates.get("memory_search", 0.0))
    )
    record_rate = rates.get("memory_add", 0.0) * float(measured.get("indexerRecordsPerAdd", 1.0))
    indexer_rate = record_rate / records_per_indexer_invocation(case, record_rate)
    bill["CloudWatch custom metrics of the calls (EMF)"] = custom_metrics_month(
        measured, {**rates, "indexer": indexer_rate if "memory_add" in rates else 0.0}
    )
    bill.update({k: v for k, v in floor.items() if not k.startswith("OpenSearch OCUs")})
    return bill


def agentcore_monthly(calls_per_month: float, mix: Mapping[str, float] = DEFAULT_MIX) -> float:
    """AgentCore Memory for the same calls: an add is one short-term event, a search one long-term retrieval
    (its record storage and extraction left out: the lowest reading of its price)."""
    return (
        calls_per_month * mix.get("memory_add", 0.0) / 1000 * PRICES["agentcore_event_per_1k"]
        + calls_per_month * mix.get("memory_search", 0.0) / 1000 * PRICES["agentcore_retrieval_per_1k"]
    )


def break_even(
    case: Case,
    measured: Mapping[str, Any],
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    low: float = 1.0,
    high: float = 1e10,
    mix: Mapping[str, float] = DEFAULT_MIX,
) -> float | None:
    """The calls a month above which Mnemo costs less than AgentCore Memory (None if it never does between
    ``low`` and ``high``; ``low`` if it always does)."""

    def cheaper(n: float) -> bool:
        return sum(monthly(case, measured, n, init_ms, mix=mix).values()) <= agentcore_monthly(n, mix)

    if cheaper(low):
        return low
    if not cheaper(high):
        return None
    a, b = math.log(low), math.log(high)
    for _ in range(60):
        middle = (a + b) / 2
        if cheaper(math.exp(middle)):
            b = middle
        else:
            a = middle
    return math.exp(b)

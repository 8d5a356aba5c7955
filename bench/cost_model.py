"""The deployed stack's monthly cost, from template.yaml's settings and the counts bench/deploy_cost.py measures.

Used by bench/deploy_cost.py (and tests/bench/test_cost_model.py). Three parts:

* ``derive_case(template, name, parameters)`` reads what the bill depends on from template.yaml, its intrinsic
  functions and conditions resolved for one set of parameters (the rehearsal's Resolver): which API serves the
  tools (a REST or an HTTP API, from the API a tool's invoke permission names), whether each function traces,
  its MemorySize and its logging configuration, the alarms that exist and the metrics each reads, the
  collection group's minimum and maximum capacity (and the maxima the template allows for indexing and for
  search), the vector store (``VectorStore``), whether the table keeps point-in-time recovery, the scheduled
  invocations, and the extraction queues polled.
* The arithmetic: dollars per million calls of a measured phase by line item (a tool, or a kind of memory_add:
  keyed, dated; PHASES), the monthly total at a volume, a call mix, a traffic shape and a number of stored
  memories, the idle floor, and AgentCore Memory's price for the same calls and records. Each rule that depends
  on the volume is a function of its own (X-Ray's default sampling, the share of cold starts, the hours a
  scale-to-zero collection stays awake under a traffic shape, the indexing and search OCUs the load and an index
  of stored memories need and the maxima that hold them, the hours a custom metric is emitted, S3 Vectors' query
  processing by index size).
* The curve: for each volume and traffic shape, the month of each vector store (``opensearch``, ``s3vectors``),
  the one docs/deploy.md recommends (the cheapest the template can deploy, with the OCU maxima it needs), and
  AgentCore's bill beside it.

Nothing here measures: the per-invocation counts (requests, DynamoDB units, Titan tokens, CPU time, log bytes,
EMF metrics, bytes stored per memory) come from the run (``measured``), the prices from PRICES, and every
assumption that is not a price or a count is a named constant below, stated in docs/deploy.md.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Mapping, Sequence
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
    # S3 Standard storage, first 50 TB: $0.023 per GB-month (https://gist.github.com/EverettBerry/a37438006529a55f42da6fdbc44a505c,
    # a copy of the S3 price table; https://aws.amazon.com/s3/pricing/ was stored with its prices unrendered).
    "s3_storage_gb_month": 0.023,
    # DynamoDB Standard table storage: $0.25 per GB-month (first 25 GB free, left out):
    # https://aws.amazon.com/dynamodb/pricing/. Point-in-time recovery is billed on the table's size
    # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/PointInTimeRecovery_Howitworks.html) at
    # $0.20 per GB-month: unconfirmed in the store (read 2026-12-01).
    "dynamodb_storage_gb_month": 0.25,
    "dynamodb_pitr_gb_month": 0.20,
    # Amazon S3 Vectors (read 2026-12-01): $0.06 per GB-month stored and $0.20 per GB uploaded by PUT
    # (https://www.exploreagentic.ai/insights/s3-vectors-enterprise-rag/, and the worked example of
    # https://aws.amazon.com/s3/pricing/ as transcribed in https://raw.githubusercontent.com/api-evangelist/amazon-s3/refs/heads/main/plans/amazon-s3-plans-pricing.yml);
    # $2.50 per million QueryVectors calls (same transcription); query data processed per TB, "average vector
    # size (vector data + key + filterable metadata) x number of vectors in the index"
    # (https://dev.classmethod.jp/en/articles/20260616-s3-vectors-query-charges/), at $0.004 per TB for an
    # index's first 100 thousand vectors and $0.002 per TB for the rest: these two rates reproduce AWS's
    # worked examples ($11.38 and $1,217.29 a month, quoted by https://kane.mx/posts/2026/s3-vectors-vs-opensearch/)
    # but were not read on an AWS page. The cut of 2026-06-16 for indexes over 10 million vectors ("up to 80%")
    # is left out (its rates are not in the store): the figures overstate large single indexes.
    "s3vectors_storage_gb_month": 0.06,
    "s3vectors_put_gb": 0.20,
    "s3vectors_query_per_million": 2.50,
    "s3vectors_query_tb_first_100k": 0.004,
    "s3vectors_query_tb_over_100k": 0.002,
    # AgentCore Memory: $0.25 per 1,000 new short-term memory events, $0.50 per 1,000 long-term memory
    # retrievals, $0.75 per 1,000 long-term records stored a month (built-in strategies); no floor. Third-party copies
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
    # AWS: "as low as 100 milliseconds for warm queries", under a second cold
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-best-practices.html); 300 ms is the
    # high end assumed here.
    "s3vectors": (100.0, 300.0),
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
#: OpenSearch Serverless scales an idle collection group to zero after 10 minutes without a request to any
#: collection of the group (NextGen groups with minimum 0; not configurable), and search and indexing wake
#: apart, each on its own traffic: a wake provisions two search workers and one indexing worker
#: (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scale-to-zero.html). A
#: worker is taken to bill 0.5 OCU, the smallest unit a vector collection scales to
#: (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scaling.html): an awake
#: collection bills at least 1.0 search + 0.5 indexing OCU.
SCALE_TO_ZERO_IDLE_SECONDS = 600
WAKE_OCU = {"indexing": 0.5, "search": 1.0}
#: Calls a second one OCU sustains (assumption, not measured: moto and osmem say nothing about OCUs).
#: Past the minimum, OCUs follow the load up to the group's maximum.
OCU_CALLS_PER_SECOND = {"indexing": 20.0, "search": 20.0}
#: A vector collection keeps its HNSW graphs in OCU memory (6 GiB an OCU): a 1024-dimension fp16 vector with
#: its graph links takes about 2.4 KB, so a million memories need 0.4-0.8 search OCU while the collection is
#: awake (low, high: how much of an OCU's memory the graphs may use). The high end is priced.
SEARCH_OCU_PER_MILLION_MEMORIES = (0.4, 0.8)
#: Index storage assumed for the floor (GB), and the collection's storage per memory (a 1024-dimension fp16
#: vector, its graph, the text and terms): an assumption, not measured (osmem keeps no segment files).
INDEX_STORAGE_GB = 1.0
OPENSEARCH_BYTES_PER_MEMORY = 4096
#: DynamoDB bytes a memory keeps in the table (its items, each with DynamoDB's 100 bytes of overhead) when the
#: run gives none (measured["dynamodbBytesPerMemory"], from the table after the run).
DEFAULT_DYNAMODB_BYTES_PER_MEMORY = 1500.0
#: The knowledge bucket's size, GB (S3 Standard): an assumption; memories are not kept in S3.
KNOWLEDGE_BUCKET_GB = 1.0
#: What the S3 Vectors adapter sends (counted on moto: tests/contract/test_s3vectors_store.py): each
#: memory_search ranks one or two namespaces, one hybrid QueryVectors each (topK <= 100), priced at two; each
#: k-NN search of a memory_add's near-duplicate check is one QueryVectors, S3 Vectors having no batch query
#: (the run counts the searches: ``knnSearches``; a plain or keyed add's _msearch holds two, a dated add that
#: follows another one); without that count an add's _msearch is taken as S3VECTORS_QUERIES_PER_ADD. An indexed
#: write is one PutVectors (one vector a call, inline, as the OpenSearch bulk is today).
S3VECTORS_QUERIES_PER_SEARCH = 2
S3VECTORS_QUERIES_PER_ADD = 2
#: A vector as S3 Vectors counts it: 1024 float32 dimensions, its key, its metadata (the filterable keywords,
#: and the text, non-filterable: about 1 KB together). Storage and PUT count all of it; query processing
#: counts the vector, the key and the filterable metadata.
S3VECTORS_VECTOR_BYTES = 1024 * 4
S3VECTORS_KEY_BYTES = 40
S3VECTORS_FILTERABLE_BYTES = 256
S3VECTORS_NON_FILTERABLE_BYTES = 768
S3VECTORS_BYTES = (
    S3VECTORS_VECTOR_BYTES + S3VECTORS_KEY_BYTES + S3VECTORS_FILTERABLE_BYTES + S3VECTORS_NON_FILTERABLE_BYTES
)
#: Each PutVectors request is billed at least 128 KB (third party: https://caylent.com/blog/architecting-gen-ai-at-scale-lessons-from-aws-s-3-vector-store-and-the-nuances-of-hybrid-vector-storage;
#: unconfirmed on an AWS page, priced here as the cautious reading). 0 bills the bytes alone.
S3VECTORS_PUT_MIN_BYTES = 128 * 1024
#: The vectors a query's index holds (Case.s3vectors_index_vectors): None, every stored memory. The adapter keeps
#: one index per namespace (mnemo.adapters.aws.s3vectors), and memories are one namespace ("memory"), tenants
#: and users told apart by filters, which narrow the results, not the bill: each query processes the stack's
#: memories (both of a search's ranks are priced so). A number, indexes of at most that many vectors (one per
#: tenant, say): a what-if the adapter does not implement.
WHAT_IF_INDEX_VECTORS = 1_000_000
#: The vector stores the curve compares (template parameter VectorStore).
STORES = ("opensearch", "s3vectors")
#: Stored memories at a volume: each memory_add keeps one memory, and a stack keeps what it stored for this
#: many months (a stack a year into that volume; nothing forgotten). AgentCore is priced for the same records.
RETENTION_MONTHS = 12
#: The call mix of the monthly figures: half memory_add, half memory_search.
DEFAULT_MIX = {"memory_add": 0.5, "memory_search": 0.5}
#: Idle time: calls come in sessions (an agent's conversation) of SESSION_CALLS calls over SESSION_SECONDS,
#: the sessions at random over the month (Poisson). One call a session is calls spread evenly (no idle time
#: beyond chance). This decides how long a scale-to-zero collection stays awake and how many calls start cold.
SESSION_CALLS = 20
SESSION_SECONDS = 600


@dataclass(frozen=True)
class Shape:
    """How a month's calls fall in time. ``windows`` active periods of ``window_seconds`` each, calls evenly
    spaced within them (an even trickle: one window, the whole month, which runs on into the next); or, with
    ``session_calls`` > 1, sessions of that many calls over ``session_seconds``, the sessions at random over
    the month (bursts)."""

    name: str
    label: str
    windows: float = 1.0
    window_seconds: float = SECONDS_A_MONTH
    session_calls: float = 1.0
    session_seconds: float = 0.0

    @property
    def bursts(self) -> bool:
        return self.session_calls > 1

    @property
    def active_seconds(self) -> float:
        """The seconds of the month calls arrive in (the whole month for sessions at random)."""
        return SECONDS_A_MONTH if self.bursts else min(SECONDS_A_MONTH, self.windows * self.window_seconds)


#: The traffic shapes the curve prices: an even trickle, business hours (12 h on each of 22 working days),
#: and bursts (an agent's sessions at random).
SHAPES = {
    "trickle": Shape("trickle", "an even trickle over the whole month"),
    "business": Shape("business", "business hours: 12 h x 22 days, even within them", 22, 12 * 3600),
    "bursts": Shape(
        "bursts",
        f"bursts: sessions of {SESSION_CALLS} calls over {SESSION_SECONDS // 60} min at random",
        session_calls=SESSION_CALLS,
        session_seconds=SESSION_SECONDS,
    ),
}
#: The volumes of the curve (calls a month).
CURVE_VOLUMES = (10_000, 100_000, 1_000_000, 10_000_000, 100_000_000)
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
#: The kinds of memory_add measured apart from the plain one (the curve's mix keeps plain adds): with an
#: ``idempotencyKey`` (each call a new key), and with an ``occurredAt`` the same day as the dated add before it.
#: A phase is priced as a call of its function ("memory_add") at that function's share of the mix.
ADD_PHASES = ("memory_add keyed", "memory_add dated")
PHASES = (*TOOLS, *ADD_PHASES)
GOAL_PER_MILLION = 5.0
GOAL_IDLE_FLOOR = 1.0


def function_of(phase: str) -> str:
    """The function a measured phase runs in: its first word ("memory_add keyed" -> "memory_add")."""
    return phase.split(" ", 1)[0]


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
    #: The parameter that sets the group's search maximum (OpenSearchMaxSearchOcu), and the values it may take
    #: (its AllowedValues), largest last; None and () when the maximum is no parameter's.
    ocu_max_parameter: str | None = None
    ocu_max_allowed: tuple[float, ...] = ()
    #: The same for the indexing maximum (OpenSearchMaxIndexingOcu).
    indexing_max_parameter: str | None = None
    indexing_max_allowed: tuple[float, ...] = ()
    #: "opensearch" or "s3vectors" (VectorStore); with s3vectors there is no collection (ocu_min None).
    vector_store: str = "opensearch"
    #: Whether the records table keeps point-in-time recovery (billed on its size).
    pitr: bool = False
    #: With s3vectors, the vectors a query's index holds at most (None: one index for the stack).
    s3vectors_index_vectors: float | None = None
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


def _maximum_parameter(template: Mapping[str, Any], resolver: Resolver, kind: str) -> str | None:
    """The parameter the collection group's Max<kind>CapacityInOcu refers to (its ``Ref``), if any; ``kind``
    is "indexing" or "search"."""
    for resource in template["Resources"].values():
        if resource.get("Type") != "AWS::OpenSearchServerless::CollectionGroup" or not _present(resolver, resource):
            continue
        limits = (resource.get("Properties") or {}).get("CapacityLimits") or {}
        for key, value in limits.items():
            if key.lower().startswith(f"max{kind}") and isinstance(value, dict) and "Ref" in value:
                return str(value["Ref"])
    return None


def _allowed_values(template: Mapping[str, Any], parameter: str | None) -> tuple[float, ...]:
    """A parameter's AllowedValues, smallest first (() for no parameter, or one that allows anything)."""
    spec = (template.get("Parameters", {}).get(parameter) or {}) if parameter else {}
    return tuple(sorted(float(v) for v in spec.get("AllowedValues") or []))


def _pitr_enabled(table: Mapping[str, Any]) -> Any:
    specification = (table.get("Properties") or {}).get("PointInTimeRecoverySpecification") or {}
    return specification.get("PointInTimeRecoveryEnabled", False)


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
    notes: list[str] = []
    store = str(resolver.parameters.get("VectorStore") or parameters.get("VectorStore") or "opensearch")
    if store == "s3vectors" and ocu_min is not None:
        # A template without the parameter (or one that still deploys the collection with it): the model
        # drops the collection's lines, as the parameter is designed to.
        notes.append("VectorStore=s3vectors: the collection's OCUs and storage are left out by the model")
        ocu_min, ocu_max = None, (0.0, 0.0)
    search_parameter = _maximum_parameter(template, resolver, "search")
    indexing_parameter = _maximum_parameter(template, resolver, "indexing")
    pitr = any(
        str(resolver.resolve(_pitr_enabled(resource))).lower() == "true"
        for resource in template["Resources"].values()
        if resource.get("Type") == "AWS::DynamoDB::Table" and _present(resolver, resource)
    )
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
        ocu_max_parameter=search_parameter,
        ocu_max_allowed=_allowed_values(template, search_parameter),
        indexing_max_parameter=indexing_parameter,
        indexing_max_allowed=_allowed_values(template, indexing_parameter),
        vector_store=store,
        pitr=pitr,
        notes=notes,
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


def awake_seconds(shape: Shape, calls: float) -> float:
    """Seconds of the month a scale-to-zero collection is up when ``calls`` requests a month reach it in
    ``shape``: each request keeps it up SCALE_TO_ZERO_IDLE_SECONDS more, so calls closer together than that
    keep it up between them. Evenly spaced calls ``gap`` apart in a window keep it up from the first to
    IDLE after the last when ``gap`` <= IDLE, else IDLE after each; a trickle's window runs on into the next
    month's, so 4,380 calls a month (one every 10 minutes) keep it up all month. Bursts: ``awake_share``."""
    idle = SCALE_TO_ZERO_IDLE_SECONDS
    if calls <= 0:
        return 0.0
    if shape.bursts:
        sessions = calls / shape.session_calls / SECONDS_A_MONTH
        return SECONDS_A_MONTH * awake_share(sessions, shape.session_seconds)
    if shape.window_seconds >= SECONDS_A_MONTH:
        return min(SECONDS_A_MONTH, calls * idle)
    per_window = calls / shape.windows
    if per_window <= 1:
        return min(SECONDS_A_MONTH, calls * idle)
    gap = shape.window_seconds / per_window
    return min(SECONDS_A_MONTH, shape.windows * min(per_window * idle, (per_window - 1) * gap + idle))


def stored_memories(calls_per_month: float, mix: Mapping[str, float] = DEFAULT_MIX) -> float:
    """Memories a stack holds at a volume: one per memory_add, kept RETENTION_MONTHS."""
    return calls_per_month * mix.get("memory_add", 0.0) * RETENTION_MONTHS


def index_search_ocu(stored: float, *, high: bool = True) -> float:
    """Search OCUs an awake vector collection needs to hold the HNSW graphs of ``stored`` memories."""
    return stored / 1e6 * SEARCH_OCU_PER_MILLION_MEMORIES[1 if high else 0]


def allowed_maximum(case: Case, needed: float, kind: str = "search") -> float | None:
    """The smallest OpenSearchMaxSearchOcu (``kind`` "search") or OpenSearchMaxIndexingOcu ("indexing") the
    template allows that is at least ``needed`` (None: none is). A maximum no parameter sets allows its value."""
    if kind == "search":
        allowed = case.ocu_max_allowed or (case.ocu_max[1],)
    else:
        allowed = case.indexing_max_allowed or (case.ocu_max[0],)
    return next((value for value in allowed if value >= needed), None)


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


def s3vectors_query_processing(index_vectors: float) -> float:
    """Dollars of the data ONE QueryVectors call processes: every vector of the queried index (its data, key
    and filterable metadata), an index's first 100 thousand vectors at one rate per TB, the rest at another.
    A filter narrows the results, not the bill."""
    size = S3VECTORS_VECTOR_BYTES + S3VECTORS_KEY_BYTES + S3VECTORS_FILTERABLE_BYTES
    first = min(index_vectors, 100_000.0)
    rest = max(0.0, index_vectors - 100_000.0)
    return (
        first * size / 2**40 * PRICES["s3vectors_query_tb_first_100k"]
        + rest * size / 2**40 * PRICES["s3vectors_query_tb_over_100k"]
    )


def s3vectors_index_vectors(case: Case, stored: float) -> float:
    """The vectors a query's index holds when the stack holds ``stored`` (Case.s3vectors_index_vectors)."""
    limit = case.s3vectors_index_vectors
    return stored if limit is None else min(stored, limit)


def s3vectors_requests(requests: Mapping[str, float], index_vectors: float, vectors_per_put: float = 1.0) -> float:
    """Dollars of the S3 Vectors requests among ``requests``: each PutVectors its uploaded bytes (at least
    S3VECTORS_PUT_MIN_BYTES), each QueryVectors its call and the data it processes (``index_vectors``)."""
    put_bytes = max(float(S3VECTORS_PUT_MIN_BYTES), vectors_per_put * S3VECTORS_BYTES)
    puts = float(requests.get("s3vectors:PutVectors", 0.0))
    queries = float(requests.get("s3vectors:QueryVectors", 0.0))
    return puts * put_bytes / 2**30 * PRICES["s3vectors_put_gb"] + queries * (
        PRICES["s3vectors_query_per_million"] / 1e6 + s3vectors_query_processing(index_vectors)
    )


def s3vectors_counts(measured: Mapping[str, Any]) -> dict[str, Any]:
    """The measured counts with each phase's OpenSearch requests swapped for what the S3 Vectors adapter
    sends in their place: a bulk write becomes a PutVectors; each k-NN search of a memory_add (its
    near-duplicate check) one QueryVectors, as the run counted them (``knnSearches``; without that count an
    add's k-NN _msearch is S3VECTORS_QUERIES_PER_ADD); a memory_search's searches S3VECTORS_QUERIES_PER_SEARCH
    QueryVectors; an indexer's k-NN request one. The rest (DynamoDB, Titan, CPU, logs) is kept as measured."""
    swapped: dict[str, Any] = copy.deepcopy(dict(measured))
    costs = [(phase, swapped.get(phase)) for phase in (*PHASES, "indexer")]
    costs += [("indexer", own.get("indexer")) for own in (swapped.get("indexerOf") or {}).values()]
    for phase, cost in costs:
        if not cost:
            continue
        opensearch = {k: float(v) for k, v in cost["requests"].items() if _service(k) == "opensearch"}
        if not opensearch:
            continue
        requests = {k: v for k, v in cost["requests"].items() if _service(k) != "opensearch"}
        writes = sum(v for k, v in opensearch.items() if k.split(":", 1)[1].startswith("bulk"))
        knn = sum(v for k, v in opensearch.items() if "k-NN" in k)
        if phase == "memory_search":
            queries = float(S3VECTORS_QUERIES_PER_SEARCH)
        elif function_of(phase) == "memory_add":
            queries = float(cost["knnSearches"]) if "knnSearches" in cost else knn * S3VECTORS_QUERIES_PER_ADD
        else:
            queries = knn
        if writes:
            requests["s3vectors:PutVectors"] = writes
        if queries:
            requests["s3vectors:QueryVectors"] = queries
        cost["requests"] = requests
    return swapped


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
    index_vectors: float = 0.0,
) -> dict[str, float]:
    """Dollars of ONE invocation of ``function`` (its counts ``cost``) at ``per_second`` invocations, by line
    (an S3 Vectors line only when it sends S3 Vectors requests, whose queries process ``index_vectors``)."""
    p = PRICES
    memory = case.memory_mb[function]
    init_gb_seconds = _gb_seconds(cold_start_ms(init_ms, memory), memory)
    vectors = (
        {"S3 Vectors requests": s3vectors_requests(cost["requests"], index_vectors)}
        if any(_service(name) == "s3vectors" for name in cost["requests"])
        else {}
    )
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
    } | vectors


def records_per_indexer_invocation(case: Case, adds_per_second: float) -> float:
    """Stream records a batch holds: what arrives in the batching window, at least 1, at most BatchSize."""
    return min(float(case.batch_size), max(1.0, adds_per_second * case.batch_window_seconds))


#: The lines of an indexer invocation paid once a batch (the others are paid for each record).
PER_INVOCATION = ("Lambda requests", "Lambda INIT (cold starts)", "X-Ray traces")


def indexer_of(measured: Mapping[str, Any], phase: str) -> tuple[Mapping[str, Any], float]:
    """The indexer's counts (per invocation, with its ``records``) and the stream records one call of ``phase``
    hands it: the phase's own (``measured["indexerOf"][phase]``, the kinds of add), else the plain add's
    (``measured["indexer"]``, ``indexerRecordsPerAdd``)."""
    own = (measured.get("indexerOf") or {}).get(phase)
    if own:
        return own["indexer"], float(own["recordsPerAdd"])
    return measured.get("indexer") or {}, float(measured.get("indexerRecordsPerAdd", 1.0))


def counts_for(case: Case, measured: Mapping[str, Any]) -> Mapping[str, Any]:
    """The counts a case's functions send: as measured (OpenSearch), or with S3 Vectors in OpenSearch's place."""
    return s3vectors_counts(measured) if case.vector_store == "s3vectors" else measured


def tool_per_million(
    case: Case,
    measured: Mapping[str, Any],
    tool: str,
    calls_per_month: float,
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
    shape: Shape = SHAPES["bursts"],
    stored: float = 0.0,
) -> dict[str, float]:
    """Dollars per million calls of ``tool`` by line item, at ``calls_per_month`` calls of ``mix`` in ``shape``
    with ``stored`` memories (what an S3 Vectors query processes): what each call adds (the month's custom
    metrics, alarms, OCUs and storage are not per call: see ``monthly``). ``tool`` may be a measured phase
    (PHASES: "memory_add keyed", ...): its counts, in its function, at the function's share of ``mix`` (every
    add of the mix taken to be of that kind), with the indexer records that phase hands over (``indexer_of``)."""
    measured = counts_for(case, measured)
    function = function_of(tool)
    share = mix.get(tool, mix.get(function, 0.0))
    index_vectors = s3vectors_index_vectors(case, stored)
    rate = calls_per_month * share / shape.active_seconds
    per_session = shape.session_calls * share
    seconds = shape.session_seconds if shape.bursts else 0.0
    api = case.api[function]
    lines = {f"API Gateway {api}": PRICES["apigw_rest_per_million" if api == "REST" else "apigw_http_per_million"]}
    own = invocation_lines(
        case,
        function,
        measured[tool],
        rate,
        init_ms[function],
        high=high,
        calls_per_session=per_session,
        session_seconds=seconds,
        index_vectors=index_vectors,
    ).items()
    for name, amount in own:
        lines[name] = amount * 1e6
    indexer, records_per_add = indexer_of(measured, tool)
    if function == "memory_add" and records_per_add > 0:
        # The stream indexer: the stream records an add hands it (those its filter passes), each record's
        # counts, and its per-invocation ones once a batch.
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
            index_vectors=index_vectors,
        )
        platform = case.platform_log_bytes["indexer"] / 2**30 * PRICES["cloudwatch_logs_ingest_gb"]
        for name, amount in one.items():
            if name in PER_INVOCATION:
                amount /= batch
            elif name == "CloudWatch Logs":  # the record's own lines, Lambda's once a batch
                amount = amount - platform + platform / batch
            lines[name] = lines.get(name, 0.0) + amount * records_per_add * 1e6
    return lines


@dataclass(frozen=True)
class Ocus:
    """What a month of the collection bills: its OCUs while awake, and the maxima that hold them."""

    dollars: float = 0.0
    awake_hours: float = 0.0
    indexing: float = 0.0
    search: float = 0.0
    #: The smallest OpenSearchMaxSearchOcu the template allows that holds ``search`` (None: none does), at
    #: least the case's own maximum.
    max_search: float | None = None
    #: The same for OpenSearchMaxIndexingOcu and ``indexing``.
    max_indexing: float | None = None


def ocu_month(
    case: Case,
    calls_per_month: float,
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    shape: Shape = SHAPES["bursts"],
    stored: float = 0.0,
    high: bool = True,
) -> Ocus:
    """OpenSearch Serverless OCUs billed a month. Up: all month with a minimum above 0, else the hours the
    shape keeps it awake (``awake_seconds``). While up, each component bills the larger of its minimum (the
    wake's workers, WAKE_OCU, when it scales to zero) and what it needs: indexing, the adds' rate while calls
    arrive (OCU_CALLS_PER_SECOND); search, the searches' rate, and what the stored memories' graphs need
    (``index_search_ocu``). Both maxima are sized alike to hold what is needed (``max_indexing``,
    ``max_search``: the smallest the template allows, at least the case's own), so that nothing is billed
    as throttled away: past a maximum the group would refuse to scale, writes and searches being throttled,
    and past the largest the template allows (None) the config cannot be deployed (``store_option``)."""
    if case.ocu_min is None:
        return Ocus()
    scale_to_zero = case.scale_to_zero
    awake = awake_seconds(shape, calls_per_month) if scale_to_zero else SECONDS_A_MONTH
    floor = (WAKE_OCU["indexing"], WAKE_OCU["search"]) if scale_to_zero else case.ocu_min
    adds = calls_per_month * mix.get("memory_add", 0.0) / shape.active_seconds
    searches = calls_per_month * mix.get("memory_search", 0.0) / shape.active_seconds
    indexing = max(floor[0], adds / OCU_CALLS_PER_SECOND["indexing"])
    search = max(floor[1], searches / OCU_CALLS_PER_SECOND["search"], index_search_ocu(stored, high=high))
    hours = awake / 3600
    return Ocus(
        dollars=(indexing + search) * hours * PRICES["opensearch_ocu_hour"],
        awake_hours=hours,
        indexing=indexing,
        search=search,
        max_search=allowed_maximum(case, max(search, case.ocu_max[1])),
        max_indexing=allowed_maximum(case, max(indexing, case.ocu_max[0]), "indexing"),
    )


def custom_metrics_month(measured: Mapping[str, Any], rates: Mapping[str, float], active_share: float = 1.0) -> float:
    """The custom metrics (EMF) the calls emit, each billed for the hours it is emitted in: a metric that
    several functions emit (the same name and dimensions) is one metric. ``rates`` are per second while calls
    arrive, in ``active_share`` of the month's hours."""
    emitters: dict[str, float] = {}
    for phase, rate in rates.items():
        for metric in measured.get("emf", {}).get(phase, []):
            emitters[metric] = emitters.get(metric, 0.0) + rate
    hours = sum(active_share * hours_share(rate * 3600) for rate in emitters.values())
    return hours * PRICES["cloudwatch_custom_metric_month"]


def storage_month(case: Case, measured: Mapping[str, Any], stored: float) -> dict[str, float]:
    """A month of keeping ``stored`` memories: the table (and its point-in-time recovery, on the table's
    size, when the template turns it on), and the vector store's copy (the collection's storage, or S3
    Vectors'). The table's bytes a memory come from the run."""
    p = PRICES
    table_gb = stored * float(measured.get("dynamodbBytesPerMemory", DEFAULT_DYNAMODB_BYTES_PER_MEMORY)) / 2**30
    lines = {"DynamoDB storage": table_gb * p["dynamodb_storage_gb_month"]}
    if case.pitr:
        lines["DynamoDB point-in-time recovery"] = table_gb * p["dynamodb_pitr_gb_month"]
    if case.ocu_min is not None:
        gb = max(INDEX_STORAGE_GB, stored * OPENSEARCH_BYTES_PER_MEMORY / 2**30)
        lines["OpenSearch storage"] = gb * p["opensearch_storage_gb_month"]
    if case.vector_store == "s3vectors":
        lines["S3 Vectors storage"] = stored * S3VECTORS_BYTES / 2**30 * p["s3vectors_storage_gb_month"]
    return lines


def idle_floor(
    case: Case, measured: Mapping[str, Any], init_ms: Mapping[str, float | tuple[float, float]]
) -> dict[str, float]:
    """What a month costs with no calls at all (and nothing stored but the knowledge bucket's files), by line."""
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
            woken = sum(WAKE_OCU.values()) * HOURS_A_MONTH * p["opensearch_ocu_hour"]
            floor["OpenSearch OCUs (woken by the schedules)"] = woken
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
    floor["S3 storage (knowledge bucket)"] = KNOWLEDGE_BUCKET_GB * p["s3_storage_gb_month"]
    return floor


def monthly(
    case: Case,
    measured: Mapping[str, Any],
    calls_per_month: float,
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
    shape: Shape = SHAPES["bursts"],
    stored: float = 0.0,
) -> dict[str, float]:
    """A month's bill at ``calls_per_month`` calls of ``mix`` in ``shape``, with ``stored`` memories kept: the
    calls, the OCUs, the custom metrics the calls emit, the storage, and the idle floor's other lines."""
    bill: dict[str, float] = {}
    active = shape.active_seconds
    rates = {tool: calls_per_month * share / active for tool, share in mix.items()}
    for tool in mix:
        per_million = tool_per_million(
            case, measured, tool, calls_per_month, init_ms, mix=mix, high=high, shape=shape, stored=stored
        )
        bill[f"{tool} calls"] = sum(per_million.values()) * calls_per_month * mix[tool] / 1e6
    floor = idle_floor(case, measured, init_ms)
    if case.ocu_min is not None:
        floor_ocu = sum(v for k, v in floor.items() if k.startswith("OpenSearch OCUs"))
        ocus = ocu_month(case, calls_per_month, mix=mix, shape=shape, stored=stored, high=high)
        bill["OpenSearch OCUs"] = max(floor_ocu, ocus.dollars)
    record_rate = rates.get("memory_add", 0.0) * float(measured.get("indexerRecordsPerAdd", 1.0))
    indexer_rate = record_rate / records_per_indexer_invocation(case, record_rate)
    bill["CloudWatch custom metrics of the calls (EMF)"] = custom_metrics_month(
        measured, {**rates, "indexer": indexer_rate if "memory_add" in rates else 0.0}, active / SECONDS_A_MONTH
    )
    bill.update({k: v for k, v in floor.items() if not k.startswith(("OpenSearch OCUs", "OpenSearch storage"))})
    bill.update(storage_month(case, measured, stored))
    return bill


def agentcore_monthly(
    calls_per_month: float, mix: Mapping[str, float] = DEFAULT_MIX, stored_records: float = 0.0
) -> float:
    """AgentCore Memory for the same calls: an add is one short-term event, a search one long-term retrieval,
    and each memory kept one long-term record stored a month (``stored_records``: 0 is the lowest reading of
    its price). No floor; its extraction model is left out."""
    return (
        calls_per_month * mix.get("memory_add", 0.0) / 1000 * PRICES["agentcore_event_per_1k"]
        + calls_per_month * mix.get("memory_search", 0.0) / 1000 * PRICES["agentcore_retrieval_per_1k"]
        + stored_records / 1000 * PRICES["agentcore_record_month_per_1k"]
    )


# ---------------------------------------------------------------- the curve ---
def store_option(
    case: Case,
    measured: Mapping[str, Any],
    calls_per_month: float,
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    shape: Shape,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
) -> dict[str, Any]:
    """One vector store's month at a volume and shape: its bill by line, its total, and whether the template
    can deploy it (a collection that needs more indexing or search OCUs than OpenSearchMaxIndexingOcu or
    OpenSearchMaxSearchOcu allows cannot), with the parameters it needs beyond the case's (``parameters``)
    and, for a collection, both maxima to deploy (``maxIndexingOcu``, ``maxSearchOcu``)."""
    stored = stored_memories(calls_per_month, mix)
    bill = monthly(case, measured, calls_per_month, init_ms, mix=mix, high=high, shape=shape, stored=stored)
    option: dict[str, Any] = {"usd": sum(bill.values()), "feasible": True, "parameters": {}, "bill": bill}
    if case.ocu_min is not None:
        ocus = ocu_month(case, calls_per_month, mix=mix, shape=shape, stored=stored, high=high)
        option.update(
            awakeHours=ocus.awake_hours,
            indexingOcu=ocus.indexing,
            searchOcu=ocus.search,
            maxIndexingOcu=ocus.max_indexing,
            maxSearchOcu=ocus.max_search,
        )
        sized = (
            ("indexing", ocus.max_indexing, ocus.indexing, case.ocu_max[0], case.indexing_max_parameter),
            ("search", ocus.max_search, ocus.search, case.ocu_max[1], case.ocu_max_parameter),
        )
        for kind, maximum, needed, default, parameter in sized:
            name = parameter or f"OpenSearchMax{kind.capitalize()}Ocu"
            if maximum is None:
                # Past the template's AllowedValues: the maximum AWS would need (1, 2, 4, 8, 16, then multiples
                # of 16 up to 1,696) for a template that offered it.
                option["feasible"] = False
                option[f"neededMax{kind.capitalize()}Ocu"] = aws_maximum(needed)
            elif maximum > default:
                option["parameters"][name] = int(maximum)
    return option


def aws_maximum(needed: float) -> int | None:
    """The smallest collection-group OCU limit AWS accepts that is at least ``needed`` (None above 1,696)."""
    values = [1, 2, 4, 8, *range(16, 1697, 16)]
    return next((value for value in values if value >= needed), None)


def config_name(store: str, option: Mapping[str, Any]) -> str:
    """A config as docs/deploy.md names it: the VectorStore, and any parameter it needs beyond the defaults."""
    return ", ".join([store, *(f"{k}={v}" for k, v in option["parameters"].items())])


def recommend(options: Mapping[str, Mapping[str, Any]]) -> str:
    """The store docs/deploy.md recommends: the cheapest the template can deploy."""
    feasible = {store: option for store, option in options.items() if option["feasible"]}
    return min(feasible, key=lambda store: feasible[store]["usd"])


def curve(
    cases: Mapping[str, Case],
    measured: Mapping[str, Any],
    init_ms: Mapping[str, float | tuple[float, float]],
    *,
    volumes: Sequence[float] = CURVE_VOLUMES,
    shapes: Mapping[str, Shape] = SHAPES,
    mix: Mapping[str, float] = DEFAULT_MIX,
    high: bool = True,
    what_if: Mapping[str, Case] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """For each volume and shape, ``{calls_per_month, shape, stored_memories, config, parameters, mnemo_usd,
    agentcore_usd}``: the recommended config (its VectorStore and the parameters it needs beyond the defaults)
    and its month beside AgentCore's (with its record storage); and, apart, each store's month at that point
    (with a collection's OCU maxima to deploy). ``cases`` maps a VectorStore to its case; ``what_if`` cases (a design
    the adapter does not have) are priced beside them, never recommended."""
    points: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    for volume in volumes:
        stored = stored_memories(volume, mix)
        agentcore = agentcore_monthly(volume, mix, stored)
        for shape in shapes.values():
            options = {
                store: store_option(case, measured, volume, init_ms, shape=shape, mix=mix, high=high)
                for store, case in cases.items()
            }
            chosen = recommend(options)
            points.append(
                {
                    "calls_per_month": volume,
                    "shape": shape.name,
                    "stored_memories": round(stored),
                    "config": config_name(chosen, options[chosen]),
                    "parameters": {"VectorStore": chosen, **options[chosen]["parameters"]},
                    "mnemo_usd": round(options[chosen]["usd"], 2),
                    "agentcore_usd": round(agentcore, 2),
                }
            )
            details.append(
                {
                    "calls_per_month": volume,
                    "shape": shape.name,
                    "agentcoreLowestUsd": round(agentcore_monthly(volume, mix), 2),
                    "options": {store: _rounded(store, option) for store, option in options.items()},
                    "whatIf": {
                        name: _rounded(
                            name, store_option(case, measured, volume, init_ms, shape=shape, mix=mix, high=high)
                        )
                        for name, case in (what_if or {}).items()
                    },
                }
            )
    return points, details


def _rounded(store: str, option: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **{k: v for k, v in option.items() if k != "bill"},
        "usd": round(option["usd"], 2),
        "config": config_name(store, option),
        "bill": {line: round(amount, 4) for line, amount in option["bill"].items()},
    }


def repo_relative(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` relative to the repository's ``root`` (a committed result names no machine's folders)."""
    return os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")

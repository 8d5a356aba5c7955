"""The deployed stack's cost per call of memory_add and memory_search, measured from what the code sends.

    python bench/deploy_cost.py [--corpus 60] [--calls 20] [--smoke]

The real handlers run with template.yaml's settings (MNEMO_RECORDS=dynamodb,
MNEMO_VECTOR_INDEX=opensearch with service ``aoss``, MNEMO_EMBEDDER=titan...):
``mnemo.entry.apigw`` handles API Gateway REST proxy events (payload 1.0,
IAM caller), DynamoDB runs on a moto server (the tests' serial one), the
OpenSearch API on osmem-server (k-NN searches, which osmem lacks, are answered
here with the documented faiss inner-product scores over the stored vectors),
and Titan InvokeModel is answered by a botocore hook with deterministic vectors
and AWS's documented 4.7 characters per token as ``inputTextTokenCount``.

Each Lambda function gets its own ``Services`` (its own warm container): the
memory_add function, the memory_search function and the stream indexer. After
each add, the table's stream records since the last one are read from moto's
stream, filtered by the indexer's FilterCriteria from template.yaml, and
handed to the indexer as a DynamoDB Streams event (its documented shape).

Counted per call (bench/cost_meter.py): DynamoDB requests by API and the read
and write units they spend as DynamoDB bills them, Titan calls and tokens,
Converse calls, OpenSearch requests by kind, the handler's own CPU time, and the
bytes it logs. A first ("cold") call of each function is reported apart from the
warm average of --calls calls. Prices (PRICES, with their sources) turn the
counts into dollars per million calls by line item, the fixed monthly floor, the
comparison with AgentCore Memory, and the distance from $5 per million calls.
The environment is Globals.Function.Environment of template.yaml with its intrinsic functions
(!If, !Ref, !Sub, !FindInMap...) evaluated for the parameters' defaults (the rehearsal's Resolver,
tests/support/rehearsal_template.py), the run's table, bucket and endpoints standing for the stack's resources.
Writes bench/results/deploy_cost.json and prints tables. --smoke: a corpus of 5 and 3 calls of each tool,
the same path (results to a temporary folder, bench/common.py).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from cost_meter import Meter, OpenSearchMeter, Tally

from common import RESULTS, parse_args, table, write_results

# Lambda's own variables: the observability module logs to stdout (CloudWatch) only inside Lambda.
for _variable, _value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_LAMBDA_FUNCTION_NAME": "mnemo-dev-memory_add",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
}.items():
    os.environ.setdefault(_variable, _value)

import aws_fixtures  # noqa: E402
from aws_fixtures import REGION, create_records_table, shared_moto_server  # noqa: E402
from rehearsal_template import Resolver  # noqa: E402

from aws_events import FakeLambdaContext, rest_event  # noqa: E402
from mnemo.tools import cloudformation_yaml  # noqa: E402

# --------------------------------------------------------------- prices ---
#: US East (N. Virginia) list prices, without free tiers. Each figure's source is the stored copy
#: read with the project's search tool on 2026-11-26 (the publication date of the page where it
#: shows one); "unconfirmed" where no AWS page in that store gave the number.
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
    "lambda_request_per_million": 0.20,
    "lambda_arm_gb_second": 0.0000133334,
    # DynamoDB on-demand after the 50% cut of November 1, 2024: $0.625 per million write request
    # units, $0.125 per million read request units: https://airbyte.com/data-engineering-resources/dynamodb-pricing
    # (2025-07-21) and https://www.jusdb.com/blog/dynamodb-cost-optimization-a-comprehensive-guide-by-jusdb
    # (2025-08-19: "Effective November 1, 2024 ... on-demand throughput costs reduced by 50%"). Pages
    # written before the cut show $1.25 and $0.25. The unit rules are AWS's own:
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ (stored without its price table).
    "dynamodb_wru_per_million": 0.625,
    "dynamodb_rru_per_million": 0.125,
    # Titan Text Embeddings V2: $0.02 per million input tokens on Amazon Bedrock, as OpenRouter
    # passes it through "with no markup on the provider's price":
    # https://openrouter.ai/amazon/titan-embed-text-v2/providers (2026). Unconfirmed on an AWS page:
    # https://aws.amazon.com/bedrock/pricing/ was stored without the model table.
    "titan_v2_per_1k_tokens": 0.00002,
    # OpenSearch Serverless: $0.24 per OCU-hour, $0.024 per GB-month of managed storage:
    # https://cloudburn.io/blog/amazon-opensearch-pricing ("US East (N. Virginia) rates from the
    # official OpenSearch pricing page as of March 2026") and https://awsnegotiations.com/opensearch-serverless-cost
    # (February 2026). Minimum OCUs: docs.aws.amazon.com serverless-scaling, see OCU_FLOOR.
    "opensearch_ocu_hour": 0.24,
    "opensearch_storage_gb_month": 0.024,
    # CloudWatch Logs: $0.50 per GB ingested (standard class), $0.03 per GB-month stored:
    # https://hykell.com/kb/platform-specific-guides/aws-cloudwatch-logs-pricing ("in standard
    # regions like us-east-1") and https://www.factualminds.com/blog/amazon-cloudwatch-pricing-metrics-logs-alarms-dashboards/
    "cloudwatch_logs_ingest_gb": 0.50,
    "cloudwatch_logs_storage_gb_month": 0.03,
    # CloudWatch: $0.10 per standard-resolution alarm a month (https://c3x.dev/resources/aws/aws_cloudwatch_metric_alarm),
    # $0.30 per custom metric a month, first 10,000 (https://signoz.io/guides/cloudwatch-pricing, 2026-02-15);
    # https://aws.amazon.com/cloudwatch/pricing/ was stored without these figures.
    "cloudwatch_alarm_month": 0.10,
    "cloudwatch_custom_metric_month": 0.30,
    # X-Ray: $5.00 per million traces recorded (first 100,000 a month free): AWS's page,
    # https://aws.amazon.com/de/xray/pricing/ ("5 USD pro Million"). The default sampling rule
    # records the first request each second and 5% of the rest:
    # https://awsnegotiations.com/x-ray-pricing-strategy.html
    "xray_trace_per_million": 5.00,
    # AgentCore Memory: $0.25 per 1,000 new short-term memory events, $0.50 per 1,000 long-term memory
    # retrievals, $0.75 per 1,000 long-term records a month (built-in strategies). Third-party copies
    # of https://aws.amazon.com/bedrock/agentcore/pricing/ (not itself stored):
    # https://www.factualminds.com/blog/amazon-bedrock-agentcore-pricing-12-components/ (2026-06-13)
    # and an AgentCore cost guide at http://brick-house.org/960d063e-4af9-4fcf-ad6c-5d7790c91c52?page=8
    "agentcore_event_per_1k": 0.25,
    "agentcore_retrieval_per_1k": 0.50,
    "agentcore_record_month_per_1k": 0.75,
}

#: Vector collection minimum OCUs (indexing + search): 0.5 + 0.5 with standby replicas DISABLED,
#: 1 + 1 (0.5 x 2 each) ENABLED. "Managing capacity limits for Amazon OpenSearch Serverless",
#: https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-scaling.html
#: (stored copies docs.aws.amazon.com/zh_cn/... and docs.amazonaws.cn/en_us/...), and the AWS Big
#: Data Blog on half OCUs: https://aws.amazon.com/blogs/big-data/amazon-opensearch-serverless-cost-effective-search-capabilities-at-any-scale
OCU_FLOOR = {"DISABLED": 1.0, "ENABLED": 2.0}
HOURS_A_MONTH = 730

#: Lambda gives a function one vCPU at 1,769 MB and CPU in proportion below that
#: (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). The handler's own CPU
#: time measured here (one core of this machine taken as one vCPU) is scaled by 1769 / MemorySize.
FULL_VCPU_MB = 1769
#: In-region service latency per request, ms (low, high): assumptions, not measured here (moto and
#: osmem answer in-process or on loopback). Titan's is an embedding of a short text.
LATENCY_MS = {"dynamodb": (4.0, 10.0), "bedrock-runtime": (30.0, 100.0), "opensearch": (15.0, 50.0)}
#: Share of invocations that pay a cold start at the high end, and the goal per million calls.
COLD_SHARE_HIGH = 0.02
GOAL_PER_MILLION = 5.0
#: Lambda platform lines per invocation in the Text log format (template.yaml sets no LogFormat).
PLATFORM_LINES = (
    "START RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72 Version: $LATEST\n"
    "END RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72\n"
    "REPORT RequestId: 52fdfc07-2182-154f-163f-5f0f9a621d72\tDuration: 123.45 ms\tBilled Duration: 124 ms\t"
    "Memory Size: 512 MB\tMax Memory Used: 118 MB\t\n"
    "XRAY TraceId: 1-674a1b2c-0123456789abcdef01234567\tSegmentId: 0123456789abcdef\tSampled: true\t\n"
)

WORDS = [
    "deploy",
    "pipeline",
    "review",
    "budget",
    "invoice",
    "customer",
    "meeting",
    "roadmap",
    "incident",
    "database",
    "index",
    "latency",
    "schema",
    "migration",
    "release",
    "sprint",
    "backlog",
    "design",
    "interview",
    "hiring",
    "onboarding",
    "contract",
    "vendor",
    "audit",
    "alert",
    "dashboard",
    "metric",
    "report",
    "quarter",
    "forecast",
    "pricing",
    "launch",
    "feedback",
    "survey",
    "support",
    "ticket",
    "refund",
    "shipment",
    "warehouse",
    "inventory",
    "supplier",
    "cache",
    "queue",
    "worker",
    "cluster",
    "region",
    "failover",
    "backup",
]


# ------------------------------------------------------------ the stack ---
@functools.cache
def load_template() -> dict[str, Any]:
    """template.yaml, read once per run (libyaml reads it where PyYAML has it: mnemo.tools.cloudformation_yaml)."""
    return cloudformation_yaml.load_template((aws_fixtures.ROOT / "template.yaml").read_text())


# create_records_table reads the table's schema from the template: from this run's copy too.
aws_fixtures.load_template = load_template


def template_environment(table_name: str, opensearch_url: str) -> dict[str, str]:
    """Globals.Function.Environment.Variables of template.yaml, every parameter at its default, with this
    run's table, bucket and OpenSearch endpoint in place of the stack's resources."""
    template = load_template()
    resolver = Resolver(
        template,
        parameters={},  # every parameter at its default
        refs={"RecordsTable": table_name, "KnowledgeBucket": table_name},
        attributes={"VectorCollection.CollectionEndpoint": opensearch_url},
    )
    variables = resolver.resolve(template["Globals"]["Function"]["Environment"]["Variables"])
    environment = {name: str(value) for name, value in variables.items()}  # AWS::NoValue ones are gone
    environment["MNEMO_RECORDS_TABLE"] = table_name  # the run's own table, not mnemo-records-<Stage>
    environment["MNEMO_AWS_ENDPOINT"] = shared_moto_server().url
    environment["MNEMO_AWS_REGION"] = REGION
    return environment


def function_settings(name: str) -> dict[str, Any]:
    resources = load_template()["Resources"]
    memory = int(load_template()["Globals"]["Function"]["MemorySize"])
    for resource in resources.values():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and str(properties.get("CodeUri", "")).rstrip(
            "/"
        ).endswith(name):
            return {"memoryMb": int(properties.get("MemorySize", memory)), "properties": properties}
    raise KeyError(name)


def stream_filter() -> dict[str, Any]:
    indexer = function_settings("indexer")["properties"]
    stream = indexer["Events"]["RecordsStream"]["Properties"]
    pattern = json.loads(stream["FilterCriteria"]["Filters"][0]["Pattern"])
    return {"pattern": pattern, "batchSize": int(stream["BatchSize"])}


def matches(pattern: Any, value: Any) -> bool:
    """EventBridge-style matching, as Lambda event filtering uses it: exact values and ``prefix``."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(matches(sub, value.get(key)) for key, sub in pattern.items())
    return any(
        (
            isinstance(option, dict)
            and "prefix" in option
            and isinstance(value, str)
            and value.startswith(option["prefix"])
        )
        or option == value
        for option in pattern
    )


class Stack:
    """DynamoDB on moto, OpenSearch on osmem, one Services per Lambda function, and the meter on all of them."""

    def __init__(self, table_name: str) -> None:
        import boto3
        from osmem_server import OsmemServer

        from mnemo.runtime import Services
        from mnemo.settings import Settings

        server = shared_moto_server()
        self.dynamodb = server.client("dynamodb")  # setup and peeking: not metered
        create_records_table(self.dynamodb, table_name)
        self.table = table_name
        self.streams = boto3.client(
            "dynamodbstreams",
            region_name=REGION,
            endpoint_url=server.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.stream_arn = self.dynamodb.describe_table(TableName=table_name)["Table"]["LatestStreamArn"]
        self._iterators: dict[str, str] = {}
        self.osmem = OsmemServer.start()
        environment = template_environment(table_name, self.osmem.url)
        os.environ.update({k: v for k, v in environment.items() if k.startswith("POWERTOOLS_")})
        os.environ["AWS_DEFAULT_REGION"] = REGION
        self.environment = environment
        self.meter = Meter(self._peek)
        self.search_meter = OpenSearchMeter(self.meter, knn=self._knn)
        self.services: dict[str, Services] = {}
        for function in ("memory_add", "memory_search", "indexer"):
            settings = Settings.from_env(environment).model_copy(
                update={"data_dir": Path(tempfile.mkdtemp(prefix=f"mnemo-cost-{function}-"))}
            )
            services = Services(settings)
            self.meter.attach(services.records.client)  # type: ignore[attr-defined]
            self.meter.attach(services.embedder.client)  # type: ignore[attr-defined]
            self.search_meter.attach(services.index.client)  # type: ignore[attr-defined]
            self.services[function] = services
        self._plain = None

    def close(self) -> None:
        self.meter.detach()
        self.osmem.close()

    # -- what the meter needs ----------------------------------------------
    def _peek(self, table_name: str, key: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.dynamodb.get_item(TableName=table_name, Key=key, ConsistentRead=True).get(
            "Item"
        )
        return found

    def _knn(self, index: str, body: dict[str, Any]) -> dict[str, Any]:
        """A k-NN search answered from the stored vectors with faiss's inner-product score."""
        from opensearchpy import OpenSearch

        from mnemo.adapters.aws.opensearch.scoring import score_from_cosine

        if self._plain is None:
            self._plain = OpenSearch(hosts=[self.osmem.url])
        knn = body["query"]["knn"]["vector"]
        clauses = (knn.get("filter") or {}).get("bool", {}).get("filter", [])
        query = {"bool": {"filter": clauses}} if clauses else {"match_all": {}}
        found = self._plain.search(index=index, body={"size": 10_000, "query": query})
        query_vector = knn["vector"]
        hits = []
        for hit in found["hits"]["hits"]:
            vector = hit["_source"].get("vector") or []
            cosine = sum(a * b for a, b in zip(query_vector, vector, strict=False))
            source = {name: hit["_source"].get(name) for name in body.get("_source", [])}
            hits.append({"_index": index, "_id": hit["_id"], "_score": score_from_cosine(cosine), "_source": source})
        hits.sort(key=lambda hit: -hit["_score"])
        top = hits[: int(knn["k"])]
        return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(top)}, "hits": top}}

    # -- calls ----------------------------------------------------------------
    def new_stream_records(self) -> list[dict[str, Any]]:
        """Stream records written since the last call, read on from where the last read stopped.

        Lambda's own reads of the stream are free, so these are not metered.
        """
        records: list[dict[str, Any]] = []
        description = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in description["Shards"]:
            iterator = (
                self._iterators.get(shard["ShardId"])
                or self.streams.get_shard_iterator(
                    StreamArn=self.stream_arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
                )["ShardIterator"]
            )
            while True:
                page = self.streams.get_records(ShardIterator=iterator, Limit=1000)
                records += page["Records"]
                iterator = page.get("NextShardIterator") or iterator
                if not page["Records"]:
                    break
            self._iterators[shard["ShardId"]] = iterator
        return records


@contextmanager
def captured_stdout() -> Iterator[list[int]]:
    """Bytes written to file descriptors 1 and 2 inside the block: in Lambda both reach CloudWatch Logs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile() as sink:
        for fd in saved:
            os.dup2(sink.fileno(), fd)
        size: list[int] = []
        try:
            yield size
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            size.append(sink.seek(0, os.SEEK_END))


def run_handler(
    stack: Stack, function: str, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """One invocation of ``function``: its answer and what it cost (a fresh tally for the call)."""
    from mnemo.runtime import set_services

    set_services(stack.services[function])
    before = _snapshot(stack.meter.tallies[function])
    with stack.meter.attributed(function), captured_stdout() as logged:
        cpu, wall = time.thread_time(), time.perf_counter()
        answer = handler(event, FakeLambdaContext())
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    delta = _difference(stack.meter.tallies[function], before)
    return answer, {**delta, "cpuMs": cpu * 1000, "wallMs": wall * 1000, "logBytes": logged[0]}


def _snapshot(tally: Tally) -> dict[str, Any]:
    return {
        "requests": Counter(tally.requests),
        "rru": tally.rru,
        "rruStrong": tally.rru_strong,
        "wru": tally.wru,
        "titanCalls": tally.titan_calls,
        "titanTokens": tally.titan_tokens,
        "converseCalls": tally.converse_calls,
    }


def _difference(tally: Tally, before: dict[str, Any]) -> dict[str, Any]:
    now = _snapshot(tally)
    requests = now["requests"] - before["requests"]
    return {
        "requests": dict(requests),
        **{
            key: now[key] - before[key]
            for key in ("rru", "rruStrong", "wru", "titanCalls", "titanTokens", "converseCalls")
        },
    }


# ------------------------------------------------------------- workload ---
#: The stub's word-hashing vectors score far below Titan's for related texts, so no result would reach
#: the default threshold (0.7) and nothing would be read back; 0 lets every candidate through, so the
#: counts are those of a search that fills its page (limit 10: one BatchGetItem of up to 20 keys).
SEARCH_THRESHOLD = 0.0
IAM_CALLER = {
    "sourceIp": "203.0.113.10",
    "userArn": "arn:aws:iam::123456789012:user/carol",
    "accountId": "123456789012",
}


def memory_text(rng: random.Random, n: int) -> str:
    """A memory an agent would keep: a dated sentence or two, about 200-400 characters."""
    topic = rng.sample(WORDS, 6)
    return (
        f"Note {n}: the {topic[0]} {topic[1]} for the {topic[2]} team moved to {rng.randint(2, 28)} March; "
        f"{topic[3]} owners asked that the {topic[4]} {topic[5]} be checked before each release, and the "
        f"customer prefers a short weekly summary by email rather than a call. Budget line {rng.randint(100, 999)}."
    )


def query_text(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3))


def tool_call(stack: Stack, tool: str, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    from mnemo.entry.apigw import tool_handler

    handlers = _HANDLERS.setdefault(tool, tool_handler(tool))
    answer, cost = run_handler(stack, tool, handlers, rest_event(tool, body, authorizer=None, identity=IAM_CALLER))
    if answer["statusCode"] != 200:
        raise RuntimeError(f"{tool} answered {answer['statusCode']}: {answer['body']}")
    return json.loads(answer["body"]), cost


_HANDLERS: dict[str, Any] = {}


def index_new_records(stack: Stack, batch_size: int) -> list[dict[str, Any]]:
    """Hand the stream records since the last call to the indexer, as Lambda would: filtered, in batches."""
    from mnemo.entry.indexer import handler

    pattern = stream_filter()["pattern"]
    records = [r for r in stack.new_stream_records() if matches(pattern, r)]
    costs = []
    for start in range(0, len(records), batch_size):
        batch = [{**r, "eventSourceARN": stack.stream_arn} for r in records[start : start + batch_size]]
        answer, cost = run_handler(stack, "indexer", handler, {"Records": batch})
        if answer.get("batchItemFailures"):
            raise RuntimeError(f"the indexer reported failures: {answer}")
        costs.append({**cost, "records": len(batch)})
    return costs


def measure(corpus: int, calls: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    stack = Stack(f"mnemo-cost-{int(time.time())}")
    batch_size = stream_filter()["batchSize"]
    try:
        first_add = tool_call(stack, "memory_add", {"content": memory_text(rng, 0)})[1]
        first_index = index_new_records(stack, batch_size)
        first_search = tool_call(stack, "memory_search", {"query": query_text(rng)})[1]
        for n in range(1, corpus):  # the user's memories, so that searches find some
            tool_call(stack, "memory_add", {"content": memory_text(rng, n)})
            index_new_records(stack, batch_size)
        adds, index_runs, searches, results = [], [], [], []
        for n in range(calls):
            adds.append(tool_call(stack, "memory_add", {"content": memory_text(rng, corpus + n)})[1])
            index_runs += index_new_records(stack, batch_size)
        for _ in range(calls):
            # threshold 0: every candidate passes, so a full page is read back (see SEARCH_THRESHOLD).
            found, cost = tool_call(stack, "memory_search", {"query": query_text(rng), "threshold": SEARCH_THRESHOLD})
            searches.append(cost)
            results.append(len(found["results"]))
        from mnemo.entry.indexer import handler as indexer_handler

        drain = run_handler(
            stack, "indexer", indexer_handler, {"source": "aws.events", "detail-type": "Scheduled Event"}
        )[1]
    finally:
        stack.close()
    return {
        "corpus": corpus,
        "calls": calls,
        "firstCall": {"memory_add": first_add, "indexer": first_index, "memory_search": first_search},
        "memory_add": average(adds),
        "indexer": average(index_runs),
        "indexerInvocationsPerAdd": len(index_runs) / calls,
        "memory_search": average(searches),
        "searchResultsMean": statistics.mean(results),
        "drain": drain,
        "batchSize": batch_size,
    }


def average(costs: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(costs)
    requests: Counter[str] = Counter()
    for cost in costs:
        requests.update(cost["requests"])
    numeric = [key for key in costs[0] if key != "requests"]
    mean = {key: sum(cost[key] for cost in costs) / count for key in numeric}
    mean["requests"] = {name: value / count for name, value in sorted(requests.items())}
    mean["cpuMsP50"] = statistics.median(cost["cpuMs"] for cost in costs)
    return mean


# ---------------------------------------------------------------- money ---
def service_of(request: str) -> str:
    return request.split(":", 1)[0]


def duration_ms(cost: dict[str, Any], memory_mb: int, *, high: bool, init_ms: float) -> float:
    """Lambda billed time for one invocation: CPU scaled to the function's share of a vCPU, plus waiting."""
    scaled = cost["cpuMs"] * FULL_VCPU_MB / memory_mb
    waiting = sum(
        count * LATENCY_MS[service_of(name)][1 if high else 0]
        for name, count in cost["requests"].items()
        if service_of(name) in LATENCY_MS
    )
    cold = COLD_SHARE_HIGH * init_ms * FULL_VCPU_MB / memory_mb if high else 0.0
    return scaled + waiting + cold


def line_items(
    tool: str, measured: dict[str, Any], memory_mb: int, init_ms: float, indexer_mb: int
) -> dict[str, tuple[float, float]]:
    """Dollars per million calls of ``tool`` by line item, as (low, high)."""
    p = PRICES
    cost = measured[tool]
    items: dict[str, tuple[float, float]] = {}
    items["API Gateway REST"] = (p["apigw_rest_per_million"],) * 2
    invocations = (1.0, 1.0)
    gb_seconds = [
        memory_mb / 1024 * duration_ms(cost, memory_mb, high=h, init_ms=init_ms) / 1000 for h in (False, True)
    ]
    rru, wru = cost["rru"], cost["wru"]
    tokens, log_bytes = cost["titanTokens"], cost["logBytes"] + len(PLATFORM_LINES)
    if tool == "memory_add":
        indexer = measured["indexer"]
        per_record = {
            key: indexer[key] / indexer["records"] for key in ("rru", "wru", "titanTokens", "cpuMs", "logBytes")
        }
        per_record["requests"] = {name: value / indexer["records"] for name, value in indexer["requests"].items()}
        records_per_add = measured["indexerInvocationsPerAdd"] * indexer["records"]
        batch = measured["batchSize"]
        # Low: full batches of BatchSize records; high: one record per invocation (quiet traffic).
        invocations = (1.0 + records_per_add / batch, 1.0 + records_per_add)
        for n, high in enumerate((False, True)):
            waiting_cost = dict(per_record, cpuMs=per_record["cpuMs"])
            gb_seconds[n] += (
                records_per_add
                * indexer_mb
                / 1024
                * (duration_ms(waiting_cost, indexer_mb, high=high, init_ms=init_ms) / 1000)
            )
        rru += records_per_add * per_record["rru"]
        wru += records_per_add * per_record["wru"]
        tokens += records_per_add * per_record["titanTokens"]
        log_bytes += records_per_add * per_record["logBytes"] + (invocations[1] - 1.0) * len(PLATFORM_LINES)
    items["Lambda requests"] = tuple(n * p["lambda_request_per_million"] for n in invocations)  # type: ignore[assignment]
    items["Lambda GB-seconds"] = (
        gb_seconds[0] * p["lambda_arm_gb_second"] * 1e6,
        gb_seconds[1] * p["lambda_arm_gb_second"] * 1e6,
    )
    items["DynamoDB writes"] = (wru * p["dynamodb_wru_per_million"],) * 2
    items["DynamoDB reads"] = (rru * p["dynamodb_rru_per_million"],) * 2
    items["Titan tokens"] = (tokens * 1e6 / 1000 * p["titan_v2_per_1k_tokens"],) * 2
    items["CloudWatch Logs"] = (log_bytes * 1e6 / 2**30 * p["cloudwatch_logs_ingest_gb"],) * 2
    # X-Ray: 5% sampled at sustained traffic, every request when under one request a second.
    items["X-Ray traces"] = (0.05 * p["xray_trace_per_million"], p["xray_trace_per_million"])
    items["OpenSearch Serverless"] = (0.0, 0.0)  # inside the OCU floor; see the floor table
    return items


def fixed_floor(measured: dict[str, Any], init_ms: float) -> dict[str, dict[str, float]]:
    """Monthly costs that do not depend on calls."""
    template = load_template()
    alarms = sum(1 for r in template["Resources"].values() if r.get("Type") == "AWS::CloudWatch::Alarm")
    drains = 30.4 * 24 * 12  # the indexer's rate(5 minutes) PendingDrain schedule
    syncs = 30.4 * 24 * 4  # KnowledgeSyncFunction's default rate(15 minutes)
    drain = measured["drain"]
    memory_mb = function_settings("indexer")["memoryMb"]
    drain_gbs = memory_mb / 1024 * duration_ms(drain, memory_mb, high=True, init_ms=init_ms) / 1000
    scheduled = (
        (drains + syncs) * PRICES["lambda_request_per_million"] / 1e6
        + drains * drain_gbs * PRICES["lambda_arm_gb_second"]
        + drains * drain["rru"] * PRICES["dynamodb_rru_per_million"] / 1e6
    )
    common = {"CloudWatch alarms": alarms * PRICES["cloudwatch_alarm_month"], "scheduled drains and syncs": scheduled}
    return {
        replicas: {
            "OpenSearch Serverless OCUs": OCU_FLOOR[replicas] * HOURS_A_MONTH * PRICES["opensearch_ocu_hour"],
            **common,
        }
        for replicas in ("DISABLED", "ENABLED")
    } | {"_counts": {"alarms": float(alarms), "scheduledInvocations": drains + syncs}}


def levers(items: dict[str, dict[str, tuple[float, float]]], measured: dict[str, Any]) -> list[list[Any]]:
    """What each change would save per million calls (low-end figures), computed from the line items."""
    rows = []
    for tool, lines in items.items():
        saving = {
            "HTTP API instead of REST": PRICES["apigw_rest_per_million"] - PRICES["apigw_http_per_million"],
            "X-Ray off (or a 1% rule)": lines["X-Ray traces"][0],
            "logs at WARN (no INFO lines)": lines["CloudWatch Logs"][0]
            * measured[tool]["logBytes"]
            / (measured[tool]["logBytes"] + len(PLATFORM_LINES)),
            "MemorySize 256 MB (I/O-bound: same waiting)": lines["Lambda GB-seconds"][0] / 2
            - _cpu_share(lines, measured, tool),
            "eventually consistent reads": measured[tool]["rruStrong"] / 2 * PRICES["dynamodb_rru_per_million"],
        }
        if tool == "memory_add" and measured[tool]["requests"].get("dynamodb:DeleteItem"):
            # The index outbox marker: a transactional put (2 units) and its delete (1) on every add.
            saving["outbox marker only when the inline index write fails"] = 3 * PRICES["dynamodb_wru_per_million"]
        for name, dollars in saving.items():
            rows.append([tool, name, round(dollars, 3)])
    return rows


def _cpu_share(lines: dict[str, tuple[float, float]], measured: dict[str, Any], tool: str) -> float:
    """At half the memory the CPU part of the duration doubles: what that gives back (low end)."""
    memory_mb = function_settings(tool)["memoryMb"]
    cost = measured[tool]
    cpu_gbs = memory_mb / 1024 * cost["cpuMs"] * FULL_VCPU_MB / memory_mb / 1000
    return cpu_gbs / 2 * PRICES["lambda_arm_gb_second"] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=int, default=60, help="memories added before the measured calls")
    parser.add_argument("--calls", type=int, default=20, help="measured calls of each tool")
    args = parse_args(parser, {"corpus": 5, "calls": 3})

    measured = measure(args.corpus, args.calls)
    cold = json.loads((RESULTS / "cold-start.json").read_text()) if (RESULTS / "cold-start.json").exists() else {}
    init_ms = float(cold.get("medians", {}).get("memory_add", {}).get("import", 250.0))
    memory = {tool: function_settings(tool)["memoryMb"] for tool in ("memory_add", "memory_search", "indexer")}

    print(f"Per call (warm mean of {args.calls}; the indexer per invocation):")
    rows = []
    for phase in ("memory_add", "indexer", "memory_search"):
        cost = measured[phase]
        requests = ", ".join(f"{name} {count:g}" for name, count in cost["requests"].items())
        rows.append(
            [
                phase,
                requests,
                f"{cost['wru']:.2f}",
                f"{cost['rru']:.2f}",
                f"{cost['titanCalls']:g}",
                f"{cost['titanTokens']:.0f}",
                f"{cost['cpuMs']:.1f}",
                f"{cost['logBytes']:.0f}",
            ]
        )
    print(table(["function", "requests", "WRU", "RRU", "Titan calls", "tokens", "CPU ms", "log B"], rows))
    print(
        f"indexer invocations per add (batches of 1 here): {measured['indexerInvocationsPerAdd']:.2f}; "
        f"search results per call: {measured['searchResultsMean']:.1f}"
    )
    for phase, cost in measured["firstCall"].items():
        cost = cost[0] if isinstance(cost, list) else cost
        print(f"first call, {phase}: " + ", ".join(f"{n} {c:g}" for n, c in cost["requests"].items()))

    items = {
        tool: line_items(tool, measured, memory[tool], init_ms, memory["indexer"])
        for tool in ("memory_add", "memory_search")
    }
    print("\nDollars per million calls (low / high):")
    names = list(items["memory_add"])
    rows = [[name] + [f"{items[t][name][0]:.2f} / {items[t][name][1]:.2f}" for t in items] for name in names]
    totals = {t: (sum(v[0] for v in items[t].values()), sum(v[1] for v in items[t].values())) for t in items}
    rows.append(["total"] + [f"{totals[t][0]:.2f} / {totals[t][1]:.2f}" for t in items])
    rows.append(
        [
            "AgentCore Memory",
            f"{PRICES['agentcore_event_per_1k'] * 1000:.2f}",
            f"{PRICES['agentcore_retrieval_per_1k'] * 1000:.2f}",
        ]
    )
    rows.append(
        [f"distance from ${GOAL_PER_MILLION:.0f}"]
        + [f"{totals[t][0] - GOAL_PER_MILLION:+.2f} / {totals[t][1] - GOAL_PER_MILLION:+.2f}" for t in items]
    )
    print(table(["line item", "memory_add", "memory_search"], rows))

    floor = fixed_floor(measured, init_ms)
    counts = floor.pop("_counts")
    print("\nFixed monthly floor:")
    rows = [[name] + [f"{floor[r][name]:.2f}" for r in floor] for name in floor["DISABLED"]]
    rows.append(["total"] + [f"{sum(floor[r].values()):.2f}" for r in floor])
    print(table(["item", "standby replicas DISABLED", "ENABLED"], rows))

    lever_rows = levers(items, measured)
    print("\nLevers (saving per million calls, low end):")
    print(table(["tool", "change", "$ saved"], lever_rows))

    path = write_results(
        "deploy_cost",
        {
            "measured": measured,
            "memoryMb": memory,
            "initMs": init_ms,
            "prices": PRICES,
            "latencyMs": LATENCY_MS,
            "perMillion": {t: {k: list(v) for k, v in items[t].items()} for t in items},
            "totals": {t: list(v) for t, v in totals.items()},
            "floor": floor,
            "floorCounts": counts,
            "levers": lever_rows,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

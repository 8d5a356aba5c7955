"""The deployed stack's cost per call of memory_add (plain, keyed and dated) and memory_search, measured from
what the code sends, and what a month costs by volume and traffic shape beside AgentCore Memory.

    python bench/deploy_cost.py [--corpus 60] [--calls 20] [--smoke]

The real handlers run with template.yaml's settings (MNEMO_RECORDS=dynamodb,
MNEMO_VECTOR_INDEX=opensearch with service ``aoss``, MNEMO_EMBEDDER=titan...):
``mnemo.entry.apigw`` handles API Gateway REST proxy events (payload 1.0,
IAM caller), DynamoDB runs on a moto server (the tests' serial one), the
OpenSearch API on osmem-server behind a stand-in that answers the k-NN searches
osmem lacks with the documented faiss inner-product scores over the stored
vectors, and Titan InvokeModel on a stand-in with deterministic vectors and AWS's
documented 4.7 characters per token as ``inputTextTokenCount``. Both stand-ins
serve HTTP from threads of their own (bench/stand_ins.py), and the meter does its
accounting (the peeks that size a write) on a thread of its own: the handler's
CPU time (``time.thread_time``) holds what it does against AWS, signing and HTTP
exchanges included, and nothing of the bench's.

Each Lambda function gets its own ``Services`` (its own warm container): the
memory_add function, the memory_search function and the stream indexer. After
each add, the table's stream records since the last one are read from moto's
stream, filtered by the indexer's FilterCriteria from template.yaml, and
handed to the indexer as a DynamoDB Streams event (its documented shape).

Counted per call (bench/cost_meter.py): DynamoDB requests by API and the read
and write units they spend as DynamoDB bills them, Titan calls and tokens,
Converse calls, OpenSearch requests by kind, the handler's own CPU time, the
bytes it logs and the custom metrics its EMF documents define. A first ("cold")
call of each function is measured apart from the warm average of --calls calls.
Besides the plain memory_add and memory_search, two kinds of memory_add are
measured the same way (cost_model.ADD_PHASES), after the searches: ``memory_add
keyed`` (an ``idempotencyKey``, each call a new one) and ``memory_add dated``
(an ``occurredAt``, each call the same day as the one before, so that it
follows another). The k-NN searches each call sends are counted one by one
(an _msearch holds several): S3 Vectors sends one QueryVectors each.
One scheduled drain of the indexer and one scheduled knowledge sync run too, each
with nothing to do (whether they touch OpenSearch decides whether they wake a
collection that scales to zero). After the calls, the table is scanned (not
metered) for the bytes it keeps a memory: its storage and point-in-time recovery.

The money is bench/cost_model.py's: it reads from template.yaml, resolved for each
case (CASES: Stage dev with every other parameter at its default, Stage prod, and
the defaults with VectorStore=s3vectors), the API that serves the tools, tracing,
MemorySize and logging configuration, the alarms and their metrics, the collection
group's minimum and maximum, point-in-time recovery, the schedules and the polled
queues, and turns the counts into dollars per million calls by line item at 1
million calls a month (each measured phase), the idle floor, the hours a collection
stays awake under each traffic shape, and the curve: for 10 thousand to 100 million
calls a month and each shape (an even trickle, business hours, bursts; half plain
adds, half searches), the month of each vector store with the memories stored at
that volume, the config docs/deploy.md recommends (the cheapest the template can
deploy, with the OpenSearchMaxIndexingOcu and OpenSearchMaxSearchOcu it needs), and
AgentCore Memory's bill with its record storage; then the issue's goals with a
pass/fail column (each phase at most $5 per million, the idle floors, the curve). The
S3 Vectors case keeps the measured counts and swaps the OpenSearch requests for
the S3 Vectors requests its adapter is designed to send (cost_model.s3vectors_counts).
The environment is Globals.Function.Environment of template.yaml (and each
function's own) with its intrinsic functions evaluated for the parameters'
defaults (the rehearsal's Resolver, tests/support/rehearsal_template.py), the
run's table, bucket and endpoints standing for the stack's resources.

Writes bench/results/deploy_cost.json (its paths relative to the repository) and
the plot (--plot, default docs/deploy-cost.png), and prints tables. --smoke: a
corpus of 5 and 3 calls of each tool, the same path (results and the plot to a
temporary folder, bench/common.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import random
import statistics
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import cost_model
from cost_meter import Meter, Tally, item_size, opensearch_kind
from cost_model import DEFAULT_INIT_MS
from stand_ins import TitanServer

from common import RESULTS, parse_args, results_dir, table, write_results

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
from rehearsal_stage import OpenSearchStandIn  # noqa: E402
from rehearsal_template import Resolver  # noqa: E402

from aws_events import FakeLambdaContext, rest_event  # noqa: E402
from mnemo.adapters.aws.clients import aws_client  # noqa: E402
from mnemo.adapters.aws.titan import TitanEmbedder  # noqa: E402
from mnemo_codegen import cloudformation_yaml  # noqa: E402

#: The repository: the JSON names its files relative to it.
ROOT = Path(__file__).resolve().parents[1]
#: Where the plot goes by default (committed under docs/, referenced from docs/deploy.md).
DEFAULT_PLOT = ROOT / "docs" / "deploy-cost.png"
#: The cases: Stage dev with every other parameter at its default (the template's defaults), Stage prod, and
#: the defaults with VectorStore=s3vectors (the template's other vector store; the model drops the collection
#: where the template does not yet have the parameter).
CASES = {"dev": {}, "prod": {"Stage": "prod"}, "s3vectors": {"VectorStore": "s3vectors"}}
#: The case of each vector store on the curve: the template's defaults with that store.
CURVE_CASES = {"opensearch": "dev", "s3vectors": "s3vectors"}
#: A design the S3 Vectors adapter may take, priced beside the curve (never recommended): an index a tenant.
WHAT_IF = f"s3vectors, indexes of <= {cost_model.WHAT_IF_INDEX_VECTORS / 1e6:g}M vectors"
#: SnapStart for the functions behind the API (docs/deploy.md, "SnapStart"), priced by ``snapstart_option``:
#: with it a tool's permission names its alias, which ``cost_model.derive_case`` does not follow.
SNAPSTART = {"SnapStart": "on"}
#: Parameters whose cost the run also prints, each from Stage=dev's defaults.
OPTIONS = [
    {"Tracing": "Active"},
    {"ApiType": "REST"},
    {"Alarms": "on"},
    {"OpenSearchScaleToZero": "off"},
    {"ExtractionStrategies": "all"},
    SNAPSTART,
]
#: Lambda SnapStart for Python, US East (N. Virginia), one rate for both architectures: $0.0000015046 per GB-second
#: a version's snapshot stays cached (from its publication while the version exists, at least 3 hours) and
#: $0.0001397998 per GB restored at each cold start, the GB being the function's memory. AWS's Lambda pricing page,
#: "SnapStart Pricing" and its worked example (1 GB cached 2,678,400 s: $4.03; 74,400 restores of 1 GB: $10.40),
#: https://aws.amazon.com/lambda/pricing/ as stored in the project's search tool (read 2026-12-02); the same two
#: rates are the Price List's SnapStart SKUs (us-east-1, October 2025). With SnapStart the function's INIT runs once,
#: when the version is published, and a cold start restores the snapshot instead (docs/deploy.md, "SnapStart").
SNAPSTART_PRICES = {"cache_gb_second": 0.0000015046, "restore_gb": 0.0001397998}

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
    """template.yaml, read once per run (libyaml reads it where PyYAML has it: mnemo_codegen.cloudformation_yaml)."""
    return cloudformation_yaml.load_template((aws_fixtures.ROOT / "template.yaml").read_text())


# create_records_table reads the table's schema from the template: from this run's copy too.
aws_fixtures.load_template = load_template


def template_environment(table_name: str, opensearch_url: str, function: str | None = None) -> dict[str, str]:
    """Globals.Function.Environment.Variables of template.yaml (and ``function``'s own), every parameter at its
    default, with this run's table, bucket and OpenSearch endpoint in place of the stack's resources."""
    template = load_template()
    resolver = Resolver(
        template,
        parameters={},  # every parameter at its default
        refs={"RecordsTable": table_name, "KnowledgeBucket": table_name},
        attributes={"VectorCollection.CollectionEndpoint": opensearch_url},
    )
    variables = dict(template["Globals"]["Function"]["Environment"]["Variables"])
    if function is not None:
        own = function_settings(function)["properties"].get("Environment") or {}
        variables.update(own.get("Variables") or {})
    resolved = resolver.resolve(variables)
    environment = {name: str(value) for name, value in resolved.items()}  # AWS::NoValue ones are gone
    environment["MNEMO_RECORDS_TABLE"] = table_name  # the run's own table, not mnemo-records-<Stage>
    environment["MNEMO_AWS_ENDPOINT"] = shared_moto_server().url
    environment["MNEMO_AWS_REGION"] = REGION
    return environment


def function_settings(name: str) -> dict[str, Any]:
    resources = load_template()["Resources"]
    for resource in resources.values():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and str(properties.get("CodeUri", "")).rstrip(
            "/"
        ).endswith("/" + name):
            return {"properties": properties}
    raise KeyError(name)


def stream_filter() -> dict[str, Any]:
    indexer = function_settings("indexer")["properties"]
    stream = indexer["Events"]["RecordsStream"]["Properties"]
    patterns = [json.loads(f["Pattern"]) for f in stream["FilterCriteria"]["Filters"]]  # a record passes any one
    return {"patterns": patterns, "batchSize": int(stream["BatchSize"])}


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

    def __init__(self, table_name: str, application_log_level: str | None = None) -> None:
        import boto3
        from osmem_server import OsmemServer

        from mnemo.adapters.aws.bootstrap import ensure_bucket

        server = shared_moto_server()
        self.dynamodb = server.client("dynamodb")  # setup and peeking: not metered
        create_records_table(self.dynamodb, table_name)
        ensure_bucket(server.client("s3"), table_name, REGION)  # the knowledge bucket of the scheduled sync
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
        # Titan and the k-NN searches osmem lacks are answered over HTTP from threads of their own
        # (bench/stand_ins.py): the handler's CPU time holds what it does against AWS, and nothing of theirs.
        self.meter = Meter(self._peek, answer_titan=False, offload=True)
        self.titan = TitanServer(self.meter.count_titan)
        self.search = OpenSearchStandIn(self.osmem.url, self._count_search)
        environment = template_environment(table_name, self.search.url)
        os.environ.update({k: v for k, v in environment.items() if k.startswith("POWERTOOLS_")})
        os.environ["AWS_DEFAULT_REGION"] = REGION
        if application_log_level:  # Lambda's JSON log format filters the application's lines (Powertools reads it)
            os.environ["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
            os.environ["AWS_LAMBDA_LOG_LEVEL"] = application_log_level
        # Settings and Services after the environment is set: the observability module reads it on import.
        from mnemo.runtime import Services
        from mnemo.settings import Settings

        self.environment = environment
        self.services: dict[str, Services] = {}
        for function in ("memory_add", "memory_search", "indexer", "knowledge_sync"):
            own = template_environment(table_name, self.search.url, function)
            settings = Settings.from_env(own).model_copy(
                update={"data_dir": Path(tempfile.mkdtemp(prefix=f"mnemo-cost-{function}-"))}
            )
            services = Services(settings)
            self.meter.attach(services.records.client)  # type: ignore[attr-defined]
            services.__dict__["embedder"] = TitanEmbedder(
                partial(aws_client, "bedrock-runtime", REGION, self.titan.url),
                model_id=settings.titan_model_id,
                dimensions=settings.titan_dimensions,
            )
            self.meter.attach(services.embedder.client)  # type: ignore[attr-defined]
            if function == "knowledge_sync":
                self.meter.attach(services.blobs.client)  # type: ignore[attr-defined]
            self.services[function] = services

    def close(self) -> None:
        self.meter.detach()
        self.titan.close()
        self.search.close()
        self.osmem.close()

    def _count_search(self, method: str, path: str, body: bytes | None, searches: int) -> None:
        """A request the OpenSearch stand-in served, counted in the phase of the call waiting on it."""
        route = path.split("?", 1)[0]
        kind = ("msearch k-NN" if route.rstrip("/").endswith("_msearch") else "search k-NN") if searches else None
        self.meter.tally.requests[f"opensearch:{kind or opensearch_kind(method, route, body)}"] += 1

    @property
    def knn_searches(self) -> int:
        """k-NN searches answered so far (an _msearch holds several): S3 Vectors sends one QueryVectors each."""
        return self.search.knn_searches

    # -- what the meter needs ----------------------------------------------
    def _peek(self, table_name: str, key: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.dynamodb.get_item(TableName=table_name, Key=key, ConsistentRead=True).get(
            "Item"
        )
        return found

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
def captured_stdout() -> Iterator[list[bytes]]:
    """What is written to file descriptors 1 and 2 inside the block: in Lambda both reach CloudWatch Logs."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile() as sink:
        for fd in saved:
            os.dup2(sink.fileno(), fd)
        written: list[bytes] = []
        try:
            yield written
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            sink.seek(0)
            written.append(sink.read())


def emf_metrics(logged: bytes) -> list[str]:
    """The custom metrics the EMF documents among ``logged`` lines define: namespace, name and dimension set,
    as CloudWatch bills them (one metric per name and set of dimension values)."""
    found: set[str] = set()
    for line in logged.decode(errors="replace").splitlines():
        if '"_aws"' not in line:
            continue
        try:
            document = json.loads(line)
        except ValueError:
            continue
        for directive in document.get("_aws", {}).get("CloudWatchMetrics", []):
            for dimensions in directive.get("Dimensions", []):
                values = ",".join(f"{name}={document.get(name)}" for name in dimensions)
                for metric in directive.get("Metrics", []):
                    found.add(f"{directive.get('Namespace')}/{metric['Name']}[{values}]")
    return sorted(found)


def run_handler(
    stack: Stack, function: str, handler: Callable[[dict[str, Any], Any], Any], event: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """One invocation of ``function``: its answer and what it cost (a fresh tally for the call)."""
    from mnemo.runtime import set_services

    set_services(stack.services[function])
    before = _snapshot(stack.meter.tallies[function])
    searches = stack.knn_searches
    with stack.meter.attributed(function), captured_stdout() as logged:
        cpu, wall = time.thread_time(), time.perf_counter()
        answer = handler(event, FakeLambdaContext())
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    delta = _difference(stack.meter.tallies[function], before)
    return answer, {
        **delta,
        "knnSearches": stack.knn_searches - searches,
        "cpuMs": cpu * 1000,
        "wallMs": wall * 1000,
        "logBytes": len(logged[0]),
        "emf": emf_metrics(logged[0]),
    }


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

    patterns = stream_filter()["patterns"]
    records = [r for r in stack.new_stream_records() if any(matches(pattern, r) for pattern in patterns)]
    costs = []
    for start in range(0, len(records), batch_size):
        batch = [{**r, "eventSourceARN": stack.stream_arn} for r in records[start : start + batch_size]]
        answer, cost = run_handler(stack, "indexer", handler, {"Records": batch})
        if answer.get("batchItemFailures"):
            raise RuntimeError(f"the indexer reported failures: {answer}")
        costs.append({**cost, "records": len(batch)})
    return costs


#: The day of the dated adds (``occurredAt``): the phase's adds all fall on it, each after the one before.
DATED_DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def measure(corpus: int, calls: int, seed: int = 7, application_log_level: str | None = None) -> dict[str, Any]:
    """The counts of each measured phase: --corpus plain adds first (unmeasured but the first), then --calls
    plain adds and --calls searches; after them (so that the searches' counts are those of plain memories)
    --calls keyed adds (each a new ``idempotencyKey``) and --calls dated adds (``occurredAt`` on DATED_DAY, each
    following the one before; one unmeasured dated add opens the day), each with the indexer runs its stream
    records bring; then the schedules."""
    rng = random.Random(seed)
    stack = Stack(f"mnemo-cost-{int(time.time())}", application_log_level)
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
        table_bytes = stored_bytes(stack)  # plain memories, as the curve's adds are
        phases: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        keyed: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
        for n in range(calls):
            body = {"content": memory_text(rng, corpus + calls + n), "idempotencyKey": f"cost-run-{n}"}
            keyed[0].append(tool_call(stack, "memory_add", body)[1])
            keyed[1].extend(index_new_records(stack, batch_size))
        phases["memory_add keyed"] = keyed
        dated: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
        opening = {"content": memory_text(rng, corpus + 2 * calls), "occurredAt": DATED_DAY.isoformat()}
        tool_call(stack, "memory_add", opening)  # the day's first: the measured adds each follow another
        index_new_records(stack, batch_size)
        for n in range(calls):
            moment = DATED_DAY + timedelta(seconds=n + 1)
            if moment.date() != DATED_DAY.date():
                raise ValueError("too many dated calls for one day")
            body = {"content": memory_text(rng, corpus + 2 * calls + 1 + n), "occurredAt": moment.isoformat()}
            dated[0].append(tool_call(stack, "memory_add", body)[1])
            dated[1].extend(index_new_records(stack, batch_size))
        phases["memory_add dated"] = dated
        scheduled = measure_schedules(stack)
    finally:
        stack.close()
    measured = {
        "corpus": corpus,
        "calls": calls,
        "firstCall": {"memory_add": first_add, "indexer": first_index, "memory_search": first_search},
        "memory_add": average(adds),
        # An add whose inline index write succeeded may hand the indexer nothing (the stream filter).
        "indexer": average(index_runs) if index_runs else {**NO_INVOCATION, "records": 1.0},
        "indexerInvocationsPerAdd": len(index_runs) / calls,
        "indexerRecordsPerAdd": sum(run["records"] for run in index_runs) / calls,
        "memory_search": average(searches),
        **{phase: average(costs) for phase, (costs, _) in phases.items()},
        # The indexer's runs each kind of add brings (none when its inline index write succeeded).
        "indexerOf": {
            phase: {
                "indexer": average(runs) if runs else {**NO_INVOCATION, "records": 1.0},
                "recordsPerAdd": sum(run["records"] for run in runs) / calls,
                "invocationsPerAdd": len(runs) / calls,
            }
            for phase, (_, runs) in phases.items()
        },
        "searchResultsMean": statistics.mean(results),
        "scheduled": scheduled,
        "batchSize": batch_size,
        # What the table keeps a memory (its items, DynamoDB's 100 bytes of overhead each): storage and PITR.
        "dynamodbBytesPerMemory": table_bytes / (corpus + calls),
    }
    emitted = {"memory_add": adds, "indexer": index_runs, "memory_search": searches}
    emitted |= {phase: costs for phase, (costs, _) in phases.items()}
    measured["emf"] = {
        phase: sorted({metric for cost in costs for metric in cost["emf"]}) for phase, costs in emitted.items()
    } | {f"scheduled:{function}": cost["emf"] for function, cost in scheduled.items()}
    return measured


def stored_bytes(stack: Stack) -> float:
    """The bytes the table bills storage for (each item's size by DynamoDB's rules plus 100 bytes of index
    overhead), read with a scan that is not metered: the memories the run added and what they brought."""
    total = 0.0
    for page in stack.dynamodb.get_paginator("scan").paginate(TableName=stack.table):
        total += sum(item_size(item) + 100 for item in page["Items"])
    return total


#: The counts of a function that did not run.
NO_INVOCATION: dict[str, Any] = {
    "requests": {},
    "rru": 0.0,
    "rruStrong": 0.0,
    "wru": 0.0,
    "titanCalls": 0.0,
    "titanTokens": 0.0,
    "converseCalls": 0.0,
    "knnSearches": 0.0,
    "cpuMs": 0.0,
    "cpuMsP50": 0.0,
    "wallMs": 0.0,
    "logBytes": 0.0,
}

SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def measure_schedules(stack: Stack) -> dict[str, dict[str, Any]]:
    """One scheduled invocation of each function with a schedule, with nothing to do, in a warm container
    (a first one is not counted): the index outbox empty, the knowledge files already synced (one tenant
    with one ADR, which the run lists and does not read again)."""
    from mnemo.entry.indexer import handler as indexer_handler
    from mnemo.entry.sync_events import handler as sync_handler

    run_handler(stack, "indexer", indexer_handler, dict(SCHEDULED_EVENT))  # a warm container: not its first call
    drain = run_handler(stack, "indexer", indexer_handler, dict(SCHEDULED_EVENT))[1]
    from sample_knowledge import ADR, ADR_ID

    stack.services["knowledge_sync"].repository.push(
        "123456789012", f"company/{ADR_ID}.md", ADR.encode(), author="bench", message="a"
    )
    run_handler(stack, "knowledge_sync", sync_handler, dict(SCHEDULED_EVENT))  # the first sync indexes the file
    sync = run_handler(stack, "knowledge_sync", sync_handler, dict(SCHEDULED_EVENT))[1]
    return {"indexer": drain, "knowledge_sync": sync}


def average(costs: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(costs)
    requests: Counter[str] = Counter()
    for cost in costs:
        requests.update(cost["requests"])
    numeric = [key for key in costs[0] if key not in ("requests", "emf")]
    mean = {key: sum(cost[key] for cost in costs) / count for key in numeric}
    mean["requests"] = {name: value / count for name, value in sorted(requests.items())}
    mean["cpuMsP50"] = statistics.median(cost["cpuMs"] for cost in costs)
    return mean


# ---------------------------------------------------------------- money ---
def snapstart_functions(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, int]:
    """Logical id -> MemorySize of each function whose version SnapStart caches with ``parameters``: those whose
    ``SnapStart`` property applies to published versions, among the functions these parameters deploy."""
    resolver = cost_model.TemplateResolver(template, parameters=dict(parameters), refs={}, attributes={})
    default = (template.get("Globals", {}).get("Function") or {}).get("MemorySize", 128)
    found: dict[str, int] = {}
    for logical_id, resource in template["Resources"].items():
        properties = resource.get("Properties") or {}
        if resource.get("Type") != "AWS::Serverless::Function" or "SnapStart" not in properties:
            continue
        if "Condition" in resource and not resolver.condition(resource["Condition"]):
            continue
        snapstart = resolver.resolve(properties["SnapStart"])
        if isinstance(snapstart, dict) and snapstart.get("ApplyOn") == "PublishedVersions":
            found[logical_id] = int(resolver.resolve(properties.get("MemorySize", default)))
    return found


def snapstart_cache_month(memory_mb: dict[str, int]) -> float:
    """A month of cached snapshots: one live version of each function, cached all month (a deploy replaces it:
    the new one is billed from its publication, the old one no longer once deleted)."""
    gigabytes = sum(memory / 1024 for memory in memory_mb.values())
    return gigabytes * cost_model.SECONDS_A_MONTH * SNAPSTART_PRICES["cache_gb_second"]


def snapstart_per_million(
    case: cost_model.Case,
    tool: str,
    calls_per_month: float,
    init_ms: dict[str, tuple[float, float]],
    *,
    mix: dict[str, float] = cost_model.DEFAULT_MIX,
    shape: cost_model.Shape = cost_model.SHAPES["bursts"],
) -> dict[str, float]:
    """What SnapStart changes in a million calls of ``tool``, by line: each cold start of its function (as many as
    ``cost_model.tool_per_million`` counts) restores the snapshot, billed per GB of its memory, and runs no INIT
    (billed as duration since August 1, 2025: cost_model.PRICES). The first call's extra over a warm one stays
    (what the handler does lazily: its clients, its connections). Left out: the billed restore duration (loading
    the runtime and the after-restore hooks), which nothing here measures."""
    memory = case.memory_mb[tool]
    share = mix.get(tool, 0.0)
    rate = calls_per_month * share / shape.active_seconds
    seconds = shape.session_seconds if shape.bursts else 0.0
    cold = cost_model.cold_share(rate, shape.session_calls * share, seconds) * 1e6
    phase, _ = init_ms[tool]
    init_gb_seconds = memory / 1024 * cost_model.cold_start_ms((phase, 0.0), memory) / 1000
    return {
        "SnapStart restores": cold * memory / 1024 * SNAPSTART_PRICES["restore_gb"],
        "Lambda INIT (cold starts)": -cold * init_gb_seconds * cost_model.PRICES["lambda_arm_gb_second"],
    }


def snapstart_option(
    template: dict[str, Any],
    case: cost_model.Case,
    reference: float,
    init_ms: dict[str, tuple[float, float]],
) -> dict[str, float]:
    """The options table's SnapStart row from ``case`` (Stage=dev's defaults): per million calls of each tool at
    ``reference`` calls a month, and the idle floor (the month's cached snapshots)."""
    row = {tool: sum(snapstart_per_million(case, tool, reference, init_ms).values()) for tool in cost_model.TOOLS}
    row["idle floor"] = snapstart_cache_month(snapstart_functions(template, {**case.parameters, **SNAPSTART}))
    return row


def init_durations(memory: dict[str, int], api: str) -> tuple[dict[str, tuple[float, float]], str]:
    """What a cold start adds to an invocation, by function: (INIT ms, the first call's extra ms over a warm
    one), both on one vCPU of this machine. From the built-artifact measurement of bench/cold_start.py for the
    API that serves the tools (cold-start-built-<api>.json: import; first call - warm call; medians), else
    cold-start.json's in-process import and first call, else DEFAULT_INIT_MS. The indexer and the sync are
    taken to cost what memory_add does."""
    found: dict[str, tuple[float, float]] = {}
    source = f"{DEFAULT_INIT_MS:.0f} ms (stated; no bench/results/cold-start*.json)"
    built = RESULTS / f"cold-start-built-{api.lower()}.json"
    if built.exists():
        functions = json.loads(built.read_text()).get("functions", {})
        for tool in cost_model.TOOLS:
            medians = (functions.get(tool) or {}).get("medians") or {}
            if "import" in medians:
                extra = float(medians.get("first", 0.0)) - float(medians.get("warm", 0.0))
                found[tool] = (float(medians["import"]), max(0.0, extra))
        if found:
            source = f"bench/results/{built.name} (built artifact, medians: import; first call - warm call)"
    plain = RESULTS / "cold-start.json"
    if not found and plain.exists():
        medians = json.loads(plain.read_text()).get("medians", {})
        for tool in cost_model.TOOLS:
            figures = medians.get(tool) or {}
            if "import" in figures:
                found[tool] = (float(figures["import"]), float(figures.get("first", 0.0)))
        if found:
            source = "bench/results/cold-start.json (in process, medians: import; first call)"
    default = found.get("memory_add", (DEFAULT_INIT_MS, 0.0))
    return {function: found.get(function, default) for function in memory}, source


def dollars(value: float) -> str:
    return f"{value:,.2f}" if value < 1000 else f"{value:,.0f}"


#: The plot's colour for each traffic shape.
SHAPE_COLOURS = {"trickle": "tab:blue", "business": "tab:orange", "bursts": "tab:green"}


def curve_assumptions(measured: dict[str, Any]) -> list[str]:
    """What the curve assumes, in the words written beside the plot (and in the JSON)."""
    m = cost_model
    return [
        "calls: half memory_add (plain: no key, no date), half memory_search",
        f"stored memories = adds a month x {m.RETENTION_MONTHS} months "
        f"({m.stored_memories(1_000_000):,.0f} at 1M calls); AgentCore bills each as a record",
        "AgentCore: $0.25/1k events (adds), $0.50/1k retrievals (searches), $0.75/1k records a month, no floor",
        "Mnemo: template defaults (Stage=dev) with the recommended VectorStore: the cheapest it can deploy",
        f"OpenSearch: asleep after {m.SCALE_TO_ZERO_IDLE_SECONDS // 60} min idle; awake >= "
        f"{m.WAKE_OCU['search']:g} search + {m.WAKE_OCU['indexing']:g} indexing OCU, "
        f"{m.SEARCH_OCU_PER_MILLION_MEMORIES[1]:g} search OCU per million memories, 1 OCU per "
        f"{m.OCU_CALLS_PER_SECOND['indexing']:g} adds or searches a second; both maxima raised to hold it; "
        "$0.24/OCU-hour",
        f"S3 Vectors: memories in one index (a query processes every stored memory); "
        f"{m.S3VECTORS_QUERIES_PER_SEARCH} QueryVectors a search, "
        f"{_add_queries(measured):g} an add; PUT billed >= {m.S3VECTORS_PUT_MIN_BYTES // 1024} KB",
        f"storage: DynamoDB {measured.get('dynamodbBytesPerMemory', m.DEFAULT_DYNAMODB_BYTES_PER_MEMORY):,.0f} B "
        "a memory (measured) with PITR; the collection or S3 Vectors; the knowledge bucket",
        "us-east-1 list prices, no free tiers; sources in docs/deploy.md",
    ]


def _add_queries(measured: dict[str, Any]) -> float:
    """QueryVectors a plain add sends on S3 Vectors (its near-duplicate check's k-NN searches)."""
    swapped = cost_model.s3vectors_counts(measured)
    return float(swapped["memory_add"]["requests"].get("s3vectors:QueryVectors", 0.0))


def plot(
    volumes: list[float],
    series: dict[str, dict[str, list[float | None]]],
    agentcore: dict[str, list[float]],
    points: list[dict[str, Any]],
    notes: list[str],
    path: Path,
) -> None:
    """The month by volume: each shape's recommended config (and each store, faint), AgentCore with and
    without its record storage, the curve's points, and the assumptions in a panel beside the plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (axes, side) = plt.subplots(1, 2, figsize=(13, 6), gridspec_kw={"width_ratios": [2.1, 1]})
    widths = {"trickle": 3.6, "business": 2.4, "bursts": 1.4}  # the trickle's line shows under the others
    for shape, lines in series.items():
        colour = SHAPE_COLOURS.get(shape)
        for store, style in (("opensearch", "-."), ("s3vectors", ":")):
            values = [float("nan") if v is None else v for v in lines[store]]
            axes.plot(volumes, values, style, color=colour, linewidth=0.9, alpha=0.45)
        width = widths.get(shape, 2.0)
        axes.plot(volumes, lines["recommended"], "-", color=colour, linewidth=width, label=f"Mnemo, {shape}")
        chosen = [p for p in points if p["shape"] == shape]
        axes.plot([p["calls_per_month"] for p in chosen], [p["mnemo_usd"] for p in chosen], "o", color=colour)
    axes.plot(volumes, agentcore["records"], "--", color="black", linewidth=1.8, label="AgentCore Memory")
    axes.plot(volumes, agentcore["lowest"], ":", color="grey", linewidth=1.4, label="AgentCore, no record storage")
    axes.plot([], [], "-.", color="grey", linewidth=0.9, label="(faint) VectorStore=opensearch")
    axes.plot([], [], ":", color="grey", linewidth=0.9, label="(faint) VectorStore=s3vectors")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("calls a month")
    axes.set_ylabel("US$ a month (us-east-1 list prices)")
    axes.set_title("A month of Mnemo (recommended vector store) and of AgentCore Memory, by traffic shape", fontsize=10)
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend(loc="upper left", fontsize=8)
    side.axis("off")
    side.text(
        0.0,
        1.0,
        # "$" would start matplotlib's math text.
        "Assumptions\n\n"
        + "\n".join(f"- {textwrap.fill(n, 46, subsequent_indent='  ')}" for n in notes).replace("$", r"\$"),
        va="top",
        fontsize=8,
        family="monospace",
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def _maxima(option: dict[str, Any]) -> str:
    """A collection's OCU maxima to deploy, "indexing + search" ("cannot" past the template's largest)."""
    if "maxSearchOcu" not in option:
        return "-"
    if not option["feasible"]:
        return "cannot"
    return f"{option['maxIndexingOcu']:g} + {option['maxSearchOcu']:g}"


def _count_row(label: str, cost: dict[str, Any], emf: Any) -> list[Any]:
    """One row of the counts table: what one call (or one scheduled run) sends and spends."""
    requests = ", ".join(f"{name} {count:g}" for name, count in cost["requests"].items())
    return [
        label,
        requests or "none",
        f"{cost['wru']:.2f}",
        f"{cost['rru']:.2f}",
        f"{cost['titanCalls']:g}",
        f"{cost['titanTokens']:.0f}",
        f"{cost.get('knnSearches', 0):g}",
        f"{cost['cpuMs']:.1f}",
        f"{cost['logBytes']:.0f}",
        len(emf),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=int, default=60, help="memories added before the measured calls")
    parser.add_argument("--calls", type=int, default=20, help="measured calls of each tool")
    parser.add_argument(
        "--plot",
        type=Path,
        default=None,
        help=f"where to write the plot (default {DEFAULT_PLOT}; in smoke mode or with $MNEMO_BENCH_RESULTS, "
        "the results folder)",
    )
    args = parse_args(parser, {"corpus": 5, "calls": 3})
    # Results sent elsewhere (smoke mode, $MNEMO_BENCH_RESULTS) leave the documented plot alone too.
    plot_path = args.plot or (DEFAULT_PLOT if results_dir() == RESULTS else results_dir() / "deploy-cost.png")

    template = load_template()
    cases = {name: cost_model.derive_case(template, name, parameters) for name, parameters in CASES.items()}
    dev = cases["dev"]
    measured = measure(args.corpus, args.calls, application_log_level=dev.application_log_level)
    init_ms, init_source = init_durations(dev.memory_mb, dev.api["memory_add"])

    print("What the template says (resolved for each case):")
    rows = []
    for case in cases.values():
        rows.append(
            [
                case.name,
                "/".join(sorted(set(case.api.values()))),
                ", ".join(f"{f} {'on' if t else 'off'}" for f, t in case.tracing.items() if f in ("memory_add",)),
                ", ".join(f"{f} {m}" for f, m in case.memory_mb.items()),
                f"{len(case.alarm_metrics)} / {sum(case.alarm_metrics.values())}",
                "none" if case.ocu_min is None else f"{case.ocu_min[0]:g} + {case.ocu_min[1]:g}",
                "none" if case.ocu_min is None else f"{case.ocu_max[0]:g} + {case.ocu_max[1]:g}",
                ", ".join(f"{f} {n:,.0f}" for f, n in case.schedules.items()),
                ", ".join(case.polled_queues) or "none",
                case.application_log_level or "-",
                ", ".join(f"{f} {b}" for f, b in case.platform_log_bytes.items() if f == "memory_add"),
            ]
        )
    print(
        table(
            [
                "case",
                "API",
                "tracing",
                "MemorySize MB",
                "alarms / metrics",
                "min OCU",
                "max OCU",
                "schedules a month",
                "SQS polled",
                "app log level",
                "platform log B",
            ],
            rows,
        )
    )

    print(f"\nPer call (warm mean of {args.calls}; the indexer per invocation, one add's records a batch here):")
    rows = [
        _count_row(phase, measured[phase], measured["emf"][phase])
        for phase in ("memory_add", "indexer", "memory_search", *cost_model.ADD_PHASES)
    ]
    rows += [
        _count_row(f"{function} (schedule)", cost, cost["emf"]) for function, cost in measured["scheduled"].items()
    ]
    print(
        table(
            ["phase", "requests", "WRU", "RRU", "Titan calls", "tokens", "k-NN searches", "CPU ms", "log B", "EMF"],
            rows,
        )
    )
    print(
        f"stream records the indexer's filter passes per add: {measured['indexerRecordsPerAdd']:.2f} "
        f"(indexer invocations per add here: {measured['indexerInvocationsPerAdd']:.2f}); "
        + "; ".join(f"{phase}: {own['recordsPerAdd']:.2f}" for phase, own in measured["indexerOf"].items())
        + f"; search results per call: {measured['searchResultsMean']:.1f}"
    )
    woken = [f for f, c in measured["scheduled"].items() if any(n.startswith("opensearch:") for n in c["requests"])]
    print("scheduled invocations with nothing to do touch OpenSearch: " + (", ".join(woken) if woken else "none"))
    print(
        f"cold start: {init_source}: "
        + ", ".join(f"{f} {phase:.0f} + {first:.0f} ms" for f, (phase, first) in init_ms.items())
    )

    reference = 1_000_000
    stored = cost_model.stored_memories(reference)
    phases = cost_model.PHASES
    per_million = {
        name: {
            phase: cost_model.tool_per_million(case, measured, phase, reference, init_ms, stored=stored)
            for phase in phases
        }
        for name, case in cases.items()
    }
    print(
        f"\nDollars per million calls at {reference:,} calls a month (half adds, half searches; a keyed or dated add "
        f"priced as every add of the mix; {stored:,.0f} memories stored), high-latency end:"
    )
    totals = {c: {t: sum(per_million[c][t].values()) for t in phases} for c in cases}
    for name in cases:
        items = list(dict.fromkeys(n for phase in phases for n in per_million[name][phase]))
        rows = [[n] + [dollars(per_million[name][t].get(n, 0.0)) for t in phases] for n in items]
        rows.append(["total"] + [dollars(totals[name][t]) for t in phases])
        print(f"{name}:")
        print(table(["line item", *phases], rows))
    low = {
        c: {
            t: sum(
                cost_model.tool_per_million(
                    cases[c], measured, t, reference, init_ms, high=False, stored=stored
                ).values()
            )
            for t in phases
        }
        for c in cases
    }
    print("low-latency end: " + "; ".join(f"{c} {t} {dollars(low[c][t])}" for c in cases for t in phases))

    bills = {
        name: cost_model.monthly(case, measured, reference, init_ms, stored=stored) for name, case in cases.items()
    }
    print(f"\nA month at {reference:,} calls (half each, bursts, {stored:,.0f} memories stored):")
    items = list(dict.fromkeys(item for bill in bills.values() for item in bill))
    rows = [[item] + [dollars(bills[c].get(item, 0.0)) for c in cases] for item in items]
    rows.append(["total"] + [dollars(sum(bills[c].values())) for c in cases])
    print(table(["item", *list(cases)], rows))

    floors = {name: cost_model.idle_floor(case, measured, init_ms) for name, case in cases.items()}
    print("\nIdle floor (a month with no calls):")
    items = list(dict.fromkeys(item for floor in floors.values() for item in floor))
    rows = [[item] + [dollars(floors[c].get(item, 0.0)) for c in cases] for item in items]
    rows.append(["total"] + [dollars(sum(floors[c].values())) for c in cases])
    print(table(["item", *list(cases)], rows))

    print("\nHours a scale-to-zero collection is awake a month, by traffic shape:")
    rows = [
        [shape.label] + [f"{cost_model.awake_seconds(shape, v) / 3600:,.0f}" for v in cost_model.CURVE_VOLUMES]
        for shape in cost_model.SHAPES.values()
    ]
    print(table(["shape"] + [f"{v:,}" for v in cost_model.CURVE_VOLUMES], rows))

    store_cases = {store: cases[name] for store, name in CURVE_CASES.items()}
    what_if = {
        WHAT_IF: dataclasses.replace(cases["s3vectors"], s3vectors_index_vectors=cost_model.WHAT_IF_INDEX_VECTORS)
    }
    points, options = cost_model.curve(store_cases, measured, init_ms, what_if=what_if)
    print("\nThe curve: the recommended config's month beside AgentCore's (with its record storage):")
    rows = []
    for point, detail in zip(points, options, strict=True):
        by_store = detail["options"]
        rows.append(
            [
                f"{point['calls_per_month']:,}",
                point["shape"],
                f"{point['stored_memories']:,}",
                point["config"],
                _maxima(by_store.get("opensearch", {})),
                dollars(point["mnemo_usd"]),
                dollars(point["agentcore_usd"]),
                dollars(detail["agentcoreLowestUsd"]),
            ]
            + [dollars(by_store[s]["usd"]) + ("" if by_store[s]["feasible"] else " (cannot)") for s in by_store]
            + [dollars(detail["whatIf"][WHAT_IF]["usd"])]
            + ["yes" if point["mnemo_usd"] < point["agentcore_usd"] else "NO"]
        )
    print(
        table(
            [
                "calls a month",
                "shape",
                "stored",
                "config",
                "opensearch OCU maxima (indexing + search)",
                "Mnemo",
                "AgentCore",
                "AgentCore, no records",
                *store_cases,
                WHAT_IF,
                "cheaper",
            ],
            rows,
        )
    )
    notes = curve_assumptions(measured)
    dense = [10 ** (4 + k / 8) for k in range(33)]  # 10 thousand to 100 million, 8 points a decade
    series: dict[str, dict[str, list[float | None]]] = {}
    for shape in cost_model.SHAPES.values():
        lines: dict[str, list[float | None]] = {name: [] for name in [*store_cases, "recommended"]}
        for volume in dense:
            found = {
                store: cost_model.store_option(case, measured, volume, init_ms, shape=shape)
                for store, case in store_cases.items()
            }
            for store, priced in found.items():
                lines[store].append(priced["usd"] if priced["feasible"] else None)
            lines["recommended"].append(found[cost_model.recommend(found)]["usd"])
        series[shape.name] = lines
    agentcore = {
        "records": [cost_model.agentcore_monthly(v, stored_records=cost_model.stored_memories(v)) for v in dense],
        "lowest": [cost_model.agentcore_monthly(v) for v in dense],
    }
    plot(dense, series, agentcore, points, notes, plot_path)
    print(f"wrote {plot_path}")

    print("\nWhat a parameter changes, from Stage=dev's defaults (per million calls at 1M a month; idle floor):")
    rows = []
    for parameters in OPTIONS:
        if not set(parameters) <= set(template.get("Parameters", {})):
            continue  # a parameter this template does not have
        if parameters == SNAPSTART:
            snapstart = snapstart_option(template, dev, reference, init_ms)
            deltas = [*(snapstart[tool] for tool in cost_model.TOOLS), snapstart["idle floor"]]
            rows.append(["SnapStart=on"] + [f"{d:+.2f}" for d in deltas])
            continue
        option = cost_model.derive_case(template, "option", parameters)
        changed = [
            sum(cost_model.tool_per_million(option, measured, tool, reference, init_ms, stored=stored).values())
            - totals["dev"][tool]
            for tool in cost_model.TOOLS
        ]
        floor = sum(cost_model.idle_floor(option, measured, init_ms).values()) - sum(floors["dev"].values())
        rows.append([", ".join(f"{k}={v}" for k, v in parameters.items())] + [f"{d:+.2f}" for d in [*changed, floor]])
    print(table(["parameters", "memory_add", "memory_search", "idle floor a month"], rows))
    parameter_rows = rows

    goal = cost_model.GOAL_PER_MILLION
    goals = [  # the template's defaults; the S3 Vectors calls are in the per-call table above
        [
            f"{phase}, $ per million at 1M calls a month (defaults)",
            dollars(totals["dev"][phase]),
            f"<= {goal:.2f}",
            "pass" if totals["dev"][phase] <= goal else "FAIL",
        ]
        for phase in phases
    ]
    goals += [
        [
            f"idle floor, $ a month ({name})",
            dollars(sum(floors[name].values())),
            f"<= {cost_model.GOAL_IDLE_FLOOR:.2f}",
            "pass" if sum(floors[name].values()) <= cost_model.GOAL_IDLE_FLOOR else "FAIL",
        ]
        for name in ("dev", "s3vectors")
    ]
    cheaper = sum(1 for point in points if point["mnemo_usd"] < point["agentcore_usd"])
    goals.append(
        [
            "curve points where the recommended config costs less than AgentCore",
            f"{cheaper} of {len(points)}",
            f"{len(points)} of {len(points)}",
            "pass" if cheaper == len(points) else "FAIL",
        ]
    )
    print("\nDone when (issue 44):")
    print(table(["figure", "value", "goal", "result"], goals))

    path = write_results(
        "deploy_cost",
        {
            "measured": measured,
            "cases": {
                name: {**dataclasses.asdict(case), "ocu_min": case.ocu_min, "scaleToZero": case.scale_to_zero}
                for name, case in cases.items()
            },
            "initMs": init_ms,
            "initSource": init_source,
            "prices": cost_model.PRICES,
            "assumptions": {
                "latencyMs": cost_model.LATENCY_MS,
                "keepWarmSeconds": cost_model.KEEP_WARM_SECONDS,
                "environmentLifetimeSeconds": cost_model.ENVIRONMENT_LIFETIME_SECONDS,
                "scaleToZeroIdleSeconds": cost_model.SCALE_TO_ZERO_IDLE_SECONDS,
                "wakeOcu": cost_model.WAKE_OCU,
                "ocuCallsPerSecond": cost_model.OCU_CALLS_PER_SECOND,
                "searchOcuPerMillionMemories": cost_model.SEARCH_OCU_PER_MILLION_MEMORIES,
                "indexStorageGb": cost_model.INDEX_STORAGE_GB,
                "opensearchBytesPerMemory": cost_model.OPENSEARCH_BYTES_PER_MEMORY,
                "knowledgeBucketGb": cost_model.KNOWLEDGE_BUCKET_GB,
                "s3vectors": {
                    "queriesPerSearch": cost_model.S3VECTORS_QUERIES_PER_SEARCH,
                    "queriesPerAddWithoutCount": cost_model.S3VECTORS_QUERIES_PER_ADD,
                    "vectorBytes": cost_model.S3VECTORS_VECTOR_BYTES,
                    "keyBytes": cost_model.S3VECTORS_KEY_BYTES,
                    "filterableBytes": cost_model.S3VECTORS_FILTERABLE_BYTES,
                    "nonFilterableBytes": cost_model.S3VECTORS_NON_FILTERABLE_BYTES,
                    "putMinBytes": cost_model.S3VECTORS_PUT_MIN_BYTES,
                    "indexVectors": cases["s3vectors"].s3vectors_index_vectors,
                    "whatIfIndexVectors": cost_model.WHAT_IF_INDEX_VECTORS,
                },
                "retentionMonths": cost_model.RETENTION_MONTHS,
                "mix": cost_model.DEFAULT_MIX,
                "sessionCalls": cost_model.SESSION_CALLS,
                "sessionSeconds": cost_model.SESSION_SECONDS,
                "initUnthrottled": cost_model.INIT_UNTHROTTLED,
            },
            "shapes": {name: dataclasses.asdict(shape) for name, shape in cost_model.SHAPES.items()},
            "perMillionAt1M": per_million,
            "totalsAt1M": totals,
            "totalsAt1MLowLatency": low,
            "monthAt1M": bills,
            "idleFloor": floors,
            "curve": points,
            "curveOptions": options,
            "curveAssumptions": notes,
            "goals": goals,
            "options": parameter_rows,
            "plot": cost_model.repo_relative(plot_path, ROOT),
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

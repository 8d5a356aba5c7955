"""Cold start of a tool Lambda's Python: import of functions/<tool>/app.py and its first invocation.

    python bench/cold_start.py [--runs 7] [--functions memory_add,...] [--smoke]

Each run is a fresh interpreter (as a new Lambda container is), timing the
handler module's import and its first call on a REST proxy event, with the
hashing embedder for the tools that embed (Titan plays that part on AWS,
where no local model loads) and the default configuration for the others.
Prints medians and writes bench/results/cold-start.json. --smoke: one run of memory_add (hashing)
and of knowledge_check (bge configured), results to a temporary folder (bench/common.py).

    python bench/cold_start.py --built [--runs 7] [--functions memory_add,memory_search] [--api rest|http]
                               [--build-dir DIR] [--importtime DIR]

Built-artifact mode, as Lambda runs a function: the `sam build` output of template.yaml (an x86_64 copy,
tests/support/rehearsal_build.py, built into .aws-sam/cold-start/ unless --build-dir names a build folder),
function folder and layer only, imported by a plain python3.12 ``-I -S -B``: isolated (no site-packages,
no PYTHON* variables), nothing written beside the code (Lambda's /var/task and /opt are read-only, so a
module the artifact ships without bytecode is compiled again at each cold start). ``sys.path`` is the
function folder, the layer's ``python/``, then the runtime's boto3 (tests/support/rehearsal_stage.py's
stand-in for /var/runtime) and the standard library, in Lambda's order. The environment is the function's
in template.yaml (Globals and its own, every parameter at its default, rehearsal_template.Resolver) with
the variables Lambda sets; the adapters reach DynamoDB on a moto server (in a process of its own,
aws_fixtures.MotoProcess, so that its heap and GIL are not the bench's), OpenSearch on osmem-server (behind
the rehearsal's k-NN stand-in) and Titan on the rehearsal's stand-in.

Cost of a cold start = import + first call - a warm call (the median of 3 warm calls in the same
process), each the median of --runs fresh interpreters, run in rounds (each function once a round); a
ratio to a baseline is the median of the rounds' ratios, and the least cost of the runs is shown too. Two
baselines are measured in the same harness from the same layer: "bare", a Powertools resolver with
validation (APIGatewayRestResolver, or APIGatewayHttpResolver with --api http), a Powertools Logger and one
route taking a pydantic model; and "bare+sdk", the same handler whose route also makes one DynamoDB client
on its first call (a botocore session, standard retries: as mnemo.adapters.aws.clients makes them) and
reads one item with it (GetItem, on the moto table), as any Lambda that reads DynamoDB through the AWS SDK
does. Each function's ratio to both is shown ("× bare", "× bare+SDK"). --api picks the event: REST payload
1.0 (the default) or HTTP API payload 2.0, each with an IAM caller. Prints the table and writes
bench/results/cold-start-built-<api>.json; --importtime writes ``python -X importtime`` of one cold start
per function to DIR.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import parse_args, table, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))
from sample_knowledge import ADR, ADR_ID  # noqa: E402  (the rehearsal's knowledge item, synced by sync_now)

PROBE = """
import json, sys, time
started = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("app", {app!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
imported = time.perf_counter()
sys.path.insert(0, {tests!r})
from aws_events import FakeLambdaContext, rest_event
out = module.handler(rest_event({tool!r}, {body!r}, {{"user": "u", "tenant": "t"}}), FakeLambdaContext())
done = time.perf_counter()
print(json.dumps({{"import": 1000 * (imported - started), "first": 1000 * (done - imported),
                  "status": out["statusCode"], "modules": len(sys.modules)}}))
"""
CASES = {
    "memory_add": ({"content": "cold start probe"}, "hashing"),
    "memory_search": ({"query": "cold start probe"}, "hashing"),
    "memory_delete": ({"memoryId": "mem_missing"}, "bge"),
    # An empty catalog: the import and the first check's parsers, not the size of a repository.
    "knowledge_check": ({"dependencies": [{"name": "mysql2", "version": "3.0.0"}]}, "bge"),
    "knowledge_query": ({"query": "database selection"}, "hashing"),
    "sync_status": ({}, "bge"),
}


# ------------------------------------------------------------- built mode ---
#: The built folder bench/cold_start.py --built makes (git-ignored with the rest of .aws-sam/).
BUILT_WORK_DIR = ROOT / ".aws-sam" / "cold-start"
#: What --built --smoke measures (one round): a write, a read through OpenSearch, a family after memory, and the
#: one whose model answer the bench scripts (``_scripted_model``).
SMOKE_BUILT_FUNCTIONS = ("memory_add", "memory_search", "file_read", "build_memory_from_text")
#: Warm calls after the first, in the same process; their median is the warm figure.
WARM_CALLS = 3
#: Unmeasured calls of each function, in one process, before the rounds: the index exists, the table holds
#: items, the disk cache is warm.
WARMUP_CALLS = 2
#: A round measures both baselines again after every GROUP functions; a function's ratio is to the baselines
#: measured just before and just after its group (see ``measure_built``).
GROUP = 8
#: The goal of issue 44: every tool function's cold start at most this many times the bare+SDK handler's.
GOAL_SDK_RATIO = 1.5
ACCOUNT = "123456789012"
CALLER = f"arn:aws:iam::{ACCOUNT}:user/cold-start-agent"
#: erase_user needs the admin role, which only a trusted delegate grants an IAM caller (mnemo.entry.identity).
DELEGATE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/ColdStartDelegate"
DELEGATE_CALLER = f"arn:aws:sts::{ACCOUNT}:assumed-role/ColdStartDelegate/cold-start"
DELEGATE_HEADERS = {
    "X-Mnemo-User": "cold-start-admin",
    "X-Mnemo-Roles": "admin",
    "Authorization": "AWS4-HMAC-SHA256 Credential=ASIACOLDSTART/20260101/eu-west-1/execute-api/aws4_request, "
    f"SignedHeaders=host;x-amz-date;x-mnemo-roles;x-mnemo-user, Signature={'0' * 64}",
}
#: One fresh Lambda execution environment: stdlib only; run as python3.12 -I -S -B PROBE FUNCTION LAYER RUNTIME,
#: the handler's events on stdin (JSON), the figures on stdout, the function's own output on stderr.
BUILT_PROBE = r"""
import importlib, json, os, sys, time
STDLIB = list(sys.path)
function_dir, layer_dir, runtime_dir = sys.argv[1:4]
sys.path[:] = [function_dir, layer_dir, runtime_dir, *STDLIB]
request = json.loads(sys.stdin.read())
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr


class Context:
    def __init__(self, number):
        self.function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = request["arn"]
        self.memory_limit_in_mb = os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]
        self.aws_request_id = "00000000-0000-4000-8000-%012d" % number
        self.log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
        self.log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
        self.identity = None
        self.client_context = None
        self._deadline = time.time() * 1000 + request["timeoutMs"]

    def get_remaining_time_in_millis(self):
        return max(0, int(self._deadline - time.time() * 1000))


started = time.perf_counter()
module_name, _, attribute = os.environ["_HANDLER"].rpartition(".")
handler = getattr(importlib.import_module(module_name), attribute)
imported = time.perf_counter()
calls, statuses, bodies, failures = [], [], [], []
for number, event in enumerate(request["events"]):
    began = time.perf_counter()
    answer = handler(event, Context(number))
    calls.append(1000 * (time.perf_counter() - began))
    statuses.append(answer.get("statusCode"))
    failures.append(len(answer.get("batchItemFailures") or []))
    bodies.append(str(answer.get("body")))
answers.write(json.dumps({"import": 1000 * (imported - started), "calls": calls, "statuses": statuses,
                          "failures": failures, "bodies": bodies, "modules": len(sys.modules)}) + "\n")
"""
#: The baselines: a bare Powertools handler with validation, a Logger and one route taking a pydantic model;
#: "bare+sdk" is the same handler whose route also reads one DynamoDB item through the AWS SDK.
BARE_TOOLS = ("bare", "bare+sdk")
BARE_APP = '''"""The {title} handler of bench/cold_start.py --built (generated)."""

{imports}from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import {resolver}
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, Field

logger = Logger(service="bare")
app = {resolver}(enable_validation=True)
{client}

class Note(BaseModel):
    content: str = Field(min_length=1, max_length=8000)
    layer: str = "user"


@app.post("/v1/tools/memory_add")
def memory_add(note: Annotated[Note, Body()]) -> dict[str, Any]:
{read}    return {{"success": True, "length": len(note.content)}}


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
'''
#: What "bare+sdk" adds, as mnemo.adapters.aws.clients makes a client: a botocore session (no boto3), made on the
#: first call with standard retries, then kept; the endpoint and region are Lambda's (AWS_ENDPOINT_URL: moto).
BARE_SDK_CLIENT = """_dynamodb: Any = None


def dynamodb() -> Any:
    global _dynamodb
    if _dynamodb is None:
        import botocore.session
        from botocore.config import Config

        config = Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=3, read_timeout=10)
        _dynamodb = botocore.session.get_session().create_client("dynamodb", config=config)
    return _dynamodb
"""
BARE_SDK_READ = """    key = {"pk": {"S": "COLD#START"}, "sk": {"S": "PROBE"}}
    dynamodb().get_item(TableName=os.environ["MNEMO_RECORDS_TABLE"], Key=key)
"""


def _bare_app(tool: str, api: str) -> str:
    """The source of a baseline handler (``bare`` or ``bare+sdk``) for this API's resolver."""
    resolver = "APIGatewayHttpResolver" if api == "http" else "APIGatewayRestResolver"
    sdk = tool == "bare+sdk"
    return BARE_APP.format(
        title="bare + SDK" if sdk else "bare",
        resolver=resolver,
        imports="import os\n" if sdk else "",
        client="\n" + BARE_SDK_CLIENT if sdk else "",
        read=BARE_SDK_READ if sdk else "",
    )


# ------------------------------------------------- what each function is called with ---
Body = dict[str, Any]


def _words() -> str:
    """Four words no other call shares (so that no add is a near-duplicate of another)."""
    hex_ = uuid.uuid4().hex
    return " ".join(hex_[i : i + 6] for i in range(0, 24, 6))


def _tag() -> str:
    return uuid.uuid4().hex[:10]


@dataclass(frozen=True)
class Pool:
    """Objects made before the rounds for the calls that use one up (a delete, an unpin, an invalidation):
    each made by ``tool`` with ``body()``, its id read by ``key`` from the answer and the body, then passed
    through ``then`` (another tool's call per object) when given."""

    tool: str
    body: Callable[[], Body]
    key: Callable[[Body, Body], str]
    then: tuple[str, Callable[[str], Body]] | None = None


def _fact(name: str) -> Body:
    link = {"subject": name, "predicate": "works_at", "object": "Acme", "subjectType": "person"}
    return {**link, "objectType": "organization", "text": f"{name} works at Acme.", "validAt": "2024-03-01T00:00:00Z"}


POOLS: dict[str, Pool] = {
    "memory": Pool(
        "memory_add", lambda: {"content": f"Kept note {_words()}", "layer": "user"}, lambda a, _: a["memoryId"]
    ),
    "topic": Pool(
        "memorize_new_topic",
        lambda: {
            "topic": f"cold-start-{_tag()}",
            "tags": ["cold"],
            "summary": "To forget.",
            "content": "# Forget me\n",
        },
        lambda _, b: b["topic"],
    ),
    "block": Pool(
        "file_write",
        lambda: {"path": f"mnemo:///blocks/cold-{_tag()}.md", "content": "# Cold start\n[END]\n"},
        lambda _, b: b["path"],
    ),
    "pinned": Pool(
        "file_write",
        lambda: {"path": f"mnemo:///blocks/pinned-{_tag()}.md", "content": "# Pinned\n"},
        lambda _, b: b["path"],
        then=("block_pin", lambda path: {"path": path}),
    ),
    "fact": Pool("add_memory_link", lambda: _fact(f"Person {_tag()}"), lambda a, _: a["factId"]),
}


@dataclass(frozen=True)
class Case:
    """How a function is called: ``body(usage, taken)`` from its tool's Usage example (its spec's) and the
    objects it takes from ``pool`` (``takes`` a call); the template ``parameters`` its function is deployed
    with beyond the defaults; ``delegate``: as a trusted delegate granting the admin role."""

    body: Callable[[Body, list[str]], Body] = lambda usage, _: usage
    pool: str | None = None
    takes: int = 1
    parameters: Mapping[str, str] = field(default_factory=dict)
    delegate: bool = False
    #: Each call as a new IAM user: its scope holds only what the call writes (the graph's k-NN stand-in scores
    #: a scope's every fact in Python, so one scope that grows over the rounds makes each call slower).
    fresh_caller: bool = False
    #: A records table of the function's own: what it scans is what it wrote (erasure scans the table, and the
    #: shared one holds every other function's writes), so its first and warm calls do the same work.
    own_table: bool = False


def _messages(usage: Body) -> Body:
    tag = _tag()
    return {**usage, "messages": [{**m, "id": f"m-{tag}-{i}"} for i, m in enumerate(usage["messages"])]}


def _batch(usage: Body) -> Body:
    items = [{"content": f"Batch note {_words()}", "idempotencyKey": f"cold-{_tag()}"} for _ in range(2)]
    return {**usage, "items": items}


def _updated_entity(usage: Body) -> Body:
    """update_memory_object's Usage example with a new summary each call and no expected version (the
    entity's version grows with each call)."""
    kept = {key: value for key, value in usage.items() if key != "expectedVersion"}
    return {**kept, "summary": f"{usage['summary']} ({_words()})"}


#: Every function not named here is called with its tool's Usage example, as is (each call alike). The others
#: need a new object each call (an add that is not a duplicate, a delete or a pin of something that exists), a
#: setting (extraction on, the experimental tools served, a trusted delegate), a call that does not conflict,
#: or a change each call: a warm call that finds nothing left to do would make a first call look dearer than
#: its cold start made it (the cost is the first call less a warm one).
OUTLINE_TOOLS = ("outline_symbol", "outline_file", "outline_project")
BUILT_CASES: dict[str, Case] = {
    "memory_add": Case(lambda _, __: {"content": f"Release note {_words()}", "layer": "user"}),
    "memory_search": Case(lambda _, __: {"query": "release note", "threshold": 0}),
    "memory_delete": Case(lambda _, ids: {"memoryId": ids[0]}, pool="memory"),
    "memory_history": Case(lambda _, ids: {"memoryId": ids[0]}, pool="memory"),
    "knowledge_show": Case(lambda usage, _: {**usage, "id": ADR_ID}),
    "add_conversation": Case(lambda usage, _: {**usage, "message_id": f"msg_{_tag()}"}),
    "add_messages": Case(lambda usage, _: _messages(usage)),
    "memory_extract": Case(parameters={"ExtractionStrategies": "all"}),
    "memorize_new_topic": Case(lambda usage, _: {**usage, "topic": f"deployment-{_tag()}"}),
    "forget_memory": Case(lambda _, topics: {"topic": topics[0]}, pool="topic"),
    "block_unpin": Case(lambda _, paths: {"path": paths[0]}, pool="pinned"),
    "file_delete": Case(lambda _, paths: {"path": paths[0]}, pool="block"),
    "add_memory_link": Case(lambda usage, _: {**usage, "subject": f"Alice {_tag()}"}, fresh_caller=True),
    "update_memory_object": Case(lambda usage, _: _updated_entity(usage)),
    "invalidate_memory_link": Case(lambda usage, facts: {**usage, "factId": facts[0]}, pool="fact"),
    "memory_add_batch": Case(lambda usage, _: _batch(usage)),
    "memory_delete_batch": Case(lambda _, ids: {"memoryIds": ids}, pool="memory", takes=2),
    "erase_user": Case(
        lambda _, __: {"subjectUserId": f"gone-{_tag()}"},
        parameters={"TrustedDelegateArns": DELEGATE_ROLE},
        delegate=True,
        own_table=True,
    ),
    "memorize_general_info": Case(lambda usage, _: {**usage, "content": f"{usage['content']} Noted {_words()}."}),
    "refine_memory": Case(lambda usage, _: {**usage, "newSummary": f"{usage['newSummary']} ({_words()})"}),
    "file_write": Case(lambda usage, _: {**usage, "path": f"mnemo:///blocks/new-{_tag()}.md"}),
    "block_pin": Case(lambda _, paths: {"path": paths[0]}, pool="block"),
    "file_edit": Case(lambda usage, paths: {**usage, "path": paths[0]}, pool="block"),
    **{name: Case(parameters={"ExperimentalTools": "true"}) for name in (*OUTLINE_TOOLS, "outline_sync")},
    "change_events": Case(parameters={"ChangeEvents": "on"}),
}
#: Made once before the rounds, with their tools' Usage examples, for the functions that read them: a memory,
#: a conversation and its execution, the general info and a topic, a block (pinned), an entity and its fact.
SEEDS = ("memory_add", "add_conversation", "add_execution", "memorize_general_info", "memorize_new_topic",
         "file_write", "block_pin", "add_memory_link")  # fmt: skip
#: The answer build_memory_from_text's model gives (Converse, its forced tool): its Usage example's facts.
GRAPH_ANSWER = {
    "entities": [{"name": "Spring AI", "type": "technology", "summary": "A framework for building AI applications."},
                 {"name": "Amazon Bedrock", "type": "technology"}, {"name": "OpenAI", "type": "organization"}],
    "facts": [{"subject": "Spring AI", "predicate": "integrates_with", "object": "Amazon Bedrock",
               "text": "Spring AI integrates with Amazon Bedrock."},
              {"subject": "Spring AI", "predicate": "integrates_with", "object": "OpenAI",
               "text": "Spring AI integrates with OpenAI."}],
}  # fmt: skip


#: The stream functions, measured after the tool functions (and with --functions): each is called with one DynamoDB
#: stream record of a new memory (``_stream_event``).
STREAM_FUNCTIONS = ("change_events", "indexer")


def _stream_event(tool: str) -> dict[str, Any]:
    """One stream record as Lambda hands it: a new memory's INSERT for the change events function (it publishes
    memory.added), the REMOVE of one for the indexer (it takes the memory out of the index)."""
    memory_id = f"mem_{uuid.uuid4().hex[:24]}"
    keys = {"pk": {"S": f"MEM|t={ACCOUNT}|user|u=cold-start"}, "sk": {"S": f"MEM#{memory_id}"}}
    body = {
        "memoryId": memory_id,
        "content": f"Release note {_words()}",
        "layer": "user",
        "tags": [],
        "metadata": {"source": "manual"},
        "contentHash": uuid.uuid4().hex,
        "createdAt": "2026-01-07T10:00:00Z",
    }
    image = {**keys, "data": {"S": json.dumps(body)}, "version": {"N": "1"}}
    insert = tool == "change_events"
    change = {
        "ApproximateCreationDateTime": 1767780000,
        "Keys": keys,
        "SequenceNumber": uuid.uuid4().hex[:20],
        "SizeBytes": 400,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
        ("NewImage" if insert else "OldImage"): image,
    }
    record = {
        "eventID": uuid.uuid4().hex,
        "eventName": "INSERT" if insert else "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-west-1",
        "dynamodb": change,
        "eventSourceARN": f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/mnemo/stream/2026-01-07T00:00:00.000",
    }
    return {"Records": [record]}  # fmt: skip


def _event(route: str, body: Body, api: str, *, delegate: bool = False, fresh: bool = False) -> dict[str, Any]:
    """An API Gateway event under IAM auth: REST (payload 1.0) or HTTP API (2.0), as the template sends them;
    ``delegate``: a trusted delegate's role session, its identity headers signed; ``fresh``: a new IAM user."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from http_api_events import http_api_event

    from aws_events import rest_event

    caller, headers = (DELEGATE_CALLER, DELEGATE_HEADERS) if delegate else (CALLER, {})
    if fresh and not delegate:
        caller = f"arn:aws:iam::{ACCOUNT}:user/cold-start-{_tag()}"
    if api == "http":
        lower = {"content-type": "application/json", **{key.lower(): value for key, value in headers.items()}}
        return http_api_event(f"/v1/tools/{route}", body, iam={"accountId": ACCOUNT, "userArn": caller}, headers=lower)
    identity = {"accountId": ACCOUNT, "caller": "AIDACOLDSTART", "accessKey": "AKIACOLDSTART", "user": "AIDACOLDSTART",
                "sourceIp": "203.0.113.10", "userArn": caller, "userAgent": "aws-sdk-python"}  # fmt: skip
    event = rest_event(route, body, identity=identity)
    event["headers"].update(headers)
    event["multiValueHeaders"].update({key: [value] for key, value in headers.items()})
    return event


def tool_functions(template: Mapping[str, Any]) -> list[str]:
    """Every tool function of ``template``: a catalog tool's (experimental ones included) whose code is
    functions/<tool>/, in catalog order."""
    from mnemo.tools.registry import load_catalog

    folders = {
        str(resource["Properties"].get("CodeUri", "")).rstrip("/").rsplit("/", 1)[-1]
        for resource in template["Resources"].values()
        if resource.get("Type") == "AWS::Serverless::Function"
    }
    return [name for name in load_catalog(True) if name in folders]


def usage_example(tool: str) -> Body:
    """The tool's Usage example, from its spec (what its docs show)."""
    from mnemo.tools.registry import load_catalog

    found = [example for label, example in load_catalog(True)[tool].examples() if label == "Usage"]
    if not found or not isinstance(found[0], dict):
        raise KeyError(f"{tool} has no Usage example in its spec")
    return dict(found[0])


def _scripted_model(model_id: str) -> Any:
    """The rehearsal's Titan stand-in, whose Converse answers as a model calling the forced tool does:
    GRAPH_ANSWER for build_memory_from_text's tool, an empty input for any other (no model runs here)."""
    from rehearsal_stage import TitanStandIn, send_json

    class ScriptedModel(TitanStandIn):
        def _converse(self, request: Any, model_id: str, raw: bytes) -> None:
            sent = json.loads(raw)
            name = sent["toolConfig"]["toolChoice"]["tool"]["name"]
            self.converse_calls[name] += 1
            use = {"toolUseId": "tooluse_cold_start", "name": name,
                   "input": GRAPH_ANSWER if name == "record_knowledge_graph" else {}}  # fmt: skip
            answer = {"output": {"message": {"role": "assistant", "content": [{"toolUse": use}]}},
                      "stopReason": "tool_use", "usage": {"inputTokens": 200, "outputTokens": 80, "totalTokens": 280},
                      "metrics": {"latencyMs": 1}}  # fmt: skip
            send_json(request, 200, None, answer)

    return ScriptedModel(model_id=model_id)


class BuiltStage:
    """The built functions' surroundings: moto (DynamoDB, S3, SQS), osmem-server behind the k-NN stand-in,
    Titan's stand-in (its Converse scripted)."""

    def __init__(self, build_dir: Path | None, source: Path = ROOT) -> None:
        sys.path.insert(0, str(ROOT / "tests" / "support"))
        from aws_fixtures import MotoProcess, create_records_table, load_template
        from osmem_server import OsmemServer
        from rehearsal_build import Build, lambda_architecture, python312, sam_build
        from rehearsal_stage import OpenSearchStandIn, runtime_boto3_dir

        if build_dir is None:
            self.build = sam_build({}, BUILT_WORK_DIR, source.resolve())
        else:
            build_dir = build_dir.resolve()
            self.build = Build(lambda_architecture(), build_dir, build_dir / "SharedLayer" / "python")
        self.python = python312()
        self.runtime = runtime_boto3_dir()
        if not (self.runtime / ".compiled").exists():  # the runtime's own packages come compiled
            subprocess.run([self.python, "-m", "compileall", "-q", str(self.runtime)], check=True)
            (self.runtime / ".compiled").touch()
        self.template = load_template()
        self.tools = tool_functions(self.template)
        self.moto = MotoProcess()  # its own process: a probe's requests wait for moto alone
        self.table = f"mnemo-cold-start-{uuid.uuid4().hex[:8]}"
        self._own_tables: set[str] = set()
        self.bucket = f"mnemo-cold-start-{uuid.uuid4().hex[:8]}"
        # No stream: no function measured here reads it, and moto copies every table with its stream (every
        # change ever made) on each transaction, so a run's table grew moto to 17 GB and slowed each call.
        create_records_table(self.moto.client("dynamodb"), self.table, stream=False)
        self._refs, self._attributes = self._references()
        s3 = self.moto.client("s3")
        s3.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        s3.put_bucket_versioning(Bucket=self.bucket, VersioningConfiguration={"Status": "Enabled"})  # as the template's
        s3.put_object(Bucket=self.bucket, Key=f"knowledge/{ACCOUNT}/company/{ADR_ID}.md", Body=ADR.encode())
        sqs = self.moto.client("sqs")
        for name in (key[: -len(".QueueName")] for key in self._attributes if key.endswith(".QueueName")):
            queue = self._attributes[f"{name}.QueueName"]
            sqs.create_queue(QueueName=queue, Attributes={"FifoQueue": "true"} if queue.endswith(".fifo") else {})
        self.osmem = OsmemServer.start()
        self.opensearch = OpenSearchStandIn(self.osmem.url)
        self.titan_model = str(
            self._resolver({}).resolve(self.template["Globals"]["Function"]["Environment"]["Variables"])[
                "MNEMO_TITAN_MODEL_ID"
            ]
        )
        self.titan = _scripted_model(self.titan_model)
        everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        self.titan.callers["testing"] = ("cold-start", [everything])
        self.work = Path(tempfile.mkdtemp(prefix="mnemo-cold-start-"))

    def _references(self) -> tuple[dict[str, str], dict[str, str]]:
        refs = {"RecordsTable": self.table, "KnowledgeBucket": self.bucket}
        attributes = {
            "RecordsTable.Arn": f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/{self.table}",
            "KnowledgeBucket.Arn": f"arn:aws:s3:::{self.bucket}",
        }
        for logical_id, resource in self.template["Resources"].items():
            if resource.get("Type") == "AWS::SQS::Queue":
                name = f"mnemo-cs-{logical_id}" + (".fifo" if resource["Properties"].get("FifoQueue") else "")
                refs[logical_id] = f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/{name}"
                attributes[f"{logical_id}.QueueName"] = name
                attributes[f"{logical_id}.Arn"] = f"arn:aws:sqs:eu-west-1:{ACCOUNT}:{name}"
        return refs, attributes

    def own_table(self, tool: str) -> str:
        """The records table of ``tool``'s own (``Case.own_table``), made on first use."""
        from aws_fixtures import create_records_table

        name = f"{self.table}-{tool.replace('_', '-')}"
        if name not in self._own_tables:
            create_records_table(self.moto.client("dynamodb"), name, stream=False)
            self._own_tables.add(name)
        return name

    def _resolver(self, parameters: Mapping[str, str]) -> Any:
        from rehearsal_template import Resolver

        attributes = dict(self._attributes)
        if hasattr(self, "opensearch"):
            attributes["VectorCollection.CollectionEndpoint"] = self.opensearch.url
        return Resolver(self.template, dict(parameters), self._refs, attributes)

    def function(self, tool: str, api: str) -> tuple[Path, dict[str, str]]:
        """The function's build folder and its environment as Lambda would set it (the baselines: memory_add's)."""
        from rehearsal_stage import lambda_environment
        from rehearsal_template import Function

        resources = self.template["Resources"]
        target = "memory_add" if tool in BARE_TOOLS else tool
        logical_id = next(
            name
            for name, resource in resources.items()
            if resource.get("Type") == "AWS::Serverless::Function"
            and str(resource["Properties"].get("CodeUri", "")).rstrip("/").endswith(f"functions/{target}")
        )
        properties, globals_ = resources[logical_id]["Properties"], self.template["Globals"]["Function"]
        resolver = self._resolver(BUILT_CASES.get(tool, Case()).parameters)
        variables = {
            **resolver.resolve(globals_["Environment"]["Variables"]),
            **resolver.resolve((properties.get("Environment") or {}).get("Variables", {})),
        }
        variables["MNEMO_RECORDS_TABLE"] = (
            self.own_table(tool) if BUILT_CASES.get(tool, Case()).own_table else self.table
        )
        function = Function(
            logical_id=logical_id,
            name=f"mnemo-dev-{target}",
            handler=str(properties.get("Handler", globals_.get("Handler", "app.handler"))),
            timeout=int(properties.get("Timeout", globals_.get("Timeout", 3))),
            memory=int(properties.get("MemorySize", globals_.get("MemorySize", 128))),
            environment={key: str(value) for key, value in variables.items()},
            role_id="",
            policies=[],
        )
        credentials = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "aws_session_token": "x"}
        environment = lambda_environment(function, self.build, self.runtime, credentials, self.moto.url, self.titan.url)
        folder = self.build.function_dir(logical_id)
        if tool in BARE_TOOLS:
            folder = self.work / f"{tool}-{api}"
            folder.mkdir(exist_ok=True)
            (folder / "app.py").write_text(_bare_app(tool, api))
            environment = {**environment, "LAMBDA_TASK_ROOT": str(folder), "_HANDLER": "app.handler"}
        return folder, environment

    def run(
        self, tool: str, api: str, events: Sequence[dict[str, Any]], extra: Sequence[str] = (), *, http: bool = True
    ) -> tuple[dict[str, Any], str]:
        """One fresh interpreter: import, then one invocation per event; its figures and its stderr. ``http``:
        each answer must be a 200 (a proxy response), else it only must not raise; a stream function's answer
        must hand no record back (``batchItemFailures``)."""
        http = http and tool not in STREAM_FUNCTIONS
        folder, environment = self.function(tool, api)
        request = {
            "events": list(events),
            "arn": f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:{environment['AWS_LAMBDA_FUNCTION_NAME']}",
            "timeoutMs": 15000,
        }
        command = [self.python, "-I", "-S", "-B", *extra, "-c", BUILT_PROBE]
        command += [str(folder), str(self.build.layer_python), str(self.runtime)]
        done = subprocess.run(
            command, input=json.dumps(request), capture_output=True, text=True, env=environment, cwd=folder, timeout=300
        )
        if done.returncode != 0 or not done.stdout.strip():
            raise RuntimeError(f"{tool}: the probe failed ({done.returncode}):\n{done.stderr[-4000:]}")
        figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if tool in STREAM_FUNCTIONS and any(figures["failures"]):
            raise RuntimeError(f"{tool}: records handed back {figures['failures']}\n{done.stderr[-3000:]}")
        if http and any(status != 200 for status in figures["statuses"]):
            bodies = [body[:600] for body in figures["bodies"]]
            raise RuntimeError(f"{tool}: {figures['statuses']} {bodies}\n{done.stderr[-3000:]}")
        return figures, done.stderr

    def layer_megabytes(self) -> float:
        done = subprocess.run(["du", "-sk", str(self.build.layer_python.parent)], capture_output=True, text=True)
        return round(int(done.stdout.split()[0]) / 1024, 1)

    def close(self) -> None:
        self.titan.close()
        self.opensearch.close()
        self.osmem.close()
        self.moto.close()


class Calls:
    """The events each function is sent, call after call: its case's bodies, each call's objects taken from
    the pools, which ``seed`` fills before the rounds (through the built functions themselves)."""

    def __init__(self, stage: BuiltStage, api: str) -> None:
        self.stage, self.api = stage, api
        self.pools: dict[str, list[str]] = {name: [] for name in POOLS}

    def seed(self, tools: Sequence[str], calls_each: int) -> None:
        """Make what the functions read (SEEDS, the knowledge item) and fill each pool for ``calls_each`` calls
        of every function in ``tools`` that takes from it."""
        for tool in SEEDS:
            self._call(tool, [usage_example(tool)])
        self._call("sync_now", [{}])
        if any(tool in OUTLINE_TOOLS for tool in tools):
            self._outline()
        wanted: dict[str, int] = {}
        for tool in tools:
            case = BUILT_CASES.get(tool, Case())
            if case.pool is not None:
                wanted[case.pool] = wanted.get(case.pool, 0) + calls_each * case.takes
        for name, count in wanted.items():
            pool = POOLS[name]
            bodies = [pool.body() for _ in range(count)]
            answers = self._call(pool.tool, bodies)
            keys = [pool.key(answer, body) for answer, body in zip(answers, bodies, strict=True)]
            if pool.then is not None:
                then_tool, then_body = pool.then
                self._call(then_tool, [then_body(key) for key in keys])
            self.pools[name].extend(keys)

    def _outline(self) -> None:
        """The shop fixture's Python files written to the workspace (file_write), each object then outlined by
        outline_sync as its S3 event would have it: what the outline tools' Usage examples ask about."""
        shop = ROOT / "tests" / "fixtures" / "outline" / "shop"
        files = {str(path.relative_to(shop)): path.read_text() for path in sorted(shop.glob("shop/**/*.py"))}
        self._call("file_write", [{"path": path, "content": content} for path, content in files.items()])
        listed = self.stage.moto.client("s3").list_objects_v2(Bucket=self.stage.bucket, Prefix="workspace/")
        keys = [item["Key"] for item in listed.get("Contents", []) if item["Key"].endswith(".py")]
        if len(keys) < len(files):
            raise RuntimeError(f"the workspace holds {keys}, not the {len(files)} files written")
        detail = {"version": "0", "bucket": {"name": self.stage.bucket}, "request-id": "R1", "requester": ACCOUNT,
                  "reason": "PutObject"}  # fmt: skip
        events = [{"version": "0", "id": str(uuid.uuid4()), "detail-type": "Object Created", "source": "aws.s3",
                   "account": ACCOUNT, "time": "2026-01-07T10:00:00Z", "region": "eu-west-1",
                   "resources": [f"arn:aws:s3:::{self.stage.bucket}"],
                   "detail": {**detail, "object": {"key": key, "size": 1, "etag": "e"}}} for key in keys]  # fmt: skip
        self.stage.run("outline_sync", self.api, events, http=False)

    def _call(self, tool: str, bodies: list[Body]) -> list[Body]:
        """Call ``tool`` with each body in one process (unmeasured); its answers."""
        case = BUILT_CASES.get(tool, Case())
        figures, _ = self.stage.run(tool, self.api, [_event(tool, body, self.api, delegate=case.delegate)
                                                     for body in bodies])  # fmt: skip
        return [json.loads(body) for body in figures["bodies"]]

    def events(self, tool: str, count: int) -> list[dict[str, Any]]:
        """The next ``count`` events of ``tool`` (a baseline's: a new memory's arguments each)."""
        if tool in STREAM_FUNCTIONS:
            return [_stream_event(tool) for _ in range(count)]
        if tool in BARE_TOOLS:
            return [_event("memory_add", {"content": f"Release note {_words()}", "layer": "user"}, self.api)
                    for _ in range(count)]  # fmt: skip
        case, usage = BUILT_CASES.get(tool, Case()), usage_example(tool)
        events = []
        for _ in range(count):
            taken: list[str] = []
            if case.pool is not None:
                pool = self.pools[case.pool]
                if len(pool) < case.takes:
                    raise RuntimeError(f"{tool}: the {case.pool} pool is empty (seed more)")
                taken, self.pools[case.pool] = pool[: case.takes], pool[case.takes :]
            events.append(
                _event(tool, case.body(usage, taken), self.api, delegate=case.delegate, fresh=case.fresh_caller)
            )
        return events


# ----------------------------------------------------------- importtime ---
def importtime_modules(log: str) -> dict[str, int]:
    """Each module of a ``python -X importtime`` log and its own import time (µs, its imports excluded)."""
    modules = {}
    for line in log.splitlines():
        if not line.startswith("import time:"):
            continue
        own, _, name = line[len("import time:") :].split("|", 2)
        if own.strip().isdigit():
            modules[name.strip()] = int(own)
    return modules


def package_of(module: str) -> str:
    """The package a module is counted under: its top-level one; mnemo's by subpackage (a family's tools,
    an adapter and a front door apart: ``mnemo.tools.files``, ``mnemo.adapters.aws``, ``mnemo.entry.apigw``)."""
    parts = module.split(".")
    if parts[0] != "mnemo":
        return parts[0]
    return ".".join(parts[:3] if len(parts) > 2 and parts[1] in ("tools", "adapters", "entry") else parts[:2])


def beyond(mine: Mapping[str, int], baseline: Mapping[str, int], top: int = 4) -> list[tuple[str, float]]:
    """What a cold start imports that the baseline's does not: the ``top`` packages by their modules' own
    import time (ms), largest first."""
    sums: dict[str, int] = {}
    for module, micros in mine.items():
        if module not in baseline:
            sums[package_of(module)] = sums.get(package_of(module), 0) + micros
    return [(name, round(micros / 1000, 1)) for name, micros in sorted(sums.items(), key=lambda kv: -kv[1])[:top]]


# ------------------------------------------------------------ measuring ---
#: How many times a sample is taken again when one of its calls fails (a retryable refusal on a loaded machine
#: must not end a quarter-hour run); each retry is counted in the results.
RETRIES = 2


def _sample(stage: BuiltStage, calls: Calls, tool: str, api: str, retried: dict[str, int]) -> dict[str, float]:
    """One fresh interpreter's figures for ``tool``: its import, first call, warm call and cold cost."""
    for attempt in range(RETRIES + 1):
        try:
            figures, _ = stage.run(tool, api, calls.events(tool, 1 + WARM_CALLS))
            break
        except RuntimeError as error:
            if attempt == RETRIES:
                raise
            retried[tool] = retried.get(tool, 0) + 1
            print(f"{tool}: taken again after {str(error)[:400]}", file=sys.stderr)
    first, warm = figures["calls"][0], statistics.median(figures["calls"][1:])
    return {"import": figures["import"], "first": first, "warm": warm, "cost": figures["import"] + first - warm,
            "modules": figures["modules"]}  # fmt: skip


def measure_built(args: argparse.Namespace) -> None:
    """Seed, warm every function up, log one cold start of each with ``-X importtime``, then ``--runs`` rounds.

    A round measures every function once, in an order rotated from round to round, in groups of GROUP with
    both baselines measured before the first group and after each: a function's ratio in a round is its cost
    over the mean of the baseline's two measurements around its group, minutes apart at most, so that a load
    that comes and goes on a shared machine weighs on both sides alike. Its ratio is the median of its rounds'.
    """
    stage = BuiltStage(args.build_dir, args.source)
    default = SMOKE_BUILT_FUNCTIONS if args.smoke else [*stage.tools, *STREAM_FUNCTIONS]
    tools = args.functions.split(",") if args.functions else list(default)
    everything = [*BARE_TOOLS, *tools]
    calls = Calls(stage, args.api)
    samples: dict[str, list[dict[str, float]]] = {tool: [] for tool in everything}
    retried: dict[str, int] = {}
    payload: dict[str, dict[str, Any]] = {}
    try:
        calls.seed(tools, WARMUP_CALLS + 1 + (args.runs + RETRIES) * (1 + WARM_CALLS))
        for tool in everything:  # unmeasured: the index and the table's first items exist, the disk cache is warm
            stage.run(tool, args.api, calls.events(tool, WARMUP_CALLS))
        imported: dict[str, dict[str, int]] = {}
        for tool in everything:
            _, log = stage.run(tool, args.api, calls.events(tool, 1), ["-X", "importtime"])
            imported[tool] = importtime_modules(log)
            if args.importtime is not None:
                args.importtime.mkdir(parents=True, exist_ok=True)
                lines = [line for line in log.splitlines() if line.startswith("import time:")]
                (args.importtime / f"{tool}-{args.api}.txt").write_text("\n".join(lines) + "\n")
        for number in range(args.runs):
            shift = number * len(tools) // max(args.runs, 1)
            order = tools[shift:] + tools[:shift]
            brackets = [{base: _sample(stage, calls, base, args.api, retried) for base in BARE_TOOLS}]
            for start in range(0, len(order), GROUP):
                group = {tool: _sample(stage, calls, tool, args.api, retried) for tool in order[start : start + GROUP]}
                brackets.append({base: _sample(stage, calls, base, args.api, retried) for base in BARE_TOOLS})
                around = {base: (brackets[-2][base]["cost"] + brackets[-1][base]["cost"]) / 2 for base in BARE_TOOLS}
                for tool, sample in group.items():
                    sample["ratio"] = sample["cost"] / around["bare"]
                    sample["ratioSdk"] = sample["cost"] / around["bare+sdk"]
                    samples[tool].append(sample)
            for bracket in brackets:
                for base in BARE_TOOLS:
                    sample = dict(bracket[base])
                    sample["ratio"] = sample["cost"] / bracket["bare"]["cost"]
                    sample["ratioSdk"] = sample["cost"] / bracket["bare+sdk"]["cost"]
                    samples[base].append(sample)
        layer = stage.layer_megabytes()
    finally:
        stage.close()
    rows: list[list[Any]] = []
    for tool in everything:
        keys = ("import", "first", "warm", "cost", "modules", "ratio", "ratioSdk")
        medians = {key: statistics.median(sample[key] for sample in samples[tool]) for key in keys}
        extra = beyond(imported[tool], imported["bare+sdk"]) if tool not in BARE_TOOLS else []
        payload[tool] = {"medians": medians, "leastCost": min(s["cost"] for s in samples[tool]),
                         "beyondBareSdk": dict(extra), "samples": samples[tool]}  # fmt: skip
        rows.append([tool, medians["cost"], f"{medians['ratioSdk']:.2f}x", f"{medians['ratio']:.2f}x",
                     payload[tool]["leastCost"], medians["import"], medians["first"], int(medians["modules"]),
                     ", ".join(f"{name} {ms:.0f}" for name, ms in extra)])  # fmt: skip
    headers = ["function", "cold ms", "× bare+SDK", "× bare", "least ms", "import ms", "first call ms", "modules"]
    print(table([*headers, "beyond bare+SDK (importtime ms)"], rows))
    over = [tool for tool in tools if payload[tool]["medians"]["ratioSdk"] > GOAL_SDK_RATIO]
    print(f"over {GOAL_SDK_RATIO}x bare+SDK: {', '.join(over) or 'none'} ({len(over)} of {len(tools)})")
    print(f"layer: {layer} MB ({stage.build.layer_python.parent})")
    result = {"runs": args.runs, "api": args.api, "warmCalls": WARM_CALLS, "group": GROUP, "layerMegabytes": layer,
              "buildDir": str(stage.build.build_dir.relative_to(ROOT) if stage.build.build_dir.is_relative_to(ROOT)
                              else stage.build.build_dir),
              "goalSdkRatio": GOAL_SDK_RATIO, "overGoal": over, "retried": retried, "functions": payload}  # fmt: skip
    print(f"wrote {write_results(f'cold-start-built-{args.api}', result)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--functions", default=None, help="comma-separated functions (of CASES without --built)")
    parser.add_argument("--built", action="store_true", help="measure the sam build output (see above)")
    parser.add_argument("--api", choices=("rest", "http"), default="rest", help="--built: the event's format")
    parser.add_argument("--build-dir", type=Path, default=None, help="--built: an existing `sam build` folder")
    parser.add_argument("--importtime", type=Path, default=None, help="--built: write -X importtime logs here")
    parser.add_argument("--source", type=Path, default=ROOT, help="--built: the checkout to build (default: this one)")
    args = parse_args(parser, {"runs": 1})
    if args.built:
        measure_built(args)
        return
    functions = args.functions or ("memory_add,knowledge_check" if args.smoke else ",".join(CASES))
    rows, payload = [], {}
    for tool in functions.split(","):
        body, embedder = CASES[tool]
        samples = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as data_dir:
                code = PROBE.format(
                    app=str(ROOT / "functions" / tool / "app.py"),
                    tests=str(ROOT / "tests" / "support"),
                    tool=tool,
                    body=body,
                )
                env = {"MNEMO_DATA_DIR": data_dir, "MNEMO_EMBEDDER": embedder, "PATH": "/usr/bin:/bin"}
                done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
                samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
        summary = {key: statistics.median(s[key] for s in samples) for key in ("import", "first", "modules")}
        payload[tool] = {**summary, "status": samples[0]["status"]}
        rows.append([tool, summary["import"], summary["first"], int(summary["modules"])])
    print(table(["function", "import ms", "first call ms", "modules loaded"], rows))
    print(f"wrote {write_results('cold-start', {'runs': args.runs, 'medians': payload})}")


if __name__ == "__main__":
    main()

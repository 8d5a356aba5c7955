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
the variables Lambda sets; the adapters reach DynamoDB on a moto server, OpenSearch on osmem-server (behind
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import parse_args, table, write_results

ROOT = Path(__file__).resolve().parents[1]
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
BUILT_FUNCTIONS = ("memory_add", "memory_search")
#: Warm calls after the first, in the same process; their median is the warm figure.
WARM_CALLS = 3
ACCOUNT = "123456789012"
CALLER = f"arn:aws:iam::{ACCOUNT}:user/cold-start-agent"
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
calls, statuses, bodies = [], [], []
for number, event in enumerate(request["events"]):
    began = time.perf_counter()
    answer = handler(event, Context(number))
    calls.append(1000 * (time.perf_counter() - began))
    statuses.append(answer.get("statusCode"))
    bodies.append(str(answer.get("body"))[:300])
answers.write(json.dumps({"import": 1000 * (imported - started), "calls": calls, "statuses": statuses,
                          "bodies": bodies, "modules": len(sys.modules)}) + "\n")
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


def _built_body(tool: str) -> dict[str, Any]:
    """A call's arguments; each add a new memory (words no other call shares), so that none is a duplicate."""
    if tool in ("memory_add", *BARE_TOOLS):
        words = " ".join(uuid.uuid4().hex[i : i + 6] for i in range(0, 24, 6))
        return {"content": f"Release note {words}", "layer": "user"}
    if tool == "memory_search":
        return {"query": "release note", "threshold": 0}
    raise KeyError(f"no built-mode arguments for {tool}")


def _built_event(tool: str, api: str) -> dict[str, Any]:
    """An API Gateway event under IAM auth: REST (payload 1.0) or HTTP API (2.0), as the template sends them."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from http_api_events import http_api_event

    from aws_events import rest_event

    route = "memory_add" if tool in BARE_TOOLS else tool
    if api == "http":
        return http_api_event(f"/v1/tools/{route}", _built_body(tool), iam={"accountId": ACCOUNT, "userArn": CALLER})
    identity = {"accountId": ACCOUNT, "caller": "AIDACOLDSTART", "accessKey": "AKIACOLDSTART", "user": "AIDACOLDSTART",
                "sourceIp": "203.0.113.10", "userArn": CALLER, "userAgent": "aws-sdk-python"}  # fmt: skip
    return rest_event(route, _built_body(tool), identity=identity)


class BuiltStage:
    """The built functions' surroundings: moto (DynamoDB), osmem-server behind the k-NN stand-in, Titan's stand-in."""

    def __init__(self, build_dir: Path | None, source: Path = ROOT) -> None:
        sys.path.insert(0, str(ROOT / "tests" / "support"))
        from aws_fixtures import create_records_table, load_template, shared_moto_server
        from osmem_server import OsmemServer
        from rehearsal_build import Build, lambda_architecture, python312, sam_build
        from rehearsal_stage import OpenSearchStandIn, TitanStandIn, runtime_boto3_dir

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
        self.moto = shared_moto_server()
        self.table = f"mnemo-cold-start-{uuid.uuid4().hex[:8]}"
        create_records_table(self.moto.client("dynamodb"), self.table)
        self.osmem = OsmemServer.start()
        self.opensearch = OpenSearchStandIn(self.osmem.url)
        self.titan_model = str(
            self._resolver().resolve(self.template["Globals"]["Function"]["Environment"]["Variables"])[
                "MNEMO_TITAN_MODEL_ID"
            ]
        )
        self.titan = TitanStandIn(model_id=self.titan_model)
        everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        self.titan.callers["testing"] = ("cold-start", [everything])
        self.work = Path(tempfile.mkdtemp(prefix="mnemo-cold-start-"))

    def _resolver(self) -> Any:
        from rehearsal_template import Resolver

        refs = {"RecordsTable": self.table, "KnowledgeBucket": "mnemo-cold-start"}
        attributes = {
            "RecordsTable.Arn": f"arn:aws:dynamodb:eu-west-1:{ACCOUNT}:table/{self.table}",
            "VectorCollection.CollectionEndpoint": self.opensearch.url,
        }
        for logical_id, resource in self.template["Resources"].items():
            if resource.get("Type") == "AWS::SQS::Queue":
                name = f"mnemo-dev-{logical_id}" + (".fifo" if resource["Properties"].get("FifoQueue") else "")
                refs[logical_id] = f"https://sqs.eu-west-1.amazonaws.com/{ACCOUNT}/{name}"
                attributes[f"{logical_id}.QueueName"] = name
                attributes[f"{logical_id}.Arn"] = f"arn:aws:sqs:eu-west-1:{ACCOUNT}:{name}"
        return Resolver(self.template, {}, refs, attributes)

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
        resolver = self._resolver()
        variables = {
            **resolver.resolve(globals_["Environment"]["Variables"]),
            **resolver.resolve((properties.get("Environment") or {}).get("Variables", {})),
        }
        variables["MNEMO_RECORDS_TABLE"] = self.table
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

    def run(self, tool: str, api: str, calls: int, extra: Sequence[str] = ()) -> tuple[dict[str, Any], str]:
        """One fresh interpreter: import, then ``calls`` invocations; its figures and its stderr."""
        folder, environment = self.function(tool, api)
        request = {
            "events": [_built_event(tool, api) for _ in range(calls)],
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
        if any(status != 200 for status in figures["statuses"]):
            raise RuntimeError(f"{tool}: {figures['statuses']} {figures['bodies']}\n{done.stderr[-3000:]}")
        return figures, done.stderr

    def layer_megabytes(self) -> float:
        done = subprocess.run(["du", "-sk", str(self.build.layer_python.parent)], capture_output=True, text=True)
        return round(int(done.stdout.split()[0]) / 1024, 1)

    def close(self) -> None:
        self.titan.close()
        self.opensearch.close()
        self.osmem.close()


def measure_built(args: argparse.Namespace) -> None:
    tools = [*BARE_TOOLS, *(args.functions.split(",") if args.functions else BUILT_FUNCTIONS)]
    stage = BuiltStage(args.build_dir, args.source)
    rows: list[list[Any]] = []
    payload: dict[str, dict[str, Any]] = {}
    try:
        for tool in tools:  # unmeasured: the index and the table's first items exist, the disk cache is warm
            stage.run(tool, args.api, 2)
        if args.importtime is not None:
            args.importtime.mkdir(parents=True, exist_ok=True)
            for tool in tools:
                _, log = stage.run(tool, args.api, 1, ["-X", "importtime"])
                lines = [line for line in log.splitlines() if line.startswith("import time:")]
                (args.importtime / f"{tool}-{args.api}.txt").write_text("\n".join(lines) + "\n")
        # Round after round, each function once a round: a load on the machine weighs on all of them alike.
        samples: dict[str, list[dict[str, float]]] = {tool: [] for tool in tools}
        for _ in range(args.runs):
            for tool in tools:
                figures, _ = stage.run(tool, args.api, 1 + WARM_CALLS)
                first, warm = figures["calls"][0], statistics.median(figures["calls"][1:])
                cost = figures["import"] + first - warm
                samples[tool].append(
                    {
                        "import": figures["import"],
                        "first": first,
                        "warm": warm,
                        "cost": cost,
                        "modules": figures["modules"],
                    }
                )
        for tool in tools:
            medians = {key: statistics.median(sample[key] for sample in samples[tool]) for key in samples[tool][0]}
            payload[tool] = {"medians": medians, "samples": samples[tool]}
        for tool in tools:
            medians = payload[tool]["medians"]
            # Each round's cost over a baseline's in the same round, then their median: a load that comes and
            # goes on a shared machine moves both sides of a round together.
            for key, baseline in (("ratio", "bare"), ("ratioSdk", "bare+sdk")):
                pairs = zip(samples[tool], samples[baseline], strict=True)
                medians[key] = statistics.median(mine["cost"] / theirs["cost"] for mine, theirs in pairs)
            payload[tool]["leastCost"] = min(sample["cost"] for sample in samples[tool])
            rows.append([tool, medians["import"], medians["first"], medians["warm"], medians["cost"],
                         f"{medians['ratio']:.2f}x", f"{medians['ratioSdk']:.2f}x", payload[tool]["leastCost"],
                         int(medians["modules"])])  # fmt: skip
        layer = stage.layer_megabytes()
    finally:
        stage.close()
    headers = ["function", "import ms", "first call ms", "warm ms", "cold cost ms", "× bare", "× bare+SDK"]
    print(table([*headers, "least cost ms", "modules"], rows))
    print(f"layer: {layer} MB ({stage.build.layer_python.parent})")
    result = {"runs": args.runs, "api": args.api, "warmCalls": WARM_CALLS, "layerMegabytes": layer,
              "buildDir": str(stage.build.build_dir), "functions": payload}  # fmt: skip
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

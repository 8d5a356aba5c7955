"""What a tool function loads at its cold start (bench/cold_start.py --built measures what it costs).

Each check runs a handler in a fresh Python process, as a new Lambda container would, and reads its
``sys.modules``: a memory function imports its own family's tools and models, not the catalog's; the API
Gateway door validates with the tool's own model, without Powertools' OpenAPI machinery; AWS clients come
from botocore without boto3; and a function whose tracing is on without the X-Ray SDK in its layer runs
untraced rather than failing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The catalog's families besides memory; none is loaded by a memory function.
OTHER_FAMILIES = ("knowledge", "sync", "conversations", "learning", "topics", "files", "graph", "outline")

HANDLER = """
import json, sys, tempfile, pathlib, importlib.util
sys.path.insert(0, "tests/support")
from aws_events import FakeLambdaContext, rest_event
from helpers import make_services
from mnemo.runtime import set_services
set_services(make_services(pathlib.Path(tempfile.mkdtemp())))
spec = importlib.util.spec_from_file_location("fn", "functions/{tool}/app.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
answers = [module.handler(rest_event("{tool}", body, {{"tenant": "acme", "user": "a"}}), FakeLambdaContext())
           for body in {bodies!r}]
print(json.dumps({{"statuses": [answer["statusCode"] for answer in answers],
                  "errors": [json.loads(answer["body"]).get("errorCode") for answer in answers],
                  "modules": sorted(sys.modules)}}), file=sys.stderr)
"""


def run(code: str, **environment: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "POWERTOOLS_", "AWS_LAMBDA_"))}
    env.update(environment)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.startswith("{") and '"modules"' in line]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(lines[-1])
    return report


@pytest.mark.parametrize("tool", ["memory_add", "memory_search"])
def test_a_memory_function_loads_its_family_only(tool: str) -> None:
    body = {"content": "Deploys freeze in December"} if tool == "memory_add" else {"query": "deploys"}
    report = run(HANDLER.format(tool=tool, bodies=[json.dumps(body)]))
    assert report["statuses"] == [200]
    modules = set(report["modules"])
    assert "mnemo.tools.memory" in modules
    loaded = sorted(m for m in modules for f in OTHER_FAMILIES if m in (f"mnemo.tools.{f}", f"mnemo.{f}.models"))
    assert loaded == []


def test_the_door_validates_without_powertools_openapi_machinery() -> None:
    bodies = [json.dumps({"content": "A fact"}), json.dumps({"content": ""}), "", "[1]", '{"content": "a", "x": 1}']
    report = run(HANDLER.format(tool="memory_add", bodies=bodies))
    assert report["statuses"] == [200, 400, 400, 400, 400]
    assert report["errors"] == [None, "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT"]
    modules = set(report["modules"])
    assert "aws_lambda_powertools.event_handler.openapi.params" not in modules
    assert "aws_lambda_powertools.event_handler.middlewares.openapi_validation" not in modules


CLIENT = """
import json, sys
from mnemo.adapters.aws.clients import aws_client
client = aws_client("dynamodb", "eu-west-1", "http://127.0.0.1:9")
print(json.dumps({"service": client.meta.service_model.service_name, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def test_aws_clients_come_from_botocore_without_boto3() -> None:
    report = run(CLIENT, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    assert report["service"] == "dynamodb"
    assert "botocore" in report["modules"]
    assert "boto3" not in report["modules"]


NO_XRAY = """
import json, sys
sys.modules["aws_xray_sdk"] = None  # a layer built without the X-Ray SDK
from mnemo import observability
print(json.dumps({"tracer": repr(observability.tracer()), "again": repr(observability.tracer()),
                  "modules": []}), file=sys.stderr)
"""


def test_tracing_on_without_the_xray_sdk_runs_untraced_with_one_warning() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "POWERTOOLS_"))}
    env.update(AWS_LAMBDA_FUNCTION_NAME="mnemo-dev-memory_add", POWERTOOLS_TRACE_DISABLED="false")
    done = subprocess.run([sys.executable, "-c", NO_XRAY], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads([line for line in done.stderr.splitlines() if '"tracer"' in line][-1])
    assert report["tracer"] == report["again"] == "None"
    # Inside Lambda the one Logger writes to stdout (CloudWatch): the warning, once.
    warnings = [line for line in done.stdout.splitlines() if "no X-Ray SDK" in line]
    assert len(warnings) == 1


@pytest.mark.parametrize(
    ("tool", "body"),
    [("extraction_status", {}), ("graph_search", {"query": "Where does Alice work?"})],
)
def test_the_schema_check_waits_for_a_model_answer(tool: str, body: dict[str, Any]) -> None:
    """A model's answer is checked with fastjsonschema (mnemo.schema_check: about 25 ms of a cold start, where
    jsonschema took 60-80): a learning or graph function whose first call asks no model (none is configured
    here) imports neither."""
    report = run(HANDLER.format(tool=tool, bodies=[json.dumps(body)]))
    assert report["statuses"] == [200], report["errors"]
    assert f"mnemo.tools.{'graph' if tool == 'graph_search' else 'learning'}" in report["modules"]
    checkers = ("jsonschema", "fastjsonschema")
    assert [m for m in report["modules"] if m in checkers or m.startswith(tuple(f"{c}." for c in checkers))] == []


SYNC_FIRST = """
import sys, pathlib
sys.path.insert(0, "tests/support")
from helpers import make_services
from sample_knowledge import ADR, ADR_ID
services = make_services(pathlib.Path({data!r}))
services.repository.push("acme", f"company/{{ADR_ID}}.md", ADR.encode(), author="a", message="m")
assert services.sync.sync("acme", __import__("mnemo.sync.models").sync.models.SyncNowInput()).result.added == 1
"""

SYNC_AGAIN = HANDLER.replace("pathlib.Path(tempfile.mkdtemp())", "pathlib.Path({data!r})")


def test_a_sync_with_nothing_changed_loads_no_yaml_schema_or_memory_service(tmp_path: Path) -> None:
    """sync_now's first call in a new container, over files synced before: it lists them, reads none, and so
    loads neither YAML, nor the front matter's schema check, nor the memory service its pointers need."""
    first = subprocess.run(
        [sys.executable, "-c", SYNC_FIRST.format(data=str(tmp_path))], cwd=ROOT, capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr[-3000:]
    report = run(SYNC_AGAIN.format(tool="sync_now", bodies=["{}"], data=str(tmp_path)))
    assert report["statuses"] == [200], report["errors"]
    modules = set(report["modules"])
    assert "mnemo.sync.service" in modules
    unwanted = ("yaml", "fastjsonschema", "mnemo.memory.service")
    assert sorted(m for m in modules if m in unwanted or m.startswith(("yaml.", "fastjsonschema."))) == []

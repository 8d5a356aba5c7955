"""The deployment rehearsal's stage: the AWS stand-ins and the built functions running on them.

- moto (tests/infra/rehearsal_moto.py, its own process) for DynamoDB, S3, EventBridge,
  SQS, IAM and STS, enforcing each function's role once the stage is set;
- osmem-server for the OpenSearch API (no k-NN, no SigV4: a loopback ``http://``
  endpoint is reached unsigned, see mnemo.adapters.aws.opensearch.client.is_local_endpoint;
  the deployed functions sign for ``aoss``);
- ``TitanStandIn``: no Bedrock model runs here. It checks each InvokeModel request against
  Titan Text Embeddings V2's documented body, checks the caller's role allows
  ``bedrock:InvokeModel`` on the model, and answers a deterministic unit vector. A Converse
  request (the extraction model) is checked the same way, then refused as a model without model
  access is (AccessDeniedException);
- ``Worker``: one warm process per function (tests/infra/rehearsal_worker.py), a plain
  python3.12 with only the function's build directory, the built layer and the runtime's
  boto3 on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import select
import subprocess
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rehearsal_build import REGION, ROOT, Build
from rehearsal_template import ACCOUNT, Function

HERE = Path(__file__).resolve().parents[1] / "infra"

# ----------------------------------------------------------------- runtime ---


def runtime_boto3_dir() -> Path:
    """boto3 and botocore as the python3.12 Lambda runtime provides them (not in the layer).

    The runtime ships its own boto3; this installs the version the project pins
    (pyproject's ``aws`` extra) once, with pip's --target, under .venv (git-ignored).
    """
    pin = re.search(r'"boto3==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    if pin is None:
        raise RuntimeError("pyproject.toml pins no boto3")
    target = ROOT / ".venv" / "lambda-runtime" / f"boto3-{pin.group(1)}"
    stamp = target / ".installed"
    if not stamp.exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-compile",
                "--target",
                str(target),
                f"boto3=={pin.group(1)}",
            ],
            check=True,
            timeout=600,
        )
        stamp.touch()
    return target


# -------------------------------------------------------------------- moto ---


class MotoProcess:
    """rehearsal_moto.py in a process of its own; ``enforce_iam()`` turns on its IAM checks."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "rehearsal_moto.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
        )
        assert self.process.stdout is not None
        self.url: str = json.loads(self.process.stdout.readline())["url"]

    def enforce_iam(self) -> None:
        import urllib.request

        # text/plain: a form-encoded body would be parsed away before moto reads the count.
        request = urllib.request.Request(
            f"{self.url}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()

    def client(self, service: str, credentials: dict[str, str]) -> Any:
        import boto3

        return boto3.client(service, region_name=REGION, endpoint_url=self.url, **credentials)

    def denials(self) -> list[dict[str, str]]:
        """Every request moto refused under IAM: action, resource, the role's session."""
        if not self._log_file.closed:
            self._log_file.flush()
        lines = self.log.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith('{"denied"')]

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=10)
        self._log_file.close()


def key_of(credentials: dict[str, str]) -> str:
    return credentials["aws_access_key_id"]


def create_admin(moto: MotoProcess) -> dict[str, str]:
    """An IAM user allowed everything: the test's own hand (setup, checks), never a function's."""
    iam = moto.client("iam", {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"})
    iam.create_user(UserName="rehearsal-admin")
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="rehearsal-admin", PolicyName="all", PolicyDocument=json.dumps(everything))
    key = iam.create_access_key(UserName="rehearsal-admin")["AccessKey"]
    return {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}


def create_role(moto: MotoProcess, admin: dict[str, str], function: Function) -> dict[str, str]:
    """The function's role with its inline policies from the transformed template, assumed via STS.

    The AWS managed policies SAM also attaches (AWSLambdaBasicExecutionRole,
    AWSXrayWriteOnlyAccess) are left out: CloudWatch Logs and X-Ray are reached by the
    runtime and its daemon, never through moto.
    """
    iam = moto.client("iam", admin)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = iam.create_role(RoleName=function.role_id, AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    for name, document in function.policies:
        # SAM writes its statements without a Version, which moto refuses; IAM reads them as
        # 2008-10-17, which differs from 2012-10-17 only in policy variables (none used here).
        versioned = {"Version": "2012-10-17", **document}
        iam.put_role_policy(RoleName=function.role_id, PolicyName=name, PolicyDocument=json.dumps(versioned))
    assumed = moto.client("sts", admin).assume_role(RoleArn=role["Arn"], RoleSessionName=function.name[:64])
    credentials = assumed["Credentials"]
    return {
        "aws_access_key_id": credentials["AccessKeyId"],
        "aws_secret_access_key": credentials["SecretAccessKey"],
        "aws_session_token": credentials["SessionToken"],
    }


# ------------------------------------------------------------------- Titan ---

#: Titan Text Embeddings V2's request body
#: (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html).
TITAN_FIELDS = {"inputText", "dimensions", "normalize", "embeddingTypes"}
TITAN_DIMENSIONS = {256, 512, 1024}
TITAN_MAX_CHARACTERS = 50_000


def titan_problems(model_id: str, expected_model: str, headers: Any, body: Any) -> list[str]:
    problems = []
    if model_id != expected_model:
        problems.append(f"model {model_id!r}, expected {expected_model!r}")
    if not str(headers.get("Content-Type", "")).startswith("application/json"):
        problems.append(f"Content-Type {headers.get('Content-Type')!r}")
    if not isinstance(body, dict):
        return [*problems, "the body is not a JSON object"]
    if set(body) - TITAN_FIELDS:
        problems.append(f"unknown fields {sorted(set(body) - TITAN_FIELDS)}")
    text = body.get("inputText")
    if not isinstance(text, str) or not text or len(text) > TITAN_MAX_CHARACTERS:
        problems.append("inputText must be a non-empty string of at most 50,000 characters")
    if "dimensions" in body and body["dimensions"] not in TITAN_DIMENSIONS:
        problems.append(f"dimensions {body['dimensions']!r} not one of 256, 512, 1024")
    if "normalize" in body and not isinstance(body["normalize"], bool):
        problems.append("normalize must be a boolean")
    return problems


def unit_vector(text: str, size: int) -> list[float]:
    """Deterministic: hashed words, so equal texts embed equally and shared words bring texts closer."""
    vector = [0.0] * size
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "big") % size] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    if norm == 1.0 and not any(vector):
        vector[0] = 1.0
    return [v / norm for v in vector]


def serve_http(answer: Callable[[BaseHTTPRequestHandler], None], *methods: str) -> tuple[ThreadingHTTPServer, str]:
    """A quiet HTTP server on a free local port, in a daemon thread, handing each request of ``methods``
    to ``answer``; and its URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _any(self) -> None:
            answer(self)

    for method in methods:
        setattr(Handler, f"do_{method}", Handler._any)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def send_json(request: BaseHTTPRequestHandler, status: int, error: str | None, payload: dict[str, Any]) -> None:
    """Answer ``request`` with ``payload`` as JSON; ``error``: the AWS error type, in ``x-amzn-ErrorType``."""
    data = json.dumps(payload).encode()
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(data)))
    if error:
        request.send_header("x-amzn-ErrorType", error)
    request.end_headers()
    request.wfile.write(data)


@dataclass
class TitanStandIn:
    """An HTTP server answering bedrock-runtime InvokeModel as Titan Text Embeddings V2 would."""

    model_id: str
    #: access key id -> (function logical id, the role's policy documents)
    callers: dict[str, tuple[str, list[dict[str, Any]]]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    #: Converse requests per function (the extraction model; each refused: see ``_converse``).
    converse_calls: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._server, self.url = serve_http(self._answer, "POST")

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        from urllib.parse import unquote

        from moto.iam.access_control import IAMPolicy, PermissionResult

        raw = request.rfile.read(int(request.headers.get("Content-Length", 0)))
        converse = re.fullmatch(r"/model/([^/]+)/converse", request.path)
        if converse is not None:
            self._converse(request, unquote(converse.group(1)), raw)
            return
        match = re.fullmatch(r"/model/([^/]+)/invoke", request.path)
        credential = re.search(r"Credential=([^/]+)/", request.headers.get("Authorization", ""))
        caller = self.callers.get(credential.group(1)) if credential else None
        if match is None or caller is None:
            send_json(request, 403, "AccessDeniedException", {"message": "unsigned or unknown caller"})
            return
        model_id = unquote(match.group(1))
        function, policies = caller
        model_arn = f"arn:aws:bedrock:{REGION}::foundation-model/{model_id}"
        results = [IAMPolicy(json.dumps(doc)).is_action_permitted("bedrock:InvokeModel", model_arn) for doc in policies]
        if PermissionResult.DENIED in results or PermissionResult.PERMITTED not in results:
            self.problems.append(f"{function}: bedrock:InvokeModel on {model_arn} is not allowed by its role")
            send_json(request, 403, "AccessDeniedException", {"message": f"not authorized to invoke {model_arn}"})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        problems = titan_problems(model_id, self.model_id, request.headers, body)
        if problems:
            self.problems.append(f"{function}: {'; '.join(problems)}")
            send_json(request, 400, "ValidationException", {"message": "; ".join(problems)})
            return
        self.calls[function] += 1
        size = int(body.get("dimensions", 1024))
        text = body["inputText"]
        send_json(request, 200, None, {"embedding": unit_vector(text, size), "inputTextTokenCount": len(text.split())})

    def _converse(self, request: BaseHTTPRequestHandler, model_id: str, raw: bytes) -> None:
        """Converse (the extraction model): checked as Bedrock would check it, then refused as a model without
        model access in the account is ("You don't have access to the model"): no model runs here, and the
        extraction must record that as a strategy's failure, not crash."""
        from moto.iam.access_control import IAMPolicy, PermissionResult

        credential = re.search(r"Credential=([^/]+)/", request.headers.get("Authorization", ""))
        caller = self.callers.get(credential.group(1)) if credential else None
        if caller is None:
            send_json(request, 403, "AccessDeniedException", {"message": "unsigned or unknown caller"})
            return
        function, policies = caller
        model_arn = f"arn:aws:bedrock:{REGION}::foundation-model/{model_id}"
        # Converse is authorised by bedrock:InvokeModel on the model (Bedrock user guide, Converse API).
        results = [IAMPolicy(json.dumps(doc)).is_action_permitted("bedrock:InvokeModel", model_arn) for doc in policies]
        if PermissionResult.DENIED in results or PermissionResult.PERMITTED not in results:
            self.problems.append(f"{function}: Converse (bedrock:InvokeModel) on {model_arn} is not allowed")
            send_json(request, 403, "AccessDeniedException", {"message": f"not authorized to invoke {model_arn}"})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        forced = (body or {}).get("toolConfig", {}).get("toolChoice", {}).get("tool", {}).get("name")
        if not isinstance(body, dict) or not body.get("messages") or not forced:
            self.problems.append(f"{function}: a Converse request without messages or a forced tool")
        self.converse_calls[function] += 1
        send_json(
            request,
            403,
            "AccessDeniedException",
            {"message": "You don't have access to the model with the specified model ID."},
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# ----------------------------------------------------------------- workers ---


class FunctionError(AssertionError):
    """The function raised (Lambda would report a function error) or could not start."""


class Worker:
    """One warm execution environment of a built function."""

    def __init__(self, build: Build, function: Function, runtime: Path, environment: dict[str, str], log: Path) -> None:
        from rehearsal_build import python312

        self.function = function
        self.log = log
        self.function_dir = build.function_dir(function.logical_id)
        self.allowed = [str(self.function_dir), str(build.layer_python), str(runtime)]
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [python312(), "-I", "-S", str(HERE / "rehearsal_worker.py"), *self.allowed, function.handler],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            env=environment,
            cwd=self.function_dir,
            text=True,
        )
        self._ready: dict[str, Any] | None = None
        self.invocations = 0

    @property
    def ready(self) -> dict[str, Any]:
        """The init report: ``ready`` and ``sysPath``, or the init error (read once, on first use)."""
        if self._ready is None:
            self._ready = self._read(120.0)
        return self._ready

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not readable:
            self.close()
            raise FunctionError(f"{self.function.logical_id}: no answer within {timeout:.0f} s (see {self.log})")
        line = self.process.stdout.readline()
        if not line:
            raise FunctionError(f"{self.function.logical_id}: the process ended (see {self.log}):\n{self.log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def log_tail(self, characters: int = 3000) -> str:
        self._log_file.flush()
        return self.log.read_text()[-characters:]

    def invoke(self, event: dict[str, Any]) -> Any:
        """The handler's result for ``event``; FunctionError with the traceback if it raised."""
        import time

        assert self.process.stdin is not None and self.ready["ready"], self.ready
        request_id = str(uuid.uuid4())
        self.process.stdin.write(
            json.dumps(
                {
                    "event": event,
                    "requestId": request_id,
                    "invokedFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function.name}",
                    "deadlineMs": time.time() * 1000 + self.function.timeout * 1000,
                }
            )
            + "\n"
        )
        self.process.stdin.flush()
        self.invocations += 1
        # The function's own Timeout bounds the wait, as Lambda would end the invocation.
        answer = self._read(self.function.timeout + 5.0)
        if not answer["ok"]:
            error = answer["error"]
            raise FunctionError(
                f"{self.function.logical_id}: {error['errorType']}: {error['errorMessage']}\n"
                + "".join(error["stackTrace"])
            )
        return answer["result"]

    def loaded_files(self) -> list[str]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"command": "modules"}) + "\n")
        self.process.stdin.flush()
        files: list[str] = self._read(30.0)["files"]
        return files

    def stop(self) -> None:
        """Ask the process to end (its stdin closes), without waiting."""
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()

    def close(self) -> None:
        self.stop()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=3)  # Lambda does not wait for an environment either
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()


def lambda_environment(
    function: Function,
    build: Build,
    runtime: Path,
    credentials: dict[str, str],
    moto_url: str,
    titan_url: str,
) -> dict[str, str]:
    """The function's variables (Globals and its own, resolved) and those Lambda itself sets.

    AWS_ENDPOINT_URL sends every botocore client to moto and AWS_ENDPOINT_URL_BEDROCK_RUNTIME
    sends bedrock-runtime to the Titan stand-in (botocore's service-specific endpoints).
    MNEMO_AWS_ENDPOINT stays unset, as the deployed template leaves it. No shared AWS config
    or credentials file of this machine is read.
    """
    return {
        **function.environment,
        **function.lambda_logging,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": credentials["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": credentials["aws_secret_access_key"],
        "AWS_SESSION_TOKEN": credentials["aws_session_token"],
        "AWS_LAMBDA_FUNCTION_NAME": function.name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "rehearsal",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "LAMBDA_TASK_ROOT": str(build.function_dir(function.logical_id)),
        "LAMBDA_RUNTIME_DIR": str(runtime),
        "_HANDLER": function.handler,
        "TZ": ":UTC",
        "LANG": "en_US.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": titan_url,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }


# -------------------------------------------------------------- OpenSearch ---


def faiss_innerproduct_score(cosine: float) -> float:
    """The score OpenSearch gives a faiss ``innerproduct`` hit (docs: k-NN spaces)."""
    distance = -cosine
    return 1.0 / (1.0 + distance) if distance >= 0 else 1.0 - distance


class OpenSearchStandIn:
    """osmem-server behind a proxy that answers the k-NN searches osmem cannot.

    Every request goes to osmem, except a ``_search`` whose query is ``knn``: its body is
    checked against tests/contract/knn_query.schema.json (the documented DSL), then the
    filter is run on osmem and its hits are scored by the documented faiss ``innerproduct``
    formula from the vectors the proxy saw in the ``_bulk`` writes (osmem keeps them out
    of ``_source``). Deleted or duplicated documents count as osmem holds them.
    """

    def __init__(self, osmem_url: str, on_request: Callable[[str, str, bytes | None, int], None] | None = None) -> None:
        """``on_request(method, path, body, k-NN searches)`` is called for each request, on the server's thread,
        before it is answered (bench/deploy_cost.py counts them into the phase of the call waiting on it)."""
        from jsonschema import Draft202012Validator

        self.osmem_url = osmem_url
        self._on_request = on_request
        schema = json.loads((ROOT / "tests" / "contract" / "knn_query.schema.json").read_text())
        self._validator = Draft202012Validator(schema)
        self.vectors: dict[tuple[str, str], list[float]] = {}
        self.knn_searches = 0
        self.problems: list[str] = []
        self._server, self.url = serve_http(self._handle, "GET", "POST", "PUT", "DELETE", "HEAD")

    def _osmem(self, method: str, path: str, body: bytes | None, content_type: str | None) -> tuple[int, bytes, str]:
        import http.client
        from urllib.parse import urlparse

        target = urlparse(self.osmem_url)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        headers = {"Content-Type": content_type} if content_type else {}
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        return answer.status, data, answer.getheader("Content-Type") or "application/json"

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length) if length else None
        path = request.path
        body: Any = None
        if raw and path.split("?")[0].endswith("/_search"):
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        searches = _knn_msearch(path, raw)
        single = isinstance(body, dict) and "knn" in (body.get("query") or {})
        if self._on_request is not None:
            self._on_request(request.command, path, raw, 1 if single else len(searches))
        if single:
            status, data, kind = self._knn(path.split("?")[0].rsplit("/", 1)[0], body)  # type: ignore[arg-type]
        elif searches:  # an _msearch of k-NN searches only (memory_add's near-duplicate check): each as above
            answers = [self._knn(index_path, search) for index_path, search in searches]
            responses = [{**json.loads(data), "status": status} for status, data, _ in answers]
            status, data, kind = 200, json.dumps({"took": 1, "responses": responses}).encode(), "application/json"
        else:
            status, data, kind = self._osmem(request.command, path, raw, request.headers.get("Content-Type"))
            if raw and path.split("?")[0].endswith("/_bulk") and status == 200:
                self._remember(raw, json.loads(data))
        request.send_response(status)
        request.send_header("Content-Type", kind)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(data)

    def _remember(self, raw: bytes, answer: dict[str, Any]) -> None:
        lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        items = iter(answer.get("items", []))
        pending = iter(lines)
        for action in pending:
            kind = next(iter(action))
            source = next(pending) if kind in ("index", "create", "update") else None
            result = next(items)[kind]
            if source is not None and "vector" in source and result.get("status", 500) < 300:
                self.vectors[(result["_index"], result["_id"])] = source["vector"]

    def _knn(self, index_path: str, body: dict[str, Any]) -> tuple[int, bytes, str]:
        errors = [error.message for error in self._validator.iter_errors(body)]
        if errors:
            self.problems.append(f"k-NN body refused: {errors[:3]}")
            error = {"error": {"type": "parsing_exception", "reason": "; ".join(errors[:3])}, "status": 400}
            return 400, json.dumps(error).encode(), "application/json"
        self.knn_searches += 1
        knn = body["query"]["knn"]["vector"]
        query = knn["vector"]
        candidates_query = {"bool": {"filter": [knn["filter"]]}} if "filter" in knn else {"match_all": {}}
        status, data, kind = self._osmem(
            "POST",
            f"{index_path}/_search",
            json.dumps({"size": 10000, "query": candidates_query, "_source": body.get("_source", True)}).encode(),
            "application/json",
        )
        if status != 200:
            return status, data, kind
        scored = []
        for hit in json.loads(data)["hits"]["hits"]:
            vector = self.vectors.get((hit["_index"], hit["_id"]))
            if vector is not None:
                cosine = sum(a * b for a, b in zip(query, vector, strict=True))
                scored.append({**hit, "_score": faiss_innerproduct_score(cosine)})
        scored.sort(key=lambda hit: -hit["_score"])
        hits = scored[: min(knn.get("k", 10), body.get("size", 10))]
        answer = {
            "took": 1,
            "timed_out": False,
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits},
        }
        return 200, json.dumps(answer).encode(), "application/json"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _knn_msearch(path: str, raw: bytes | None) -> list[tuple[str, dict[str, Any]]]:
    """The (index path, body) of each search of an ``_msearch`` made of k-NN searches only (else [])."""
    if not raw or not path.split("?")[0].endswith("/_msearch"):
        return []
    try:
        lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    except ValueError:
        return []
    pairs = list(zip(lines[::2], lines[1::2], strict=False))
    if not pairs or not all(isinstance(b, dict) and "knn" in (b.get("query") or {}) for _, b in pairs):
        return []
    return [(f"/{header.get('index', '')}", search) for header, search in pairs]

"""mnemo.client against a real local server: every tool of the catalog through its typed method (the
docstring examples, in catalog order), the envelope raised as typed exceptions, retries, auth headers."""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from helpers import ctx, local_server
from knowledge_helpers import push_tree
from mnemo.client import (
    TOOL_NAMES,
    ApiKey,
    AsyncMnemoClient,
    ConflictError,
    InvalidInputError,
    LocalIdentity,
    MnemoClient,
    NotFoundError,
    ProviderError,
    SigV4,
    TransportError,
)
from mnemo.client.transport import Transport
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import load_catalog
from mnemo_codegen.client_gen import _parameters, render_client_module
from outline_support import push_shop

ROOT = Path(__file__).resolve().parents[2]
#: With the admin role, for erase_user's example (it erases bob, who holds nothing).
IDENTITY = LocalIdentity(tenant="acme", user="alice", project="p1", org="engineering", roles=("writer", "admin"))


def test_the_client_module_is_generated_from_the_catalog() -> None:
    catalog = load_catalog(experimental=True)
    committed = (ROOT / "layers/shared/mnemo/client/tools.py").read_text()
    assert committed == render_client_module(catalog), "run `make docs` to regenerate mnemo/client/tools.py"
    assert tuple(catalog) == TOOL_NAMES


@pytest.fixture
def server(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "1")
    context = ctx(tenant="acme", project="p1", org="engineering", roles=("writer",))
    push_tree(services, context.tenant)
    services.sync.sync(context.tenant, SyncNowInput(layers=["org"]))
    push_shop(services, context)
    with local_server(services) as url:
        yield url


def _kwargs(tool: Any, payload: dict[str, Any]) -> dict[str, Any]:
    names = {wire: name for name, wire, _, _ in _parameters(tool)}
    return {names[wire]: value for wire, value in payload.items()}


def test_every_tool_answers_through_its_typed_method(server: str) -> None:
    client = MnemoClient(server, auth=IDENTITY)
    last_memory_id = last_fact_id = None
    answered = []
    for tool in load_catalog(experimental=True).values():
        payload = dict(dict(tool.examples())["Usage"])
        if "memoryId" in payload and last_memory_id:
            payload["memoryId"] = last_memory_id
        if "factId" in payload and last_fact_id:
            payload["factId"] = last_fact_id
        method = getattr(client, tool.name)
        try:
            result = method(**_kwargs(tool, payload))
        except (NotFoundError, ConflictError, InvalidInputError, ProviderError) as error:
            # only an error the tool's spec documents (the extraction model is not configured here)
            assert error.code in tool.spec.split("**Errors:**", 1)[1], (tool.name, error.code, error.message)
            answered.append(tool.name)
            continue
        assert result["success"] is True, tool.name
        last_memory_id = result.get("memoryId", last_memory_id)
        last_fact_id = result.get("factId", last_fact_id)
        answered.append(tool.name)
    assert answered == list(TOOL_NAMES)


def test_the_envelope_comes_back_as_typed_exceptions(server: str) -> None:
    client = MnemoClient(server, auth=IDENTITY)
    with pytest.raises(InvalidInputError) as invalid:
        client.memory_add(content="")
    assert invalid.value.field == "content"
    assert invalid.value.status == 400
    assert not invalid.value.retryable
    with pytest.raises(NotFoundError) as missing:
        client.memory_delete(memory_id="mem_nope")
    assert missing.value.status == 404
    assert missing.value.field == "memoryId"


def test_the_async_client_answers_the_same(server: str) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        client = AsyncMnemoClient(server, auth=IDENTITY)
        added = await client.memory_add(content="Deploys freeze on Dec 20", layer="project")
        found = await client.memory_search(query="deploys freeze", threshold=0.0)
        return added, found

    added, found = asyncio.run(scenario())
    assert found["results"][0]["memoryId"] == added["memoryId"]


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503 with a retryable envelope twice, then 200; records the headers it saw."""

    answers: ClassVar[list[tuple[int, dict[str, Any]]]] = []
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append({name.lower(): value for name, value in self.headers.items()})
        status, body = type(self).answers.pop(0)
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def flaky() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_retryable_answers_are_retried_with_backoff_and_others_are_not(flaky: str) -> None:
    busy = {"success": False, "errorCode": "PROVIDER_ERROR", "message": "busy", "details": {}, "retryable": True}
    _Flaky.answers = [(503, busy), (503, busy), (200, {"success": True, "memoryId": "mem_1"})]
    _Flaky.seen = []
    waits: list[float] = []
    transport = Transport(flaky, auth=ApiKey("k-123"), sleep=waits.append)
    assert transport.call("memory_add", {"content": "x"}) == {"success": True, "memoryId": "mem_1"}
    assert len(waits) == 2
    assert 0.2 <= waits[0] < 0.4
    assert 0.4 <= waits[1] < 0.8
    assert all(headers.get("x-api-key") == "k-123" for headers in _Flaky.seen)

    conflict = {"success": False, "errorCode": "CONFLICT", "message": "no", "details": {}, "retryable": False}
    _Flaky.answers = [(409, conflict)]
    with pytest.raises(ConflictError):
        transport.call("memory_add", {"content": "x"})
    _Flaky.answers = [(503, busy)] * 4
    with pytest.raises(ProviderError):
        Transport(flaky, retries=3, sleep=lambda _: None).call("memory_add", {"content": "x"})
    assert _Flaky.answers == []


def test_no_server_is_a_transport_error() -> None:
    with pytest.raises(TransportError) as failed:
        Transport("http://127.0.0.1:9", retries=1, sleep=lambda _: None).call("memory_add", {"content": "x"})
    assert failed.value.retryable
    assert failed.value.code == "TRANSPORT"


def test_sigv4_signs_each_request_in_the_documented_form(flaky: str) -> None:
    """What an IAM-authorised API Gateway checks (docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request):
    Authorization 'AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/execute-api/aws4_request, SignedHeaders=...,
    Signature=<64 hex>', X-Amz-Date, and the session token when the credentials have one."""
    from botocore.credentials import Credentials

    _Flaky.answers = [(200, {"success": True})]
    _Flaky.seen = []
    auth = SigV4("eu-west-1", credentials=Credentials("AKIDEXAMPLE", "secret", "session-token"))
    Transport(flaky, auth=auth).call("memory_search", {"query": "x"})
    (headers,) = _Flaky.seen
    authorization = headers["authorization"]
    match = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/eu-west-1/execute-api/aws4_request, "
        r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})",
        authorization,
    )
    assert match is not None, authorization
    assert headers["x-amz-date"].startswith(match.group(1))
    assert re.fullmatch(r"\d{8}T\d{6}Z", headers["x-amz-date"])
    assert {"host", "x-amz-date", "x-amz-security-token"} <= set(match.group(2).split(";"))
    assert headers["x-amz-security-token"] == "session-token"

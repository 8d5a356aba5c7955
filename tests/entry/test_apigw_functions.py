"""The tool Lambdas (functions/*/app.py) on real REST proxy events."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aws_events import FakeLambdaContext, rest_event
from mnemo.errors import NotFound
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"principalId": "alice", "tenant": "acme", "user": "alice", "project": "p1", "roles": "writer"}


def load_function(tool: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fn_{tool}", ROOT / "functions" / tool / "app.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def invoke(tool: str, body: Any, authorizer: dict[str, Any] | None = AUTH, **kw: Any) -> tuple[int, dict[str, Any]]:
    result = load_function(tool).handler(rest_event(tool, body, authorizer, **kw), FakeLambdaContext())
    return result["statusCode"], json.loads(result["body"])


def test_every_catalog_tool_has_a_function_folder() -> None:
    for name, tool in load_catalog(experimental=True).items():
        source = (ROOT / "functions" / name / "app.py").read_text()
        assert f'tool_handler("{name}", family="{tool.family}")' in source


def test_the_outline_lambdas_answer_with_the_setting_the_template_passes(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "true")  # Globals: MNEMO_EXPERIMENTAL: !Ref ExperimentalTools
    code = "def greet(name: str) -> str:\n    return name.title()\n\n\ndef main() -> None:\n    greet('x')\n"
    assert invoke("file_write", {"path": "app/main.py", "content": code})[0] == 200
    status, answer = invoke("outline_symbol", {"symbol": "greet", "language": "python", "depth": 1})
    assert status == 200
    assert answer["text"].splitlines()[:2] == [
        "main.greet [function] app/main.py:1",
        "├── calls builtins.str.title (native)",
    ]
    status, envelope = invoke("outline_file", {"file": "../main.py", "language": "python"})
    assert status == 400
    assert envelope["details"]["field"] == "file"
    monkeypatch.setenv("MNEMO_EXPERIMENTAL", "false")  # never deployed so: the function would not initialise
    with pytest.raises(NotFound):
        load_function("outline_project")


def test_add_search_delete_through_the_lambdas(services: Services) -> None:
    status, added = invoke("memory_add", {"content": "Deploys freeze on Dec 20", "layer": "project"})
    assert status == 200
    assert added["success"]
    assert added["layer"] == "project"
    status, found = invoke("memory_search", {"query": "deploys freeze", "threshold": 0})
    assert status == 200
    assert found["results"][0]["memoryId"] == added["memoryId"]
    status, deleted = invoke("memory_delete", {"memoryId": added["memoryId"]})
    assert status == 200
    assert deleted["memoryId"] == added["memoryId"]


@pytest.mark.parametrize(
    ("tool", "body", "field", "status"),
    [
        ("memory_add", {}, "content", 400),
        ("memory_add", {"content": ""}, "content", 400),
        ("memory_add", {"content": "   "}, "content", 400),
        ("memory_add", {"content": "x" * 8001}, "content", 400),
        ("memory_add", {"content": "x", "layer": "galaxy"}, "layer", 400),
        ("memory_add", {"content": "x", "tags": "not-a-list"}, "tags", 400),
        ("memory_add", {"content": "x", "occurredAt": "yesterday-ish"}, "occurredAt", 400),
        ("memory_add", {"content": "x", "surprise": 1}, "surprise", 400),
        ("memory_add", {"content": "x", "layer": "team"}, "layer", 400),
        ("memory_search", {"query": "x", "limit": 0}, "limit", 400),
        ("memory_search", {"query": "x", "limit": 101}, "limit", 400),
        ("memory_search", {"query": "x", "threshold": 2}, "threshold", 400),
        ("memory_search", {"query": "x", "layers": ["galaxy"]}, "layers.0", 400),
        ("memory_search", {"limit": 3}, "query", 400),
        ("memory_delete", {}, "memoryId", 400),
        ("memory_delete", {"memoryId": "mem_nope"}, "memoryId", 404),
        ("memory_add", "{not json", "body", 400),
        ("memory_add", None, "body", 400),
        ("memory_add", "[1, 2]", "body", 400),
    ],
)
def test_bad_input_gets_the_envelope_naming_the_field(
    services: Services, tool: str, body: Any, field: str, status: int
) -> None:
    got_status, envelope = invoke(tool, body)
    assert got_status == status
    assert envelope["success"] is False
    assert envelope["errorCode"] == ("NOT_FOUND" if status == 404 else "INVALID_INPUT")
    assert envelope["details"]["field"] == field
    assert set(envelope) == {"success", "errorCode", "message", "details", "retryable"}
    assert "Traceback" not in json.dumps(envelope)


def test_unexpected_failure_is_an_envelope_not_a_trace(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: Any) -> Any:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(services.memory, "search", explode)
    status, envelope = invoke("memory_search", {"query": "x"})
    assert status == 502
    assert envelope["errorCode"] == "PROVIDER_ERROR"
    assert envelope["retryable"] is True
    assert "/secret/path" not in json.dumps(envelope)


def test_identity_comes_from_the_authorizer_only(services: Services) -> None:
    status, envelope = invoke("memory_search", {"query": "x"}, authorizer=None)
    assert status == 403
    assert envelope["errorCode"] == "UNAUTHORIZED"
    invoke("memory_add", {"content": "Alice's secret plan"})
    cognito = {"claims": {"sub": "bob", "custom:tenant": "acme"}}
    status, found = invoke("memory_search", {"query": "secret plan", "threshold": 0}, authorizer=cognito)
    assert status == 200
    assert found["results"] == []
    iam_identity = {
        "sourceIp": "1.2.3.4",
        "userArn": "arn:aws:iam::123456789012:user/carol",
        "accountId": "123456789012",
    }
    status, found = invoke("memory_search", {"query": "plan", "threshold": 0}, authorizer=None, identity=iam_identity)
    assert status == 200
    assert found["results"] == []
    assert found["searchedLayers"] == ["user", "company"]


def test_shared_layer_write_without_writer_role_is_unauthorized(services: Services) -> None:
    reader = {**AUTH, "roles": ""}
    status, envelope = invoke("memory_add", {"content": "x", "layer": "project"}, authorizer=reader)
    assert status == 403
    assert envelope["errorCode"] == "UNAUTHORIZED"


def test_a_handler_that_needs_no_model_never_loads_one(tmp_path: Path) -> None:
    """memory_delete runs in a fresh interpreter with the bge embedder configured: no onnxruntime import."""
    script = f"""
import json, sys
sys.path.insert(0, {str(ROOT / "tests" / "support")!r})
from aws_events import FakeLambdaContext, rest_event
import importlib.util
spec = importlib.util.spec_from_file_location("fn", {str(ROOT / "functions" / "memory_delete" / "app.py")!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
out = module.handler(rest_event("memory_delete", {{"memoryId": "mem_x"}}, {{"user": "u"}}), FakeLambdaContext())
loaded = sorted(name for name in ("onnxruntime", "tokenizers") if name in sys.modules)
print(json.dumps({{"status": out["statusCode"], "loaded": loaded}}))
"""
    env = {"MNEMO_DATA_DIR": str(tmp_path), "MNEMO_EMBEDDER": "bge", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"status": 404, "loaded": []}


def test_api_key_mode_maps_each_key_to_its_own_caller(services: Services) -> None:
    key_a = {"sourceIp": "1.2.3.4", "apiKeyId": "key-a"}
    key_b = {"sourceIp": "1.2.3.4", "apiKeyId": "key-b"}
    status, added = invoke("memory_add", {"content": "Key A's private note"}, authorizer=None, identity=key_a)
    assert status == 200
    status, mine = invoke("memory_search", {"query": "private note", "threshold": 0}, authorizer=None, identity=key_a)
    assert [r["memoryId"] for r in mine["results"]] == [added["memoryId"]]
    status, theirs = invoke("memory_search", {"query": "private note", "threshold": 0}, authorizer=None, identity=key_b)
    assert status == 200
    assert theirs["results"] == []


@pytest.mark.parametrize("claim", ["userId", "user_id", "user", "tenant", "tenantId", "projectId", "roles"])
def test_a_body_claiming_another_identity_is_unauthorized(services: Services, claim: str) -> None:
    status, envelope = invoke("memory_add", {"content": "x", claim: "mallory"})
    assert status == 403
    assert envelope["errorCode"] == "UNAUTHORIZED"
    assert envelope["details"]["field"] == claim


def test_a_body_repeating_the_callers_own_identity_is_accepted(services: Services) -> None:
    status, added = invoke("memory_add", {"content": "Echoed identity is fine", "userId": "alice", "tenant": "acme"})
    assert status == 200
    assert added["success"]


def test_identity_claims_are_refused_on_every_in_process_door(services: Services) -> None:
    from helpers import ctx
    from mnemo.errors import Unauthorized
    from mnemo.tools.registry import get_tool

    with pytest.raises(Unauthorized) as raised:
        get_tool("memory_search").invoke(services, ctx(), {"query": "x", "user_id": "bob"})
    assert raised.value.details["field"] == "user_id"
    assert get_tool("memory_search").invoke(services, ctx(), {"query": "x", "user_id": "alice"})["success"]


def test_the_file_tools_through_their_own_lambdas(services: Services) -> None:
    """Each file tool's Lambda: a block written, appended to, pinned, loaded, expanded, searched, unpinned and deleted,
    beside a workspace file; a path that escapes its scope is refused naming `path`."""
    block = "mnemo:///blocks/decisions.md"
    status, written = invoke("file_write", {"path": block, "content": "# Decisions\n[END]\n"})
    assert status == 200
    assert written["created"]
    assert written["version"] == 1
    status, edited = invoke("file_edit", {"path": block, "old": "[END]", "new": "- Orders live in PostgreSQL.\n[END]"})
    assert status == 200
    assert edited["version"] == 2
    assert edited["replacements"] == 1
    status, source = invoke("file_write", {"path": "src/auth.py", "content": "def login():\n    pass\n"})
    assert status == 200
    assert source["kind"] == "workspace"
    status, read = invoke("file_read", {"path": "src/auth.py", "offset": 1})
    assert status == 200
    assert read["content"] == "    pass\n"
    assert read["totalLines"] == 2
    status, listed = invoke("file_list", {"path": "mnemo:///blocks/"})
    assert status == 200
    assert [entry["path"] for entry in listed["entries"]] == [block]
    status, pinned = invoke("block_pin", {"path": block})
    assert status == 200
    assert pinned["pinned"]
    assert pinned["budgetTokens"] == services.settings.block_budget_tokens
    status, loaded = invoke("pinned_context", {})
    assert status == 200
    assert "Orders live in PostgreSQL" in loaded["context"]
    assert loaded["count"] == 1
    status, expanded = invoke("expand_prompt", {"text": "Follow @@decisions in @src/auth.py."})
    assert status == 200
    assert [e["path"] for e in expanded["expansions"]] == [block, "src/auth.py"]
    status, found = invoke("file_search", {"query": "orders PostgreSQL", "threshold": 0})
    assert status == 200
    assert found["results"][0]["path"] == block
    status, unpinned = invoke("block_unpin", {"path": block})
    assert status == 200
    assert unpinned["changed"]
    assert unpinned["pinnedCount"] == 0
    for path in (block, "src/auth.py"):
        status, deleted = invoke("file_delete", {"path": path})
        assert status == 200
        assert deleted["path"] == path
    status, envelope = invoke("file_read", {"path": block})
    assert status == 404
    assert envelope["errorCode"] == "NOT_FOUND"
    status, envelope = invoke("file_write", {"path": "../etc/passwd", "content": "x"})
    assert status == 400
    assert envelope["details"]["field"] == "path"

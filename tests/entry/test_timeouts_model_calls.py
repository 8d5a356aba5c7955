"""A model call is sent once: bedrock-runtime stood in for by a local HTTP server that counts requests.

Converse is ``POST /model/{modelId}/converse`` (bedrock-runtime API reference). The server answers
slower than the extraction read timeout, or with a scripted error, and the test counts what reached it.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from aws_events import FakeLambdaContext, rest_event
from mnemo.entry.apigw import all_tools_resolver, resolve
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

AUTH = {"principalId": "alice", "tenant": "acme", "user": "alice"}
FACT = {"subject": "Ana", "predicate": "works_at", "object": "Acme", "text": "Ana works at Acme."}
TOOL_ANSWER = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "toolUseId": "t1",
                        "name": "record_knowledge_graph",
                        "input": {
                            "entities": [{"name": "Ana", "type": "person"}],
                            "facts": [FACT],
                        },
                    }
                }
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 10, "outputTokens": 10, "totalTokens": 20},
}


class Bedrock:
    """What the stand-in answers, in order (status, body, seconds to wait first), and the paths it was sent."""

    def __init__(self, answers: list[tuple[int, dict[str, Any], float]]) -> None:
        self.answers = answers
        self.paths: list[str] = []
        self.release = threading.Event()


@pytest.fixture
def bedrock() -> Iterator[tuple[Bedrock, str]]:
    state = Bedrock([])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.paths.append(unquote(self.path))
            status, body, wait = state.answers.pop(0) if state.answers else (500, {"message": "exhausted"}, 0.0)
            state.release.wait(wait)  # longer than the client's read timeout: it gives up first
            raw = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if status >= 400:
                    self.send_header("x-amzn-ErrorType", body["__type"])
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:  # the client hung up after its read timeout
                pass

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        state.release.set()
        server.shutdown()


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)


def install(tmp_path: Path, endpoint: str, model_id: str = "eu.amazon.nova-lite-v1:0", **settings: Any) -> Services:
    built = Services(
        Settings(
            data_dir=tmp_path,
            embedder="hashing",
            extractor="bedrock",
            extractor_model_id=model_id,
            aws_region="eu-west-1",
            aws_endpoint=endpoint,
            **settings,
        )
    )
    set_services(built)
    return built


def call(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = resolve(all_tools_resolver(), rest_event("build_memory_from_text", body, AUTH), FakeLambdaContext())
    return result["statusCode"], json.loads(result["body"])


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    set_services(None)


def test_a_generation_past_the_read_timeout_is_sent_once_and_answered_timeout(
    tmp_path: Path, bedrock: tuple[Bedrock, str], aws_credentials: None
) -> None:
    state, url = bedrock
    state.answers = [(200, TOOL_ANSWER, 5.0)] * 5
    install(tmp_path, url, extractor_timeout_seconds=0.5)
    status, envelope = call({"content": "Ana works at Acme."})
    state.release.set()
    assert (status, envelope["errorCode"]) == (504, "TIMEOUT"), envelope
    assert envelope["details"]["service"] == "Bedrock"
    time.sleep(0.2)  # any repeat would already have reached the server
    assert state.paths == ["/model/eu.amazon.nova-lite-v1:0/converse"]


@pytest.mark.parametrize("code, status", [("InternalServerException", 500), ("ModelErrorException", 424)])
def test_an_error_after_the_model_may_have_run_is_not_sent_again(
    tmp_path: Path, bedrock: tuple[Bedrock, str], aws_credentials: None, code: str, status: int
) -> None:
    state, url = bedrock
    state.answers = [(status, {"__type": code, "message": "failed"}, 0.0)] * 5
    install(tmp_path, url)
    answered, envelope = call({"content": "Ana works at Acme."})
    assert envelope["errorCode"] == "PROVIDER_ERROR", envelope
    assert envelope["details"]["awsCode"] == code, envelope
    assert answered >= 500
    assert len(state.paths) == 1


def test_throttling_means_not_run_and_is_retried(
    tmp_path: Path, bedrock: tuple[Bedrock, str], aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mnemo.adapters.aws.bedrock_extractor.RETRY_FIRST_DELAY", 0.01)
    state, url = bedrock
    state.answers = [(429, {"__type": "ThrottlingException", "message": "slow down"}, 0.0), (200, TOOL_ANSWER, 0.0)]
    install(tmp_path, url)
    status, answer = call({"content": "Ana works at Acme.", "dryRun": True})
    assert status == 200, answer
    assert answer["modelCalls"] == 1, answer
    assert len(state.paths) == 2


def test_the_profile_id_is_sent_as_the_model_id(
    tmp_path: Path, bedrock: tuple[Bedrock, str], aws_credentials: None
) -> None:
    state, url = bedrock
    state.answers = [(200, TOOL_ANSWER, 0.0)]
    profile = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/abc123"
    install(tmp_path, url, model_id=profile)
    status, answer = call({"content": "Ana works at Acme.", "dryRun": True})
    assert status == 200, answer
    assert state.paths == [f"/model/{profile}/converse"]


def test_a_text_whose_calls_cannot_end_before_the_deadline_is_refused_before_any_call(
    tmp_path: Path, bedrock: tuple[Bedrock, str], aws_credentials: None
) -> None:
    state, url = bedrock
    state.answers = [(200, TOOL_ANSWER, 0.0)] * 3
    limits = {"request_deadline_seconds": 26, "extractor_timeout_seconds": 18, "extractor_chunk_chars": 500}
    install(tmp_path, url, **limits)
    two_calls = "\n\n".join(["Ana works at Acme. " * 20] * 2)
    status, envelope = call({"content": two_calls, "dryRun": True})
    assert (status, envelope["errorCode"], envelope["details"]["field"]) == (400, "INVALID_INPUT", "content")
    details = envelope["details"]
    assert (details["modelCalls"], details["callsThatFit"], details["limit"]) == (2, 1, 500), details
    assert (details["callTimeoutSeconds"], details["deadlineSeconds"]) == (18, 26)
    assert state.paths == []
    status, answer = call({"content": "Ana works at Acme.", "dryRun": True})
    assert status == 200
    assert answer["modelCalls"] == 1
    assert len(state.paths) == 1

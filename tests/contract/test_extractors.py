"""build_memory_from_text's model adapters against their documented wire formats.

- Bedrock Converse: a real ``bedrock-runtime`` client (the one ``Services`` builds) with botocore's
  ``Stubber``, which validates each request against botocore's service model (the documented
  Converse shape) and answers documented responses; a silent endpoint for a real read timeout.
- OpenAI-compatible chat completions: a small real HTTP server in a thread, answering
  ``/v1/chat/completions`` with ``tool_calls`` (or failing as servers fail), driven in-process and by
  `mnemo serve` as a subprocess configured through MNEMO_OPENAI_* settings.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY, Stubber

from helpers import http_call, local_server, serve_process
from mnemo.adapters.aws.bedrock_extractor import NOT_PROCESSED, NOT_PROCESSED_RETRIES, BedrockExtractor
from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor
from mnemo.errors import MnemoError
from mnemo.graph.extraction import EXTRACTION_SCHEMA, SYSTEM, TOOL, UnconfiguredExtractor
from mnemo.runtime import Services
from mnemo.settings import Settings

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
REGION = "eu-west-1"
ME = {"tenant": "acme", "user": "alice", "roles": "writer"}

ACME_TEXT = "Alice joined Acme as a data engineer in March 2024. Acme builds payment software."
GLOBEX_TEXT = "In July 2025 Alice left Acme and started at Globex."
ACME_EXTRACTION: dict[str, Any] = {
    "entities": [
        {"name": "Alice", "type": "person", "summary": "A data engineer."},
        {"name": "Acme", "type": "organization"},
        {"name": "payment software", "type": "concept"},
    ],
    "facts": [
        {
            "subject": "Alice",
            "predicate": "works_at",
            "object": "Acme",
            "text": "Alice works at Acme as a data engineer.",
            "validAt": "2024-03-01T00:00:00Z",
            "exclusive": True,
        },
        {
            "subject": "Acme",
            "predicate": "builds",
            "object": "payment software",
            "text": "Acme builds payment software.",
        },
    ],
}
GLOBEX_EXTRACTION: dict[str, Any] = {
    "entities": [{"name": "Alice", "type": "person"}, {"name": "Globex", "type": "organization"}],
    "facts": [
        {
            "subject": "Alice",
            "predicate": "works at",
            "object": "Globex",
            "text": "Alice works at Globex since July 2025.",
            "validAt": "2025-07-01T00:00:00Z",
            "exclusive": True,
        }
    ],
}


def extraction_for(prompt: str) -> dict[str, Any]:
    """What the fake models answer: the extraction of the text in the prompt."""
    text = prompt.rsplit("Text:\n", 1)[1]
    if "Globex" in text:
        return GLOBEX_EXTRACTION
    if "Acme" in text:
        return ACME_EXTRACTION
    words = sorted({word.strip(".,") for word in text.split() if word[:1].isupper()})
    return {
        "entities": [{"name": word, "type": "concept"} for word in words],
        "facts": [
            {"subject": a, "predicate": "mentioned_with", "object": b, "text": f"{a} is mentioned with {b}."}
            for a, b in itertools.pairwise(words)
        ],
    }


def code_of(error: pytest.ExceptionInfo[MnemoError]) -> tuple[str, bool]:
    envelope = error.value.envelope()
    return envelope["errorCode"], envelope["retryable"]


# ================================================================ Bedrock ===
def converse_response(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    """A Converse response as documented (Stubber checks it against botocore's output shape)."""
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 412, "outputTokens": 96, "totalTokens": 508},
        "metrics": {"latencyMs": 850},
    }


def tool_use(arguments: dict[str, Any], name: str = TOOL.name) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name, "input": arguments}}


def expected_converse(prompt: Any) -> dict[str, Any]:
    """The request the documented Converse API takes, with the tool forced and its schema as JSON."""
    return {
        "modelId": MODEL_ID,
        "system": [{"text": SYSTEM}],
        "messages": [{"role": "user", "content": [{"text": prompt}]}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "record_knowledge_graph",
                        "description": TOOL.description,
                        "inputSchema": {"json": EXTRACTION_SCHEMA},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": "record_knowledge_graph"}},
        },
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0.0},
    }


@pytest.fixture
def bedrock() -> Iterator[tuple[BedrockExtractor, Stubber]]:
    import boto3

    client = boto3.client(
        "bedrock-runtime", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    with Stubber(client) as stubber:
        yield BedrockExtractor(lambda: client, MODEL_ID, sleep=lambda _: None), stubber
        stubber.assert_no_pending_responses()


def test_bedrock_sends_the_documented_converse_request_and_returns_the_tool_input(
    bedrock: tuple[BedrockExtractor, Stubber],
) -> None:
    extractor, stubber = bedrock
    prompt = f"Reference time: 2026-01-07T10:00:00.000000Z\n\nText:\n{ACME_TEXT}"
    thinking = {"text": "I will record the graph."}
    stubber.add_response(
        "converse", converse_response([thinking, tool_use(ACME_EXTRACTION)]), expected_converse(prompt)
    )
    assert extractor.extract(SYSTEM, prompt, TOOL) == ACME_EXTRACTION
    assert extractor.name == f"bedrock:{MODEL_ID}"


@pytest.mark.parametrize(
    "content",
    [
        [{"text": '{"entities": [], "facts": []}'}],  # answered in text, not through the tool
        [tool_use(ACME_EXTRACTION, name="another_tool")],
        [],
    ],
    ids=["text-only", "other-tool", "empty"],
)
def test_bedrock_without_the_tool_use_is_a_provider_error(
    bedrock: tuple[BedrockExtractor, Stubber], content: list[dict[str, Any]]
) -> None:
    extractor, stubber = bedrock
    stubber.add_response("converse", converse_response(content, stop="end_turn"), expected_converse(ANY))
    with pytest.raises(MnemoError) as error:
        extractor.extract(SYSTEM, "Text:\nx", TOOL)
    assert code_of(error) == ("PROVIDER_ERROR", True)
    assert error.value.details["stopReason"] == "end_turn"
    assert "tool use" in error.value.message


@pytest.mark.parametrize(
    ("aws_code", "status", "expected"),
    [
        ("ThrottlingException", 429, "RATE_LIMITED"),
        ("ValidationException", 400, "PROVIDER_ERROR"),
        ("AccessDeniedException", 403, "PROVIDER_ERROR"),
        ("ServiceUnavailableException", 503, "PROVIDER_ERROR"),
    ],
)
def test_bedrock_errors_become_mnemo_errors(
    bedrock: tuple[BedrockExtractor, Stubber], aws_code: str, status: int, expected: str
) -> None:
    extractor, stubber = bedrock
    # An answer that says the model did not run the request is tried again (bedrock_extractor.NOT_PROCESSED).
    tries = 1 + NOT_PROCESSED_RETRIES if aws_code in NOT_PROCESSED else 1
    for _ in range(tries):
        stubber.add_client_error("converse", service_error_code=aws_code, service_message="no", http_status_code=status)
    with pytest.raises(MnemoError) as error:
        extractor.extract(SYSTEM, "Text:\nx", TOOL)
    assert code_of(error) == (expected, True)
    assert error.value.details == {"service": "Bedrock", "awsCode": aws_code}


def test_bedrock_model_timeout_is_a_timeout(bedrock: tuple[BedrockExtractor, Stubber]) -> None:
    extractor, stubber = bedrock
    stubber.add_client_error("converse", service_error_code="ModelTimeoutException", http_status_code=408)
    with pytest.raises(MnemoError) as error:
        extractor.extract(SYSTEM, "Text:\nx", TOOL)
    assert code_of(error) == ("TIMEOUT", True)


class SilentServer:
    """Accepts connections and never answers: a model endpoint that hangs."""

    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self._held.append(connection)

    def close(self) -> None:
        self._socket.close()
        for connection in self._held:
            connection.close()


def test_bedrock_read_timeout_from_the_services_client_is_a_timeout(tmp_path: Path) -> None:
    silent = SilentServer()
    try:
        settings = Settings(
            data_dir=tmp_path,
            embedder="hashing",
            extractor="bedrock",
            extractor_model_id=MODEL_ID,
            extractor_timeout_seconds=0.3,
            aws_region=REGION,
            aws_endpoint=silent.url,
        )
        services = Services(settings)
        with (
            pytest.MonkeyPatch.context() as env,
            local_server(services) as url,
        ):
            env.setenv("AWS_ACCESS_KEY_ID", "testing")
            env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
            status, answer = http_call(url, "build_memory_from_text", {"content": ACME_TEXT}, **ME)
    finally:
        silent.close()
    assert (status, answer["errorCode"], answer["retryable"]) == (504, "TIMEOUT", True), answer
    assert answer["details"] == {"service": "Bedrock"}


def test_build_memory_from_text_on_services_with_bedrock(tmp_path: Path) -> None:
    """Settings select Bedrock; the client Services builds (with the extraction timeout) is stubbed, and the
    tool runs over real HTTP: the graph holds the extracted facts afterwards."""
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        extractor="bedrock",
        extractor_model_id=MODEL_ID,
        extractor_timeout_seconds=42,
        aws_region=REGION,
    )
    services = Services(settings)
    extractor = services.extractor
    assert isinstance(extractor, BedrockExtractor)
    assert extractor.model_id == MODEL_ID
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        client = extractor.client
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.config.read_timeout == 42
    prompts: list[str] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        prompts.append(params["messages"][0]["content"][0]["text"])

    client.meta.events.register("provide-client-params.bedrock-runtime.Converse", capture)
    with Stubber(client) as stubber, local_server(services) as url:
        stubber.add_response("converse", converse_response([tool_use(ACME_EXTRACTION)]), expected_converse(ANY))
        body = {
            "content": ACME_TEXT,
            "previousMessages": "We talked about Alice.",
            "referenceTime": "2026-01-07T10:00:00Z",
        }
        status, built = http_call(url, "build_memory_from_text", body, **ME)
        assert status == 200, built
        assert (built["modelCalls"], built["dryRun"], built["invalidated"]) == (1, False, [])
        assert built["entities"] == ["Alice", "Acme", "payment software"]
        assert [(r["from"], r["relation"], r["to"], r["created"]) for r in built["relationships"]] == [
            ("Alice", "works_at", "Acme", True),
            ("Acme", "builds", "payment software", True),
        ]
        assert len(prompts) == 1
        assert ACME_TEXT in prompts[0]
        assert "We talked about Alice." in prompts[0]
        assert prompts[0].startswith("Reference time: 2026-01-07T10:00:00.000000Z")

        status, alice = http_call(url, "get_memory_object", {"name": "Alice", "depth": 2}, **ME)
        assert status == 200, alice
        assert alice["entity"]["type"] == "person", alice
        fact = alice["facts"][0]
        assert (fact["object"], fact["validAt"], fact["source"]["kind"]) == (
            "Acme",
            "2024-03-01T00:00:00Z",
            "extraction",
        )
        assert [(n["name"], n["depth"]) for n in alice["neighbours"]] == [("Acme", 1), ("payment software", 2)]

        # A second text: the exclusive fact replaces the first, which stays in the history.
        stubber.add_response("converse", converse_response([tool_use(GLOBEX_EXTRACTION)]), expected_converse(ANY))
        status, moved = http_call(url, "build_memory_from_text", {"content": GLOBEX_TEXT}, **ME)
        assert status == 200, moved
        assert moved["invalidated"] == [fact["factId"]], moved
        for as_of, employer in (("2025-01-01T00:00:00Z", "Acme"), (None, "Globex")):
            query = {"query": "Where does Alice work?", "kind": "facts", **({"asOf": as_of} if as_of else {})}
            status, found = http_call(url, "graph_search", query, **ME)
            works = [f["object"] for f in found["facts"] if f["predicate"] == "works_at"]
            assert status == 200, found
            assert works == [employer], found
        stubber.assert_no_pending_responses()


# ================================================== OpenAI-compatible server ===
@dataclass
class Reply:
    status: int = 200
    body: Any = None
    delay: float = 0.0


@dataclass
class FakeModel:
    """A real OpenAI-compatible HTTP server in a thread: records each request and answers with ``reply``."""

    reply: Callable[[dict[str, Any]], Reply]
    received: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""

    def prompts(self) -> list[str]:
        return [body["messages"][1]["content"] for _, _, body in self.received]


def tool_calls(arguments: str, name: str = TOOL.name) -> dict[str, Any]:
    """A chat completion whose message calls the tool; ``arguments`` is a JSON string, as OpenAI sends it."""
    return {
        "id": "chatcmpl-9abc",
        "object": "chat.completion",
        "created": 1767780000,
        "model": "qwen2.5:7b",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 400, "completion_tokens": 90, "total_tokens": 490},
    }


def answer_from_prompt(request: dict[str, Any]) -> Reply:
    return Reply(body=tool_calls(json.dumps(extraction_for(request["messages"][1]["content"]))))


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel(answer_from_prompt)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = json.loads(raw)
            model.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, request))
            if self.path != "/v1/chat/completions":
                reply = Reply(404, {"error": {"message": "not found"}})
            else:
                reply = model.reply(request)
            time.sleep(reply.delay)
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    model.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def openai_services(tmp_path: Path, model: FakeModel, **extra: Any) -> Services:
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        openai_base_url=model.url,
        openai_model="qwen2.5:7b",
        **extra,
    )
    return Services(settings)


def test_openai_request_is_the_chat_completions_tool_call_and_its_arguments_come_back(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    services = openai_services(tmp_path, fake_model, openai_api_key="sk-test-123")
    extractor = services.extractor
    assert isinstance(extractor, OpenAICompatibleExtractor)
    assert extractor.name == "openai-compatible:qwen2.5:7b"
    prompt = f"Reference time: 2026-01-07T10:00:00.000000Z\n\nText:\n{ACME_TEXT}"
    assert extractor.extract(SYSTEM, prompt, TOOL) == ACME_EXTRACTION

    [(path, headers, body)] = fake_model.received
    assert path == "/v1/chat/completions"
    assert headers["content-type"] == "application/json"
    assert headers["authorization"] == "Bearer sk-test-123"
    assert body["model"] == "qwen2.5:7b"
    assert body["temperature"] == 0
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    [tool] = body["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "record_knowledge_graph"
    assert tool["function"]["description"] == TOOL.description
    assert tool["function"]["parameters"] == EXTRACTION_SCHEMA
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_knowledge_graph"}}


def test_openai_without_an_api_key_sends_no_authorization(tmp_path: Path, fake_model: FakeModel) -> None:
    extractor = openai_services(tmp_path, fake_model).extractor
    extractor.extract(SYSTEM, f"Text:\n{ACME_TEXT}", TOOL)
    [(_, headers, _)] = fake_model.received
    assert "authorization" not in headers


def test_openai_json_in_content_is_accepted_from_servers_that_ignore_tools(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    fenced = "```json\n" + json.dumps(ACME_EXTRACTION) + "\n```"
    fake_model.reply = lambda _: Reply(body={"choices": [{"message": {"role": "assistant", "content": fenced}}]})
    assert openai_services(tmp_path, fake_model).extractor.extract(SYSTEM, "Text:\nx", TOOL) == ACME_EXTRACTION


NOT_AN_OBJECT = tool_calls("[1, 2]")
FAILURES: list[tuple[str, Reply, int, str]] = [
    ("throttled", Reply(429, {"error": {"message": "Rate limit reached"}}), 429, "RATE_LIMITED"),
    ("server-error", Reply(500, {"error": {"message": "boom"}}), 502, "PROVIDER_ERROR"),
    ("bad-gateway", Reply(502, b"<html>bad gateway</html>"), 502, "PROVIDER_ERROR"),
    ("arguments-not-json", Reply(body=tool_calls("{'entities': [], facts: ")), 502, "PROVIDER_ERROR"),
    ("arguments-not-an-object", Reply(body=NOT_AN_OBJECT), 502, "PROVIDER_ERROR"),
    ("body-not-json", Reply(body=b"not json at all"), 502, "PROVIDER_ERROR"),
    ("no-choices", Reply(body={"choices": []}), 502, "PROVIDER_ERROR"),
    (
        "no-tool-call",
        Reply(body={"choices": [{"message": {"role": "assistant", "content": None}}]}),
        502,
        "PROVIDER_ERROR",
    ),
    ("other-tool", Reply(body=tool_calls(json.dumps(ACME_EXTRACTION), name="search_web")), 502, "PROVIDER_ERROR"),
    ("schema-facts-missing", Reply(body=tool_calls(json.dumps({"entities": []}))), 502, "PROVIDER_ERROR"),
    (
        "schema-fact-without-object",
        Reply(
            body=tool_calls(json.dumps({"entities": [], "facts": [{"subject": "A", "predicate": "p", "text": "t"}]}))
        ),
        502,
        "PROVIDER_ERROR",
    ),
    (
        "schema-entities-not-a-list",
        Reply(body=tool_calls(json.dumps({"entities": "Alice", "facts": []}))),
        502,
        "PROVIDER_ERROR",
    ),
    ("timeout", Reply(body=tool_calls(json.dumps(ACME_EXTRACTION)), delay=2.0), 504, "TIMEOUT"),
]


@pytest.mark.parametrize(("reply", "status", "code"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_openai_failures_are_retryable_envelopes_and_nothing_is_saved(
    tmp_path: Path, fake_model: FakeModel, reply: Reply, status: int, code: str
) -> None:
    fake_model.reply = lambda _: reply
    services = openai_services(tmp_path, fake_model, extractor_timeout_seconds=0.3)
    with local_server(services) as url:
        got, answer = http_call(url, "build_memory_from_text", {"content": ACME_TEXT}, **ME)
        assert (got, answer["errorCode"], answer["retryable"]) == (status, code, True), answer
        assert len(fake_model.received) == 1
        _, found = http_call(url, "graph_search", {"query": "Alice Acme", "threshold": 0}, **ME)
        assert found["entities"] == [], found
        assert found["facts"] == [], found
    if code == "PROVIDER_ERROR" and "schema" in answer["message"]:
        assert answer["details"]["model"] == "openai-compatible:qwen2.5:7b"
        assert answer["details"]["path"]


def test_a_malformed_fact_is_skipped_and_the_others_are_saved(tmp_path: Path, fake_model: FakeModel) -> None:
    extraction = {
        "entities": [{"name": "Alice", "type": "person"}],
        "facts": [
            {"subject": "Alice", "predicate": "works_at", "object": "Acme", "text": "Alice works at Acme."},
            {"subject": " ", "predicate": "likes", "object": "tea", "text": "Someone likes tea."},
            {"subject": "Alice", "predicate": "born_on", "object": "Mars", "text": "x", "validAt": "not a date"},
        ],
    }
    fake_model.reply = lambda _: Reply(body=tool_calls(json.dumps(extraction)))
    with local_server(openai_services(tmp_path, fake_model)) as url:
        status, built = http_call(url, "build_memory_from_text", {"content": "Alice works at Acme."}, **ME)
        assert status == 200, built
        assert [(r["from"], r["to"], r["created"]) for r in built["relationships"]] == [("Alice", "Acme", True)]
        _, found = http_call(url, "graph_search", {"query": "Alice", "threshold": 0}, **ME)
        assert [f["object"] for f in found["facts"]] == ["Acme"]


def test_unconfigured_services_answer_provider_error_saying_how_to_configure(tmp_path: Path) -> None:
    services = Services(Settings(data_dir=tmp_path, embedder="hashing"))
    assert isinstance(services.extractor, UnconfiguredExtractor)
    with local_server(services) as url:
        status, answer = http_call(url, "build_memory_from_text", {"content": ACME_TEXT}, **ME)
    assert (status, answer["errorCode"], answer["retryable"]) == (502, "PROVIDER_ERROR", False), answer
    for setting in ("MNEMO_OPENAI_BASE_URL", "MNEMO_EXTRACTOR", "MNEMO_EXTRACTOR_MODEL_ID"):
        assert setting in answer["message"]


# ========================================================= mnemo serve e2e ===
CHUNK = 500
MAX_CALLS = 2
FIRST_PARAGRAPH = "Orion " + "and more " * 40 + "Vega."
SECOND_PARAGRAPH = "Sirius " + "also " * 60 + "Rigel."


def test_a_long_text_is_cut_at_paragraph_ends(tmp_path: Path, fake_model: FakeModel) -> None:
    two_pieces = f"{FIRST_PARAGRAPH}\n\n{SECOND_PARAGRAPH}"
    assert CHUNK < len(two_pieces) <= CHUNK * MAX_CALLS
    assert len(FIRST_PARAGRAPH) > CHUNK // 2
    services = openai_services(tmp_path, fake_model, extractor_chunk_chars=CHUNK, extractor_max_calls=MAX_CALLS)
    with local_server(services) as url:
        built = call_ok(url, "build_memory_from_text", {"content": two_pieces})
    assert built["modelCalls"] == 2
    pieces = [prompt.split("\nText:\n", 1)[1] for prompt in fake_model.prompts()]
    assert pieces == [FIRST_PARAGRAPH, SECOND_PARAGRAPH]
    assert {(r["from"], r["to"]) for r in built["relationships"]} == {("Orion", "Vega"), ("Rigel", "Sirius")}


@pytest.fixture
def served(tmp_path: Path, fake_model: FakeModel) -> Iterator[str]:
    env = {
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_OPENAI_BASE_URL": fake_model.url,
        "MNEMO_OPENAI_MODEL": "llama3.1:8b",
        "MNEMO_OPENAI_API_KEY": "sk-local-456",
        "MNEMO_EXTRACTOR_CHUNK_CHARS": str(CHUNK),
        "MNEMO_EXTRACTOR_MAX_CALLS": str(MAX_CALLS),
    }
    process: subprocess.Popen[str]
    process, url = serve_process(tmp_path, env)
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def call_ok(url: str, tool: str, body: dict[str, Any], identity: dict[str, str] = ME) -> dict[str, Any]:
    status, answer = http_call(url, tool, body, **identity)
    assert status == 200, f"{tool}: HTTP {status} {answer}"
    return dict(answer)


def employers(url: str, **body: Any) -> list[str]:
    found = call_ok(url, "graph_search", {"query": "Where does Alice work?", "kind": "facts", **body})
    return [fact["object"] for fact in found["facts"] if fact["predicate"] == "works_at"]


def test_mnemo_serve_with_an_openai_compatible_model(served: str, fake_model: FakeModel) -> None:
    url = served

    # dryRun: the model is asked, nothing is saved.
    dry = call_ok(url, "build_memory_from_text", {"content": ACME_TEXT, "dryRun": True})
    assert (dry["dryRun"], dry["modelCalls"], dry["entities"]) == (True, 1, ["Alice", "Acme", "payment software"])
    assert [(r["relation"], r["factId"], r["created"]) for r in dry["relationships"]] == [
        ("works_at", None, False),
        ("builds", None, False),
    ]
    assert "nothing saved" in dry["summary"]
    nothing = call_ok(url, "graph_search", {"query": "Alice Acme payment", "threshold": 0})
    assert nothing["entities"] == []
    assert nothing["facts"] == []
    status, _ = http_call(url, "get_memory_object", {"name": "Alice"}, **ME)
    assert status == 404

    # The real run: settings from the environment reach the model server.
    built = call_ok(url, "build_memory_from_text", {"content": ACME_TEXT, "referenceTime": "2026-01-07T10:00:00Z"})
    assert built["dryRun"] is False
    assert built["modelCalls"] == 1
    assert [(r["from"], r["relation"], r["to"], r["created"]) for r in built["relationships"]] == [
        ("Alice", "works_at", "Acme", True),
        ("Acme", "builds", "payment software", True),
    ]
    acme_fact = built["relationships"][0]["factId"]
    assert employers(url) == ["Acme"]
    alice = call_ok(url, "get_memory_object", {"name": "Alice"})
    assert alice["entity"]["type"] == "person"
    assert alice["facts"][0]["source"]["kind"] == "extraction"
    for path, headers, body in fake_model.received:
        assert path == "/v1/chat/completions"
        assert headers["authorization"] == "Bearer sk-local-456"
        assert body["model"] == "llama3.1:8b"
        assert body["tools"][0]["function"]["parameters"] == EXTRACTION_SCHEMA
    assert fake_model.prompts()[-1].startswith("Reference time: 2026-01-07T10:00:00.000000Z")

    # The same text again stores nothing new.
    again = call_ok(url, "build_memory_from_text", {"content": ACME_TEXT})
    assert again["relationships"][0]["factId"] == acme_fact
    assert all(r["created"] is False for r in again["relationships"])

    # A contradicting text: the exclusive fact ends the old one, which asOf still finds.
    moved = call_ok(url, "build_memory_from_text", {"content": GLOBEX_TEXT})
    assert moved["invalidated"] == [acme_fact]
    assert employers(url) == ["Globex"]
    assert employers(url, asOf="2025-01-01T00:00:00Z") == ["Acme"]

    # A text of two pieces is two model calls, which together carry the whole text.
    two_pieces = f"{FIRST_PARAGRAPH}\n\n{SECOND_PARAGRAPH}"
    calls_before = len(fake_model.received)
    chunked = call_ok(url, "build_memory_from_text", {"content": two_pieces})
    assert chunked["modelCalls"] == 2
    assert len(fake_model.received) == calls_before + 2
    pieces = [prompt.split("\nText:\n", 1)[1] for prompt in fake_model.prompts()[-2:]]
    assert all(len(piece) <= CHUNK for piece in pieces)
    assert " ".join(pieces).split() == two_pieces.split()

    # Longer than max calls x chunk characters: refused naming content, before any model call.
    calls_before = len(fake_model.received)
    too_long = "word " * (CHUNK * MAX_CALLS // 5 + 50)
    status, refused = http_call(url, "build_memory_from_text", {"content": too_long}, **ME)
    assert (status, refused["errorCode"], refused["retryable"]) == (400, "INVALID_INPUT", False), refused
    assert refused["details"]["field"] == "content"
    assert refused["details"]["limit"] == CHUNK * MAX_CALLS
    assert len(fake_model.received) == calls_before

    # Another user's extraction lands in their own layer: neither sees the other's.
    bob = {**ME, "user": "bob"}
    theirs = call_ok(url, "build_memory_from_text", {"content": ACME_TEXT}, bob)
    assert all(r["created"] for r in theirs["relationships"])
    assert theirs["invalidated"] == []
    assert theirs["relationships"][0]["factId"] != acme_fact
    status, answer = http_call(url, "invalidate_memory_link", {"factId": acme_fact}, **bob)
    assert (status, answer["errorCode"]) == (404, "NOT_FOUND")
    bob_search = call_ok(url, "graph_search", {"query": "Alice Globex", "threshold": 0, "includeInvalid": True}, bob)
    assert {f["object"] for f in bob_search["facts"]} == {"Acme", "payment software"}
    assert employers(url) == ["Globex"]


def test_extracted_entities_are_stored_with_their_summaries(tmp_path: Path, fake_model: FakeModel) -> None:
    """An entity the text names is stored even when no fact mentions it, and an extracted summary fills an empty
    one but never replaces what an agent wrote."""
    extraction = {
        "entities": [
            {"name": "Alice", "type": "person", "summary": "Data engineer."},
            {"name": "Acme", "type": "organization", "summary": "A payments company."},
            {"name": "Kafka", "type": "technology", "summary": "An event streaming platform."},
        ],
        "facts": [{"subject": "Alice", "predicate": "works_at", "object": "Acme", "text": "Alice works at Acme."}],
    }
    fake_model.reply = lambda _: Reply(body=tool_calls(json.dumps(extraction)))
    with local_server(openai_services(tmp_path, fake_model)) as url:
        status, _ = http_call(url, "add_memory_link", {"subject": "Acme", "predicate": "uses", "object": "Go"}, **ME)
        assert status == 200
        status, _ = http_call(url, "update_memory_object", {"name": "Acme", "summary": "Our biggest customer."}, **ME)
        assert status == 200
        status, built = http_call(url, "build_memory_from_text", {"content": "Alice works at Acme; Kafka."}, **ME)
        assert status == 200, built
        assert built["entities"] == ["Alice", "Acme", "Kafka"]
        seen = {}
        for name in ("Alice", "Acme", "Kafka"):
            status, answer = http_call(url, "get_memory_object", {"name": name, "depth": 0}, **ME)
            assert status == 200, answer
            seen[name] = (answer["entity"]["type"], answer["entity"]["summary"])
    assert seen == {
        "Alice": ("person", "Data engineer."),
        "Acme": ("entity", "Our biggest customer."),
        "Kafka": ("technology", "An event streaming platform."),
    }


@pytest.mark.parametrize(
    "answer",
    [
        {"choices": [{"message": "not an object"}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": ["x"]}}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": [{"function": "x"}]}}]},
        {"choices": [{"message": {"role": "assistant", "content": ["not", "text"]}}]},
        {"choices": "none"},
    ],
    ids=["message-text", "call-text", "function-text", "content-list", "choices-text"],
)
def test_openai_malformed_answers_are_provider_errors(tmp_path: Path, fake_model: FakeModel, answer: Any) -> None:
    fake_model.reply = lambda _: Reply(body=answer)
    services = openai_services(tmp_path, fake_model)
    with local_server(services) as url:
        status, body = http_call(url, "build_memory_from_text", {"content": "Alice works at Acme."}, **ME)
    assert status == 502, body
    assert body["errorCode"] == "PROVIDER_ERROR", body


def test_a_year_from_the_model_is_its_first_day(tmp_path: Path, fake_model: FakeModel) -> None:
    extraction = {
        "entities": [],
        "facts": [
            {"subject": "Alice", "predicate": "works_at", "object": "Acme", "text": "Since 2021.", "validAt": "2021"},
            {"subject": "Alice", "predicate": "lives_in", "object": "Oslo", "text": "Since May.", "validAt": "2022-05"},
        ],
    }
    fake_model.reply = lambda _: Reply(body=tool_calls(json.dumps(extraction)))
    with local_server(openai_services(tmp_path, fake_model)) as url:
        status, built = http_call(url, "build_memory_from_text", {"content": "Alice, Acme, Oslo."}, **ME)
        assert status == 200, built
        assert len(built["relationships"]) == 2, built
        _, alice = http_call(url, "get_memory_object", {"name": "Alice", "depth": 0}, **ME)
    assert sorted(f["validAt"] for f in alice["facts"]) == ["2021-01-01T00:00:00Z", "2022-05-01T00:00:00Z"]


# ------------------------------------------------------------ extract_counted
def test_bedrock_counted_gives_the_usage_and_the_raw_tool_input(bedrock: tuple[BedrockExtractor, Stubber]) -> None:
    extractor, stubber = bedrock
    prompt = f"Reference time: 2026-01-07T10:00:00.000000Z\n\nText:\n{ACME_TEXT}"
    stubber.add_response("converse", converse_response([tool_use(ACME_EXTRACTION)]), expected_converse(prompt))
    counted = extractor.extract_counted(SYSTEM, prompt, TOOL)
    assert counted.answer == ACME_EXTRACTION
    usage = converse_response([tool_use(ACME_EXTRACTION)])["usage"]
    assert (counted.input_tokens, counted.output_tokens) == (usage["inputTokens"], usage["outputTokens"])
    assert json.loads(counted.raw) == ACME_EXTRACTION


def test_bedrock_counted_without_the_tool_keeps_the_raw_text(bedrock: tuple[BedrockExtractor, Stubber]) -> None:
    extractor, stubber = bedrock
    stubber.add_response(
        "converse", converse_response([{"text": "Sorry, no tool."}], stop="end_turn"), expected_converse(ANY)
    )
    with pytest.raises(MnemoError) as error:
        extractor.extract_counted(SYSTEM, "Text:\nx", TOOL)
    assert error.value.details["raw"] == "Sorry, no tool."


def test_openai_counted_gives_the_usage_and_the_raw_arguments(tmp_path: Path, fake_model: FakeModel) -> None:
    from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor

    fake_model.reply = lambda request: Reply(body=tool_calls('{"entities": [], "facts": []}'))
    counted = OpenAICompatibleExtractor(fake_model.url, "qwen2.5:7b").extract_counted(SYSTEM, "Text:\nx", TOOL)
    assert counted.answer == {"entities": [], "facts": []}
    assert (counted.input_tokens, counted.output_tokens) == (400, 90)
    assert counted.raw == '{"entities": [], "facts": []}'


def test_openai_counted_not_json_keeps_the_raw_answer(tmp_path: Path, fake_model: FakeModel) -> None:
    from mnemo.adapters.local.openai_extractor import OpenAICompatibleExtractor

    fake_model.reply = lambda request: Reply(body=tool_calls("{not json"))
    with pytest.raises(MnemoError) as error:
        OpenAICompatibleExtractor(fake_model.url, "m").extract_counted(SYSTEM, "Text:\nx", TOOL)
    assert error.value.details["raw"] == "{not json"
    assert error.value.details["inputTokens"] == 400

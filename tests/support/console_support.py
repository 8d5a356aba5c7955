"""The console in a real browser: Debian's chromium driven by Playwright, and the data the pages show.

Playwright drives the system chromium (`make browser` installs it); no browser is downloaded. Each test starts
its own `mnemo serve` (helpers.local_server) on a free port over its own data directory. The Extraction page's
model is a scripted OpenAI-compatible server (``scripted_model``), and axe-core checks a page offline
(``axe_violations``).
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from helpers import http_call
from mnemo.learning.transcript import LINE

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGES = ("memories", "graph", "blocks", "knowledge", "conversations", "extraction", "context", "identity")
#: axe-core as `make console-a11y` installs it (tests/console_a11y/package.json pins the version).
AXE = Path(__file__).parents[1] / "console_a11y" / "node_modules" / "axe-core" / "axe.min.js"


@dataclass
class Browser:
    """One page of chromium, with what its console reported."""

    page: Any
    base: str
    problems: list[str] = field(default_factory=list)

    def open(self, section: str, wait_for: str = "h1") -> Any:
        self.page.goto("about:blank")  # a new document each time, as a person opening the address gets
        self.page.goto(f"{self.base}/ui/#/{section}")
        self.page.wait_for_selector(wait_for)
        self.settle()
        return self.page

    def settle(self) -> None:
        """Until no tool call is in flight (the console marks them on ``html[data-busy]``)."""
        self.page.wait_for_selector("html:not([data-busy])", state="attached")


@contextmanager
def browser(base: str, *, bypass_csp: bool = False) -> Iterator[Browser]:
    """Chromium on a page of its own; console errors, failed requests and page errors are collected."""
    assert Path(CHROMIUM).exists(), "chromium is missing: `make browser` (a step of `make test`) installs it"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            context = chromium.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=bypass_csp)
            page = context.new_page()
            page.set_default_timeout(20_000)
            driven = Browser(page, base)
            page.on("console", lambda message: message.type == "error" and driven.problems.append(message.text))
            page.on("pageerror", lambda error: driven.problems.append(f"page error: {error}"))
            yield driven
        finally:
            chromium.close()


def axe_violations(console: Browser) -> list[dict[str, Any]]:
    """What axe-core (the pinned copy, run offline in the page) finds wrong; the browser must bypass the page's
    Content-Security-Policy (``browser(..., bypass_csp=True)``) to take its script."""
    console.page.add_script_tag(path=str(AXE))
    assert console.page.evaluate("axe.version") == "4.14.1"  # the pinned checker, not one from anywhere else
    found: list[dict[str, Any]] = console.page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ["violations"] })).violations
            .map((v) => ({ id: v.id, impact: v.impact, help: v.help,
                           nodes: v.nodes.map((n) => n.target.join(" ")) }))"""
    )
    return found


def call(base: str, tool: str, body: dict[str, Any], **identity: str) -> Any:
    """A tool call through the public API; the answer, which must be a success."""
    status, answer = http_call(base, tool, body, **identity)
    assert status == 200, (tool, status, answer)
    return answer


def seed(base: str) -> dict[str, Any]:
    """What the pages show: memories, a fact that ended and the one that replaced it, pinned blocks, a conversation
    with its execution, a topic and the general memory. All through the public API, as the default identity."""
    ids: dict[str, Any] = {}
    ids["memory"] = call(
        base, "memory_add", {"content": "Alice prefers PostgreSQL for new services", "tags": ["database"]}
    )["memoryId"]
    call(base, "memory_add", {"content": "Releases go out on Tuesdays after the staging check", "tags": ["release"]})
    call(base, "memory_add", {"content": "The payments team owns the checkout API", "layer": "agent"}, agent="helper")
    ids["old_fact"] = call(
        base,
        "add_memory_link",
        {"subject": "Alice", "predicate": "works_at", "object": "Acme", "subjectType": "person",
         "objectType": "organization", "validAt": "2024-03-01T00:00:00Z", "exclusive": True},
    )["factId"]  # fmt: skip
    ids["new_fact"] = call(
        base,
        "add_memory_link",
        {"subject": "Alice", "predicate": "works_at", "object": "Globex", "objectType": "organization",
         "validAt": "2025-07-01T00:00:00Z", "exclusive": True, "text": "Alice works at Globex since July 2025."},
    )["factId"]  # fmt: skip
    call(
        base,
        "add_memory_link",
        {"subject": "Alice", "predicate": "uses", "object": "PostgreSQL", "objectType": "technology",
         "validAt": "2024-05-01T00:00:00Z"},
    )  # fmt: skip
    call(
        base,
        "file_write",
        {"path": "mnemo:///blocks/decisions.md", "content": "# Decisions\n\n- Orders live in PostgreSQL 16.\n"},
    )
    call(
        base,
        "file_write",
        {"path": "mnemo:///blocks/style.md", "content": "# Style\n\n- Small modules, one job each.\n"},
    )
    call(base, "block_pin", {"path": "mnemo:///blocks/decisions.md"})
    call(
        base,
        "add_conversation",
        {"message_id": "msg_weather1", "explanation": "Remember the weather question",
         "user_input": "What's the weather in Paris tomorrow?", "agent_response": "Light rain, 14°C.",
         "timestamp": "2026-11-20T14:30:00Z"},
    )  # fmt: skip
    call(
        base,
        "add_execution",
        {"message_id": "msg_weather1", "explanation": "How it was answered",
         "execution_summary": "Looked up the Paris forecast after a geocoding retry",
         "tools_used": ["geocode_city", "weather_api"],
         "errors": [{"error_type": "timeout", "error_message": "geocoding took over 5 s", "tool": "geocode_city"}],
         "observations": "A retry worked.", "success": True, "duration_ms": 1840,
         "timestamp": "2026-11-20T14:30:02Z"},
    )  # fmt: skip
    call(base, "memorize_general_info", {"content": "Checkout API: Python 3.12 on AWS Lambda, PostgreSQL 16."})
    call(
        base,
        "memorize_new_topic",
        {"topic": "deployment-process", "tags": ["deploy"], "summary": "How a release reaches production.",
         "content": "# Deployment\n\nReleases go out through the pipeline on Tuesdays."},
    )  # fmt: skip
    return ids


#: The raw answer of a scripted model that does not call the tool.
REFUSAL = "Sorry, I cannot help with that <b>today</b>."


class ScriptedModel:
    """What the model answers: a `record_facts` call with one fact per "I work at X" turn, citing that turn's
    message id (read from the transcript lines, ``mnemo.learning.transcript.LINE``), and one fact citing no turn
    of the batch (refused); or, ``broken``, prose instead of the tool call."""

    def __init__(self) -> None:
        self.broken = False
        self.prompts: list[str] = []

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        prompt = request["messages"][-1]["content"]
        self.prompts.append(prompt)
        if self.broken:
            return {"choices": [{"message": {"role": "assistant", "content": REFUSAL}}]}
        facts = []
        for said in filter(None, map(LINE.match, prompt.splitlines())):
            if job := re.search(r"I work at (\w+)", said["content"]):
                who = said["speaker"].title()
                facts.append(
                    {"text": f"{who} works at {job[1]}.", "subject": f"{who}'s employer", "sourceIds": [said["id"]]}
                )
        facts.append({"text": "Bob flies planes.", "subject": "Bob's job", "sourceIds": ["not-a-turn"]})
        tool = request["tools"][0]["function"]["name"]
        call = {"type": "function", "function": {"name": tool, "arguments": json.dumps({"facts": facts})}}
        return {
            "choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c1", **call}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30},
        }


@contextmanager
def scripted_model() -> Iterator[tuple[str, ScriptedModel]]:
    """An OpenAI-compatible server (stdlib http.server on a free port) answering from a ``ScriptedModel``: its base
    URL, for ``MNEMO_OPENAI_BASE_URL``, and the script."""
    script = ScriptedModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(script.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

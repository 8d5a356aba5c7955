"""The console in a real browser: Debian's chromium driven by Playwright, and the data the pages show.

Playwright drives the system chromium (`make browser` installs it); no browser is downloaded. Each test starts
its own `mnemo serve` (helpers.local_server) on a free port over its own data directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import http_call

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
PAGES = ("memories", "graph", "blocks", "knowledge", "conversations", "identity")
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

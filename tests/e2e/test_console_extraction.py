"""The Extraction page in Debian's chromium, on a `mnemo serve` whose facts strategy asks a scripted
OpenAI-compatible model (a stdlib HTTP server, console_support.scripted_model): with extraction off it says how
to turn it on; on, it shows the turns waiting, previews a run without writing, runs one, and shows each
candidate's decision (added, superseded, refused) with links to its source turns, a failure with the model's raw
answer, and the extracted memories marked as such on the Memories page. axe-core finds no serious violation on
it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console_support import AXE, REFUSAL, Browser, ScriptedModel, axe_violations, browser, call, scripted_model
from helpers import local_server
from mnemo.runtime import Services
from mnemo.settings import Settings

SESSION = {"session": "s1"}
#: The identity the console acts as: the default one, in session s1.
IDENTITY = {"tenant": "local", "user": "local", "session": "s1"}


@pytest.fixture
def model() -> Iterator[tuple[str, ScriptedModel]]:
    """The scripted model behind ``POST {url}/chat/completions``."""
    with scripted_model() as served:
        yield served


@pytest.fixture
def learning(tmp_path: Path, model: tuple[str, ScriptedModel]) -> Iterator[Browser]:
    """`mnemo serve` with the facts strategy on the scripted model (runs only on demand: no background run
    starts during the test), and chromium on it, acting as user local in session s1."""
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        openai_base_url=model[0],
        extraction_strategies=("facts",),
        extraction_every_turns=100,
        extraction_idle_minutes=15,
        extraction_judge=False,
    )
    with local_server(Services(settings)) as url, browser(url, bypass_csp=True) as driven:
        driven.page.goto(f"{url}/ui/")
        driven.page.evaluate(f"localStorage.setItem('mnemo.console.identity', {json.dumps(json.dumps(IDENTITY))})")
        yield driven


def say(base: str, *messages: tuple[str, str, str]) -> None:
    """Turns of session s1 through add_messages: (id, role, content), alice speaking as the user."""
    body = [
        {"id": id_, "role": role, "content": content, **({"name": "alice"} if role == "user" else {})}
        for id_, role, content in messages
    ]
    call(base, "add_messages", {"messages": body}, **SESSION)


def run_now(console: Browser, button: str) -> Any:
    page = console.page
    page.locator("#extraction-result").evaluate("element => element.replaceChildren()")
    page.get_by_role("button", name=button).click()
    page.wait_for_selector("#extraction-result .ok")
    console.settle()
    return page.locator("#extraction-result")


def test_with_extraction_off_the_page_says_how_to_turn_it_on(console: Browser) -> None:
    page = console.open("extraction", "#extraction-off")
    off = page.locator("#extraction-off").inner_text()
    assert "Extraction is off." in off
    how = call(console.base, "extraction_status", {})["howToEnable"]
    assert how in off
    assert "MNEMO_EXTRACTION_STRATEGIES" in off
    assert page.get_by_role("button", name="Run now").count() == 0  # nothing to run: the section is hidden
    assert "No run: extraction is off." in page.locator("#extraction-runs").inner_text()
    assert console.problems == []


def test_preview_run_decisions_sources_and_failures(learning: Browser, model: tuple[str, ScriptedModel]) -> None:
    console, (_, script) = learning, model
    say(console.base, ("m-1", "user", "I work at Acme."), ("m-2", "assistant", "Noted, Acme."))
    page = console.open("extraction", "#extraction-status dl")
    assert page.locator("#extraction-pending").inner_text() == "2"
    row = page.locator("#extraction-status tr[data-strategy=facts]")
    assert "openai-compatible:default" in row.inner_text()
    assert "s1" in page.locator("#extraction-status dl").inner_text()

    # The preview decides and writes nothing: the turns stay waiting, no memory is stored.
    result = run_now(console, "Preview (dry run)")
    assert "dry run" in result.locator(".ok").inner_text()
    assert result.locator("article.run[data-dry-run=true]").count() == 1
    added = result.locator("tr[data-decision=added]")
    assert "Alice works at Acme." in added.inner_text()
    assert added.get_by_role("link", name="m-1").get_attribute("href") == "#/conversations?message=m-1"
    refused = result.locator("tr[data-decision=refused]")
    assert "it cites no message id of this batch" in refused.inner_text()
    assert "Turns still waiting: 2." in result.inner_text()
    assert call(console.base, "memory_list", {"layer": "user"}, **SESSION)["memories"] == []
    assert "[m-1]" in script.prompts[-1]

    # Run now writes: the candidate is added, the run is listed under its session, nothing waits.
    result = run_now(console, "Run now")
    assert "Extracted from 2 turn(s)" in result.locator(".ok").inner_text()
    page.wait_for_selector("#extraction-pending:text-is('0')")
    runs = page.locator("#extraction-runs [data-session=s1]")
    assert runs.locator("h3").inner_text() == "Session s1"
    first = runs.locator("article.run").first
    assert first.locator(".read a").all_inner_texts() == ["m-1", "m-2"]
    (memory,) = call(console.base, "memory_list", {"layer": "user"}, **SESSION)["memories"]
    assert memory["content"] == "Alice works at Acme."
    assert memory["memoryId"] in first.locator("tr[data-decision=added]").inner_text()

    # A changed fact about the same subject supersedes the older memory; the row names the one it replaces.
    say(console.base, ("m-3", "user", "I work at Globex now."))
    result = run_now(console, "Run now")
    superseded = result.locator("tr[data-decision=superseded]")
    assert "Alice works at Globex." in superseded.inner_text()
    assert memory["memoryId"] in superseded.inner_text()

    # A model that answers prose instead of the tool call: the failure, with its raw answer, shown as text.
    script.broken = True
    say(console.base, ("m-4", "user", "Hello again."))
    result = run_now(console, "Run now")
    failure = result.locator(".failure")
    assert "not JSON" in failure.inner_text()
    assert failure.locator("pre.raw").inner_text() == REFUSAL
    assert failure.locator("b").count() == 0
    page.wait_for_selector("#extraction-status .last-failure pre.raw")
    assert page.locator("#extraction-pending").inner_text() == "1"  # a failed run leaves its turn waiting
    assert page.locator("#extraction-runs [data-session=s1] article.run").count() == 3
    serious = [v for v in axe_violations(console) if v["impact"] in ("serious", "critical")]
    assert serious == [], serious

    # A source turn's link opens the turn on the Conversations page, said by its speaker.
    page.locator("#extraction-runs tr[data-decision=superseded]").get_by_role("link", name="m-3").click()
    page.wait_for_selector("[data-turn=m-3]")
    console.settle()
    assert "alice: I work at Globex now." in page.locator("[data-turn=m-3]").inner_text()
    assert page.locator("[data-page=conversations]").evaluate(
        "view => [...view.childNodes].filter((node) => node.nodeType === 3).length"
    ) == 0  # fmt: skip

    # On the Memories page the extracted memories are marked as extracted, never as typed.
    page = console.open("memories", "#memory-recent .card")
    cards = page.locator("#memory-recent .card")
    assert cards.locator(".content").all_inner_texts() == ["Alice works at Globex.", "Alice works at Acme."]
    for n in range(2):
        assert cards.nth(n).locator(".badge.extracted").inner_text() == "extracted by facts"
        assert "source: manual" not in cards.nth(n).inner_text()
    assert cards.first.get_by_role("link", name="m-3").count() == 1
    assert console.problems == []


def test_the_page_passes_axe_with_runs_shown(learning: Browser) -> None:
    assert AXE.is_file(), "axe-core is missing: `make console-a11y` (a step of `make test`) installs it"
    say(learning.base, ("m-1", "user", "I work at Acme."))
    call(learning.base, "memory_extract", {}, **SESSION)
    learning.open("extraction", "#extraction-runs article.run")
    serious = [v for v in axe_violations(learning) if v["impact"] in ("serious", "critical")]
    assert serious == [], serious
    assert learning.problems == []


def test_the_profile_is_shown_with_the_memories_it_was_built_from(tmp_path: Path) -> None:
    from tests.support.scripted_model import ScriptedModel as Scripted

    def script(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
        if tool == "record_facts":
            return {"facts": [{"text": "Alice works at Acme.", "subject": "employer", "sourceIds": ids[:1]}]}
        if tool == "record_profile":
            lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[mem_")]
            cited = [line[1 : line.index("]")] for line in lines]
            return {"profile": [{"text": "Alice is a software engineer at Acme.", "sourceIds": cited}]}
        return None

    model = Scripted(script)
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        openai_base_url=model.url,
        extraction_strategies=("facts", "profile"),
        extraction_every_turns=100,
        extraction_idle_minutes=15,
        extraction_judge=False,
    )
    try:
        with local_server(Services(settings)) as url, browser(url, bypass_csp=True) as console:
            console.page.goto(f"{url}/ui/")
            console.page.evaluate(f"localStorage.setItem('mnemo.console.identity', {json.dumps(json.dumps(IDENTITY))})")
            say(url, ("m-1", "user", "I work at Acme as a software engineer."))
            call(url, "memory_extract", {}, **SESSION)
            page = console.open("extraction", "#extraction-profile")
            shown = page.locator("#extraction-profile").inner_text()
            status = call(url, "extraction_status", {}, **SESSION)["profile"]
            assert "Alice is a software engineer at Acme." in shown
            assert f"{status['tokens']} tokens" in shown and status["memoryIds"][0] in shown
            assert page.locator("#extraction-status tr[data-strategy=profile]").count() == 1
            assert console.problems == []
    finally:
        model.close()

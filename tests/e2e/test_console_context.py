"""The Context page in Debian's chromium, on a real `mnemo serve` seeded through the tools (add_messages,
memory_add, file_write and block_pin; memory_extract on a scripted OpenAI-compatible model for a profile, a
session summary and an extracted fact): a question shows what memory_context gives the agent (the text, the
tokens of each section, every source with its kind, section, score, date, the turns it came from and whether it
is an excerpt), exactly as the API answers the console's identity, and nothing of another user's; bad input
shows the error envelope's message and the field it names; axe-core finds no serious violation; a keyboard
alone asks, reads the text and follows a source to its turn."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from console_support import AXE, Browser, axe_violations, browser, call
from helpers import http_call, local_server
from mnemo.runtime import Services
from mnemo.settings import Settings
from tests.support.scripted_model import ScriptedModel

#: The identity the console acts as: the default one, in session s1.
IDENTITY = {"tenant": "local", "user": "local", "session": "s1"}
SESSION = {"session": "s1"}
QUESTION = "Where should we hold the offsite?"
#: Small enough that some relevant turns have no room and the lower-ranked ones are shown as excerpts.
TIGHT = 300
BLOCK = "mnemo:///blocks/decisions.md"
SECTIONS = ("profile", "summary", "memories", "turns", "blocks")
#: Why the page says each kind of item is in the context.
WHY = {"memory": "ranked for the question", "turn": "ranked for the question", "block": "pinned, taken first"}


@pytest.fixture
def console(services: Services) -> Iterator[Browser]:
    """`mnemo serve` and chromium on it (allowed to take axe-core's script), acting as user local in session s1."""
    with local_server(services) as url, browser(url, bypass_csp=True) as driven:
        driven.page.goto(f"{url}/ui/")
        use_identity(driven, IDENTITY)
        yield driven


def use_identity(console: Browser, identity: dict[str, str]) -> None:
    """What "Who am I" stores: the identity every later call of the console carries."""
    console.page.evaluate(f"localStorage.setItem('mnemo.console.identity', {json.dumps(json.dumps(identity))})")


def seed(base: str) -> str:
    """Fourteen long turns of alice's about offsites (session s1, one a day in March 2025), a memory and a
    pinned block, all through the tools as the console's identity; the memory's id."""
    filler = "Good morning, it has been a long and busy week at the office for everyone."
    turns = [
        {"id": f"m-{n}", "role": "user", "name": "alice", "at": f"2025-03-{n:02d}T09:00:00Z",
         "content": f"{filler} The offsite in city number {n} sounds lovely to me. "
                    "Anyway, how are you doing today, and how was the weekend with the family?"}
        for n in range(1, 15)
    ]  # fmt: skip
    call(base, "add_messages", {"messages": turns}, **SESSION)
    memory = call(base, "memory_add", {"content": "The team voted to hold the offsite in Lisbon"}, **SESSION)
    decisions = "# Decisions\n\n- The offsite budget is 5000 EUR.\n"
    call(base, "file_write", {"path": BLOCK, "content": decisions}, **SESSION)
    call(base, "block_pin", {"path": BLOCK}, **SESSION)
    return str(memory["memoryId"])


def build(console: Browser) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """Press "Build the context": the body the page sent, its headers, and the answer it got."""
    page = console.page
    page.locator("#context-result").evaluate("element => element.replaceChildren()")
    with page.expect_response(lambda response: response.url.endswith("/v1/tools/memory_context")) as answered:
        page.get_by_role("button", name="Build the context").click()
    response = answered.value
    page.wait_for_selector("#context-result > *")
    console.settle()
    return response.request.post_data_json, response.request.headers, response.json()


def bad_requests(problems: list[str]) -> list[str]:
    """The console errors other than the browser's own line for a 400 answer (the refusal the test asked for)."""
    return [problem for problem in problems if not re.search(r"status of 400", problem)]


def test_the_page_asks_nothing_until_a_question(console: Browser) -> None:
    asked: list[str] = []
    console.page.on("request", lambda request: asked.extend([request.url] if "/v1/tools/" in request.url else []))
    page = console.open("context", "#context-form")
    assert page.locator("h1").inner_text() == "Context"
    assert page.locator('nav a[href="#/context"]').get_attribute("aria-current") == "page"
    assert page.title() == "Context · Mnemo console"
    assert page.get_by_label("Question").input_value() == ""
    assert page.get_by_label("Budget (tokens)").input_value() == "1500"
    assert page.get_by_label("As of").input_value() == ""
    boxes = page.locator("#context-form input[name=section]")
    assert [boxes.nth(n).get_attribute("value") for n in range(boxes.count())] == list(SECTIONS)
    assert page.locator("#context-form input[name=section]:checked").count() == 0
    assert "session s1" in page.locator("#context-identity").inner_text()
    assert page.locator("#context-result").inner_text() == ""
    assert asked == []
    assert console.problems == []


def test_a_question_shows_the_text_the_section_tokens_and_why_each_item_is_there(console: Browser) -> None:
    memory_id = seed(console.base)
    page = console.open("context", "#context-form")
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Budget (tokens)").fill(str(TIGHT))
    sent, headers, answer = build(console)

    # The console's identity, in headers only; the body is what the form says and nothing else.
    assert sent == {"query": QUESTION, "budget": TIGHT}
    assert (headers["x-mnemo-user"], headers["x-mnemo-session"]) == ("local", "s1")
    # The seed gives each kind of source and a budget too small for every turn whole.
    assert answer["truncated"] is True
    assert set(answer["sections"]) == {"memories", "turns", "blocks"}
    assert any(source["excerpt"] for source in answer["sources"])
    assert not all(source["excerpt"] for source in answer["sources"] if source["kind"] == "turn")

    # The text, as the agent would get it, and the budget it used.
    assert page.locator("#context-text").text_content() == answer["context"]
    assert "The team voted to hold the offsite in Lisbon" in answer["context"]
    assert page.locator("#context-tokens").inner_text().startswith(f"{answer['tokens']} / {TIGHT} tokens")
    assert page.locator("#context-gauge").get_attribute("value") == str(answer["tokens"])
    assert page.locator("#context-truncated").is_visible()

    # The tokens of each section (one row per section asked for: all five), and of the whole text.
    for name in SECTIONS:
        row = page.locator(f"#context-result tr[data-section={name}]")
        items = sum(1 for source in answer["sources"] if source["section"] == name)
        cells = row.locator("td").all_inner_texts()
        assert cells[1:] == [str(items), str(answer["sections"].get(name, 0))], name
    assert page.locator("#context-result tr.total td.tokens").inner_text() == str(answer["tokens"])

    # Every source, in the order the text shows it, with why it is there.
    rows = page.locator("#context-result tr[data-source-id]")
    assert [rows.nth(n).get_attribute("data-source-id") for n in range(rows.count())] == [
        source["id"] for source in answer["sources"]
    ]
    for n, source in enumerate(answer["sources"]):
        row = rows.nth(n)
        cells = row.locator("td, th").all_inner_texts()
        assert cells[1:3] == [source["kind"], source["section"]], source
        assert cells[4] == (source["layer"] or "—")
        assert cells[8] == str(source["tokens"])
        assert row.get_attribute("data-excerpt") == ("true" if source["excerpt"] else "false")
        assert cells[9] == ("excerpt" if source["excerpt"] else "whole")
        if source["score"] is None:
            assert cells[5] == "—"
        else:
            assert row.locator(".score .value").inner_text() == f"{source['score']:.2f}"
        if source["occurredAt"]:
            assert row.locator("time").get_attribute("datetime") == source["occurredAt"]
        if source["kind"] == "turn":
            link = row.get_by_role("link", name=source["id"])
            assert link.get_attribute("href") == f"#/conversations?message={source['id']}"
            said = source["occurredAt"]
            assert row.locator("time").inner_text() == f"{said[:10]} {said[11:16]} UTC"
    assert page.locator(f"#context-result tr[data-source-id={memory_id}]").get_attribute("data-kind") == "memory"
    block_row = page.locator(f'#context-result tr[data-source-id="{BLOCK}"]')
    assert block_row.get_by_role("link", name=BLOCK).get_attribute("href") == "#/blocks"
    for n in range(rows.count()):  # why, in words; the Shown column says whole or excerpt
        kind = rows.nth(n).get_attribute("data-kind")
        assert rows.nth(n).locator("td.why").inner_text() == WHY[str(kind)]

    # The API gives the console's identity the same context; the page shows it as the tool answered it.
    again = call(console.base, "memory_context", sent, **SESSION)
    assert again["context"] == answer["context"]
    assert [source["id"] for source in again["sources"]] == [source["id"] for source in answer["sources"]]

    # Only the sections ticked are asked for and shown.
    page.get_by_label("turns", exact=True).check()
    page.get_by_label("blocks", exact=True).check()
    sent, _, answer = build(console)
    assert sent == {"query": QUESTION, "budget": TIGHT, "sections": ["turns", "blocks"]}
    assert {source["kind"] for source in answer["sources"]} == {"turn", "block"}
    shown = page.locator("#context-result tr[data-section]")
    assert [shown.nth(n).get_attribute("data-section") for n in range(shown.count())] == ["turns", "blocks"]
    assert memory_id not in page.locator("#context-result").inner_text()

    # A source's turn opens on the Conversations page, said by its speaker.
    turn = next(source["id"] for source in answer["sources"] if source["kind"] == "turn")
    page.locator(f"#context-result tr[data-source-id={turn}]").get_by_role("link", name=turn).click()
    page.wait_for_selector(f"[data-turn={turn}]")
    console.settle()
    assert "alice: Good morning" in page.locator(f"[data-turn={turn}]").inner_text()
    assert console.problems == []


def learned(tool: str, request: dict[str, Any], ids: list[str]) -> dict[str, Any] | None:
    """The scripted model: a fact from the first turn, the session's summary citing every turn, and the profile
    citing the memories it is shown."""
    if tool == "record_facts":
        return {"facts": [{"text": "Alice works at Acme.", "subject": "employer", "sourceIds": ids[:1]}]}
    if tool == "record_summary":
        return {"summary": [{"text": "Alice said she works at Acme and plans the offsite.", "sourceIds": ids}]}
    if tool == "record_profile":
        lines = [line for line in request["messages"][-1]["content"].splitlines() if line.startswith("[mem_")]
        cited = [line[1 : line.index("]")] for line in lines]
        return {"profile": [{"text": "Alice is an engineer at Acme.", "sourceIds": cited}]}
    return None


def test_profile_summary_and_extracted_memories_link_the_turns_they_came_from(tmp_path: Path) -> None:
    model = ScriptedModel(learned)
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        openai_base_url=model.url,
        extraction_strategies=("facts", "summary", "profile"),
        extraction_every_turns=100,
        extraction_idle_minutes=15,
        extraction_judge=False,
    )
    try:
        with local_server(Services(settings)) as url, browser(url) as console:
            console.page.goto(f"{url}/ui/")
            use_identity(console, IDENTITY)
            said = [
                {"id": "m-1", "role": "user", "name": "alice", "content": "I work at Acme as an engineer."},
                {"id": "m-2", "role": "assistant", "content": "Noted. Shall we plan the offsite?"},
            ]
            call(url, "add_messages", {"messages": said}, **SESSION)
            call(url, "memory_extract", {}, **SESSION)
            console.open("context", "#context-form")
            console.page.get_by_label("Question").fill("Where does Alice work?")
            # Without the turns section the fact stands in the memories, not its turn (the turns would outrank it).
            for name in ("profile", "summary", "memories"):
                console.page.get_by_label(name, exact=True).check()
            _, _, answer = build(console)
            kinds = {source["kind"]: source for source in answer["sources"]}
            assert {"profile", "summary", "memory"} <= set(kinds)  # what the seed must give
            assert kinds["summary"]["messageIds"] == ["m-1", "m-2"]
            assert kinds["memory"]["messageIds"] == ["m-1"]
            assert "Alice is an engineer at Acme." in console.page.locator("#context-text").text_content()
            for kind, why in (
                ("profile", "the user's profile, taken first"),
                ("summary", "this session's summary, taken first"),
                ("memory", "ranked for the question; extracted from the turns listed"),
            ):
                source = kinds[kind]
                row = console.page.locator(f"#context-result tr[data-kind={kind}]")
                assert row.get_attribute("data-source-id") == source["id"]
                assert row.locator("td.why").inner_text() == why
                assert row.locator("ul.turns a").all_inner_texts() == source["messageIds"]
                assert row.locator("time").get_attribute("datetime") == source["occurredAt"]
            for name in ("profile", "summary"):
                tokens = console.page.locator(f"#context-result tr[data-section={name}] td.tokens").inner_text()
                assert tokens == str(answer["sections"][name])
            assert console.problems == []
    finally:
        model.close()


def test_another_identity_gets_its_own_context(console: Browser) -> None:
    seed(console.base)
    use_identity(console, {"tenant": "local", "user": "bob", "session": "s1"})
    page = console.open(f"context?{urlencode({'q': QUESTION})}", "#context-result > *")
    assert "user bob" in page.locator("#context-identity").inner_text()
    assert page.locator("#context-empty").inner_text() == (
        "Nothing is known that bears on this question: the context is empty."
    )
    assert page.locator("#context-tokens").inner_text().startswith("0 / 1,500 tokens")
    assert page.locator("#context-result tr[data-source-id]").count() == 0
    assert call(console.base, "memory_context", {"query": QUESTION}, user="bob", session="s1")["sources"] == []
    # No session: the page says the context has no session summary, and where to choose one.
    use_identity(console, {"tenant": "local", "user": "local"})
    page = console.open("context", "#context-form")
    assert "No session is set" in page.locator("#context-identity").inner_text()
    assert page.locator("#context-identity").get_by_role("link").get_attribute("href") == "#/identity"
    assert console.problems == []


def test_bad_input_shows_the_envelopes_message_naming_the_field(console: Browser) -> None:
    page = console.open("context", "#context-form")
    for label, value, wrong in (("Budget (tokens)", "50", "budget"), ("As of", "yesterday", "asOf")):
        page.get_by_label("Question").fill(QUESTION)
        page.get_by_label("Budget (tokens)").fill("1500")
        page.get_by_label(label).fill(value)
        sent, _, envelope = build(console)
        status, direct = http_call(console.base, "memory_context", sent, **SESSION)
        assert status == 400 and direct["details"]["field"] == wrong
        assert envelope == direct
        alert = page.locator("#context-result [role=alert]")
        assert "INVALID_INPUT" in alert.inner_text()
        assert envelope["message"] in alert.inner_text()
        assert f"Field: {wrong}" in alert.inner_text()
        assert page.locator("#context-text").count() == 0
        page.get_by_label("As of").fill("")
    # An empty question is the API's to refuse too (the form does not stop it), and the page still works after.
    page.get_by_label("Question").fill("")
    build(console)
    assert "Field: query" in page.locator("#context-result [role=alert]").inner_text()
    page.get_by_label("Question").fill(QUESTION)
    _, _, answer = build(console)
    assert answer["success"] is True
    assert page.locator("#context-result [role=alert]").count() == 0
    assert bad_requests(console.problems) == []


def test_the_page_passes_axe_with_a_context_shown(console: Browser) -> None:
    assert AXE.is_file(), "axe-core is missing: `make console-a11y` (a step of `make test`) installs it"
    seed(console.base)
    console.open("context", "#context-form")
    serious = [v for v in axe_violations(console) if v["impact"] in ("serious", "critical")]
    assert serious == [], serious
    # Opened by a link with the question and budget: asked at once, the excerpts and the truncation shown.
    page = console.open(f"context?{urlencode({'q': QUESTION, 'budget': TIGHT})}", "#context-text")
    assert page.get_by_label("Budget (tokens)").input_value() == str(TIGHT)
    assert page.locator("#context-result tr[data-excerpt=true]").count() > 0
    serious = [v for v in axe_violations(console) if v["impact"] in ("serious", "critical")]
    assert serious == [], serious
    assert console.problems == []


def focused(console: Browser) -> dict[str, str]:
    return dict(
        console.page.evaluate(
            """() => { const e = document.activeElement;
                return { tag: e.tagName.toLowerCase(), name: e.getAttribute("name") || "", id: e.id || "",
                         value: e.value || "", text: (e.getAttribute("aria-label") || e.textContent || "").trim(),
                         href: e.getAttribute("href") || "" }; }"""
        )
    )


def tab_to(console: Browser, wanted: Any, most: int = 80) -> dict[str, str]:
    """Press Tab until ``wanted(focused element)``; the element, or a failure naming where the walk went."""
    walked = []
    for _ in range(most):
        console.page.keyboard.press("Tab")
        element = focused(console)
        walked.append(element)
        if wanted(element):
            return element
    raise AssertionError(f"Tab never reached it; it went through {walked}")


def test_keyboard_alone_asks_reads_and_follows_a_source(console: Browser) -> None:
    seed(console.base)
    page = console.open("memories", "#memory-search")
    page.keyboard.press("Tab")
    assert focused(console)["text"] == "Skip to content"
    tab_to(console, lambda element: element["href"] == "#/context")
    page.keyboard.press("Enter")
    page.wait_for_selector("#context-form")
    assert focused(console)["text"] == "Context"  # the page's title takes the focus, as on every section

    # Type the question, Tab to the budget, Enter submits.
    tab_to(console, lambda element: element["name"] == "query")
    page.keyboard.type(QUESTION)
    assert tab_to(console, lambda element: element["tag"] == "input")["name"] == "budget"
    page.keyboard.press("Control+A")
    page.keyboard.type(str(TIGHT))
    with page.expect_response(lambda response: response.url.endswith("/v1/tools/memory_context")) as answered:
        page.keyboard.press("Enter")
    assert answered.value.request.post_data_json == {"query": QUESTION, "budget": TIGHT}
    page.wait_for_selector("#context-text")
    console.settle()

    # A section is ticked with Space, and the button is pressed with Enter.
    tab_to(console, lambda element: element["name"] == "section" and element["value"] == "turns")
    page.keyboard.press("Space")
    tab_to(console, lambda element: element["text"] == "Build the context")
    with page.expect_response(lambda response: response.url.endswith("/v1/tools/memory_context")) as answered:
        page.keyboard.press("Enter")
    assert answered.value.request.post_data_json == {"query": QUESTION, "budget": TIGHT, "sections": ["turns"]}
    page.wait_for_selector("#context-text")
    console.settle()

    # The text is reached (it scrolls), then a source's turn, which Enter opens on the Conversations page.
    assert tab_to(console, lambda element: element["id"] == "context-text")["text"] == "The context's text"
    link = tab_to(console, lambda element: element["href"].startswith("#/conversations?message="))
    page.keyboard.press("Enter")
    turn = link["href"].removeprefix("#/conversations?message=")
    page.wait_for_selector(f"[data-turn={turn}]")
    assert console.problems == []

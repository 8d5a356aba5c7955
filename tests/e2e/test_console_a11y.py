"""The console's accessibility: axe-core (pinned in tests/console_a11y, installed by `make console-a11y`, run
offline inside the page) finds no serious or critical violation on any page, and a keyboard alone reaches and
works the controls: Tab walks them, Enter activates, Escape closes the confirmation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from console_support import AXE, PAGES, Browser, axe_violations, browser, call, seed

#: The pages as the tests of each section see them, with data in.
VIEWS = (*PAGES, "graph?name=Alice", "memories?q=PostgreSQL")


@pytest.fixture
def audited(console_server: str) -> Iterator[Browser]:
    """Chromium allowed to add axe-core's script to the page (the console's policy allows only its own)."""
    assert AXE.is_file(), "axe-core is missing: `make console-a11y` (a step of `make test`) installs it"
    with browser(console_server, bypass_csp=True) as driven:
        yield driven


def violations(console: Browser) -> list[dict[str, Any]]:
    return axe_violations(console)


def test_no_serious_or_critical_violation_on_any_page(audited: Browser) -> None:
    seed(audited.base)
    waits = {"graph?name=Alice": "svg.graph .edge", "memories?q=PostgreSQL": "#memory-results .card"}
    for view in VIEWS:
        audited.open(view, waits.get(view, "h1"))
        audited.settle()
        serious = [v for v in violations(audited) if v["impact"] in ("serious", "critical")]
        assert serious == [], (view, serious)
    assert audited.problems == []


def focused(console: Browser) -> dict[str, str]:
    return console.page.evaluate(
        """() => { const e = document.activeElement;
            return { tag: e.tagName.toLowerCase(), name: e.getAttribute("name") || "", id: e.id || "",
                     text: (e.getAttribute("aria-label") || e.textContent || "").trim().slice(0, 60),
                     href: e.getAttribute("href") || "" }; }"""
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


def test_keyboard_walk(console: Browser) -> None:
    memory_id = call(console.base, "memory_add", {"content": "Alice keeps the release notes"})["memoryId"]
    call(console.base, "add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme"})
    page = console.open("memories")

    # The first stop is the skip link; then every section of the console is one Tab away after another.
    page.keyboard.press("Tab")
    assert focused(console)["text"] == "Skip to content"
    for section in ("memories", "graph", "blocks", "knowledge", "conversations", "extraction", "context", "identity"):
        tab_to(console, lambda element, section=section: element["href"] == f"#/{section}")

    # Search with the keyboard alone: type, Enter submits.
    tab_to(console, lambda element: element["name"] == "query")
    page.keyboard.type("release notes")
    page.keyboard.press("Enter")
    page.wait_for_selector(f"[data-memory-id={memory_id}]")
    console.settle()

    # Delete is reached by Tab and opened by Enter; the dialog takes the focus and Escape leaves it, nothing deleted.
    tab_to(console, lambda element: element["text"].startswith("Delete memory"))
    page.keyboard.press("Enter")
    assert page.locator("dialog#confirm").is_visible()
    assert focused(console)["id"] == "confirm-cancel"
    page.keyboard.press("Escape")
    assert not page.locator("dialog#confirm").is_visible()
    assert call(console.base, "memory_search", {"query": "release notes", "threshold": 0.0})["results"]

    # A section link is followed with Enter, and the graph's entities are links too.
    page.locator('nav a[href="#/graph"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("h1:has-text('Memory graph')")
    page.get_by_role("textbox", name="Find entities").focus()
    page.keyboard.type("Alice")
    page.keyboard.press("Enter")
    page.wait_for_selector("#entity-results a")
    tab_to(console, lambda element: element["text"] == "Alice")
    page.keyboard.press("Enter")
    page.wait_for_selector("svg.graph .edge")
    console.settle()
    tab_to(console, lambda element: element["text"].startswith("Open Acme"))
    page.keyboard.press("Enter")
    page.wait_for_selector("#entity h2:has-text('Acme')")
    assert console.problems == []

"""Pinned blocks in the console: the gauge shows tokens used against the budget, pin and unpin go through the
API, and the budget refusal is told so that a person knows what to do."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from console_support import Browser, browser, call
from helpers import local_server
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

BUDGET = 60  # tokens: two small blocks fit, a third does not


@pytest.fixture
def small_budget(tmp_path: Path) -> Iterator[Browser]:
    """A server whose pinned context holds only BUDGET tokens, and chromium on it."""
    services = Services(Settings(data_dir=tmp_path, embedder="hashing", block_budget_tokens=BUDGET))  # type: ignore[arg-type]
    try:
        with local_server(services) as url, browser(url) as driven:
            yield driven
    finally:
        set_services(None)


def pinned(base: str) -> list[str]:
    return [block["path"] for block in call(base, "pinned_context", {})["blocks"]]


def test_pin_unpin_and_the_budget_gauge(console: Browser) -> None:
    for name in ("decisions.md", "style.md"):
        call(console.base, "file_write", {"path": f"mnemo:///blocks/{name}", "content": f"# {name}\n\n- one rule\n"})
    page = console.open("blocks", "#budget-gauge")
    page.get_by_role("button", name="Pin mnemo:///blocks/style.md").click()
    page.wait_for_selector("ol.pinned li[data-path='mnemo:///blocks/style.md']")
    page.get_by_role("button", name="Pin mnemo:///blocks/decisions.md").click()
    page.wait_for_selector("ol.pinned li:nth-child(2)[data-path='mnemo:///blocks/decisions.md']")
    assert pinned(console.base) == ["mnemo:///blocks/style.md", "mnemo:///blocks/decisions.md"]
    context = call(console.base, "pinned_context", {})
    gauge = page.locator("#budget-gauge")
    assert float(gauge.get_attribute("value") or 0) == context["totalTokens"]
    assert float(gauge.get_attribute("max") or 0) == context["budgetTokens"]
    assert page.locator("#budget-text").inner_text().startswith(f"{context['totalTokens']} / 100,000 tokens")

    page.get_by_role("button", name="Move mnemo:///blocks/decisions.md up").click()
    page.wait_for_selector("ol.pinned li:first-child[data-path='mnemo:///blocks/decisions.md']")
    assert pinned(console.base) == ["mnemo:///blocks/decisions.md", "mnemo:///blocks/style.md"]

    page.get_by_role("button", name="Edit mnemo:///blocks/style.md").first.click()
    page.locator("#editor").get_by_label("Content").fill("# Style\n\n- Small modules, one job each.\n")
    page.get_by_role("button", name="Save").click()
    page.wait_for_selector("#editor:empty", state="attached")
    assert "one job each" in call(console.base, "file_read", {"path": "mnemo:///blocks/style.md"})["content"]

    page.locator("ol.pinned").get_by_role("button", name="Unpin mnemo:///blocks/style.md").click()
    page.wait_for_selector("ol.pinned li[data-path='mnemo:///blocks/style.md']", state="detached")
    assert pinned(console.base) == ["mnemo:///blocks/decisions.md"]
    assert console.problems == []


def test_the_budget_error_is_shown_with_what_to_do(small_budget: Browser) -> None:
    console = small_budget
    call(console.base, "file_write", {"path": "mnemo:///blocks/small.md", "content": "# Small\n\n- fits\n"})
    call(console.base, "block_pin", {"path": "mnemo:///blocks/small.md"})
    call(console.base, "file_write", {"path": "mnemo:///blocks/big.md", "content": "# Big\n\n" + "word " * 200})
    page = console.open("blocks", "#budget-gauge")
    page.get_by_role("button", name="Pin mnemo:///blocks/big.md").click()
    error = page.locator("#budget-error")
    error.wait_for()
    text = error.inner_text()
    assert "Over the pinned-context budget" in text
    assert f"over its budget of {BUDGET}" in text
    assert "unpin a block you can spare, or edit a pinned block to make it shorter" in text
    assert error.get_attribute("role") == "alert"
    assert pinned(console.base) == ["mnemo:///blocks/small.md"]
    # The refusal is the API's 409; chromium logs the failed request, and nothing else went wrong.
    assert [p for p in console.problems if not re.search(r"status of 409", p)] == []

"""The memory graph in the console: the time control (asOf) changes which facts the picture shows, and a fact is
invalidated (its history kept) or deleted (after a preview and a confirmation) through the API."""

from __future__ import annotations

from console_support import Browser, call, seed


def drawn(console: Browser) -> set[str]:
    """The facts the picture shows, once the answer for the time chosen is in."""
    console.settle()
    return set(console.page.locator("svg.graph .edge").evaluate_all("edges => edges.map(e => e.dataset.factId)"))


def test_the_time_control_changes_which_facts_are_shown(console: Browser) -> None:
    ids = seed(console.base)
    uses = call(console.base, "get_memory_object", {"name": "Alice"})["facts"]
    uses_id = next(fact["factId"] for fact in uses if fact["predicate"] == "uses")
    page = console.open("graph?name=Alice", "svg.graph")
    assert drawn(console) == {ids["new_fact"], uses_id}  # now: Globex, and PostgreSQL

    slider = page.get_by_label("As of")
    slider.focus()
    page.keyboard.press("Home")  # 2024-03-01: Alice joins Acme
    assert page.locator("#as-of-value").inner_text() == "2024-03-01 00:00 UTC"
    assert drawn(console) == {ids["old_fact"]}
    page.keyboard.press("ArrowRight")  # 2024-05-01: she starts using PostgreSQL
    assert drawn(console) == {ids["old_fact"], uses_id}
    page.keyboard.press("ArrowRight")  # 2025-07-01: Globex replaces Acme
    assert drawn(console) == {ids["new_fact"], uses_id}
    row = page.locator(f"tr[data-fact-id={ids['old_fact']}]")
    assert row.get_attribute("data-status") == "invalid"
    assert "2025-07-01" in row.inner_text()
    page.keyboard.press("End")
    assert page.locator("#as-of-value").inner_text() == "now"
    assert console.problems == []


def test_invalidate_keeps_the_fact_and_delete_asks_first(console: Browser) -> None:
    seed(console.base)
    facts = call(console.base, "get_memory_object", {"name": "Alice"})["facts"]
    uses = next(fact for fact in facts if fact["predicate"] == "uses")
    page = console.open("graph?name=Alice", "svg.graph")

    page.get_by_role("button", name=f"Invalidate: {uses['text']}").click()
    page.get_by_label("Ended on").fill("2026-01-31")
    page.get_by_label("Why").fill("Alice moved to DynamoDB")
    page.get_by_role("button", name="Invalidate", exact=True).click()
    page.wait_for_selector(f"tr[data-fact-id={uses['factId']}][data-status=invalid]")
    history = call(console.base, "get_memory_object", {"name": "Alice", "includeHistory": True})["facts"]
    ended = next(fact for fact in history if fact["factId"] == uses["factId"])
    assert ended["invalidAt"].startswith("2026-01-31")
    assert ended["reason"] == "Alice moved to DynamoDB"

    page.get_by_role("button", name=f"Delete: {uses['text']}").click()
    dialog = page.locator("dialog#confirm")
    dialog.wait_for(state="visible")  # the dialog opens once the preview (delete_memory_object without a token) answers
    assert dialog.is_visible()
    assert "erases" in dialog.inner_text()
    dialog.get_by_role("button", name="Delete").click()
    page.locator(f"tr[data-fact-id={uses['factId']}]").wait_for(state="detached")
    history = call(console.base, "get_memory_object", {"name": "Alice", "includeHistory": True})["facts"]
    assert uses["factId"] not in {fact["factId"] for fact in history}
    assert console.problems == []


def test_a_fact_added_in_the_console_opens_its_subject(console: Browser) -> None:
    page = console.open("graph")
    page.get_by_label("Subject", exact=True).fill("Checkout API")
    page.get_by_label("Relation", exact=True).fill("depends_on")
    page.get_by_label("Object", exact=True).fill("PostgreSQL")
    page.get_by_role("button", name="Add fact").click()
    page.wait_for_selector("svg.graph .edge")
    assert page.locator("#entity h2").inner_text() == "Checkout API"
    page.get_by_label("Open PostgreSQL (entity)").click()  # a neighbour is a link to its own neighbourhood
    page.wait_for_selector("#entity h2:has-text('PostgreSQL')")
    assert console.problems == []

"""Memories in the console, held to the API: what the console adds the API finds, what the API adds the console
shows, and a delete asks first, deletes only when confirmed, and the API no longer finds it."""

from __future__ import annotations

from console_support import Browser, call

SEARCH = {"query": "release notes", "layers": ["user"], "threshold": 0.0}


def search(console: Browser, query: str) -> None:
    page = console.page
    page.get_by_label("Query").fill(query)
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_selector("#memory-results .summary")


def test_a_memory_added_in_the_console_is_found_through_the_api(console: Browser) -> None:
    page = console.open("memories")
    page.get_by_label("Content").fill("Alice keeps the release notes in the wiki")
    page.get_by_label("Tags", exact=True).last.fill("docs, release")
    page.get_by_role("button", name="Add memory").click()
    stored = page.locator("#memory-added .ok").inner_text()
    found = call(console.base, "memory_search", SEARCH)["results"]
    assert [hit["content"] for hit in found] == ["Alice keeps the release notes in the wiki"]
    assert found[0]["memoryId"] in stored and found[0]["tags"] == ["docs", "release"]
    # The same content again is deduplicated, and the console says so.
    page.get_by_label("Content").fill("Alice keeps the release notes in the wiki")
    page.get_by_role("button", name="Add memory").click()
    page.wait_for_selector("#memory-added .ok:has-text('deduplicated')")
    assert console.problems == []


def test_a_memory_added_through_the_api_shows_in_the_console(console: Browser) -> None:
    memory_id = call(console.base, "memory_add", {"content": "Deploys freeze on Fridays", "tags": ["release"]})[
        "memoryId"
    ]
    console.open("memories")
    search(console, "deploys friday")
    card = console.page.locator(f"[data-memory-id={memory_id}]")
    assert "Deploys freeze on Fridays" in card.inner_text()
    assert "lexical + vector" in card.inner_text() and "source: manual" in card.inner_text()
    assert float(card.locator(".score .value").inner_text()) > 0
    card.locator("summary").click()
    assert memory_id in card.locator("dl").inner_text()
    assert console.problems == []


def test_delete_asks_first_then_deletes(console: Browser) -> None:
    memory_id = call(console.base, "memory_add", {"content": "Alice keeps the release notes"})["memoryId"]
    page = console.open("memories")
    search(console, "release notes")
    card = page.locator(f"[data-memory-id={memory_id}]")
    dialog = page.locator("dialog#confirm")

    card.get_by_role("button", name="Delete").click()
    assert dialog.is_visible() and "Alice keeps the release notes" in dialog.inner_text()
    assert page.evaluate("document.activeElement.id") == "confirm-cancel"  # the safe choice has the focus
    dialog.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible() and card.is_visible()
    assert [hit["memoryId"] for hit in call(console.base, "memory_search", SEARCH)["results"]] == [memory_id]

    card.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name="Delete").click()
    card.wait_for(state="detached")
    assert call(console.base, "memory_search", SEARCH)["results"] == []
    assert "Deleted memory" in page.locator("#status").inner_text()
    assert console.problems == []


def test_what_a_memory_says_is_shown_as_text_never_run(console: Browser) -> None:
    hostile = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script> rota'
    memory_id = call(console.base, "memory_add", {"content": hostile})["memoryId"]
    console.open("memories")
    search(console, "rota")
    card = console.page.locator(f"[data-memory-id={memory_id}]")
    assert card.locator(".content").inner_text() == hostile
    assert card.locator("img, script").count() == 0
    assert console.page.title() != "owned"
    assert console.problems == []

"""Memories in the console, held to the API: what the console adds the API finds, what the API adds the console
shows (a layer browsed newest first, each search result's score with its lexical and vector parts, a memory's
history), and a delete asks first, deletes only when confirmed, and the API no longer finds it."""

from __future__ import annotations

from console_support import Browser, call

SEARCH = {"query": "release notes", "layers": ["user"], "threshold": 0.0}
#: 22 service names unlike one another (a page of the browse holds 20).
LETTERS = [chr(ord("A") + n) + chr(ord("a") + (7 * n) % 26) + "x" for n in range(22)]


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
    assert found[0]["memoryId"] in stored
    assert found[0]["tags"] == ["docs", "release"]
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
    assert "lexical + vector" in card.inner_text()
    assert "source: manual" in card.inner_text()
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
    assert dialog.is_visible()
    assert "Alice keeps the release notes" in dialog.inner_text()
    assert page.evaluate("document.activeElement.id") == "confirm-cancel"  # the safe choice has the focus
    dialog.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible()
    assert card.is_visible()
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


def browse(console: Browser, layer: str) -> None:
    page = console.page
    page.locator("#memory-browse select").select_option(layer)
    page.get_by_role("button", name="Show memories").click()
    page.wait_for_selector("#memory-list .summary")
    console.settle()


def test_a_layer_is_browsed_newest_first_a_page_at_a_time(console: Browser) -> None:
    facts = [f"Service {name} is owned by team {n}" for n, name in enumerate(LETTERS)]
    for fact in facts:
        call(console.base, "memory_add", {"content": fact})
    helper = {"content": "The helper agent answers support tickets", "layer": "agent"}
    call(console.base, "memory_add", helper, agent="a1")
    page = console.open("memories")
    browse(console, "user")
    cards = page.locator("#memory-list .card .content")
    assert cards.all_inner_texts() == facts[::-1][:20]  # the API's first page, newest first
    listed = call(console.base, "memory_list", {"layer": "user"})["memories"]
    assert [m["content"] for m in listed] == facts[::-1][:20]
    page.get_by_role("button", name="More").click()
    page.locator("#memory-list .card").nth(21).wait_for()
    assert cards.all_inner_texts() == facts[::-1]
    assert page.get_by_role("button", name="More").count() == 0
    assert "score" not in page.locator("#memory-list .card").first.inner_text().lower()
    # The agent layer of agent a1 is not the console's (no agent id): the API's refusal is shown.
    page.locator("#memory-browse select").select_option("agent")
    page.get_by_role("button", name="Show memories").click()
    alert = page.locator("#memory-list [role=alert]")
    assert "agent id" in alert.inner_text()
    assert "Field: layer" in alert.inner_text()
    assert [p for p in console.problems if "status of 400" not in p] == []


def test_each_result_shows_the_lexical_and_vector_parts_of_its_score(console: Browser) -> None:
    memory_id = call(console.base, "memory_add", {"content": "The billing service retries webhooks"})["memoryId"]
    page = console.open("memories")
    search(console, "billing webhooks")
    card = page.locator(f"[data-memory-id={memory_id}]")
    (result,) = [r for r in call(console.base, "memory_search", {**SEARCH, "query": "billing webhooks"})["results"]]
    assert result["lexicalScore"] is not None
    assert result["vectorScore"] is not None
    lexical = card.locator("[data-part=lexical] .value").inner_text()
    vector = card.locator("[data-part=vector] .value").inner_text()
    assert (float(lexical), float(vector)) == (round(result["lexicalScore"], 2), round(result["vectorScore"], 2))
    assert "from lexical + vector" in card.inner_text()
    assert console.problems == []


def test_opening_a_memory_shows_its_history(console: Browser) -> None:
    memory_id = call(console.base, "memory_add", {"content": "Standups move to 9:30 on Mondays"})["memoryId"]
    again = call(console.base, "memory_add", {"content": "Standups move to 9:30 on Mondays"})
    assert again["deduplicated"]
    assert again["memoryId"] == memory_id
    page = console.open("memories")
    browse(console, "user")
    card = page.locator(f"#memory-list [data-memory-id={memory_id}]")
    card.get_by_role("button", name="History").click()
    changes = card.locator(".changes li")
    changes.nth(1).wait_for()
    assert [change.get_attribute("data-event") for change in changes.all()] == ["ADD", "DEDUPE"]
    assert "added again, kept once (deduplicated)" in changes.nth(1).inner_text()
    assert "by local" in changes.first.inner_text()
    # Deleted in the console, the memory keeps its history, and the API answers it.
    card.get_by_role("button", name="Delete").click()
    page.locator("dialog#confirm").get_by_role("button", name="Delete").click()
    card.wait_for(state="detached")
    history = call(console.base, "memory_history", {"memoryId": memory_id})
    assert [change["event"] for change in history["changes"]] == ["ADD", "DEDUPE", "DELETE"]
    assert console.problems == []

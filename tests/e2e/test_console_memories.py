"""Memories in the console, held to the API: the page opens on the newest memories of every layer the identity
can read, what the console adds the API finds, what the API adds the console shows (a layer browsed newest first,
each search result's score with its lexical and vector parts, a memory's history), an extracted memory is marked
with its strategy and the turns it came from, and a delete asks first, deletes only when confirmed, and the API
no longer finds it."""

from __future__ import annotations

import json

from console_support import Browser, call
from mnemo.runtime import Services

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
    card = console.page.locator(f"#memory-results [data-memory-id={memory_id}]")
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
    card = page.locator(f"#memory-results [data-memory-id={memory_id}]")
    dialog = page.locator("dialog#confirm")

    card.get_by_role("button", name="Delete").click()
    assert dialog.is_visible()
    assert "Alice keeps the release notes" in dialog.inner_text()
    assert page.evaluate("document.activeElement.id") == "confirm-cancel"  # the safe choice has the focus
    dialog.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible()
    assert card.is_visible()
    assert [hit["memoryId"] for hit in call(console.base, "memory_search", SEARCH)["results"]] == [memory_id]

    assert page.locator(f"#memory-recent [data-memory-id={memory_id}]").count() == 1
    card.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name="Delete").click()
    card.wait_for(state="detached")
    assert call(console.base, "memory_search", SEARCH)["results"] == []
    # Gone from the newest memories too, where it was shown as well.
    assert page.locator(f"#memory-recent [data-memory-id={memory_id}]").count() == 0
    assert "Deleted memory" in page.locator("#status").inner_text()
    assert console.problems == []


def test_what_a_memory_says_is_shown_as_text_never_run(console: Browser) -> None:
    hostile = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script> rota'
    memory_id = call(console.base, "memory_add", {"content": hostile})["memoryId"]
    console.open("memories")
    search(console, "rota")
    card = console.page.locator(f"#memory-results [data-memory-id={memory_id}]")
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
    card = page.locator(f"#memory-results [data-memory-id={memory_id}]")
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


def newest(console: Browser) -> list[str]:
    return console.page.locator("#memory-recent .card .content").all_inner_texts()


def test_the_page_opens_on_the_newest_memories_of_every_readable_layer(console: Browser) -> None:
    # 23 memories in two readable layers, interleaved; two more in layers this identity cannot read.
    facts = []
    for n, name in enumerate([*LETTERS, "Zq"]):
        layer = "company" if n % 3 == 0 else "user"
        facts.append(f"Service {name}x is run by the {layer} side, number {n}")
        call(console.base, "memory_add", {"content": facts[-1], "layer": layer})
    call(console.base, "memory_add", {"content": "The helper agent triages tickets", "layer": "agent"}, agent="a1")
    call(console.base, "memory_add", {"content": "This session is about billing", "layer": "session"}, session="s1")
    page = console.open("memories", "#memory-recent .card")
    # The search form is still there, empty; the newest memories are shown under it, merged newest first.
    assert page.get_by_role("search", name="Search memories").is_visible()
    assert page.get_by_label("Query").input_value() == ""
    assert newest(console) == facts[::-1][:20]
    assert "user, company" in page.locator("#memory-recent .summary").inner_text()
    assert page.locator("#memory-recent .card .badge").first.inner_text() in ("user", "company")
    page.get_by_role("button", name="Older memories").click()
    page.locator("#memory-recent .card").nth(22).wait_for()
    console.settle()
    assert newest(console) == facts[::-1]
    assert page.get_by_role("button", name="Older memories").count() == 0
    # No layer whose ids the identity lacks was asked for: no refusal, nothing in the browser's console.
    assert console.problems == []

    # With an agent id (Who am I), the agent layer is the identity's too, and its memory is the newest.
    identity = json.dumps({"tenant": "local", "user": "local", "agent": "a1"})
    page.evaluate(f"localStorage.setItem('mnemo.console.identity', {json.dumps(identity)})")
    console.open("memories", "#memory-recent .card")
    assert newest(console)[0] == "The helper agent triages tickets"
    assert "agent, user, company" in page.locator("#memory-recent .summary").inner_text()
    # A memory added in the console shows first among the newest at once.
    page.get_by_label("Content").fill("Incidents are reviewed on Thursdays")
    page.get_by_role("button", name="Add memory").click()
    page.wait_for_selector("#memory-recent .card:first-child:has-text('Incidents are reviewed on Thursdays')")
    assert console.problems == []


def test_with_no_memory_the_page_says_so(console: Browser) -> None:
    page = console.open("memories", "#memory-recent .summary")
    assert "No memory yet" in page.locator("#memory-recent").inner_text()
    assert page.locator("#memory-recent .card").count() == 0
    assert console.problems == []


def extracted(services: Services, content: str, memory_id: str, message_ids: list[str], supersedes: str = "") -> None:
    """An extracted memory in user local's layer, written as extraction writes it (mnemo.memory.extracted)."""
    from mnemo.context import RequestContext
    from mnemo.memory.extracted import ExtractedMemories, Neighbour
    from mnemo.memory.outbox_sync import MemoryIndexSync

    scope = RequestContext(tenant="local", user="local").scope_key("user")
    sync = MemoryIndexSync(services.records, services.index, services.embedder, services.outbox)
    memories = ExtractedMemories(services.records, services.index, services.embedder, services.outbox, sync)
    old = memories.get(scope, supersedes) if supersedes else None
    provenance = {
        "strategy": "facts",
        "model": "scripted-model",
        "messageIds": message_ids,
        "extractedAt": "2026-11-20T15:00:00Z",
        "runId": "run_1",
    }
    memories.add(
        scope=scope,
        layer="user",
        memory_id=memory_id,
        content=content,
        tags=["fact"],
        metadata={"source": "extraction", "strategy": "facts", "provenance": provenance, "subject": "Alice's employer"},
        occurred_at=None,
        actor="local",
        vector=memories.embed([content])[0],
        supersedes=[Neighbour(old.data, old.version, 0.9)] if old else (),
    )


def test_an_extracted_memory_is_marked_with_its_strategy_and_source_turns(console: Browser, services: Services) -> None:
    call(
        console.base,
        "add_conversation",
        {"message_id": "msg_job1", "explanation": "a turn", "user_input": "I started at Acme this week.",
         "agent_response": "Congratulations!", "timestamp": "2026-11-20T14:30:00Z"},
    )  # fmt: skip
    typed = call(console.base, "memory_add", {"content": "Alice likes long walks"})["memoryId"]
    extracted(services, "Alice works at Acme.", "mem_extracted_acme", ["msg_job1"])
    page = console.open("memories", "#memory-recent .card")
    card = page.locator("#memory-recent [data-memory-id=mem_extracted_acme]")
    assert card.locator(".badge.extracted").inner_text() == "extracted by facts"
    assert "source: manual" not in card.inner_text()
    assert "Extracted from these turns, not typed by anyone" in card.inner_text()
    assert "scripted-model" in card.inner_text()
    # What a person typed is never marked extracted.
    mine = page.locator(f"#memory-recent [data-memory-id={typed}]")
    assert "source: manual" in mine.inner_text()
    assert mine.locator(".badge.extracted").count() == 0
    # What a card leaves out (no tags, no provenance) leaves nothing behind, not even the text "null".
    assert mine.evaluate("card => [...card.childNodes].filter((node) => node.nodeType === 3).length") == 0
    # Its history says it was extracted; its source turn is a link to the conversation.
    card.get_by_role("button", name="History").click()
    card.locator(".changes li[data-event=EXTRACT]").wait_for()
    assert "extracted from conversation turns" in card.locator(".changes").inner_text()
    assert card.locator(".changes li[data-event=EXTRACT] a").inner_text() == "msg_job1"
    card.locator(".provenance").get_by_role("link", name="msg_job1").click()
    page.wait_for_selector("[data-turn=msg_job1]")
    console.settle()
    assert "I started at Acme this week." in page.locator("[data-turn=msg_job1]").inner_text()
    assert page.locator("h2", has_text="Message msg_job1").count() == 1
    assert console.problems == []


def test_a_superseded_memory_is_shown_as_superseded(console: Browser, services: Services) -> None:
    extracted(services, "Alice works at Acme.", "mem_old_job", ["msg_job1"])
    extracted(services, "Alice works at Globex.", "mem_new_job", ["msg_job2"], supersedes="mem_old_job")
    page = console.open("memories", "#memory-recent .card")
    old = page.locator("#memory-recent [data-memory-id=mem_old_job]")
    new = page.locator("#memory-recent [data-memory-id=mem_new_job]")
    assert old.locator(".badge", has_text="superseded").count() == 1
    assert "Replaced by memory mem_new_job" in old.inner_text()
    assert "superseded" in old.get_attribute("class")
    assert new.locator(".badge", has_text="superseded").count() == 0
    # The history of either shows the versions of the fact, oldest first, and which one replaced which.
    old.get_by_role("button", name="History").click()
    old.locator(".changes li[data-event=SUPERSEDE]").wait_for()
    assert "by memory mem_new_job" in old.locator("li[data-event=SUPERSEDE]").inner_text()
    new.get_by_role("button", name="History").click()
    versions = new.locator(".versions li")
    versions.nth(1).wait_for()
    assert [v.get_attribute("data-version") for v in versions.all()] == ["mem_old_job", "mem_new_job"]
    assert "replaced by mem_new_job" in versions.first.inner_text()
    assert "(this one)" in versions.nth(1).inner_text()
    # Search leaves a superseded memory out unless asked; asked, it shows it marked.
    search(console, "Alice works at")
    assert page.locator("#memory-results [data-memory-id=mem_old_job]").count() == 0
    page.get_by_label("Also memories that a newer extracted memory replaced").check()
    page.get_by_role("button", name="Search", exact=True).click()
    hit = page.locator("#memory-results [data-memory-id=mem_old_job]")
    hit.wait_for()
    assert hit.locator(".badge", has_text="superseded").count() == 1
    assert console.problems == []

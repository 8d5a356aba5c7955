"""Every page of the console in Debian's chromium: it loads with no console error, asks nothing of any other
site, shows what the API holds, and the identity chosen in "Who am I" is the one the API sees."""

from __future__ import annotations

import re

from console_support import PAGES, Browser, call, seed
from helpers import http_call, http_request
from knowledge_helpers import push_tree
from mnemo.runtime import Services

#: What each page shows once the seeded data is in (the selector waits for the tool calls' answers).
SHOWS = {
    "memories": "#memory-search",
    "graph": "#fact-add",
    "blocks": "#budget-gauge",
    "knowledge": "#knowledge-items table",
    "conversations": "[data-message-id=msg_weather1] .execution",
    "extraction": "#extraction-off",
    "context": "#context-form",
    "identity": "#identity-check .ok",
}


def test_every_page_loads_with_no_console_error(console: Browser, services: Services) -> None:
    push_tree(services, "local")
    seed(console.base)
    call(console.base, "sync_now", {})
    asked: list[str] = []
    console.page.on("request", lambda request: asked.append(request.url))
    for page in PAGES:
        shown = console.open(page, SHOWS[page])
        assert shown.locator("h1").count() == 1
        assert shown.locator(f'nav a[href="#/{page}"]').get_attribute("aria-current") == "page"
    console.open("graph?name=Alice", "svg.graph .edge")
    console.open("memories?q=PostgreSQL", "#memory-results .card")
    assert console.problems == []
    assert asked, asked
    assert all(url.startswith(console.base + "/") for url in asked), asked
    assert not [url for url in asked if "/v1/" in url and "/v1/tools/" not in url]


def test_conversation_and_execution_share_one_timeline_entry(console: Browser) -> None:
    seed(console.base)
    page = console.open("conversations", "[data-message-id=msg_weather1]")
    entry = page.locator("[data-message-id=msg_weather1]")
    assert "What's the weather in Paris tomorrow?" in entry.inner_text()
    assert "geocode_city → weather_api" in entry.locator(".execution").inner_text()
    page.get_by_role("button", name="deployment-process").click()
    assert "Releases go out through the pipeline" in page.locator("#topic pre").inner_text()
    assert "PostgreSQL 16" in page.locator("#general-memory").inner_text()
    assert console.problems == []


def test_the_check_playground_shows_violations_with_their_lines(console: Browser, services: Services) -> None:
    push_tree(services, "local")
    call(console.base, "sync_now", {})
    page = console.open("knowledge", "#knowledge-items table")
    page.get_by_label("File name").fill("client.py")
    page.get_by_label("Content", exact=True).fill("import requests\n\nrequests.get(url, verify=False)\n")
    page.get_by_role("button", name="Check", exact=True).click()
    row = page.locator("#check-result tr", has_text="verify")
    assert row.locator("td").first.inner_text() == "client.py:3"
    page.get_by_role("button", name="Approved Cryptography and TLS Usage").click()
    assert "pycrypto" in page.locator("#knowledge-item table").first.inner_text()
    assert console.problems == []


def test_identity_chosen_in_the_console_is_the_one_the_api_sees(console: Browser) -> None:
    page = console.open("identity", "#identity-check .ok")
    page.get_by_label("User").fill("bob")
    page.get_by_label("Tenant").fill("acme")
    page.get_by_role("button", name="Use this identity").click()
    page.wait_for_selector("#identity-check .ok")
    assert "X-Mnemo-User: bob" in page.locator("#identity-headers").inner_text()
    assert page.locator("#whoami").inner_text() == "Acting as tenant acme, user bob"
    page = console.open("memories")
    page.get_by_label("Content").fill("Bob keeps the on-call rota")
    page.get_by_role("button", name="Add memory").click()
    page.wait_for_selector("#memory-added .ok")
    query = {"query": "on-call rota", "threshold": 0.0}
    assert len(call(console.base, "memory_search", query, tenant="acme", user="bob")["results"]) == 1
    assert call(console.base, "memory_search", query)["results"] == []  # tenant local, user local sees none
    # Back to the defaults, the console sees no more than the API lets tenant local, user local see.
    page = console.open("identity", "#identity-check .ok")
    page.get_by_role("button", name="Back to the defaults").click()
    page.wait_for_selector("#whoami:has-text('Acting as tenant local, user local')")
    page = console.open("memories?q=on-call+rota", "#memory-results .summary")
    assert page.locator("#memory-results .card").count() == 0
    assert console.problems == []


def test_bad_input_shows_the_envelopes_message_and_field(console: Browser) -> None:
    page = console.open("memories")
    page.get_by_label("Content").fill("The project uses trunk-based development")
    page.get_by_label("Layer").select_option("project")  # no project id in the identity
    page.get_by_role("button", name="Add memory").click()
    alert = page.locator("#memory-added [role=alert]")
    status, envelope = http_call(console.base, "memory_add", {"content": "x", "layer": "project"})
    assert status == 400
    assert envelope["message"] in alert.inner_text()
    assert f"Field: {envelope['details']['field']}" in alert.inner_text()
    # The page still works after the refusal.
    page.get_by_label("Layer").select_option("user")
    page.get_by_role("button", name="Add memory").click()
    page.wait_for_selector("#memory-added .ok")
    assert [p for p in console.problems if not re.search(r"status of 400", p)] == []


def test_console_is_static_same_origin_and_closed_to_other_paths(console_server: str) -> None:
    import urllib.request

    with urllib.request.urlopen(console_server + "/ui/") as answer:
        policy = answer.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy
    assert "connect-src 'self'" in policy
    status, page = http_request(console_server, "GET", "/ui/")
    assert status == 200
    assert '<script type="module" src="js/app.js">' in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing from another site
    status, script = http_request(console_server, "GET", "/ui/js/api.js")
    assert status == 200
    assert "/v1/tools/" in script
    for path in ("/ui/../pyproject.toml", "/ui/routes.py", "/ui/js/missing.js", "/ui/%2e%2e/routes.py"):
        status, answer = http_request(console_server, "GET", path)
        assert status == 404, path
        assert answer["errorCode"] == "NOT_FOUND", path
    status, _ = http_request(console_server, "GET", "/ui/", headers={"Origin": "https://evil.example"})
    assert status == 403


def test_sync_now_and_its_failures(console: Browser, services: Services) -> None:
    push_tree(services, "local")
    broken = b"---\nid: broken\ntype: memo\ntitle: x\nsummary: y\n---\nbody\n"
    services.repository.push("local", "company/broken.md", broken, author="a", message="m")
    page = console.open("knowledge", "#sync dl")
    assert "never" in page.locator("#sync dl").inner_text()
    page.get_by_role("button", name="Sync now").click()
    row = page.locator("#sync tr", has_text="company/broken.md")
    row.wait_for()
    assert row.locator("td").nth(1).inner_text() == "type"
    assert "no" in page.locator("#sync dl dd").first.inner_text()  # not healthy while a file fails
    assert console.problems == []


def test_a_bearer_token_replaces_the_headers_and_names_the_user(console: Browser) -> None:
    import base64
    import json

    claims = base64.urlsafe_b64encode(json.dumps({"sub": "u-42", "email": "alice@example.com"}).encode()).decode()
    token = f"eyJhbGciOiJub25lIn0.{claims.rstrip('=')}.signature"
    sent: list[dict[str, str]] = []
    console.page.on("request", lambda request: "/v1/tools/" in request.url and sent.append(request.headers))
    page = console.open("identity", "#identity-check .ok")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Use this identity").click()
    page.wait_for_selector("#whoami:has-text('Signed in as alice@example.com')")
    assert '"email": "alice@example.com"' in page.locator("#identity-headers").inner_text()
    console.settle()
    assert sent[-1]["authorization"] == f"Bearer {token}"
    assert not [name for name in sent[-1] if name.startswith("x-mnemo-")]
    page.get_by_role("button", name="Back to the defaults").click()
    page.wait_for_selector("#whoami:has-text('Acting as tenant local, user local')")
    assert console.problems == []

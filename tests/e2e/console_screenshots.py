"""Screenshots of the console for docs/console.md: `make console-screenshots` (or this script with a folder).

A `mnemo serve` of its own over a temporary data directory, the example knowledge and the seed data the browser
tests use, each page in Debian's chromium at a laptop's 1280 x 800, written as PNG files. Extraction is on, with
the facts strategy asking the browser tests' scripted model (console_support.scripted_model), so that the
Extraction and Memories pages show runs, decisions and extracted memories.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ and tests/support/: the helpers below,
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # as pytest's pythonpath finds them

from console_support import browser, call, scripted_model, seed
from helpers import local_server
from knowledge_helpers import push_tree
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

#: A small pinned-context budget, so that the gauge shows and the budget refusal can be provoked.
BUDGET = 120


def shoot(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as data, scripted_model() as (model_url, model):
        settings = Settings(
            data_dir=Path(data),
            embedder="hashing",
            block_budget_tokens=BUDGET,
            openai_base_url=model_url,
            extraction_strategies=("facts",),
            extraction_every_turns=100,
            extraction_idle_minutes=15,
            extraction_judge=False,
        )
        services = Services(settings)
        push_tree(services, "local")
        # A file that fails to sync, so that the knowledge page shows a failure.
        broken = b"---\nid: broken\ntype: memo\ntitle: x\nsummary: y\n---\nbody\n"
        services.repository.push("local", "company/broken.md", broken, author="docs", message="a broken file")
        try:
            with local_server(services) as base, browser(base) as console:
                seed(base)
                call(base, "sync_now", {})
                call(
                    base,
                    "file_write",
                    {"path": "mnemo:///blocks/runbook.md", "content": "# Runbook\n\n" + "step " * 150},
                )
                page = console.page
                page.set_viewport_size({"width": 1280, "height": 800})

                def save(name: str, *, whole: bool = True) -> None:
                    console.settle()
                    path = folder / f"{name}.png"
                    page.screenshot(path=str(path), full_page=whole)
                    written.append(path)

                # Turns, extracted on demand: a fact, the fact changed (superseded), then a model that fails.
                for turns in (
                    [("m-101", "user", "I work at Acme."), ("m-102", "assistant", "Noted: Acme.")],
                    [("m-103", "user", "I work at Globex now.")],
                    [("m-104", "user", "Thanks, that is all.")],
                ):
                    messages = [
                        {"id": id_, "role": role, "content": text, **({"name": "alice"} if role == "user" else {})}
                        for id_, role, text in turns
                    ]
                    call(base, "add_messages", {"messages": messages})
                    model.broken = turns[0][0] == "m-104"
                    call(base, "memory_extract", {})

                console.open("memories?q=PostgreSQL", "#memory-results .card")
                page.locator("#memory-results .card summary").first.click()
                page.locator("#memory-results .card").first.get_by_role("button", name="History").click()
                page.wait_for_selector("#memory-results .card .changes li")
                page.get_by_role("button", name="Show memories").click()
                page.wait_for_selector("#memory-list .card")
                save("memories")
                page.locator("#memory-results .card").first.get_by_role("button", name="Delete").click()
                save("memories-delete", whole=False)  # the dialog covers what the window shows
                page.keyboard.press("Escape")

                console.open("graph?name=Alice", "svg.graph .edge")
                save("graph")
                page.get_by_label("As of").focus()
                page.keyboard.press("Home")
                save("graph-as-of")

                console.open("blocks", "#budget-gauge")
                page.get_by_role("button", name="Pin mnemo:///blocks/runbook.md").click()
                page.wait_for_selector("#budget-error")
                save("blocks")

                console.open("knowledge", "#knowledge-items table")
                page.get_by_label("File name").fill("client.py")
                page.get_by_label("Content", exact=True).fill("import requests\n\nrequests.get(url, verify=False)\n")
                page.get_by_role("button", name="Check", exact=True).click()
                page.wait_for_selector("#check-result table")
                page.get_by_role("button", name="Approved Cryptography and TLS Usage").click()
                save("knowledge")

                console.open("conversations", "[data-message-id=msg_weather1]")
                page.get_by_role("button", name="deployment-process").click()
                save("conversations")

                console.open("extraction", "#extraction-runs article.run")
                save("extraction")

                console.open("identity", "#identity-check .ok")
                save("identity")
        finally:
            set_services(None)
    return written


if __name__ == "__main__":
    for path in shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/console")):
        print(path)

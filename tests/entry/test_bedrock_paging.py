"""Paged tools through the Bedrock action-group Lambdas: a page that does not fit comes back smaller, never refused.

Events and answers follow the shapes of tests/entry/test_bedrock.py (the Amazon Bedrock user guide's
agents-lambda input and response formats). Each tool is walked to its end through its own cursor or
offset, alternating the OpenAPI and function-details styles, and what the pages hold is compared
with what was stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from entry.test_bedrock import api_body, call, envelope, function_body, function_event, load_function, openapi_event

from mnemo.entry.bedrock import MAX_RESPONSE_BYTES, wire_size
from mnemo.runtime import Services


def _value(value: Any) -> tuple[str, str]:
    """A value as Bedrock sends it: always a string, next to its declared type."""
    if isinstance(value, bool):
        return "boolean", "true" if value else "false"
    if isinstance(value, int):
        return "integer", str(value)
    if isinstance(value, (list, dict)):
        return "string", json.dumps(value)
    return "string", str(value)


def run(family: str, style: str, tool: str, **arguments: Any) -> tuple[dict[str, Any], int]:
    """One successful call; returns the tool's answer and the size of the Lambda's answer in bytes."""
    values = [
        {"name": name, "type": kind, "value": text}
        for name, (kind, text) in ((n, _value(v)) for n, v in arguments.items())
    ]
    group = f"mnemo-{family}"
    if style == "openapi":
        event = openapi_event(tool, values, group=group)
        answer = call(event, load_function(family).handler)
        return api_body(answer, event, 200), wire_size(answer)
    event = function_event(tool, values, group=group)
    answer = call(event, load_function(family).handler)
    return function_body(answer, event, None), wire_size(answer)


def walk(family: str, tool: str, position: str, **arguments: Any) -> list[dict[str, Any]]:
    """Every page of one answer, following nextOffset or nextCursor, in both styles by turns."""
    pages: list[dict[str, Any]] = []
    following: Any = None
    while True:
        style = ("function", "openapi")[len(pages) % 2]
        extra = {} if following is None else {position: following}
        page, size = run(family, style, tool, **arguments, **extra)
        assert size <= MAX_RESPONSE_BYTES
        pages.append(page)
        if not page.get("hasMore"):
            return pages
        following = page["nextOffset" if position == "offset" else "nextCursor"]
        assert following is not None
        assert len(pages) < 100, "the pages do not move on"


LINES = [f"line {n:05d}: " + "lorem ipsum dolor sit amet " * 4 + "\n" for n in range(1100)]  # about 120 KB
BIG = "".join(LINES)


def test_one_line_pages_of_a_small_file(services: Services) -> None:
    run("files", "function", "file_write", path="notes.md", content="l1\nl2\nl3\nl4\n")
    pages = walk("files", "file_read", "offset", path="notes.md", limit=1)
    assert [page["content"] for page in pages] == ["l1\n", "l2\n", "l3\n", "l4\n"]
    assert [page["nextOffset"] for page in pages[:-1]] == [1, 2, 3]


def test_a_default_read_of_a_120_kb_file_comes_in_pages(services: Services) -> None:
    assert len(BIG.encode()) > 120_000
    run("files", "function", "file_write", path="big.md", content=BIG)
    pages = walk("files", "file_read", "offset", path="big.md")
    assert len(pages) > 5
    assert "".join(page["content"] for page in pages) == BIG


def test_non_ascii_lines_are_paged_in_bytes(services: Services) -> None:
    text = "".join(f"{n}: " + "ßüé漢字🙂" * 30 + "\n" for n in range(400))
    run("files", "function", "file_write", path="wide.md", content=text)
    pages = walk("files", "file_read", "offset", path="wide.md")
    assert len(pages) > 2
    assert "".join(page["content"] for page in pages) == text


def test_file_list_pages_by_cursor(services: Services) -> None:
    names = [f"docs/{'a-rather-long-directory-name/' * 3}file-{n:04d}.md" for n in range(300)]
    for name in names:
        run("files", "function", "file_write", path=name, content=f"{name}\n")
    pages = walk("files", "file_list", "cursor", path="docs/", limit=500)
    assert len(pages) > 1
    assert sorted(entry["path"] for page in pages for entry in page["entries"]) == sorted(names)


def test_pinned_context_pages_by_offset(services: Services) -> None:
    run("files", "function", "file_write", path="mnemo:///blocks/big.md", content=BIG[:60_000])
    run("files", "function", "block_pin", path="mnemo:///blocks/big.md")
    pages = walk("files", "pinned_context", "offset")
    assert len(pages) > 1
    whole = "".join(page["context"] for page in pages)
    assert BIG[:60_000] in whole
    assert len(whole) == pages[0]["totalChars"]


def test_expand_prompt_pages_by_offset(services: Services) -> None:
    run("files", "function", "file_write", path="mnemo:///blocks/big.md", content=BIG[:60_000])
    pages = walk("files", "expand_prompt", "offset", text="See @mnemo:///blocks/big.md please")
    assert len(pages) > 1
    whole = "".join(page["text"] for page in pages)
    assert BIG[:60_000] in whole
    assert len(whole) == pages[0]["totalChars"]


def test_recall_memory_pages_by_offset(services: Services) -> None:
    content = BIG[:90_000]
    run("topics", "function", "memorize_new_topic", topic="big", tags=["t"], summary="A big topic.", content=content)
    pages = walk("topics", "recall_memory", "offset", topic="big")
    assert len(pages) > 1
    assert "".join(page["content"] for page in pages) == content


def test_list_memories_pages_by_offset(services: Services) -> None:
    names = [f"topic-{'x' * 80}-{n:04d}" for n in range(400)]
    for name in names:
        run("topics", "function", "memorize_new_topic", topic=name, tags=["t"], summary="s", content="c")
    pages = walk("topics", "list_memories", "offset")
    assert len(pages) > 1
    assert [name for page in pages for name in page["topics"]] == sorted(names, key=str.casefold)


@pytest.mark.parametrize("style", ["function", "openapi"])
def test_a_line_that_cannot_fit_is_invalid_input_naming_limit(services: Services, style: str) -> None:
    run("files", "function", "file_write", path="one.md", content="x" * 40_000 + "\n")
    values = [{"name": "path", "type": "string", "value": "one.md"}]
    if style == "openapi":
        event = openapi_event("file_read", values, group="mnemo-files")
        body = api_body(call(event, load_function("files").handler), event, 400)
    else:
        event = function_event("file_read", values, group="mnemo-files")
        body = function_body(call(event, load_function("files").handler), event, "REPROMPT")
    envelope(body, "INVALID_INPUT", "limit")

"""A dated memory's pair is at most ``PAIR_CHARACTERS`` long, and the scope's LAST pointer holds what of it a pair
can use.

The pair ("content⏎previous", docs/scoring.md) pays for the predecessor's tokens. A long memory says enough alone,
so the previous content only fills what the content leaves of ``PAIR_CHARACTERS``, its end kept (a turn's question
comes last): a pair of short turns is embedded whole, a long memory alone (docs/benchmarks.md, "The pair's
length": LoCoMo dev loses nothing at 256). The LAST pointer keeps the end of its memory's content (``pair_tail``),
so the next dated add reads no record; the pointer expires with its memory.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import ctx
from mnemo.memory.indexing import PAIR_CHARACTERS, embedding_text, pair_tail
from mnemo.memory.records import LAST, partition_of, record_sk
from mnemo.ports import Item, Put
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice")
DAY = "2023-05-08T13:56:00Z"
QUESTION = "Melanie: did you go camping with the kids in the mountains last summer?"
LONG = "Caroline: " + " ".join(f"word{n}" for n in range(60))  # longer than a pair


def add(services: Services, content: str, **fields: Any) -> dict[str, Any]:
    return get_tool("memory_add").invoke(services, ALICE, {"content": content, **fields})


def record(services: Services, memory_id: str) -> dict[str, Any]:
    found = services.records.get(partition_of(ALICE.scope_key("user")), record_sk(memory_id))
    assert found is not None
    return found.data


def test_a_pair_of_short_turns_is_embedded_whole() -> None:
    assert embedding_text("Caroline: yes, twice", QUESTION) == f"Caroline: yes, twice\n{QUESTION}"


def test_a_long_memory_is_embedded_alone_and_a_long_predecessor_keeps_its_end_from_a_word() -> None:
    assert len(LONG) >= PAIR_CHARACTERS
    assert embedding_text(LONG, QUESTION) == LONG
    text = embedding_text("Caroline: yes", LONG)
    content, previous = text.split("\n")
    assert content == "Caroline: yes" and len(text) <= PAIR_CHARACTERS
    assert LONG.endswith(previous) and previous.startswith("word") and previous.split()[-1] == "word59"
    assert LONG[: len(LONG) - len(previous)].endswith(" ")  # cut at a word


@given(content=st.text(min_size=1, max_size=400), previous=st.text(max_size=600))
def test_the_pointers_tail_gives_the_pair_of_the_whole_content(content: str, previous: str) -> None:
    assert embedding_text(content, pair_tail(previous)) == embedding_text(content, previous)
    assert len(embedding_text(content, previous)) <= max(PAIR_CHARACTERS, len(content))


def test_the_next_dated_add_pairs_with_the_pointers_tail_and_reads_no_record(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = add(services, LONG, occurredAt=DAY)
    partition = partition_of(ALICE.scope_key("user"))
    pointer = services.records.get(partition, LAST)
    assert pointer is not None and pointer.data["tail"] == pair_tail(LONG)
    reads: list[str] = []
    get = services.records.get
    monkeypatch.setattr(services.records, "get", lambda pk, sk, **kw: reads.append(sk) or get(pk, sk, **kw))
    embedded: list[list[str]] = []
    embed = services.embedder.embed
    monkeypatch.setattr(services.embedder, "embed", lambda texts: embedded.append(list(texts)) or embed(texts))

    second = add(services, "Caroline: yes, twice", occurredAt=DAY)

    assert record_sk(first["memoryId"]) not in reads
    assert embedded == [[embedding_text("Caroline: yes, twice", LONG)]]
    assert record(services, second["memoryId"])["after"] == first["memoryId"]


def test_a_long_dated_memory_is_checked_for_near_duplicates_as_an_undated_one(services: Services) -> None:
    """Embedded alone, its vector is its content's: the near-duplicate check compares it, not only its hash."""
    add(services, QUESTION, occurredAt=DAY)
    first = add(services, LONG, occurredAt=DAY)
    again = add(services, LONG + ".", occurredAt=DAY)
    assert (again["deduplicated"], again["memoryId"]) == (True, first["memoryId"])


def test_the_pointer_expires_with_its_memory(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    soon = time.time() + 3600
    year = int(time.time()) + 365 * 86400
    add(services, QUESTION, occurredAt=DAY, expiresAt=_iso(year))
    partition = partition_of(ALICE.scope_key("user"))
    pointer = services.records.get(partition, LAST)
    assert pointer is not None and pointer.expires_at == year
    later = add(services, "Caroline: and the lake", occurredAt=DAY)
    assert "after" in record(services, later["memoryId"])
    expiring = add(services, "Melanie: the lake was cold", occurredAt=DAY, expiresAt=_iso(soon))
    monkeypatch.setattr(time, "time", lambda: soon + 1)  # the memory, and so its pointer, has expired

    after_expiry = add(services, "Caroline: so cold!", occurredAt=DAY)

    assert services.records.get(partition, record_sk(expiring["memoryId"])) is None
    assert "after" not in record(services, after_expiry["memoryId"])  # no expired content in its vector


def test_a_pointer_written_before_the_tail_names_the_record_to_read(services: Services) -> None:
    first = add(services, QUESTION, occurredAt=DAY)
    partition = partition_of(ALICE.scope_key("user"))
    stored = services.records.get(partition, LAST)
    assert stored is not None
    old = {key: value for key, value in stored.data.items() if key != "tail"}
    services.records.write([Put(Item(partition, LAST, old, version=stored.version + 1), expect=stored.version)])

    second = add(services, "Caroline: yes, twice", occurredAt=DAY)

    assert record(services, second["memoryId"])["after"] == first["memoryId"]
    assert services.records.get(partition, LAST).data["tail"] == "Caroline: yes, twice"  # type: ignore[union-attr]


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))

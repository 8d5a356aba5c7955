"""A message stored by add_messages is indexed as a memory turn is (conversations/indexing.py): its speaker's
name in its text, the turn before it (same scope, same day) in its embedding, and the ranker's context
keywords, so that retrieve_conversation and memory_search's includeTurns find it as memory_search finds
the same turn stored with memory_add."""

from __future__ import annotations

from mnemo.conversations.store import CONVERSATIONS, doc_id
from mnemo.retrieval.ranker import AFTER, EPISODE, SUBJECT
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from tests.support.helpers import ctx

ALICE = ctx("alice", session="s1")


def send(services: Services, *turns: tuple[str, str, str], at: str = "2023-05-08T13:56:00Z") -> None:
    messages = [{"role": "user", "name": name, "content": text, "id": mid, "at": at} for mid, name, text in turns]
    get_tool("add_messages").invoke(services, ALICE, {"messages": messages})


def test_a_message_is_indexed_with_its_speaker_and_the_turn_before_it(services: Services) -> None:
    send(services, ("D1:1", "Caroline", "Have you been to Sweden?"), ("D1:2", "Melanie", "Yes, twice last summer."))
    scope = ALICE.scope_key("user")
    hits = services.index.knn(
        CONVERSATIONS.namespace, services.embedder.embed(["x"])[0], {"scope": [scope], "message_id": ["D1:2"]}, 1
    )
    (hit,) = hits
    assert hit.id == doc_id(scope, "D1:2")
    assert hit.keywords[SUBJECT] == ["melanie"]
    assert hit.keywords[AFTER] == [doc_id(scope, "D1:1")]
    assert hit.keywords[EPISODE] == ["2023-05-08"]


def test_a_question_about_the_turn_before_finds_the_answer(services: Services) -> None:
    send(
        services,
        ("D1:1", "Caroline", "Have you ever been to Sweden?"),
        ("D1:2", "Melanie", "Yes, twice last summer."),
        ("D1:3", "Caroline", "I started pottery classes."),
    )
    found = get_tool("retrieve_conversation").invoke(
        services, ALICE, {"query": "Has Melanie been to Sweden?", "explanation": "t", "max_results": 3}
    )
    ids = [c["message_id"] for c in found["data"]["conversations"]]
    assert "D1:2" in ids[:2], ids

"""mnemo.client.langgraph: ``MnemoStore``, LangGraph's ``BaseStore`` over Mnemo's memory tools, against a real
local server (``mnemo serve`` in a thread, the hashing embedder; one test loads the real bge model).

Adapted from LangGraph's own store tests (langchain-ai/langgraph ``libs/checkpoint/tests/test_store.py``,
written for ``InMemoryStore``), each check run on a ``MnemoStore`` over HTTP:

- ``test_list_namespaces_basic``, ``_with_wildcards``, ``_pagination`` (same names here) and ``_max_depth``,
  ``_no_conditions``, ``_empty_store`` (one test here): as written (prefix, suffix, ``*``, max_depth, limit,
  offset). The wildcard test's last put had no check upstream; here it is listed.
- ``test_cannot_put_empty_namespace``: as written, sync and async (the ``langgraph`` root label refused by
  ``put`` and accepted through ``batch``/``abatch``).
- ``test_vector_insert_with_auto_embedding``, ``test_vector_update_with_embedding``,
  ``test_vector_search_with_filters``, ``test_vector_search_pagination``, ``test_non_ascii`` and their async
  twins (the twins as a ``use_async`` parameter): Mnemo embeds on the server (no ``index`` config), so the
  checks on ranking and filters stand; the query ``"bbbbluuu"`` (a misspelling only CharacterEmbeddings finds
  "blue car" by) is ``"blue"``, and filters are also checked without a query.
- ``test_embed_with_path``: ``fields`` and a put's ``index`` choose the text ranked, ``index=False`` items
  come last without a score. Its score equalities do not apply: LangGraph embeds each path as its own
  vector and keeps the best, Mnemo ranks one text per memory.
- ``test_async_batched_vector_search_concurrent`` (``test_concurrent_puts_deletes_and_filtered_searches``,
  20 documents instead of 50): concurrent puts, deletes, puts and filtered searches (in three phases: a put
  and a delete of one key racing each other end either way here, while LangGraph's AsyncBatchedBaseStore
  folds them into one op).
- ``test_async_batch_store_handles_cancellation``, ``test_async_batch_store`` and
  ``test_async_batch_store_deduplication`` (``test_concurrent_and_cancelled_async_calls``): what a caller sees
  (a cancelled ``aget`` leaves the store working; concurrent ``aget``s answer their own items; two concurrent
  puts of one key leave one item). Their counts of batched calls do not apply: ``MnemoStore`` runs each op as it
  comes, it is not an AsyncBatchedBaseStore.

Not adapted: ``test_get_text_at_path`` (LangGraph's path helper, which MnemoStore only calls),
``test_vector_store_initialization`` (``index_config`` dims and embedder: Mnemo's server embeds) and
``test_async_batch_store_resilience`` (the AsyncBatchedBaseStore background task, which MnemoStore has not).

Then what Mnemo adds: the identity decides the scope (two users with one namespace never meet), a put
replaces (search never answers the old value; one memory per item), retried puts store once, items are
stored beside identical memories (``dedupe: false``) and never expire, values round-trip as JSON, the filter
semantics, the errors, and near-identical values under the real bge model.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from helpers import local_server
from mnemo.client import (
    AsyncMnemoClient,
    InvalidInputError,
    LocalIdentity,
    MnemoClient,
    UnauthorizedError,
)
from mnemo.client.langgraph import MnemoStore
from mnemo.runtime import Services

ALICE = LocalIdentity(user="alice")
BOB = LocalIdentity(user="bob")


@pytest.fixture
def url(services: Services) -> Iterator[str]:
    with local_server(services) as base:
        yield base


@pytest.fixture
def store(url: str) -> MnemoStore:
    return MnemoStore(MnemoClient(url, auth=ALICE))


@pytest.fixture
def astore(url: str) -> MnemoStore:
    """A store whose abatch runs on the AsyncMnemoClient."""
    return MnemoStore(MnemoClient(url, auth=ALICE), async_client=AsyncMnemoClient(url, auth=ALICE))


def memories(url: str, identity: LocalIdentity = ALICE, layer: str = "user") -> list[dict[str, Any]]:
    """Every memory of the layer, as memory_list shows them (the service's view of the store)."""
    return MnemoClient(url, auth=identity).memory_list(layer=layer, limit=100)["memories"]


# ------------------------------------------------------------ list_namespaces (adapted)
def test_list_namespaces_basic(store: MnemoStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(prefix=("a", "b"))) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert sorted(store.list_namespaces(suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == [("a", "b", "f"), ("a", "c", "f")]
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(store: MnemoStore) -> None:
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(prefix=("users", "*"))) == [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
    ]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    store.put(namespace=("admin", "users", "settings", "789"), key="foo", value={"data": "some_val"})
    assert store.list_namespaces(prefix=("*", "users"), suffix=("settings", "*")) == [
        ("admin", "users", "settings", "789")
    ]


def test_list_namespaces_pagination(store: MnemoStore) -> None:
    for i in range(20):
        store.put(namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}", value={"data": f"value_{i:02d}"})

    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=0) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)
    ]


def test_list_namespaces_max_depth_no_conditions_and_empty(store: MnemoStore) -> None:
    assert store.list_namespaces() == []
    namespaces = [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(max_depth=2)) == [("a", "b"), ("a", "g"), ("h", "i")]
    assert store.list_namespaces() == sorted(namespaces)


# ---------------------------------------------------------- namespaces (adapted)
def test_cannot_put_empty_namespace(store: MnemoStore, astore: MnemoStore) -> None:
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(astore.aput(bad, "foo", doc))

    async def scenario() -> None:
        await astore.aput(("foo", "langgraph", "foo"), "bar", doc)
        assert (await astore.aget(("foo", "langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
        assert (await astore.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
        await astore.adelete(("foo", "langgraph", "foo"), "bar")
        assert await astore.aget(("foo", "langgraph", "foo"), "bar") is None
        # Past the public put: batch does not refuse the root label.
        await astore.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
        assert (await astore.aget(("langgraph", "foo"), "bar")).value == doc  # type: ignore[union-attr]
        assert (await astore.asearch(("langgraph", "foo")))[0].value == doc
        await astore.adelete(("langgraph", "foo"), "bar")
        assert await astore.aget(("langgraph", "foo"), "bar") is None

    asyncio.run(scenario())
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None
    # An op handed to batch is checked too: a label with a period would address another namespace.
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", doc)])
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a", ""), "k")])
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp((), "k", doc)])
    with pytest.raises(InvalidNamespaceError):
        store.put(("x" * 1100,), "k", doc)


# ------------------------------------------------------------- search (adapted)
DOCS = [
    ("doc1", {"text": "short text"}),
    ("doc2", {"text": "longer text document"}),
    ("doc3", {"text": "longest text document here"}),
    ("doc4", {"description": "text in description field"}),
    ("doc5", {"content": "text in content field"}),
    ("doc6", {"body": "text in body field"}),
]


def test_vector_insert_with_auto_embedding(store: MnemoStore, astore: MnemoStore) -> None:
    for key, value in DOCS:
        store.put(("test",), key, value)
    keys = [r.key for r in store.search(("test",), query="long text")]
    assert "doc2" in keys and "doc3" in keys
    keys = [r.key for r in asyncio.run(astore.asearch(("test",), query="long text"))]
    assert "doc2" in keys and "doc3" in keys


@pytest.mark.parametrize("use_async", [False, True])
def test_vector_update_with_embedding(store: MnemoStore, astore: MnemoStore, use_async: bool) -> None:
    async def run() -> None:
        put = astore.aput if use_async else _async(store.put)
        search = astore.asearch if use_async else _async(store.search)
        await put(("test",), "doc1", {"text": "zany zebra Xerxes"})
        await put(("test",), "doc2", {"text": "something about dogs"})
        await put(("test",), "doc3", {"text": "text about birds"})

        initial = await search(("test",), query="Zany Xerxes")
        assert initial[0].key == "doc1"
        initial_score = initial[0].score
        assert initial_score is not None

        await put(("test",), "doc1", {"text": "new text about dogs"})
        after = await search(("test",), query="Zany Xerxes")
        after_score = next((r.score for r in after if r.key == "doc1"), 0.0)
        assert after_score is not None and after_score < initial_score
        assert all(r.value != {"text": "zany zebra Xerxes"} for r in after)  # the old value is gone

        renewed = await search(("test",), query="new text about dogs")
        assert renewed[0].key == "doc1"
        assert renewed[0].score is not None and renewed[0].score > after_score

        await put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
        top = await search(("test",), query="new text about dogs", limit=3)
        assert not any(r.key == "doc4" for r in top)

    asyncio.run(run())


def _async(function: Any) -> Any:
    async def call(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return call


COLOURED = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


@pytest.mark.parametrize("use_async", [False, True])
def test_vector_search_with_filters(store: MnemoStore, astore: MnemoStore, use_async: bool) -> None:
    search = (lambda *a, **k: asyncio.run(astore.asearch(*a, **k))) if use_async else store.search
    for key, value in COLOURED:
        store.put(("test",), key, value)

    results = search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc1"] and len(results) == 2
    results = search(("test",), query="car", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc2"] and len(results) == 2
    results = search(("test",), query="blue", filter={"score": {"$gt": 3.2}})
    assert [r.key for r in results][:1] == ["doc4"] and len(results) == 3
    results = search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert [r.key for r in results] == ["doc3"]
    # Without a query the same filters hold (memory_list, newest first).
    assert [r.key for r in search(("test",), filter={"score": {"$gt": 3.2}})] == ["doc4", "doc3", "doc1"]
    assert [r.key for r in search(("test",), filter={"score": {"$gt": 3.0, "$lt": 4.5}})] == ["doc4", "doc3"]


def test_concurrent_puts_deletes_and_filtered_searches(astore: MnemoStore) -> None:
    colors, items, scores = (
        ["red", "blue", "green", "yellow", "purple"],
        ["apple", "car", "house", "book", "phone"],
        [
            3.0,
            3.5,
            4.0,
            4.5,
            5.0,
        ],
    )
    docs = [
        (
            f"doc{i}",
            {"text": f"{colors[i % 5]} {items[i % 5]}", "color": colors[i % 5], "score": scores[i % 5], "index": i},
        )
        for i in range(20)
    ]
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("house", {"index": {"$gt": 12}}),
        ("phone", {"index": {"$lte": 10}}),
    ]

    async def scenario() -> list[list[Any]]:
        await asyncio.gather(*[astore.aput(("test",), key, value) for key, value in docs])
        await asyncio.gather(*[astore.adelete(("test",), key) for key, _ in docs])
        assert await astore.asearch(("test",)) == []
        await asyncio.gather(*[astore.aput(("test",), key, value) for key, value in docs])
        return await asyncio.gather(*[astore.asearch(("test",), query=q, filter=f) for q, f in queries])

    for results, (query, flt) in zip(asyncio.run(scenario()), queries, strict=True):
        assert results, f"no results for {query!r} with {flt}"
        for result in results:
            for field, condition in flt.items():
                value = result.value[field]
                if not isinstance(condition, dict):
                    assert value == condition
                for op, bound in (condition if isinstance(condition, dict) else {}).items():
                    assert {"$gt": value > bound, "$gte": value >= bound, "$lt": value < bound, "$lte": value <= bound}[
                        op
                    ]
    assert len(asyncio.run(astore.asearch(("test",), limit=100))) == 20


@pytest.mark.parametrize("use_async", [False, True])
def test_vector_search_pagination(store: MnemoStore, astore: MnemoStore, use_async: bool) -> None:
    search = (lambda *a, **k: asyncio.run(astore.asearch(*a, **k))) if use_async else store.search
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = search(("test",), query="test", limit=2)
    page2 = search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert {r.key for r in page1}.isdisjoint(r.key for r in page2)
    assert len(search(("test",), query="test", limit=10)) == 5
    # Without a query: newest first, pages that follow one another.
    listed = [r.key for r in search(("test",), limit=10)]
    assert listed == ["doc4", "doc3", "doc2", "doc1", "doc0"]
    assert [r.key for r in search(("test",), limit=2, offset=3)] == ["doc1", "doc0"]


def test_embed_with_path(url: str) -> None:
    store = MnemoStore(MnemoClient(url, auth=ALICE), fields=["key0", "key1", "key3"])
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    assert {r.key for r in store.search(("test",), query="xxx")} == {"doc1", "doc2"}
    assert store.search(("test",), query="uuu")[0].key == "doc2"
    # key2 is not ranked: its words reach neither document's text, and it ranks them below a ranked word.
    contents = {m["metadata"]["lg.key"]: m["content"] for m in memories(url)}
    assert contents["doc1"].startswith("xxx\nzzz\n") and "yyy" not in contents["doc1"]
    assert "www" not in contents["doc2"]
    best = store.search(("test",), query="xxx")[0].score
    assert all(
        r.score is not None and best is not None and r.score < best for r in store.search(("test",), query="yyy")
    )

    # A put's index overrides the store's fields; index=False leaves the text out and the item last, unscored.
    other = MnemoStore(MnemoClient(url, auth=ALICE), fields=["key17"])
    other.put(("other",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}, index=["key0", "key1"])
    other.put(("other",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}, index=["key1", "key3"])
    assert other.search(("other",), query="aaa")[0].key == "doc3"
    assert other.search(("other",), query="ggg")[0].key == "doc4"
    other.put(("other",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = other.search(("other",), query="hhh")
    assert len(results) == 3
    assert (results[-1].key, results[-1].score) == ("doc5", None)
    assert all(r.score is not None for r in results[:2])
    assert "hhh" not in next(m["content"] for m in memories(url) if m["metadata"]["lg.key"] == "doc5")


def test_non_ascii(store: MnemoStore) -> None:
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, start=1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, start=1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)
        assert store.get(("user_123", "memories"), str(i)).value == {"text": text}  # type: ignore[union-attr]


# --------------------------------------------------------- async callers (adapted)
def test_concurrent_and_cancelled_async_calls(astore: MnemoStore) -> None:
    async def scenario() -> None:
        await asyncio.gather(
            astore.aput(("test",), "same", {"value": "same"}),
            astore.aput(("test",), "different", {"value": "different"}),
        )
        same, again, different = await asyncio.gather(
            astore.aget(("test",), "same"), astore.aget(("test",), "same"), astore.aget(("test",), "different")
        )
        assert same == again and same != different
        assert (same.value, different.value) == ({"value": "same"}, {"value": "different"})  # type: ignore[union-attr]

        # Two puts of one key at once: one item stays, holding one of the values.
        await asyncio.gather(astore.aput(("test",), "key", {"value": 1}), astore.aput(("test",), "key", {"value": 2}))
        await astore.aput(("test",), "key", {"value": 2})  # and a later put wins
        assert (await astore.aget(("test",), "key")).value == {"value": 2}  # type: ignore[union-attr]
        assert [r.value for r in await astore.asearch(("test",), filter={"value": 2})] == [{"value": 2}]

        # A cancelled call leaves the store working.
        task = asyncio.create_task(astore.aget(("a",), "b"))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        assert (await astore.aget(("test",), "different")).value == {"value": "different"}  # type: ignore[union-attr]

    asyncio.run(scenario())


def test_clients_sync_async_or_both(url: str) -> None:
    sync, other = MnemoClient(url, auth=ALICE), AsyncMnemoClient(url, auth=ALICE)
    only_async = MnemoStore(other)
    asyncio.run(only_async.aput(("n",), "k", {"via": "async"}))
    with pytest.raises(TypeError):
        only_async.put(("n",), "k", {"via": "sync"})
    # abatch without an async client runs the sync one in a worker thread.
    only_sync = MnemoStore(sync)
    assert asyncio.run(only_sync.aget(("n",), "k")).value == {"via": "async"}  # type: ignore[union-attr]
    results = only_sync.batch([PutOp(("n",), "j", {"v": 1}), GetOp(("n",), "j"), SearchOp(("n",), limit=5)])
    assert results[0] is None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert {item.key for item in results[2]} == {"j", "k"}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="different servers or identities"):
        MnemoStore(sync, async_client=AsyncMnemoClient(url, auth=BOB))
    with pytest.raises(ValueError, match="layer"):
        MnemoStore(sync, layer="everyone")


# --------------------------------------------------------------- Mnemo's own
def test_two_users_with_the_same_namespace_never_see_each_others_items(url: str) -> None:
    alice, bob = MnemoStore(MnemoClient(url, auth=ALICE)), MnemoStore(MnemoClient(url, auth=BOB))
    alice.put(("memories", "shared"), "food", {"text": "Alice likes pizza"})
    bob.put(("memories", "shared"), "food", {"text": "Bob likes sushi"})
    bob.put(("memories", "bob-only"), "pet", {"text": "Bob has a cat"})

    assert alice.get(("memories", "shared"), "food").value == {"text": "Alice likes pizza"}  # type: ignore[union-attr]
    assert bob.get(("memories", "shared"), "food").value == {"text": "Bob likes sushi"}  # type: ignore[union-attr]
    assert alice.get(("memories", "bob-only"), "pet") is None
    assert [r.value["text"] for r in alice.search(("memories",), query="likes sushi cat")] == ["Alice likes pizza"]
    assert [r.value["text"] for r in alice.search(())] == ["Alice likes pizza"]
    assert alice.list_namespaces() == [("memories", "shared")]
    assert bob.list_namespaces() == [("memories", "bob-only"), ("memories", "shared")]
    alice.delete(("memories", "shared"), "food")
    assert bob.get(("memories", "shared"), "food").value == {"text": "Bob likes sushi"}  # type: ignore[union-attr]
    assert len(memories(url, BOB)) == 2
    assert memories(url, ALICE) == []


def test_the_layer_holds_the_items_and_the_identity_decides_its_scope(url: str) -> None:
    """Items go in the store's layer of the caller's scope: a project store is shared by the project's users
    (the writer role writes it), a session store by one session (``client.in_session``)."""
    writer = LocalIdentity(user="alice", project="atlas", roles=("writer",))
    reader = LocalIdentity(user="bob", project="atlas", roles=("reader",))
    MnemoStore(MnemoClient(url, auth=writer), layer="project").put(("decisions",), "db", {"text": "Postgres 16"})
    shared = MnemoStore(MnemoClient(url, auth=reader), layer="project")
    assert shared.get(("decisions",), "db").value == {"text": "Postgres 16"}  # type: ignore[union-attr]
    with pytest.raises(UnauthorizedError):
        shared.put(("decisions",), "db", {"text": "MySQL"})
    with pytest.raises(InvalidInputError):  # no project id: the layer is not this identity's
        MnemoStore(MnemoClient(url, auth=ALICE), layer="project").put(("decisions",), "db", {"text": "x"})
    # The user layer of the same users holds none of it.
    assert MnemoStore(MnemoClient(url, auth=writer)).search(()) == []

    client = MnemoClient(url, auth=ALICE)
    one, two = (MnemoStore(client.in_session(thread), layer="session") for thread in ("thread-1", "thread-2"))
    one.put(("scratch",), "note", {"text": "draft for thread 1"})
    assert one.get(("scratch",), "note") is not None
    assert two.get(("scratch",), "note") is None
    with pytest.raises(InvalidInputError):  # no session named: the session layer cannot be read
        MnemoStore(client, layer="session").search(("scratch",), query="draft")
    with pytest.raises(InvalidInputError):
        MnemoStore(client, layer="session").search(("scratch",))


def test_a_put_replaces_the_value_and_keeps_one_memory(url: str, store: MnemoStore) -> None:
    store.put(("prefs",), "theme", {"text": "dark theme everywhere"})
    first = store.get(("prefs",), "theme")
    store.put(("prefs",), "theme", {"text": "light theme in the morning"})
    store.put(("prefs",), "theme", {"text": "light theme in the morning"})  # the same value again
    latest = store.get(("prefs",), "theme")
    assert first is not None and latest is not None
    assert latest.value == {"text": "light theme in the morning"}
    assert latest.created_at == first.created_at  # the item's creation is kept
    assert latest.updated_at > first.updated_at  # the service's times, in order
    for found in (store.search(("prefs",), query="dark theme everywhere"), store.search(("prefs",))):
        assert [r.value for r in found] == [{"text": "light theme in the morning"}]
    assert [m["metadata"]["lg.key"] for m in memories(url)] == ["theme"]
    store.delete(("prefs",), "theme")
    store.delete(("prefs",), "theme")  # deleting what is gone is not an error
    assert store.get(("prefs",), "theme") is None
    assert memories(url) == []


def test_values_round_trip_exactly_as_json(store: MnemoStore) -> None:
    value = {
        "text": "naïve café ☕ — 这是中文",
        "int": 12345678901234567890,
        "float": 0.1 + 0.2,
        "negative": -1.5e-300,
        "bool": True,
        "none": None,
        "empty": {},
        "list": [1, "two", [3.0, {"four": False}]],
        "nested": {"a": {"b": {"c": ["d"]}}},
        "quote": 'she said "hi"\n\ttab',
        "dotted.key": "dots are fine in fields",
    }
    store.put(("round", "trip"), "key with spaces / and: punctuation", value)
    got = store.get(("round", "trip"), "key with spaces / and: punctuation")
    assert got is not None
    assert json.dumps(got.value, sort_keys=True) == json.dumps(value, sort_keys=True)
    assert got.value == value and type(got.value["int"]) is int and type(got.value["float"]) is float
    assert store.search(("round",), filter={"dotted.key": "dots are fine in fields"})[0].value == value
    store.put(("round", "trip"), "empty", {})
    assert store.get(("round", "trip"), "empty").value == {}  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="too large"):
        store.put(("round",), "big", {"text": "x" * 9000})
    with pytest.raises(ValueError):
        store.put(("round",), "nan", {"x": float("nan")})


def test_filters_are_exact_on_json_types(store: MnemoStore) -> None:
    store.put(("f",), "a", {"n": 1, "flag": True, "tags": ["x", "y"], "meta": {"lang": "en", "level": 2}})
    store.put(("f",), "b", {"n": 1.0, "flag": False, "tags": ["x"], "meta": {"lang": "fr", "level": 3}})
    store.put(("f",), "c", {"n": "1", "flag": 1, "tags": "x", "long": "y" * 2000})

    def keys(flt: dict[str, Any], query: str | None = None) -> list[str]:
        return sorted(r.key for r in store.search(("f",), filter=flt, query=query))

    assert keys({"n": 1}) == ["a", "b"]  # 1 == 1.0; "1" is a string
    assert keys({"flag": True}) == ["a"]  # a bool is not a number
    assert keys({"flag": 1}) == ["c"]
    assert keys({"n": {"$ne": 1}}) == ["c"]
    assert keys({"tags": ["x", "y"]}) == ["a"]  # a list matches element by element
    assert keys({"tags": "x"}) == ["c"]
    assert keys({"meta": {"lang": "fr"}}) == ["b"]
    assert keys({"meta": {"level": {"$gte": 3}}}) == ["b"]
    assert keys({"n": {"$gt": 0}}) == ["a", "b"]  # ranges compare numbers with numbers
    assert keys({"long": "y" * 2000}) == ["c"]  # too long for the service's filter: the client's check finds it
    assert keys({"missing": None}) == ["a", "b", "c"]
    assert keys({"n": 1, "flag": False}, query="anything") == ["b"]
    with pytest.raises(ValueError, match="Unsupported operator"):
        store.search(("f",), filter={"n": {"$in": [1]}})


def test_only_items_a_store_wrote_are_items(url: str, store: MnemoStore) -> None:
    client = MnemoClient(url, auth=ALICE)
    client.memory_add(content="Alice likes pizza", metadata={"lg.ns": "memories", "lg.key": "x"})
    client.memory_add(content="Alice's plain memory about pizza")
    store.put(("memories",), "food", {"text": "Alice likes pizza with olives"})
    assert [r.key for r in store.search(("memories",), query="pizza")] == ["food"]
    assert [r.key for r in store.search(())] == ["food"]
    assert store.get(("memories",), "x") is None
    assert store.list_namespaces() == [("memories",)]


def test_items_are_stored_beside_identical_memories_and_never_expire(url: str, store: MnemoStore) -> None:
    """A put sends memory_add ``dedupe: false``: a memory holding exactly the item's text (one no store wrote,
    which never expires) does not stand in for it, equal values under two keys are two items, and no memory
    of the store expires or is recorded as a repeat."""
    client = MnemoClient(url, auth=ALICE)
    text = '{"value": "dark"}\n\n(prefs: theme)'  # what the put of theme below stores as its content
    plain = client.memory_add(content=text)
    store.put(("prefs",), "theme", {"value": "dark"})
    store.put(("prefs",), "font", {"value": "dark"})
    store.put(("prefs",), "theme", {"value": "dark"})  # the same value again: a new memory replaces the old
    assert store.get(("prefs",), "theme").value == store.get(("prefs",), "font").value == {"value": "dark"}  # type: ignore[union-attr]
    listed = memories(url)
    items = [memory for memory in listed if memory["memoryId"] != plain["memoryId"]]
    assert len(listed) == 3
    assert sorted(memory["metadata"]["lg.key"] for memory in items) == ["font", "theme"]
    assert [memory["content"] for memory in items if memory["metadata"]["lg.key"] == "theme"] == [text]
    assert all(memory["expiresAt"] is None for memory in listed)
    for memory in listed:
        changes = client.memory_history(memory_id=memory["memoryId"])["changes"]
        assert [change["event"] for change in changes] == ["ADD"]


def test_ttl_is_refused() -> None:
    store = MnemoStore(MnemoClient("http://127.0.0.1:9"))
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError):
        store.put(("a",), "k", {"v": 1}, ttl=5)
    with pytest.raises(NotImplementedError):
        store.batch([PutOp(("a",), "k", {"v": 1}, ttl=5.0)])


@contextmanager
def losing_the_first_answer(target: str, tool: str) -> Iterator[tuple[str, list[bytes]]]:
    """A proxy to ``target`` that forwards every call and answers the first call of ``tool`` with a gateway's
    504 once the server has run it (API Gateway's integration timeout): the caller cannot know it ran."""
    seen: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k: v for k, v in self.headers.items() if k.lower().startswith(("x-mnemo", "content-type"))}
            request = urllib.request.Request(target + self.path, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=30) as response:
                status, answer = response.status, response.read()
            if self.path.endswith(f"/{tool}"):
                seen.append(body)
                if len(seen) == 1:
                    status, answer = 504, b'{"message": "Endpoint request timed out"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()


def test_a_put_whose_answer_was_lost_stores_once(url: str) -> None:
    """The first memory_add runs but its answer is a 504: the client sends it again with the same
    idempotencyKey and the service answers what it stored; a put retried by its caller replaces it."""
    with losing_the_first_answer(url, "memory_add") as (proxy, seen):
        store = MnemoStore(MnemoClient(proxy, auth=ALICE))
        store.put(("memories",), "food", {"text": "Alice likes pizza"})
        store.put(("memories",), "food", {"text": "Alice likes pizza"})
    first, again, retried = (json.loads(body) for body in seen)
    assert first == again and first["idempotencyKey"]
    assert first["dedupe"] is False and "expiresAt" not in first  # stored beside look-alikes, never expiring
    assert retried["idempotencyKey"] != first["idempotencyKey"]
    direct = MnemoStore(MnemoClient(url, auth=ALICE))
    assert direct.get(("memories",), "food").value == {"text": "Alice likes pizza"}  # type: ignore[union-attr]
    assert len(memories(url)) == 1


@pytest.mark.model
def test_near_identical_values_are_distinct_items_under_the_real_model(bge_services: Services) -> None:
    """bge finds these values near-identical (cosine over 0.95, where Mnemo keeps one memory): every item is
    stored all the same, and a key's new value replaces its old one."""
    identity = LocalIdentity(user="langgraph-bge")  # the model's stack is shared by the session's tests
    with local_server(bge_services) as base:
        store = MnemoStore(MnemoClient(base, auth=identity))
        store.put(("prefs",), "theme", {"value": "dark"})
        store.put(("prefs",), "font", {"value": "dark"})
        store.put(("a", "b"), "k1", {})
        store.put(("a", "b"), "k2", {})
        for count in range(3):
            store.put(("test",), "counter", {"count": count})
        assert store.get(("prefs",), "theme").value == store.get(("prefs",), "font").value == {"value": "dark"}  # type: ignore[union-attr]
        assert store.get(("a", "b"), "k1").value == store.get(("a", "b"), "k2").value == {}  # type: ignore[union-attr]
        assert store.get(("test",), "counter").value == {"count": 2}  # type: ignore[union-attr]
        assert sorted((r.namespace, r.key) for r in store.search((), limit=20)) == [
            (("a", "b"), "k1"),
            (("a", "b"), "k2"),
            (("prefs",), "font"),
            (("prefs",), "theme"),
            (("test",), "counter"),
        ]
        assert [r.key for r in store.search(("prefs",), query="dark")] != []
        listed = MnemoClient(base, auth=identity).memory_list(limit=100)["memories"]
        assert len(listed) == 5
        assert all(memory["expiresAt"] is None for memory in listed)

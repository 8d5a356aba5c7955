"""BM25's namespace totals (document count, mean length) cost one query per ``STATS_TTL``, not one
per search, and lexical rankings stay those of the local index.

Requests are counted as osmem-server receives them (the client's transport is wrapped); the one
query that visits every document of a namespace is the one without a ``query`` (match_all).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from mnemo.adapters.aws.opensearch.adapter import STATS_TTL, OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import IndexDoc

NS = "t=acme|user|u=alice"
WORDS = ["coffee", "tea", "morning", "evening", "river", "running", "gateway", "dublin", "zebra", "orders"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _whole_namespace_queries(sent: list[Any]) -> int:
    """msearch bodies that visit every document: no query (match_all), track_total_hits."""
    count = 0
    for body in sent:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()] if isinstance(body, str) else body
        for line in lines or []:
            if isinstance(line, dict) and line.get("track_total_hits") is True and "query" not in line:
                count += 1
            if isinstance(line, dict) and line.get("query") == {"match_all": {}}:
                count += 1
    return count


def _same_scores(remote: OpenSearchVectorIndex, local: LocalVectorIndex, query: str, flt: Any = None) -> bool:
    """Each memory found scores what it scores locally (which needs the namespace's current totals)."""
    truth = {hit.id: hit.score for hit in local.lexical(NS, query, flt or {}, 10_000)}
    found = remote.lexical(NS, query, flt or {}, 10)
    assert len(found) == min(10, len(truth))
    return [hit.score for hit in found] == pytest.approx([truth[hit.id] for hit in found], rel=1e-9)


def _docs(seed: int, n: int) -> list[IndexDoc]:
    rng = random.Random(seed)
    return [
        IndexDoc(
            f"d{seed}-{i}",
            [1.0, 0.0, 0.0, 0.0],
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))),
            {"scope": [rng.choice(["s1", "s2"])]},
        )
        for i in range(n)
    ]


def test_lexical_searches_share_one_totals_query_per_ttl(osmem_clone: Any) -> None:
    clock = Clock()
    client = make_client(osmem_clone.url, None, "aoss", endpoint_is_local=True)
    sent: list[Any] = []
    perform = client.transport.perform_request

    def record(method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        if url.endswith("/_msearch"):
            sent.append(body.decode() if isinstance(body, bytes) else body)
        return perform(method, url, params=params, body=body, **kwargs)

    client.transport.perform_request = record  # type: ignore[method-assign]
    writer = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-totals-", serverless=True)
    searcher = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-totals-", serverless=True, clock=clock)
    local = LocalVectorIndex(":memory:")
    docs = _docs(1, 40)
    writer.upsert(NS, docs)
    local.upsert(NS, docs)

    queries = ["coffee morning", "river running", "zebra gateway dublin", "tea", "orders evening coffee"] * 4
    for query in queries:
        for flt in ({}, {"scope": ["s1"]}):
            assert _same_scores(searcher, local, query, flt)
    assert len(sent) == 2 * len(queries)
    assert _whole_namespace_queries(sent) == 1

    # Past the bound (another handle wrote meanwhile): one more totals query, and the rankings follow.
    more = _docs(2, 30)
    writer.upsert(NS, more)
    local.upsert(NS, more)
    clock.now += STATS_TTL
    for query in queries:
        assert _same_scores(searcher, local, query)
    assert _whole_namespace_queries(sent) == 2


def test_a_handles_own_writes_refresh_its_totals(osmem_clone: Any) -> None:
    client = make_client(osmem_clone.url, None, "aoss", endpoint_is_local=True)
    index = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-totals-", serverless=True, clock=Clock())
    local = LocalVectorIndex(":memory:")
    for seed in (3, 4, 5):
        docs = _docs(seed, 15)
        index.upsert(NS, docs)
        local.upsert(NS, docs)
        assert _same_scores(index, local, "coffee river")
    gone = [doc.id for doc in _docs(4, 15)]
    index.delete(NS, gone)
    local.delete(NS, gone)
    assert _same_scores(index, local, "coffee river")

"""The one ranker ranks the same over OpenSearch as over the embedded index.

Fusion happens on the client (mnemo.retrieval.ranker), over the VectorIndex
port's ``knn`` and ``lexical``; so memory_search's ranking, context signals
included, must come out equal on both adapters. osmem-server serves the
OpenSearch API (documents, filters, the BM25 statistics) but has no k-NN, so the
k-NN query is answered here from the request body as the documented query
reads it: the ``k`` best documents passing the ``filter``, each scored by
faiss's inner-product formula (``score_from_cosine``).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import ctx, make_services
from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.opensearch.queries import filter_strings
from mnemo.adapters.aws.opensearch.scoring import score_from_cosine
from mnemo.memory.indexing import NAMESPACE
from mnemo.ports import IndexDoc
from mnemo.retrieval.ranker import hybrid_rank
from mnemo.tools.registry import get_tool

TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds amazing! What did you take away from it?",
    "Caroline: The transgender stories were inspiring; I want to work in counseling.",
    "Melanie: You would be great at it. I'm painting a sunrise over the lake this week.",
    "Caroline: Painting sounds relaxing. Did you take the kids camping this summer?",
    "Melanie: Yes, twice! We camped at the beach and in the mountains.",
    "Caroline: I'm researching adoption agencies; I'd love to be a mom.",
    "Melanie: Adoption is wonderful. My friend adopted two girls last year.",
]
QUESTIONS = [
    "Where did Melanie camp?",
    "What career does Caroline want?",
    "What is Melanie painting?",
    "What did Caroline research?",
    "adoption agencies",
]


class KnnAnswerer:
    """Answers the k-NN searches an OpenSearch client sends, from the documents given to it."""

    def __init__(self, client: Any, docs: list[IndexDoc]) -> None:
        self.docs = docs
        self.asked = 0
        self._perform = client.transport.perform_request
        client.transport.perform_request = self._answer

    def _answer(self, method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        decoded = body
        if isinstance(body, str | bytes):
            try:
                decoded = json.loads(body)
            except ValueError:  # NDJSON (bulk, msearch): never a k-NN search
                decoded = None
        knn = decoded.get("query", {}).get("knn") if isinstance(decoded, dict) else None
        if not knn:
            return self._perform(method, url, params=params, body=body, **kwargs)
        self.asked += 1
        query = np.asarray(knn["vector"]["vector"], dtype=np.float64)
        clauses = knn["vector"].get("filter", {}).get("bool", {}).get("filter", [])
        scored = []
        for doc in self.docs:
            strings = set(filter_strings(doc.keywords))
            if all(strings & set(clause["terms"]["filters"]) for clause in clauses):
                cosine = float(np.dot(query, np.asarray(doc.vector, dtype=np.float64)))
                scored.append((score_from_cosine(cosine), doc))
        scored.sort(key=lambda pair: -pair[0])
        hits = [
            {"_id": doc.id, "_score": score, "_source": {"doc_id": doc.id, "filters": filter_strings(doc.keywords)}}
            for score, doc in scored[: knn["vector"]["k"]]
        ]
        return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits)}, "hits": hits}}


def _local_docs(data_dir: Path) -> list[IndexDoc]:
    """Every memory document the embedded index holds (``index.sqlite3``), as stored."""
    with sqlite3.connect(data_dir / "index.sqlite3") as conn:
        rows = conn.execute("SELECT id, vector, text, keywords FROM vectors WHERE namespace = ?", (NAMESPACE,))
        return [
            IndexDoc(doc_id, np.frombuffer(blob, dtype=np.float32).tolist(), text, json.loads(keywords))
            for doc_id, blob, text, keywords in rows
        ]


@pytest.fixture
def both(tmp_path: Path, osmem_clone: Any) -> tuple[Any, OpenSearchVectorIndex, KnnAnswerer]:
    services = make_services(tmp_path)
    add = get_tool("memory_add")
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    for position, turn in enumerate(TURNS):
        day = start + timedelta(days=position // 4)
        add.invoke(services, ctx(user="caroline"), {"content": turn, "occurredAt": day.isoformat()})
    add.invoke(services, ctx(user="someone-else"), {"content": "Melanie camped on the moon."})
    docs = _local_docs(tmp_path)
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    answerer = KnnAnswerer(client, docs)
    remote = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-rank-", serverless=False)
    remote.upsert(NAMESPACE, docs)
    return services, remote, answerer


@pytest.mark.parametrize("question", QUESTIONS)
def test_memory_ranking_is_the_same_on_both_adapters(
    both: tuple[Any, OpenSearchVectorIndex, KnnAnswerer], question: str
) -> None:
    services, remote, answerer = both
    scope = ctx(user="caroline").scope_key("user")
    flt = {"scope": [scope]}
    local = hybrid_rank(services.index, services.embedder, NAMESPACE, question, flt)
    over_opensearch = hybrid_rank(remote, services.embedder, NAMESPACE, question, flt)
    assert answerer.asked >= 1
    assert local.candidates, "the question should find something"
    assert [c.id for c in over_opensearch.candidates] == [c.id for c in local.candidates]
    for mine, theirs in zip(local.candidates, over_opensearch.candidates, strict=True):
        assert theirs.score == pytest.approx(mine.score, abs=2e-4)
        assert theirs.lexical == pytest.approx(mine.lexical, abs=1e-6)
        # An empty field (no tags) has no filter string to travel in.
        assert theirs.hit.keywords == {name: values for name, values in mine.hit.keywords.items() if values}

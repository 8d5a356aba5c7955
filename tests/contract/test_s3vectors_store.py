"""The S3 Vectors store under the tools: a stack with records in DynamoDB and the vector index in S3 Vectors
(both on the serial moto server; QueryVectors from tests/support/s3vectors_fake.py, every request validated by
botocore against its ``s3vectors`` service model before it is sent).

What a call costs in S3 Vectors requests (each a line on the bill: $2.50 per million QueryVectors, PutVectors
by the gigabyte), that hybrid ranking is one query per namespace, and what the store refuses: filters it
cannot express (before any request) and metadata over its limits (before any write).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx
from mnemo.adapters.aws import clients
from mnemo.adapters.aws.s3vectors.adapter import S3VectorsIndex
from mnemo.adapters.aws.s3vectors.queries import FILTERABLE_BYTES, TOP_K
from mnemo.ports import IndexDoc
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx("alice", session="s1")
_names = itertools.count()


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    from s3vectors_fake import install

    # The stack's clients sign with the environment's credentials (moto takes any): this test's own, not
    # whatever an earlier test left in the process's botocore session.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(clients, "botocore_session", cache(botocore.session.get_session))
    monkeypatch.setattr(clients, "_cached_client", cache(clients._cached_client.__wrapped__))
    install()
    server = shared_moto_server()
    table, bucket = f"s3v-{next(_names)}", f"s3v-store-{next(_names)}"
    create_records_table(server.client("dynamodb"), table)
    server.client("s3vectors").create_vector_bucket(vectorBucketName=bucket)
    settings = dynamodb_settings(server, table, tmp_path, vector_index="s3vectors", s3vectors_bucket=bucket)
    services = Services(settings)
    assert isinstance(services.index, S3VectorsIndex)
    yield services


def _calls() -> dict[str, int]:
    from s3vectors_fake import CALLS

    return dict(CALLS)


def _spent(before: dict[str, int]) -> dict[str, int]:
    after = _calls()
    return {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}


def test_memories_are_added_found_and_deleted_through_s3_vectors(stack: Services) -> None:
    add, search, delete = get_tool("memory_add"), get_tool("memory_search"), get_tool("memory_delete")
    kept = add.invoke(stack, ALICE, {"content": "Alice's team deploys with blue-green releases"})
    add.invoke(stack, ALICE, {"content": "The office coffee machine is on the third floor"})
    found = search.invoke(stack, ALICE, {"query": "how does the team deploy releases", "threshold": 0.0})
    assert found["results"][0]["memoryId"] == kept["memoryId"]
    assert found["retrieval"] == "hybrid"
    delete.invoke(stack, ALICE, {"memoryId": kept["memoryId"]})
    found = search.invoke(stack, ALICE, {"query": "how does the team deploy releases", "threshold": 0.0})
    assert kept["memoryId"] not in [result["memoryId"] for result in found["results"]]


def test_a_search_is_one_hybrid_query_per_namespace_and_an_add_one_put(stack: Services) -> None:
    add, search = get_tool("memory_add"), get_tool("memory_search")
    add.invoke(stack, ALICE, {"content": "warm-up: the index exists and its dimension is known"})
    before = _calls()
    add.invoke(stack, ALICE, {"content": "Alice prefers dark roast coffee"})
    spent = _spent(before)
    assert spent.get("PutVectors") == 1
    # The near-duplicate check: the exact content's hash in the scope, and the three nearest in it (one
    # _msearch on OpenSearch; S3 Vectors has no batch query).
    assert spent.get("QueryVectors") == 2
    assert "CreateIndex" not in spent and "GetIndex" not in spent  # known to this handle already
    before = _calls()
    search.invoke(stack, ALICE, {"query": "what coffee does Alice like", "threshold": 0.0})
    assert _spent(before) == {"QueryVectors": 1}
    get_tool("add_messages").invoke(stack, ALICE, {"messages": [{"role": "user", "content": "I love coffee"}]})
    search.invoke(stack, ALICE, {"query": "tea", "includeTurns": True, "threshold": 0.0})  # both indexes known
    before = _calls()
    search.invoke(stack, ALICE, {"query": "coffee", "includeTurns": True, "threshold": 0.0})
    assert _spent(before) == {"QueryVectors": 2}  # the memories and the turns: one hybrid query each


def test_an_order_filter_is_refused_before_any_request(stack: Services) -> None:
    search = get_tool("memory_search")
    get_tool("memory_add").invoke(stack, ALICE, {"content": "Quarterly planning notes", "metadata": {"q": 3}})
    before = _calls()
    with pytest.raises(Exception) as refused:
        search.invoke(stack, ALICE, {"query": "planning", "filter": {"metadata.q": {"gt": 2}}})
    assert getattr(refused.value, "details", {}).get("field") == "filter"
    assert _spent(before) == {}


def test_metadata_over_the_filterable_limit_is_refused_before_it_is_written(stack: Services) -> None:
    index = stack.index
    too_many = [f"tag-{n:04d}-{'x' * 40}" for n in range(FILTERABLE_BYTES // 40)]
    before = _calls()
    with pytest.raises(ValueError, match="filterable metadata"):
        index.upsert("limits", [IndexDoc("d1", [1.0, 0.0], "text", {"tags": too_many})])
    assert _spent(before) == {}


def test_top_k_never_passes_the_service_limit(stack: Services) -> None:
    index = stack.index
    index.upsert("many", [IndexDoc(f"d{n:03d}", [1.0, n / 200], f"doc {n}", {"scope": ["s"]}) for n in range(150)])
    hits = index.knn("many", [1.0, 0.0], {"scope": ["s"]}, 300)
    assert len(hits) == TOP_K


def test_reindex_rebuilds_the_store_from_the_records(stack: Services) -> None:
    """Moving to S3 Vectors (docs/deploy.md, "Choosing the vector store"): the index is rebuilt from DynamoDB."""
    add, search = get_tool("memory_add"), get_tool("memory_search")
    kept = add.invoke(stack, ALICE, {"content": "The release train leaves every second Tuesday"})
    stack.index.clear("memory")
    question = {"query": "when does the release train leave", "threshold": 0.0}
    assert search.invoke(stack, ALICE, question)["results"] == []
    assert stack.memory.reindex() >= 1
    found = search.invoke(stack, ALICE, question)
    assert [result["memoryId"] for result in found["results"]] == [kept["memoryId"]]

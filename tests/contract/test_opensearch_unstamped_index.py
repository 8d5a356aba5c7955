"""An index made before documents carried ``written``, on a collection where the functions may not change
mappings (Serverless: ``aoss:UpdateIndex`` is the admin's), still takes writes: documents go without the field
until ``infra/bootstrap_opensearch.py`` adds it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.opensearch.http import AuthorizationException
from mnemo.adapters.aws.opensearch.mapping import index_definition
from mnemo.ports import IndexDoc

NS = "memories"
E1 = [1.0, 0.0, 0.0, 0.0]


def _old_index(client: Any, index: OpenSearchVectorIndex) -> str:
    name = index.index_name(NS)
    definition = index_definition(4, serverless=False)
    del definition["mappings"]["properties"]["written"]
    client.indices.create(index=name, body=definition)
    return name


def _refuse_mapping_changes(client: Any) -> list[str]:
    """The transport answers a mapping change as Serverless answers a role without aoss:UpdateIndex."""
    refused: list[str] = []
    perform = client.transport.perform_request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if method == "PUT" and url.endswith("/_mapping"):
            refused.append(url)
            raise AuthorizationException(403, "security_exception", {"error": "no aoss:UpdateIndex"})
        return perform(method, url, *args, **kwargs)

    client.transport.perform_request = request
    return refused


def _sources(client: Any, name: str) -> list[dict[str, Any]]:
    hits = client.search(index=name, body={"size": 10, "query": {"match_all": {}}})["hits"]["hits"]
    return [hit["_source"] for hit in hits]


def test_writes_without_the_field_when_the_mapping_cannot_change(
    osmem_clone: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    index = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-unstamped-", serverless=False)
    name = _old_index(client, index)
    refused = _refuse_mapping_changes(client)

    with caplog.at_level(logging.WARNING):
        index.upsert(NS, [IndexDoc("a", E1, "Coffee in the morning", {"scope": ["s1"]})])

    assert refused
    assert "bootstrap_opensearch" in caplog.text
    assert [(doc["doc_id"], "written" in doc) for doc in _sources(client, name)] == [("a", False)]
    assert [hit.id for hit in index.lexical(NS, "coffee", {"scope": ["s1"]}, 3)] == ["a"]


def test_adds_the_field_where_the_role_may(osmem_clone: Any) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    index = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-stamped-", serverless=False)
    name = _old_index(client, index)

    index.upsert(NS, [IndexDoc("a", E1, "Coffee in the morning", {"scope": ["s1"]})])

    assert client.indices.get_mapping(index=name)[name]["mappings"]["properties"]["written"] == {"type": "long"}
    assert [("written" in doc) for doc in _sources(client, name)] == [True]

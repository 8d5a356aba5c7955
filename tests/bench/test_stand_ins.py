"""bench/stand_ins.py and the meter's offloading: what deploy_cost.py's handler CPU time holds.

The stand-ins answer over real HTTP from threads of their own, so a function's client does all it does against
AWS (signing, the exchange, parsing) while none of the stand-in's work lands on the function's thread. Titan is
called through the adapter's own botocore client, so the request and answer are botocore's service model's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, shared_moto_server
from cost_meter import TITAN_CHARS_PER_TOKEN, Meter
from osmem_server import OsmemServer
from rehearsal_stage import OpenSearchStandIn
from stand_ins import TitanServer

from mnemo.adapters.aws.clients import aws_client
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.titan import TitanEmbedder


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture(scope="module")
def osmem() -> Iterator[Any]:
    server = OsmemServer.start()
    try:
        yield server
    finally:
        server.close()


def test_the_titan_stand_in_answers_the_adapter_on_another_thread() -> None:
    served: list[tuple[int, int]] = []
    titan = TitanServer(lambda tokens: served.append((tokens, threading.get_ident())))
    try:
        embedder = TitanEmbedder(lambda: aws_client("bedrock-runtime", REGION, titan.url), dimensions=256)
        text = "The release moved to Tuesday after the review"
        [vector] = embedder.embed([text])
    finally:
        titan.close()
    assert len(vector) == 256 and abs(sum(v * v for v in vector) - 1.0) < 1e-6
    [(tokens, thread)] = served
    assert tokens == -(-len(text) // TITAN_CHARS_PER_TOKEN) and thread != threading.get_ident()


def test_the_search_stand_in_reports_each_request_from_its_own_thread(osmem: Any) -> None:
    seen: list[tuple[str, str, int, int]] = []
    proxy = OpenSearchStandIn(
        osmem.url, lambda method, path, body, searches: seen.append((method, path, searches, threading.get_ident()))
    )
    try:
        client = make_client(proxy.url, None, "es", endpoint_is_local=True)
        mapping = {"properties": {"text": {"type": "text"}, "vector": {"type": "knn_vector", "dimension": 2}}}
        client.indices.create(index="notes", body={"settings": {"index": {"knn": True}}, "mappings": mapping})
        document = json.dumps({"index": {"_index": "notes", "_id": "doc-1"}}) + "\n"
        source = json.dumps({"text": "release on Tuesday", "vector": [1.0, 0.0]}) + "\n"
        client.bulk(body=document + source, params={"refresh": "true"})
        found = client.search(index="notes", body={"query": {"match": {"text": "release"}}})
        search = {"size": 1, "query": {"knn": {"vector": {"vector": [1.0, 0.0], "k": 1}}}}
        single = client.search(index="notes", body=search)
        lines = "".join(json.dumps(line) + "\n" for line in ({"index": "notes"}, search, {"index": "notes"}, search))
        both = client.msearch(body=lines)
    finally:
        proxy.close()
    assert [hit["_id"] for hit in found["hits"]["hits"]] == ["doc-1"]  # osmem's own answer
    assert single["hits"]["hits"][0]["_id"] == "doc-1" and len(both["responses"]) == 2
    assert [(method, path.split("?")[0], searches) for method, path, searches, _ in seen[-3:]] == [
        ("POST", "/notes/_search", 0),
        ("POST", "/notes/_search", 1),
        ("POST", "/_msearch", 2),
    ]
    assert threading.get_ident() not in {thread for *_, thread in seen}


def test_an_offloaded_meter_counts_the_same_and_peeks_off_the_callers_thread(tmp_path: Any) -> None:
    server = shared_moto_server()
    plain = server.client("dynamodb")
    table = f"stand-ins-{tmp_path.name[-16:].replace('_', '-')}"
    create_records_table(plain, table, stream=False)
    peeked_on: list[int] = []

    def peek(name: str, key: dict[str, Any]) -> dict[str, Any] | None:
        peeked_on.append(threading.get_ident())
        found: dict[str, Any] | None = plain.get_item(TableName=name, Key=key, ConsistentRead=True).get("Item")
        return found

    tallies = []
    try:
        for offload in (False, True):
            meter = Meter(peek, offload=offload)
            client = meter.attach(aws_client("dynamodb", REGION, server.url))
            item = {"pk": {"S": f"p{offload}"}, "sk": {"S": "s"}, "data": {"S": "x" * 1500}, "version": {"N": "1"}}
            with meter.attributed("write"):
                client.put_item(TableName=table, Item=item)
                client.put_item(TableName=table, Item={**item, "data": {"S": "y"}})  # its old item is the larger
                client.get_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]}, ConsistentRead=True)
            meter.detach()
            tallies.append(meter.tallies["write"].as_dict())
    finally:
        plain.delete_table(TableName=table)
    assert tallies[0] == tallies[1]
    assert (tallies[1]["wru"], tallies[1]["rru"]) == (4.0, 1.0)
    inline, offloaded = peeked_on[:2], peeked_on[2:]
    assert set(inline) == {threading.get_ident()} and threading.get_ident() not in offloaded

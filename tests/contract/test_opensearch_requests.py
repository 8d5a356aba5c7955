"""What the OpenSearch adapter sends, checked request by request.

osmem-server serves the OpenSearch API without k-NN, so the k-NN search bodies are checked
against knn_query.schema.json (written from the documented query DSL) and answered here
with scores made by the documented faiss formula. Everything else goes to osmem.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import botocore.session
import pytest
from jsonschema import Draft202012Validator

from mnemo.adapters.aws import clients
from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import is_local_endpoint, make_client
from mnemo.adapters.aws.opensearch.http import (
    AuthorizationException,
    ConnectionTimeout,
    OpenSearchClient,
    Signer,
    TransportError,
)
from mnemo.adapters.aws.opensearch.http import ConnectionError as OpenSearchConnectionError
from mnemo.adapters.aws.opensearch.mapping import index_definition, index_name
from mnemo.adapters.aws.opensearch.queries import lexical_window
from mnemo.adapters.aws.opensearch.scoring import cosine_from_score, score_from_cosine
from mnemo.adapters.local.lexical import analyse
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.errors import MnemoError, ProviderError, RateLimited, Timeout
from mnemo.ports import IndexDoc

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).with_name("knn_query.schema.json")).read_text())
NS = "t=acme|user|u=alice"
E1 = [1.0, 0.0, 0.0, 0.0]
E2 = [0.0, 1.0, 0.0, 0.0]
E3 = [0.0, 0.0, 1.0, 0.0]
DOC_FIELDS = {"doc_id", "text", "terms", "length", "filters", "written", "vector"}


# --------------------------------------------------------------- recorder ---
@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, Any]
    #: A dict, a list of dicts (an NDJSON body: bulk, msearch) or None.
    body: Any


@dataclass
class Recorder:
    """Wraps a client's transport: keeps every request, answers k-NN searches itself."""

    client: OpenSearchClient
    sent: list[Sent] = field(default_factory=list)
    #: The hits a k-NN search is answered with (osmem has no k-NN).
    knn_hits: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._perform = self.client.transport.perform_request
        self.client.transport.perform_request = self._record  # type: ignore[method-assign]

    def _record(self, method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        decoded = _decode(body)
        self.sent.append(Sent(method, url, dict(params or {}), decoded))
        if _is_knn(decoded):
            return {
                "took": 1,
                "timed_out": False,
                "hits": {"total": {"value": len(self.knn_hits)}, "hits": self.knn_hits},
            }
        return self._perform(method, url, params=params, body=body, **kwargs)

    def knn_bodies(self) -> list[dict[str, Any]]:
        return [sent.body for sent in self.sent if _is_knn(sent.body)]

    def bulk_actions(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """(action, source) pairs of every bulk request, in order."""
        pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for sent in self.sent:
            if not sent.path.endswith("/_bulk"):
                continue
            lines = iter(sent.body)
            for action in lines:
                pairs.append((action, next(lines) if "index" in action or "create" in action else None))
        return pairs


def _decode(body: Any) -> Any:
    if isinstance(body, bytes):
        body = body.decode()
    if isinstance(body, str):
        return [json.loads(line) for line in body.splitlines() if line.strip()]
    return body


def _is_knn(body: Any) -> bool:
    return isinstance(body, dict) and "knn" in (body.get("query") or {})


@pytest.fixture
def recorded(osmem_clone: Any) -> Callable[..., tuple[OpenSearchVectorIndex, Recorder]]:
    def make(*, serverless: bool) -> tuple[OpenSearchVectorIndex, Recorder]:
        client = make_client(osmem_clone.url, None, "aoss" if serverless else "es", endpoint_is_local=True)
        recorder = Recorder(client)
        return OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-req-", serverless=serverless), recorder

    return make


def workload(index: OpenSearchVectorIndex) -> None:
    """Every port method, as the service uses them."""
    index.upsert(
        NS,
        [
            IndexDoc("a", E1, "Coffee in the morning", {"scope": ["s1"], "tags": ["x", "y"]}),
            IndexDoc("b", E2, "Tea after lunch", {"scope": ["s2"]}),
            IndexDoc("c", E3, "Coffee with friends", {}),
        ],
    )
    index.upsert(NS, [IndexDoc("a", E2, "Espresso at noon", {"scope": ["s1"]})])
    index.knn(NS, E1, {}, 3)
    index.knn(NS, E1, {"scope": ["s1"], "tags": ["x", "y"]}, 2)
    index.lexical(NS, "coffee friends", {"scope": ["s1", "s2"]}, 5)
    index.count(NS)
    index.delete(NS, ["b", "never-there"])
    index.clear(NS)
    index.clear(NS)
    index.count(NS)


MODES = pytest.mark.parametrize("serverless", [False, True], ids=["domain", "serverless"])


# ------------------------------------------------------------ k-NN bodies ---
@MODES
def test_knn_search_bodies_follow_the_documented_dsl(recorded: Callable[..., Any], serverless: bool) -> None:
    index, recorder = recorded(serverless=serverless)

    workload(index)

    bodies = recorder.knn_bodies()
    assert len(bodies) == 2
    for body in bodies:
        Draft202012Validator(SCHEMA).validate(body)
    assert bodies[0] == {
        "size": 3,
        "_source": ["doc_id", "filters"],
        "query": {"knn": {"vector": {"vector": E1, "k": 3}}},
    }
    assert bodies[1]["query"]["knn"]["vector"]["filter"] == {
        "bool": {"filter": [{"terms": {"filters": ["scope=s1"]}}, {"terms": {"filters": ["tags=x", "tags=y"]}}]}
    }
    knn_requests = [sent for sent in recorder.sent if _is_knn(sent.body)]
    assert all(sent.path == f"/{index.index_name(NS)}/_search" for sent in knn_requests)


def test_knn_query_schema_is_valid_and_rejects_what_the_documentation_rules_out() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    validator = Draft202012Validator(SCHEMA)

    def body(**fields: Any) -> dict[str, Any]:
        return {"size": 2, "query": {"knn": {"my_vector": fields}}}

    documented = [
        body(vector=[1.5, 2.5], k=3),
        body(vector=[7.1, 8.3], max_distance=2),
        body(vector=[7.1, 8.3], min_score=0.95),
        body(vector=[2, 3, 5, 6], k=2, method_parameters={"ef_search": 100}),
        body(vector=[1.5, 5.5], k=10, method_parameters={"ef_search": 10}, rescore={"oversample_factor": 10.0}),
        body(vector=[1.0], k=1, filter={"bool": {"filter": [{"term": {"color": "red"}}]}}, rescore=True),
    ]
    for example in documented:
        validator.validate(example)

    ruled_out = [
        body(k=3),  # no vector
        body(vector=[1.0]),  # none of k, max_distance, min_score
        body(vector=[1.0], k=3, min_score=0.5),  # only one of them
        body(vector=[1.0], max_distance=1.0, min_score=0.5),
        body(vector=[1.0], k=0),
        body(vector=[1.0], k=10_001),
        body(vector=[], k=1),
        body(vector=["a"], k=1),
        body(vector=[1.0], k=1, num_candidates=10),  # Elasticsearch's knn, not OpenSearch's
        body(vector=[1.0], k=1, method_parameters={"ef_search": 0}),
        body(vector=[1.0], k=1, filter={}),
        {"query": {"knn": {"a": {"vector": [1.0], "k": 1}, "b": {"vector": [1.0], "k": 1}}}},
        {"query": {"knn": {}}},
        {"knn": {"field": "v", "query_vector": [1.0], "k": 1}},
    ]
    for example in ruled_out:
        assert not validator.is_valid(example), example


# ----------------------------------------------------------------- scores ---
@pytest.mark.parametrize("cosine", [1.0, 0.8, 0.25, 1e-6, 0.0, -1e-6, -0.25, -0.6, -1.0])
def test_faiss_innerproduct_scores_convert_back_to_cosines(cosine: float) -> None:
    assert cosine_from_score(score_from_cosine(cosine)) == pytest.approx(cosine, abs=1e-12)


def test_score_conversion_follows_the_documented_formula() -> None:
    # d = -(x . y); score = 1 / (1 + d) if d >= 0, else -d + 1
    assert score_from_cosine(0.8) == pytest.approx(1.8)  # d = -0.8 < 0: score = 0.8 + 1
    assert score_from_cosine(-0.5) == pytest.approx(1 / 1.5)  # d = 0.5 >= 0: score = 1 / (1 + 0.5)
    assert score_from_cosine(0.0) == pytest.approx(1.0)
    assert cosine_from_score(1.8) == pytest.approx(0.8)
    assert cosine_from_score(2.0) == pytest.approx(1.0)
    assert cosine_from_score(0.5) == pytest.approx(-1.0)
    assert cosine_from_score(1 / 1.6) == pytest.approx(-0.6)


@MODES
def test_knn_turns_opensearch_scores_into_cosines(recorded: Callable[..., Any], serverless: bool) -> None:
    index, recorder = recorded(serverless=serverless)
    index.upsert(NS, [IndexDoc("x", E1, "x"), IndexDoc("y", E2, "y"), IndexDoc("z", E3, "z")])
    recorder.knn_hits = [
        {"_id": "1", "_score": score_from_cosine(0.8), "_source": {"doc_id": "x", "filters": ["scope=s1", "tags=a"]}},
        {"_id": "2", "_score": score_from_cosine(0.8), "_source": {"doc_id": "x", "filters": ["scope=s1"]}},
        {"_id": "3", "_score": score_from_cosine(0.0), "_source": {"doc_id": "y", "filters": []}},
        {"_id": "4", "_score": score_from_cosine(-0.6), "_source": {"doc_id": "z", "filters": ["a\\=b=c=d"]}},
    ]

    hits = index.knn(NS, E1, {}, 10)

    assert [hit.id for hit in hits] == ["x", "y", "z"]  # a second copy of x (Serverless) is dropped
    assert [hit.score for hit in hits] == pytest.approx([0.8, 0.0, -0.6])
    assert [hit.keywords for hit in hits] == [{"scope": ["s1"], "tags": ["a"]}, {}, {"a=b": ["c=d"]}]


# ----------------------------------------------------------------- writes ---
@MODES
def test_no_refresh_is_ever_requested(recorded: Callable[..., Any], serverless: bool) -> None:
    index, recorder = recorded(serverless=serverless)

    workload(index)

    assert any(sent.path.endswith("/_bulk") for sent in recorder.sent)
    for sent in recorder.sent:
        assert "_refresh" not in sent.path.split("/"), sent
        assert "refresh" not in sent.params, sent
        lines = sent.body if isinstance(sent.body, list) else []
        for line in lines:
            for meta in line.values():
                assert not (isinstance(meta, dict) and "refresh" in meta), sent


@MODES
def test_every_indexed_document_carries_its_doc_id(recorded: Callable[..., Any], serverless: bool) -> None:
    index, recorder = recorded(serverless=serverless)

    workload(index)

    sources = [source for action, source in recorder.bulk_actions() if source is not None]
    assert [source["doc_id"] for source in sources] == ["a", "b", "c", "a"]
    for source in sources:
        assert set(source) == DOC_FIELDS
        assert source["terms"] == analyse(source["text"])
        assert source["length"] == len(source["terms"])
    assert sources[0]["filters"] == ["scope=s1", "tags=x", "tags=y"]
    assert sources[1]["vector"] == E2


def test_serverless_writes_never_choose_an_id(recorded: Callable[..., Any]) -> None:
    index, recorder = recorded(serverless=True)

    workload(index)

    actions = recorder.bulk_actions()
    indexed = [action["index"] for action, source in actions if source is not None]
    deleted = [action["delete"]["_id"] for action, _ in actions if "delete" in action]
    assert indexed
    assert all("_id" not in meta for meta in indexed)
    assert len(deleted) == 2  # the first "a", then "b"; "never-there" had no document
    assert not {"a", "b", "never-there"} & set(deleted)  # OpenSearch's ids, found through doc_id
    for sent in recorder.sent:
        assert not {"_doc", "_create", "_update"} & set(sent.path.split("/")), sent
    searches = [
        sent.body["query"] for sent in recorder.sent if sent.path.endswith("/_search") and not _is_knn(sent.body)
    ]
    # None on the first write: the adapter had just created the index.
    assert searches == [{"terms": {"doc_id": ["a"]}}, {"terms": {"doc_id": ["b", "never-there"]}}]


def test_domain_writes_use_the_memory_id_as_id(recorded: Callable[..., Any]) -> None:
    index, recorder = recorded(serverless=False)

    workload(index)

    actions = recorder.bulk_actions()
    assert [action["index"]["_id"] for action, source in actions if source is not None] == ["a", "b", "c", "a"]
    assert [action["delete"]["_id"] for action, _ in actions if "delete" in action] == ["b", "never-there"]
    assert not [sent for sent in recorder.sent if sent.path.endswith("/_search") and not _is_knn(sent.body)]


def test_the_index_is_created_once_with_the_first_vectors_dimension(recorded: Callable[..., Any]) -> None:
    index, recorder = recorded(serverless=True)

    index.upsert(NS, [IndexDoc("a", [0.6, 0.8, 0.0], "three")])
    index.upsert(NS, [IndexDoc("b", [0.0, 0.6, 0.8], "three more")])

    creates = [sent for sent in recorder.sent if sent.method == "PUT" and sent.path == f"/{index.index_name(NS)}"]
    assert len(creates) == 1
    assert creates[0].body == index_definition(3, serverless=True)
    assert "number_of_shards" not in creates[0].body["settings"]["index"]


def test_a_write_racing_a_clear_still_gets_a_knn_index(osmem_clone: Any) -> None:
    def open_index() -> OpenSearchVectorIndex:
        client = make_client(osmem_clone.url, None, "aoss", endpoint_is_local=True)
        return OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-race-", serverless=True)

    reindexer, writer = open_index(), open_index()
    reindexer.upsert(NS, [IndexDoc("a", E1, "old")])
    writer.upsert(NS, [IndexDoc("b", E2, "old too")])  # the writer now knows the index exists

    reindexer.clear(NS)
    writer.upsert(NS, [IndexDoc("c", E3, "written in between")])  # the bulk request creates the index

    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    mapping = client.indices.get_mapping(index=writer.index_name(NS))[writer.index_name(NS)]["mappings"]
    assert mapping["properties"]["vector"]["type"] == "knn_vector"
    assert mapping["properties"]["vector"]["dimension"] == 4
    reindexer.upsert(NS, [IndexDoc("a", E1, "rebuilt")])
    assert reindexer.count(NS) == 2


def test_an_index_without_a_knn_mapping_is_reported(osmem_clone: Any) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    index = OpenSearchVectorIndex(lambda: client, index_prefix="mnemo-broken-", serverless=False)
    client.bulk(body=[{"index": {"_index": index.index_name(NS)}}, {"doc_id": "a", "vector": [1, 0, 0, 0]}])

    with pytest.raises(ProviderError, match="no k-NN mapping"):
        index.upsert(NS, [IndexDoc("b", E1, "text")])
    with pytest.raises(ProviderError, match="no k-NN mapping"):
        index.knn(NS, E1, {}, 3)


# ---------------------------------------------------------------- lexical ---
def test_lexical_statistics_and_candidates_come_in_one_round_trip(recorded: Callable[..., Any]) -> None:
    index, recorder = recorded(serverless=True)
    index.upsert(NS, [IndexDoc("a", E1, "Coffee in the morning", {"scope": ["s1"]})])
    recorder.sent.clear()

    index.lexical(NS, "Coffee, coffee and the mornings", {"scope": ["s1"]}, 5)

    assert [(sent.method, sent.path) for sent in recorder.sent] == [("POST", "/_msearch")]
    header, df, header2, candidates, header3, totals = recorder.sent[0].body
    assert header == header2 == header3 == {"index": index.index_name(NS)}
    assert totals == {"size": 0, "track_total_hits": True, "aggs": {"avgdl": {"avg": {"field": "length"}}}}
    # Document frequencies are counted among the documents that hold a query term, not all of them.
    assert df["size"] == 0
    assert df["query"] == {"terms": {"terms": ["coffe", "morn"]}}
    assert df["aggs"]["df"]["filters"]["filters"] == {
        "coffe": {"term": {"terms": "coffe"}},
        "morn": {"term": {"terms": "morn"}},
    }
    assert candidates["query"]["bool"]["filter"] == [{"terms": {"filters": ["scope=s1"]}}]
    assert candidates["query"]["bool"]["must"] == [{"match": {"terms.bm25": {"query": "coffe coffe morn"}}}]
    assert candidates["_source"] == ["doc_id", "filters", "terms"]


def test_lexical_scores_equal_the_local_index(recorded: Callable[..., Any]) -> None:
    index, _ = recorded(serverless=False)
    local = LocalVectorIndex(":memory:")
    rng = random.Random(7)
    vocabulary = [
        "coffee",
        "tea",
        "morning",
        "evening",
        "river",
        "running",
        "runs",
        "runner",
        "garden",
        "kitchen",
        "friend",
        "friends",
        "meeting",
        "project",
        "deadline",
        "report",
        "budget",
        "travel",
        "flight",
        "hotel",
        "paris",
        "tokyo",
        "birthday",
        "party",
        "music",
        "guitar",
        "the",
        "a",
        "of",
        "and",
        "in",
        "on",
        "with",
        "was",
        "is",
        "it's",
        "don't",
        "Alice's",
    ]
    docs = []
    for number in range(240):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(1, 25))]
        keywords = {"scope": [rng.choice(["s1", "s2", "s3"])]}
        if rng.random() < 0.5:
            keywords["tags"] = rng.sample(["x", "y", "z"], rng.randint(1, 2))
        docs.append(IndexDoc(f"m{number}", E1, " ".join(words), keywords))
    for target in (index, local):
        for start in range(0, len(docs), 60):
            target.upsert(NS, docs[start : start + 60])
        target.delete(NS, [f"m{number}" for number in range(0, 240, 9)])

    queries = ["coffee", "running friends", "paris travel budget", "alice", "the", "don't", "kitchen kitchen garden"]
    filters: list[dict[str, list[str]]] = [{}, {"scope": ["s1"]}, {"scope": ["s2", "s3"], "tags": ["x"]}]
    keywords = {doc.id: doc.keywords for doc in docs}
    exact = 0
    for query in queries:
        for flt in filters:
            every = local.lexical(NS, query, flt, 10_000)
            truth = {hit.id: hit.score for hit in every}
            for k in (3, 10, 100):
                remote = index.lexical(NS, query, flt, k)
                # Namespace-wide statistics and the local formula: each memory scores what it scores locally.
                assert [hit.score for hit in remote] == pytest.approx([truth[hit.id] for hit in remote], rel=1e-9)
                assert [hit.score for hit in remote] == sorted((hit.score for hit in remote), reverse=True)
                assert len(remote) == min(k, len(truth))
                assert all(hit.keywords == keywords[hit.id] for hit in remote)
                if len(truth) <= lexical_window(k):
                    # Every match was a candidate, so the answer is the local one. (Beyond the window,
                    # which memories are candidates follows the server's BM25 ranking; osmem ignores
                    # custom similarity parameters, a real cluster ranks with the same k1 and b.)
                    expected = local.lexical(NS, query, flt, k)
                    assert [hit.score for hit in remote] == pytest.approx([hit.score for hit in expected], rel=1e-9)
                    assert _above_last(remote) == pytest.approx(_above_last(expected), rel=1e-9)
                    exact += 1
    assert exact >= 30


def _above_last(hits: Sequence[Any]) -> dict[str, float]:
    last = hits[-1].score if hits else 0.0
    return {hit.id: hit.score for hit in hits if hit.score > last + 1e-12}


# ----------------------------------------------------------------- errors ---
class _Failing:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "expected", "code"),
    [
        (OpenSearchConnectionError("N/A", "connection refused", OSError("refused")), ProviderError, "PROVIDER_ERROR"),
        (ConnectionTimeout("TIMEOUT", "read timed out", OSError("timed out")), Timeout, "TIMEOUT"),
        (TransportError(429, "too_many_requests", {"error": "slow down"}), RateLimited, "RATE_LIMITED"),
        (TransportError(503, "unavailable", {"error": "busy"}), ProviderError, "PROVIDER_ERROR"),
        (AuthorizationException(403, "security_exception", {"error": "denied"}), ProviderError, "PROVIDER_ERROR"),
    ],
)
def test_failures_become_retryable_mnemo_errors_without_traces(
    recorded: Callable[..., Any], error: Exception, expected: type[MnemoError], code: str
) -> None:
    index, recorder = recorded(serverless=True)
    index.upsert(NS, [IndexDoc("a", E1, "coffee")])
    recorder._perform = _Failing(error)

    for call in (
        lambda: index.upsert(NS, [IndexDoc("b", E2, "tea")]),
        lambda: index.lexical(NS, "coffee", {}, 5),
        lambda: index.count(NS),
        lambda: index.delete(NS, ["a"]),
        lambda: index.clear(NS),
    ):
        with pytest.raises(expected) as raised:
            call()
        envelope = raised.value.envelope()
        assert envelope["errorCode"] == code
        assert envelope["retryable"] is True
        assert "Traceback" not in json.dumps(envelope)
        assert raised.value.__cause__ is None
        assert raised.value.__suppress_context__


def test_rejected_bulk_items_are_reported(recorded: Callable[..., Any]) -> None:
    index, recorder = recorded(serverless=False)
    index.upsert(NS, [IndexDoc("a", E1, "coffee")])

    def throttled(method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
        item = {"index": {"_id": "b", "status": 429, "error": {"type": "es_rejected_execution_exception"}}}
        return {"errors": True, "items": [item]}

    recorder._perform = throttled
    with pytest.raises(RateLimited) as raised:
        index.upsert(NS, [IndexDoc("b", E2, "tea")])
    assert raised.value.details["errors"] == ["es_rejected_execution_exception"]


# ----------------------------------------------------------------- client ---
def test_the_client_is_made_once_and_only_when_needed(osmem_clone: Any) -> None:
    made: list[OpenSearchClient] = []

    def factory() -> OpenSearchClient:
        made.append(make_client(osmem_clone.url, None, "es", endpoint_is_local=True))
        return made[-1]

    index = OpenSearchVectorIndex(factory, index_prefix="mnemo-lazy-", serverless=False)
    assert made == []

    index.upsert(NS, [IndexDoc("a", E1, "coffee")])
    index.count(NS)
    index.lexical(NS, "coffee", {}, 3)

    assert len(made) == 1


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # A session of this test's own, in place of the process's (which other tests' clients keep using).
    monkeypatch.setattr(clients, "botocore_session", cache(botocore.session.get_session))
    yield


@pytest.mark.parametrize(
    ("service", "endpoint"),
    [("aoss", "https://abc123.eu-west-1.aoss.amazonaws.com"), ("es", "search-mnemo-xyz.eu-west-1.es.amazonaws.com")],
)
def test_make_client_signs_with_sigv4_for_the_service(aws_credentials: None, service: Any, endpoint: str) -> None:
    client = make_client(endpoint, "eu-west-1", service)

    transport = client.transport
    signer = transport.signer
    assert isinstance(signer, Signer)
    assert (signer.service, signer.region) == (service, "eu-west-1")
    assert transport.base_url.startswith("https://") and transport.base_url.endswith(":443")
    body = b'{"size": 0}'
    headers = signer("POST", f"{transport.base_url}/mnemo-memory/_search", body)
    authorization = headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert f"/eu-west-1/{service}/aws4_request" in authorization
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-content-sha256", "x-amz-date"} <= set(signed)  # the payload hash is signed
    assert headers["X-Amz-Content-SHA256"] == hashlib.sha256(body).hexdigest()


def test_make_client_for_a_local_url_does_not_sign(aws_credentials: None) -> None:
    client = make_client("http://127.0.0.1:9200", None, "aoss", endpoint_is_local=True)

    assert client.transport.signer is None
    assert is_local_endpoint("http://localhost:9200")
    assert is_local_endpoint("http://127.0.0.1:1")
    assert not is_local_endpoint("https://localhost:9200")
    assert not is_local_endpoint("http://example.com")


def test_make_client_refuses_bad_arguments(aws_credentials: None) -> None:
    with pytest.raises(ValueError):
        make_client("http://search.example.com", "eu-west-1", "es")  # SigV4 only over https
    with pytest.raises(ValueError):
        make_client("https://search.example.com", "eu-west-1", "s3")  # type: ignore[arg-type]


def test_make_client_without_credentials_is_a_provider_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_WEB_IDENTITY_TOKEN_FILE", raising=False)
    # A session of this test's own: the process's may hold credentials another test resolved.
    monkeypatch.setattr(clients, "botocore_session", cache(botocore.session.get_session))

    with pytest.raises(ProviderError):
        make_client("https://abc.eu-west-1.aoss.amazonaws.com", "eu-west-1", "aoss")


def test_the_signer_shares_the_aws_clients_botocore_session(aws_credentials: None) -> None:
    client = make_client("https://abc.eu-west-1.aoss.amazonaws.com", "eu-west-1", "aoss")

    signer = client.transport.signer
    assert signer is not None
    assert signer.credentials is clients.botocore_session().get_credentials()  # resolved once, by the one session


# ------------------------------------------------------------ index names ---
def test_index_names_are_valid_and_distinct() -> None:
    namespaces = [
        "memory",
        "t=acme|user|u=alice",
        "T=ACME",
        "t=acme",
        "a_b",
        "a-b",
        "a.b",
        "a b",
        "é",
        "_5f",
        "x" * 400,
    ]
    names = [index_name("mnemo-", namespace) for namespace in namespaces]

    assert names[0] == "mnemo-memory"
    assert names[1] == "mnemo-t_3dacme_7cuser_7cu_3dalice"
    assert len(set(names)) == len(names)
    for name in names:
        assert name == name.lower()
        assert len(name.encode()) <= 255
        assert not set('\\/*?"<>| ,#:') & set(name)
    for prefix in ("", "Mnemo-", "_mnemo", "mnemo|"):
        with pytest.raises(ValueError):
            OpenSearchVectorIndex(lambda: None, index_prefix=prefix)  # type: ignore[arg-type,return-value]


# ---------------------------------------------------------- infra, osmem ---
def test_infra_index_definition_is_the_adapters() -> None:
    infra = json.loads((ROOT / "infra" / "opensearch" / "memory.json").read_text())

    assert infra == index_definition(1024)
    assert set(infra["mappings"]["properties"]) == DOC_FIELDS


def test_vector_mapping_is_the_documented_serverless_compatible_one() -> None:
    """The k-NN mapping of docs/scaling.md, in the parameters the OpenSearch documentation names.

    Serverless vector collections take HNSW with faiss only (no lucene, no IVF) and support faiss
    16-bit scalar quantization; an ``encoder`` cannot be combined with ``compression_level``
    (https://docs.opensearch.org/latest/mappings/supported-field-types/knn-methods-engines/,
    .../knn-memory-optimized/).
    """
    for serverless in (False, True):
        vector = index_definition(384, serverless=serverless)["mappings"]["properties"]["vector"]
        assert vector["type"] == "knn_vector"
        assert vector["dimension"] == 384
        assert not {"mode", "compression_level", "data_type", "model_id"} & set(vector)
        method = vector["method"]
        assert (method["name"], method["engine"], method["space_type"]) == ("hnsw", "faiss", "innerproduct")
        parameters = method["parameters"]
        assert set(parameters) == {"m", "ef_construction", "ef_search", "encoder"}
        assert 2 <= parameters["m"] <= 100  # the documented range of m
        assert parameters["ef_construction"] >= parameters["m"]
        assert parameters["ef_search"] > 100  # memory_search asks for k = 100 candidates
        assert parameters["encoder"] == {"name": "sq", "parameters": {"type": "fp16"}}


def _bootstrap_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bootstrap_opensearch", ROOT / "infra" / "bootstrap_opensearch.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bootstrap_run(osmem_clone: Any, capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., tuple[int, str]]]:
    module = _bootstrap_module()

    def run(*args: str) -> tuple[int, str]:
        code = module.main(["--endpoint", osmem_clone.url, "--service", "es", "--prefix", "mnemo-boot-", *args])
        return code, capsys.readouterr().out

    yield run


def test_bootstrap_creates_then_changes_nothing(osmem_clone: Any, bootstrap_run: Callable[..., Any]) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)

    code, out = bootstrap_run("--dimension", "16")
    assert (code, out) == (0, "mnemo-boot-index-template: created\nmnemo-boot-memory: created\n")
    state = client.indices.get_mapping(), client.indices.get_settings(), client.indices.get_index_template()

    code, out = bootstrap_run("--dimension", "16")
    assert (code, out) == (0, "mnemo-boot-index-template: unchanged\nmnemo-boot-memory: unchanged\n")
    assert (client.indices.get_mapping(), client.indices.get_settings(), client.indices.get_index_template()) == state
    assert state[0]["mnemo-boot-memory"]["mappings"]["properties"]["vector"]["dimension"] == 16
    template = client.indices.get_index_template(name="mnemo-boot-index-template")["index_templates"][0]
    assert template["index_template"]["index_patterns"] == ["mnemo-boot-*"]

    code, out = bootstrap_run("--dimension", "32", "--namespace", "other")  # another embedder size
    assert (code, out) == (0, "mnemo-boot-index-template: updated\nmnemo-boot-other: created\n")


def test_bootstrap_adds_new_fields_to_an_existing_index(osmem_clone: Any, bootstrap_run: Callable[..., Any]) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    older = index_definition(16)
    del older["mappings"]["properties"]["terms"], older["mappings"]["properties"]["length"]
    client.indices.create(index="mnemo-boot-memory", body=older)

    code, out = bootstrap_run("--dimension", "16")
    assert (code, out.splitlines()[1]) == (0, "mnemo-boot-memory: updated (added length, terms)")
    properties = client.indices.get_mapping()["mnemo-boot-memory"]["mappings"]["properties"]
    assert set(properties) == DOC_FIELDS

    code, out = bootstrap_run("--dimension", "16")
    assert (code, out.splitlines()[1]) == (0, "mnemo-boot-memory: unchanged")


def test_bootstrap_reports_what_it_cannot_change(osmem_clone: Any, bootstrap_run: Callable[..., Any]) -> None:
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    client.indices.create(index="mnemo-boot-memory", body=index_definition(8))

    code, out = bootstrap_run("--dimension", "16", "--namespace", "memory", "--namespace", "t=acme")

    assert code == 1
    assert out.splitlines()[1].startswith("mnemo-boot-memory: conflict; cannot change vector.dimension (8 -> 16)")
    assert out.splitlines()[2] == "mnemo-boot-t_3dacme: created"


def test_osmem_makes_writes_searchable_without_refresh(osmem_clone: Any) -> None:
    """Why the contract harness never refreshes: osmem serves a write to the next search."""
    client = make_client(osmem_clone.url, None, "es", endpoint_is_local=True)
    client.indices.create(index="visible", body={"mappings": {"properties": {"doc_id": {"type": "keyword"}}}})

    client.bulk(body=[{"index": {"_index": "visible"}}, {"doc_id": "a"}])

    assert client.count(index="visible")["count"] == 1
    assert client.search(index="visible", body={"query": {"term": {"doc_id": "a"}}})["hits"]["total"]["value"] == 1

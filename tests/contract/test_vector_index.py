"""Contract suite for the VectorIndex port.

Every adapter of ``mnemo.ports.VectorIndex`` must pass these tests unchanged.
Adapters are registered in ``BACKENDS``: each entry takes pytest's ``request`` and
``tmp_path`` and returns an *opener*, a callable that opens a new handle on one and the
same backing storage (two handles must see each other's writes).

Tests that issue k-NN queries take the ``knn_*`` fixtures, which run only on the backends
in ``KNN_BACKENDS``. The OpenSearch adapter runs against osmem-server, which serves the
OpenSearch API (CRUD, filters, BM25, msearch, aggregations) but answers the ``knn`` query
with 400 ``unsupported_operation_exception``; its k-NN request bodies and score
conversion are checked in test_opensearch_requests.py instead. Every behaviour a k-NN test
checks besides the k-NN answer itself (replacement, deletion, filters, namespaces, other
handles, dimensions) also has a lexical twin below that runs on every backend.

osmem makes writes searchable at once, so the harness never refreshes (and neither does
the adapter: OpenSearch Serverless refuses refresh).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from mnemo.adapters.aws.opensearch.adapter import OpenSearchVectorIndex
from mnemo.adapters.aws.opensearch.client import make_client
from mnemo.adapters.aws.s3vectors.adapter import S3VectorsIndex
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Hit, IndexDoc, VectorIndex

Opener = Callable[[], VectorIndex]
Backend = Callable[[pytest.FixtureRequest, Path], Opener]
NS = "t=acme|user|u=alice"


def _local_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    path = tmp_path / "vectors.db"
    return lambda: LocalVectorIndex(path)


def _opensearch_backend(*, serverless: bool) -> Backend:
    """Handles on a fresh osmem clone (one per test; the server is one per session)."""

    def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
        url = request.getfixturevalue("osmem_clone").url
        service = "aoss" if serverless else "es"

        def open_index() -> VectorIndex:
            return OpenSearchVectorIndex(
                lambda: make_client(url, None, service, endpoint_is_local=True),
                index_prefix="mnemo-contract-",
                serverless=serverless,
            )

        return open_index

    return backend


def _s3vectors_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Handles on a fresh vector bucket of the serial moto server, with QueryVectors from s3vectors_fake."""
    from aws_fixtures import shared_moto_server
    from s3vectors_fake import install

    install()
    client = shared_moto_server().client("s3vectors")
    bucket = f"contract-{next(_BUCKETS)}"
    client.create_vector_bucket(vectorBucketName=bucket)
    return lambda: S3VectorsIndex(lambda: shared_moto_server().client("s3vectors"), bucket, "mnemo-contract-")


_BUCKETS = itertools.count()


#: Adapter name -> factory of an opener over fresh storage; every entry runs the whole suite
#: (the k-NN tests only where the backend answers k-NN queries, see KNN_BACKENDS).
BACKENDS: dict[str, Backend] = {
    "local": _local_backend,
    # _id = memory id: a managed OpenSearch domain.
    "opensearch": _opensearch_backend(serverless=False),
    # _id chosen by OpenSearch, documents found through doc_id: a Serverless vector collection.
    "opensearch-serverless": _opensearch_backend(serverless=True),
    # One index per namespace in a vector bucket (moto, QueryVectors from tests/support/s3vectors_fake.py).
    "s3vectors": _s3vectors_backend,
}

#: Backends whose storage answers k-NN queries. osmem-server has no k-NN, so the OpenSearch
#: entries are not here; on a real cluster they would be.
KNN_BACKENDS = {"local", "s3vectors"}


@pytest.fixture(params=list(BACKENDS))
def index_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def index(index_opener: Opener) -> VectorIndex:
    return index_opener()


@pytest.fixture(params=[name for name in BACKENDS if name in KNN_BACKENDS])
def knn_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def knn_index(knn_opener: Opener) -> VectorIndex:
    return knn_opener()


def unit(*components: float) -> list[float]:
    vector = np.asarray(components, dtype=np.float64)
    return (vector / np.linalg.norm(vector)).tolist()


E1 = unit(1, 0, 0, 0)
E2 = unit(0, 1, 0, 0)
E3 = unit(0, 0, 1, 0)
E4 = unit(0, 0, 0, 1)
E12 = unit(1, 1, 0, 0)  # cos 0.7071 to E1 and E2
E1_NEAR = unit(3, 1, 0, 0)  # cos 0.9487 to E1


def ids(hits: Sequence[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def doc(doc_id: str, vector: Sequence[float], text: str = "", **keywords: list[str]) -> IndexDoc:
    return IndexDoc(doc_id, vector, text or doc_id, dict(keywords))


# -------------------------------------------------------------------- knn ---
@pytest.fixture
def geometry(knn_index: VectorIndex) -> VectorIndex:
    knn_index.upsert(
        NS,
        [
            doc("far", E3),
            doc("exact", E1),
            doc("mid", E12),
            doc("near", E1_NEAR),
            doc("orthogonal", E4),
        ],
    )
    return knn_index


def test_knn_returns_nearest_first_with_cosine_scores(geometry: VectorIndex) -> None:
    hits = geometry.knn(NS, E1, {}, 3)

    assert ids(hits) == ["exact", "near", "mid"]
    assert [hit.score for hit in hits] == pytest.approx(
        [1.0, float(np.dot(E1, E1_NEAR)), float(np.dot(E1, E12))], abs=1e-5
    )


def test_knn_scores_are_dot_products_of_unit_vectors(geometry: VectorIndex) -> None:
    query = unit(1, 2, 3, 4)
    vectors = {"far": E3, "exact": E1, "mid": E12, "near": E1_NEAR, "orthogonal": E4}

    hits = geometry.knn(NS, query, {}, 10)

    expected = sorted(vectors, key=lambda name: -float(np.dot(query, vectors[name])))
    assert ids(hits) == expected
    for hit in hits:
        assert hit.score == pytest.approx(float(np.dot(query, vectors[hit.id])), abs=1e-5)


def test_knn_scores_can_be_negative(knn_index: VectorIndex) -> None:
    knn_index.upsert(NS, [doc("same", E1), doc("opposite", [-x for x in E1]), doc("away", unit(-1, 1, 0, 0))])

    hits = knn_index.knn(NS, E1, {}, 10)

    assert ids(hits) == ["same", "away", "opposite"]
    assert [hit.score for hit in hits] == pytest.approx([1.0, -(2**-0.5), -1.0], abs=1e-5)


def test_knn_respects_k(geometry: VectorIndex) -> None:
    assert ids(geometry.knn(NS, E1, {}, 1)) == ["exact"]
    assert len(geometry.knn(NS, E1, {}, 2)) == 2
    assert len(geometry.knn(NS, E1, {}, 100)) == 5


def test_knn_on_an_empty_namespace_is_empty(index: VectorIndex) -> None:
    assert index.knn("nothing-here", E1, {}, 5) == []


def test_knn_hits_carry_the_docs_keywords(knn_index: VectorIndex) -> None:
    knn_index.upsert(NS, [doc("a", E1, "alpha", scope=["s1"], tags=["x", "y"]), doc("b", E2, "beta")])

    hits = {hit.id: hit for hit in knn_index.knn(NS, E1, {}, 10)}

    assert hits["a"].keywords == {"scope": ["s1"], "tags": ["x", "y"]}
    assert hits["b"].keywords == {}


# ---------------------------------------------------------------- filters ---
def _tag(index: VectorIndex) -> VectorIndex:
    index.upsert(
        NS,
        [
            doc("a", E1, "coffee in the morning", scope=["s1"], tags=["food", "habit"]),
            doc("b", E1_NEAR, "coffee after lunch", scope=["s2"], tags=["food"]),
            doc("c", E12, "coffee with friends", scope=["s3"], tags=["social"]),
            doc("d", E2, "coffee notes without tags", scope=["s1"]),
        ],
    )
    return index


@pytest.fixture
def tagged(index: VectorIndex) -> VectorIndex:
    return _tag(index)


@pytest.fixture
def knn_tagged(knn_index: VectorIndex) -> VectorIndex:
    return _tag(knn_index)


def test_filter_field_matches_any_of_its_values(knn_tagged: VectorIndex) -> None:
    hits = knn_tagged.knn(NS, E1, {"scope": ["s1", "s3"]}, 10)

    assert sorted(ids(hits)) == ["a", "c", "d"]
    assert ids(hits)[0] == "a"


def test_filter_field_matches_any_of_its_values_lexically(tagged: VectorIndex) -> None:
    assert sorted(ids(tagged.lexical(NS, "coffee", {"scope": ["s1", "s3"]}, 10))) == ["a", "c", "d"]
    assert sorted(ids(tagged.lexical(NS, "coffee", {"tags": ["habit", "social"]}, 10))) == ["a", "c"]


def test_filter_fields_are_anded(knn_tagged: VectorIndex) -> None:
    assert ids(knn_tagged.knn(NS, E1, {"scope": ["s1"], "tags": ["food"]}, 10)) == ["a"]
    assert sorted(ids(knn_tagged.knn(NS, E1, {"scope": ["s1", "s2"], "tags": ["food"]}, 10))) == ["a", "b"]
    assert knn_tagged.knn(NS, E1, {"scope": ["s3"], "tags": ["food"]}, 10) == []


def test_filter_fields_are_anded_lexically(tagged: VectorIndex) -> None:
    assert ids(tagged.lexical(NS, "coffee", {"scope": ["s1"], "tags": ["food"]}, 10)) == ["a"]
    assert sorted(ids(tagged.lexical(NS, "coffee", {"scope": ["s1", "s2"], "tags": ["food"]}, 10))) == ["a", "b"]
    assert tagged.lexical(NS, "coffee", {"scope": ["s3"], "tags": ["food"]}, 10) == []


def test_filter_on_a_field_a_doc_lacks_excludes_it(knn_tagged: VectorIndex) -> None:
    assert "d" not in ids(knn_tagged.knn(NS, E2, {"tags": ["food", "habit", "social"]}, 10))


def test_filter_on_a_field_a_doc_lacks_excludes_it_lexically(tagged: VectorIndex) -> None:
    hits = tagged.lexical(NS, "coffee notes", {"tags": ["food", "habit", "social"]}, 10)

    assert sorted(ids(hits)) == ["a", "b", "c"]


def test_filter_matching_nothing_returns_empty(knn_tagged: VectorIndex) -> None:
    assert knn_tagged.knn(NS, E1, {"scope": ["nope"]}, 10) == []
    assert knn_tagged.knn(NS, E1, {"unknown-field": ["s1"]}, 10) == []
    assert knn_tagged.lexical(NS, "coffee", {"scope": ["nope"]}, 10) == []


def test_filter_matching_nothing_returns_empty_lexically(tagged: VectorIndex) -> None:
    assert tagged.lexical(NS, "coffee", {"scope": ["nope"]}, 10) == []
    assert tagged.lexical(NS, "coffee", {"unknown-field": ["s1"]}, 10) == []
    assert tagged.lexical(NS, "coffee", {"scope": []}, 10) == []


def test_filters_apply_to_lexical(tagged: VectorIndex) -> None:
    assert sorted(ids(tagged.lexical(NS, "coffee", {}, 10))) == ["a", "b", "c", "d"]
    assert sorted(ids(tagged.lexical(NS, "coffee", {"scope": ["s1"]}, 10))) == ["a", "d"]
    assert ids(tagged.lexical(NS, "coffee", {"scope": ["s1"], "tags": ["habit"]}, 10)) == ["a"]


def test_lexical_hits_carry_the_docs_keywords(tagged: VectorIndex) -> None:
    hits = {hit.id: hit.keywords for hit in tagged.lexical(NS, "coffee", {}, 10)}

    assert hits == {
        "a": {"scope": ["s1"], "tags": ["food", "habit"]},
        "b": {"scope": ["s2"], "tags": ["food"]},
        "c": {"scope": ["s3"], "tags": ["social"]},
        "d": {"scope": ["s1"]},
    }


def test_filter_values_may_hold_any_characters(index: VectorIndex) -> None:
    odd = {"meta.key=x": ['"quoted, = and | too"'], "scope": ["t=acme|user|u=alice"]}
    index.upsert(NS, [doc("odd", E1, "unusual keywords", **odd), doc("plain", E2, "unusual but plain")])

    hits = index.lexical(NS, "unusual", {"meta.key=x": ['"quoted, = and | too"']}, 10)

    assert ids(hits) == ["odd"]
    assert hits[0].keywords == odd
    assert ids(index.lexical(NS, "unusual", {"scope": ["t=acme|user|u=alice"]}, 10)) == ["odd"]
    assert index.lexical(NS, "unusual", {"meta.key": ['x="quoted, = and | too"']}, 10) == []


# ----------------------------------------------------------------- upsert ---
def test_upsert_of_an_existing_id_replaces_it(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert(NS, [doc("m", E1, "apples are red", scope=["old"]), doc("other", E2, "grapes")])

    index.upsert(NS, [doc("m", E4, "bananas are yellow", scope=["new"])])

    assert index.count(NS) == 2
    hits = index.knn(NS, E4, {}, 10)
    assert ids(hits).count("m") == 1
    assert ids(hits)[0] == "m"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert {hit.id: hit.score for hit in index.knn(NS, E1, {}, 10)}["m"] == pytest.approx(0.0, abs=1e-5)
    assert index.lexical(NS, "apples", {}, 10) == []
    assert ids(index.lexical(NS, "bananas", {}, 10)) == ["m"]
    assert index.knn(NS, E4, {"scope": ["old"]}, 10) == []
    assert ids(index.knn(NS, E4, {"scope": ["new"]}, 10)) == ["m"]


def test_upsert_of_an_existing_id_replaces_it_lexically(index: VectorIndex) -> None:
    index.upsert(NS, [doc("m", E1, "apples are red", scope=["old"]), doc("other", E2, "grapes")])

    index.upsert(NS, [doc("m", E4, "bananas are yellow", scope=["new"])])

    assert index.count(NS) == 2
    assert index.lexical(NS, "apples", {}, 10) == []
    hits = index.lexical(NS, "bananas", {}, 10)
    assert ids(hits) == ["m"]
    assert hits[0].keywords == {"scope": ["new"]}
    assert index.lexical(NS, "bananas", {"scope": ["old"]}, 10) == []
    assert ids(index.lexical(NS, "bananas", {"scope": ["new"]}, 10)) == ["m"]
    assert ids(index.lexical(NS, "grapes", {}, 10)) == ["other"]


def test_an_upsert_repeating_an_id_keeps_the_last(index: VectorIndex) -> None:
    index.upsert(NS, [doc("m", E1, "first words"), doc("m", E2, "second words"), doc("n", E3, "other words")])

    assert index.count(NS) == 2
    assert index.lexical(NS, "first", {}, 10) == []
    assert ids(index.lexical(NS, "second", {}, 10)) == ["m"]


def test_upsert_of_nothing_is_a_no_op(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1)])
    index.upsert(NS, [])

    assert index.count(NS) == 1


# ----------------------------------------------------------------- delete ---
def test_delete_removes_from_knn_and_lexical(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert(NS, [doc("keep", E2, "tea in the garden"), doc("gone", E1, "tea in the kitchen")])

    index.delete(NS, ["gone"])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E1, {}, 10)) == ["keep"]
    assert ids(index.lexical(NS, "tea kitchen", {}, 10)) == ["keep"]
    assert index.lexical(NS, "kitchen", {}, 10) == []


def test_delete_removes_from_lexical_and_count(index: VectorIndex) -> None:
    index.upsert(NS, [doc("keep", E2, "tea in the garden"), doc("gone", E1, "tea in the kitchen")])

    index.delete(NS, ["gone"])

    assert index.count(NS) == 1
    assert ids(index.lexical(NS, "tea kitchen", {}, 10)) == ["keep"]
    assert index.lexical(NS, "kitchen", {}, 10) == []


def test_delete_of_unknown_ids_is_harmless(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert(NS, [doc("a", E1)])

    index.delete(NS, ["never-there"])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E1, {}, 10)) == ["a"]


def test_delete_of_unknown_ids_is_harmless_lexically(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1, "still here")])

    index.delete(NS, ["never-there"])
    index.delete(NS, [])
    index.delete("never-written", ["a"])

    assert index.count(NS) == 1
    assert ids(index.lexical(NS, "still", {}, 10)) == ["a"]
    assert index.count("never-written") == 0


def test_a_deleted_id_can_be_upserted_again(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert(NS, [doc("a", E1, "first text")])
    index.delete(NS, ["a"])

    index.upsert(NS, [doc("a", E2, "second text")])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E2, {}, 10)) == ["a"]
    assert index.knn(NS, E2, {}, 10)[0].score == pytest.approx(1.0, abs=1e-5)
    assert index.lexical(NS, "first", {}, 10) == []


def test_a_deleted_id_can_be_upserted_again_lexically(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1, "first text")])
    index.delete(NS, ["a"])
    assert index.count(NS) == 0

    index.upsert(NS, [doc("a", E2, "second text")])

    assert index.count(NS) == 1
    assert ids(index.lexical(NS, "second", {}, 10)) == ["a"]
    assert index.lexical(NS, "first", {}, 10) == []


# ---------------------------------------------------------------- lexical ---
@pytest.fixture
def texts(index: VectorIndex) -> VectorIndex:
    index.upsert(
        NS,
        [
            doc("pref", E1, "Alice prefers dark roast coffee in the morning"),
            doc("run", E2, "Bob runs along the river every evening"),
            doc("coffee3", E3, "coffee coffee coffee tea"),
            doc("weather", E4, "The weather was nice on Sunday"),
        ],
    )
    return index


def test_lexical_returns_hits_best_first_with_scores_in_unit_interval(texts: VectorIndex) -> None:
    hits = texts.lexical(NS, "coffee", {}, 10)

    assert ids(hits) == ["coffee3", "pref"]
    assert all(0.0 < hit.score <= 1.0 for hit in hits)
    assert hits[0].score > hits[1].score


def test_lexical_scores_are_sorted_and_respect_k(texts: VectorIndex) -> None:
    hits = texts.lexical(NS, "coffee river weather", {}, 10)

    assert sorted(ids(hits)) == ["coffee3", "pref", "run", "weather"]
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 < score <= 1.0 for score in scores)
    assert ids(texts.lexical(NS, "coffee river weather", {}, 2)) == ids(hits)[:2]


def test_lexical_matches_stems(texts: VectorIndex) -> None:
    assert ids(texts.lexical(NS, "running", {}, 10)) == ["run"]
    assert ids(texts.lexical(NS, "preferences", {}, 10)) == ["pref"]
    assert ids(texts.lexical(NS, "ROASTS", {}, 10)) == ["pref"]


def test_lexical_stop_words_alone_match_nothing(texts: VectorIndex) -> None:
    assert texts.lexical(NS, "the", {}, 10) == []
    assert texts.lexical(NS, "the and of in on was", {}, 10) == []


def test_lexical_unknown_words_match_nothing(texts: VectorIndex) -> None:
    assert texts.lexical(NS, "zebra quantum", {}, 10) == []
    assert texts.lexical(NS, "", {}, 10) == []


# ------------------------------------------------------------- namespaces ---
def test_namespaces_are_isolated(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert("ns-a", [doc("x", E1, "alpha text"), doc("only-a", E2, "shared words")])
    index.upsert("ns-b", [doc("x", E3, "beta text")])

    assert index.count("ns-a") == 2
    assert index.count("ns-b") == 1
    assert sorted(ids(index.knn("ns-a", E1, {}, 10))) == ["only-a", "x"]
    assert index.knn("ns-a", E1, {}, 10)[0].score == pytest.approx(1.0, abs=1e-5)
    assert index.knn("ns-b", E3, {}, 10)[0].score == pytest.approx(1.0, abs=1e-5)
    assert ids(index.knn("ns-b", E1, {}, 10)) == ["x"]
    assert index.lexical("ns-b", "alpha", {}, 10) == []
    assert index.lexical("ns-a", "beta", {}, 10) == []

    index.delete("ns-b", ["x"])
    assert index.count("ns-b") == 0
    assert ids(index.lexical("ns-a", "alpha", {}, 10)) == ["x"]

    index.clear("ns-a")
    assert index.count("ns-a") == 0
    index.upsert("ns-b", [doc("y", E4, "gamma")])
    assert index.count("ns-b") == 1


def test_namespaces_are_isolated_lexically(index: VectorIndex) -> None:
    index.upsert("ns-a", [doc("x", E1, "alpha text"), doc("only-a", E2, "shared words")])
    index.upsert("ns-b", [doc("x", E3, "beta text")])
    index.upsert("NS-A", [doc("upper", E4, "alpha in capitals")])  # namespaces are case-sensitive

    assert index.count("ns-a") == 2
    assert index.count("ns-b") == 1
    assert index.count("NS-A") == 1
    assert sorted(ids(index.lexical("ns-a", "alpha shared", {}, 10))) == ["only-a", "x"]
    assert ids(index.lexical("ns-b", "text", {}, 10)) == ["x"]
    assert index.lexical("ns-b", "alpha", {}, 10) == []
    assert index.lexical("ns-a", "beta", {}, 10) == []
    assert ids(index.lexical("NS-A", "alpha", {}, 10)) == ["upper"]

    index.delete("ns-b", ["x"])
    assert index.count("ns-b") == 0
    assert ids(index.lexical("ns-a", "alpha", {}, 10)) == ["x"]

    index.clear("ns-a")
    assert index.count("ns-a") == 0
    assert index.lexical("ns-a", "alpha", {}, 10) == []
    assert index.count("NS-A") == 1
    index.upsert("ns-b", [doc("y", E4, "gamma")])
    assert index.count("ns-b") == 1


# ----------------------------------------------------------- count, clear ---
def test_count_and_clear(knn_index: VectorIndex) -> None:
    index = knn_index
    assert index.count(NS) == 0
    index.upsert(NS, [doc("a", E1, "one"), doc("b", E2, "two"), doc("c", E3, "three")])
    assert index.count(NS) == 3

    index.clear(NS)

    assert index.count(NS) == 0
    assert index.knn(NS, E1, {}, 10) == []
    assert index.lexical(NS, "one two three", {}, 10) == []

    index.upsert(NS, [doc("d", E4, "four")])
    assert index.count(NS) == 1
    assert ids(index.knn(NS, E4, {}, 10)) == ["d"]


def test_count_and_clear_lexically(index: VectorIndex) -> None:
    assert index.count(NS) == 0
    index.clear(NS)  # clearing what was never written is harmless
    index.upsert(NS, [doc("a", E1, "one"), doc("b", E2, "two"), doc("c", E3, "three")])
    assert index.count(NS) == 3

    index.clear(NS)

    assert index.count(NS) == 0
    assert index.lexical(NS, "one two three", {}, 10) == []

    index.upsert(NS, [doc("d", E4, "four")])
    assert index.count(NS) == 1
    assert ids(index.lexical(NS, "one two three four", {}, 10)) == ["d"]


# ------------------------------------------------------------ persistence ---
def test_a_second_instance_sees_persisted_docs(knn_opener: Opener) -> None:
    first = knn_opener()
    first.upsert(NS, [doc("a", E1, "persisted memory", scope=["s1"]), doc("b", E2, "another one")])

    second = knn_opener()

    assert second.count(NS) == 2
    hits = second.knn(NS, E1, {}, 10)
    assert ids(hits) == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert ids(second.knn(NS, E2, {"scope": ["s1"]}, 10)) == ["a"]
    assert ids(second.lexical(NS, "persisted", {}, 10)) == ["a"]


def test_a_second_instance_sees_persisted_docs_lexically(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1, "persisted memory", scope=["s1"]), doc("b", E2, "another memory")])

    second = index_opener()

    assert second.count(NS) == 2
    assert ids(second.lexical(NS, "persisted", {}, 10)) == ["a"]
    assert ids(second.lexical(NS, "memory", {"scope": ["s1"]}, 10)) == ["a"]
    assert sorted(ids(second.lexical(NS, "memory", {}, 10))) == ["a", "b"]


def test_deletes_and_clears_are_persisted(knn_opener: Opener) -> None:
    first = knn_opener()
    first.upsert(NS, [doc("a", E1), doc("b", E2)])
    first.upsert("other", [doc("c", E3)])
    first.delete(NS, ["a"])
    first.clear("other")

    second = knn_opener()

    assert second.count(NS) == 1
    assert ids(second.knn(NS, E1, {}, 10)) == ["b"]
    assert second.count("other") == 0


def test_deletes_and_clears_are_persisted_lexically(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1, "apple"), doc("b", E2, "banana")])
    first.upsert("other", [doc("c", E3, "cherry")])
    first.delete(NS, ["a"])
    first.clear("other")

    second = index_opener()

    assert second.count(NS) == 1
    assert second.lexical(NS, "apple", {}, 10) == []
    assert ids(second.lexical(NS, "banana", {}, 10)) == ["b"]
    assert second.count("other") == 0
    assert second.lexical("other", "cherry", {}, 10) == []


def test_an_instance_sees_writes_made_by_another_after_it_loaded(knn_opener: Opener) -> None:
    writer, reader = knn_opener(), knn_opener()
    writer.upsert(NS, [doc("old", E2, "old memory")])
    assert ids(reader.knn(NS, E1, {}, 10)) == ["old"]  # reader has now loaded the namespace

    writer.upsert(NS, [doc("new", E1, "fresh memory")])

    assert ids(reader.knn(NS, E1, {}, 10)) == ["new", "old"]
    assert ids(reader.lexical(NS, "fresh", {}, 10)) == ["new"]
    assert reader.count(NS) == 2

    writer.delete(NS, ["old"])
    assert ids(reader.knn(NS, E1, {}, 10)) == ["new"]

    writer.clear(NS)
    assert reader.count(NS) == 0
    assert reader.knn(NS, E1, {}, 10) == []


def test_an_instance_sees_writes_made_by_another_after_it_loaded_lexically(index_opener: Opener) -> None:
    writer, reader = index_opener(), index_opener()
    writer.upsert(NS, [doc("old", E2, "old memory")])
    assert ids(reader.lexical(NS, "memory", {}, 10)) == ["old"]  # reader has now loaded the namespace

    writer.upsert(NS, [doc("new", E1, "fresh memory")])

    assert sorted(ids(reader.lexical(NS, "memory", {}, 10))) == ["new", "old"]
    assert ids(reader.lexical(NS, "fresh", {}, 10)) == ["new"]
    assert reader.count(NS) == 2

    writer.delete(NS, ["old"])
    assert ids(reader.lexical(NS, "memory", {}, 10)) == ["new"]

    writer.clear(NS)
    assert reader.count(NS) == 0
    assert reader.lexical(NS, "memory", {}, 10) == []


def test_writes_from_both_instances_are_kept(knn_opener: Opener) -> None:
    first, second = knn_opener(), knn_opener()
    first.upsert(NS, [doc("a", E1)])
    assert second.count(NS) == 1

    second.upsert(NS, [doc("b", E2)])
    first.upsert(NS, [doc("c", E3)])

    assert sorted(ids(first.knn(NS, E1, {}, 10))) == ["a", "b", "c"]
    assert sorted(ids(second.knn(NS, E1, {}, 10))) == ["a", "b", "c"]


def test_writes_from_both_instances_are_kept_lexically(index_opener: Opener) -> None:
    first, second = index_opener(), index_opener()
    first.upsert(NS, [doc("a", E1, "shared alpha")])
    assert second.count(NS) == 1

    second.upsert(NS, [doc("b", E2, "shared beta")])
    first.upsert(NS, [doc("c", E3, "shared gamma")])

    assert sorted(ids(first.lexical(NS, "shared", {}, 10))) == ["a", "b", "c"]
    assert sorted(ids(second.lexical(NS, "shared", {}, 10))) == ["a", "b", "c"]
    assert first.count(NS) == second.count(NS) == 3


# -------------------------------------------------------------- dimension ---
def test_upsert_of_a_vector_of_the_wrong_dimension_raises(knn_index: VectorIndex) -> None:
    index = knn_index
    index.upsert(NS, [doc("a", E1, "four dimensions")])

    with pytest.raises(ValueError):
        index.upsert(NS, [doc("b", unit(1, 0, 0), "three dimensions")])

    hits = index.knn(NS, E1, {}, 10)
    assert ids(hits) == ["a"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_upsert_of_a_vector_of_the_wrong_dimension_raises_lexically(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1, "four dimensions")])

    with pytest.raises(ValueError):
        index.upsert(NS, [doc("b", unit(1, 0, 0), "three dimensions")])

    assert index.count(NS) == 1
    assert ids(index.lexical(NS, "dimensions", {}, 10)) == ["a"]


def test_a_rejected_upsert_writes_nothing(knn_opener: Opener) -> None:
    first = knn_opener()
    first.upsert(NS, [doc("a", E1, "kept")])
    with pytest.raises(ValueError):
        first.upsert(NS, [doc("a", E2, "good replacement"), doc("b", unit(1, 0, 0), "bad")])
    assert ids(first.knn(NS, E1, {}, 10)) == ["a"]
    reopened = knn_opener()
    assert reopened.count(NS) == 1
    assert first.knn(NS, E1, {}, 1)[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_rejected_upsert_writes_nothing_lexically(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1, "kept")])
    with pytest.raises(ValueError):
        first.upsert(NS, [doc("a", E2, "good replacement"), doc("b", unit(1, 0, 0), "bad")])
    with pytest.raises(ValueError):
        first.upsert(NS, [doc("c", unit(1, 0, 0), "bad first"), doc("d", E2, "good second")])
    reopened = index_opener()
    assert reopened.count(NS) == 1
    assert ids(reopened.lexical(NS, "kept", {}, 10)) == ["a"]
    assert reopened.lexical(NS, "replacement bad good", {}, 10) == []


def test_a_namespace_cleared_by_another_instance_may_come_back_with_another_dimension(index_opener: Opener) -> None:
    first, second = index_opener(), index_opener()
    first.upsert(NS, [doc("a", E1, "four dimensions")])
    second.upsert(NS, [doc("b", E2, "four too")])  # second has seen the namespace at 4 dimensions

    first.clear(NS)
    first.upsert(NS, [doc("c", unit(1, 0, 0), "three dimensions")])
    second.upsert(NS, [doc("d", unit(0, 1, 0), "three too")])

    assert second.count(NS) == 2
    with pytest.raises(ValueError):
        second.upsert(NS, [doc("e", E1, "four again")])
    assert sorted(ids(first.lexical(NS, "three", {}, 10))) == ["c", "d"]


def test_knn_with_a_query_of_the_wrong_dimension_raises(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1)])

    with pytest.raises(ValueError):
        index.knn(NS, unit(1, 0, 0), {}, 10)


# ------------------------------------------------------------ keywords_of ---
def test_keywords_of_answers_the_held_docs_filter_fields_by_id(index_opener: Opener) -> None:
    index = index_opener()
    index.upsert(NS, [doc("a", E1, scope=["t=acme|user|u=alice"]), doc("b", E2, scope=["t=globex|user|u=eve"])])
    index.upsert("other", [doc("c", E3, scope=["t=acme|user|u=alice"])])
    index.delete(NS, ["b"])
    index.upsert(NS, [doc("a", E1, scope=["t=acme|user|u=bob"], kind=["memory"])])

    assert index.keywords_of(NS, ["a", "b", "c", "never"]) == {
        "a": {"scope": ["t=acme|user|u=bob"], "kind": ["memory"]}
    }
    assert index_opener().keywords_of(NS, ["a"])["a"]["scope"] == ["t=acme|user|u=bob"]  # another handle too
    assert index.keywords_of("empty", ["a"]) == {}
    assert index.keywords_of(NS, []) == {}

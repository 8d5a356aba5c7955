"""Contract suite for the VectorIndex port.

Every adapter of ``mnemo.ports.VectorIndex`` must pass these tests unchanged.
Adapters are registered in ``BACKENDS``: each entry takes pytest's ``tmp_path``
and returns an *opener*, a callable that opens a new handle on one and the same
backing storage (two handles must see each other's writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Hit, IndexDoc, VectorIndex

Opener = Callable[[], VectorIndex]
NS = "t=acme|user|u=alice"


def _local_backend(tmp_path: Path) -> Opener:
    path = tmp_path / "vectors.db"
    return lambda: LocalVectorIndex(path)


#: Adapter name -> factory of an opener over fresh storage; every entry runs the whole suite.
#: The AWS adapter joins as a second entry, e.g. "opensearch": a factory that creates a
#: uniquely named index and returns an opener of clients on it.
BACKENDS: dict[str, Callable[[Path], Opener]] = {
    "local": _local_backend,
}


@pytest.fixture(params=list(BACKENDS))
def index_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
def index(index_opener: Opener) -> VectorIndex:
    return index_opener()


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
def geometry(index: VectorIndex) -> VectorIndex:
    index.upsert(
        NS,
        [
            doc("far", E3),
            doc("exact", E1),
            doc("mid", E12),
            doc("near", E1_NEAR),
            doc("orthogonal", E4),
        ],
    )
    return index


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


def test_knn_respects_k(geometry: VectorIndex) -> None:
    assert ids(geometry.knn(NS, E1, {}, 1)) == ["exact"]
    assert len(geometry.knn(NS, E1, {}, 2)) == 2
    assert len(geometry.knn(NS, E1, {}, 100)) == 5


def test_knn_on_an_empty_namespace_is_empty(index: VectorIndex) -> None:
    assert index.knn("nothing-here", E1, {}, 5) == []


# ---------------------------------------------------------------- filters ---
@pytest.fixture
def tagged(index: VectorIndex) -> VectorIndex:
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


def test_filter_field_matches_any_of_its_values(tagged: VectorIndex) -> None:
    hits = tagged.knn(NS, E1, {"scope": ["s1", "s3"]}, 10)

    assert sorted(ids(hits)) == ["a", "c", "d"]
    assert ids(hits)[0] == "a"


def test_filter_fields_are_anded(tagged: VectorIndex) -> None:
    assert ids(tagged.knn(NS, E1, {"scope": ["s1"], "tags": ["food"]}, 10)) == ["a"]
    assert sorted(ids(tagged.knn(NS, E1, {"scope": ["s1", "s2"], "tags": ["food"]}, 10))) == ["a", "b"]
    assert tagged.knn(NS, E1, {"scope": ["s3"], "tags": ["food"]}, 10) == []


def test_filter_on_a_field_a_doc_lacks_excludes_it(tagged: VectorIndex) -> None:
    assert "d" not in ids(tagged.knn(NS, E2, {"tags": ["food", "habit", "social"]}, 10))


def test_filter_matching_nothing_returns_empty(tagged: VectorIndex) -> None:
    assert tagged.knn(NS, E1, {"scope": ["nope"]}, 10) == []
    assert tagged.knn(NS, E1, {"unknown-field": ["s1"]}, 10) == []
    assert tagged.lexical(NS, "coffee", {"scope": ["nope"]}, 10) == []


def test_filters_apply_to_lexical(tagged: VectorIndex) -> None:
    assert sorted(ids(tagged.lexical(NS, "coffee", {}, 10))) == ["a", "b", "c", "d"]
    assert sorted(ids(tagged.lexical(NS, "coffee", {"scope": ["s1"]}, 10))) == ["a", "d"]
    assert ids(tagged.lexical(NS, "coffee", {"scope": ["s1"], "tags": ["habit"]}, 10)) == ["a"]


# ----------------------------------------------------------------- upsert ---
def test_upsert_of_an_existing_id_replaces_it(index: VectorIndex) -> None:
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


def test_upsert_of_nothing_is_a_no_op(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1)])
    index.upsert(NS, [])

    assert index.count(NS) == 1


# ----------------------------------------------------------------- delete ---
def test_delete_removes_from_knn_and_lexical(index: VectorIndex) -> None:
    index.upsert(NS, [doc("keep", E2, "tea in the garden"), doc("gone", E1, "tea in the kitchen")])

    index.delete(NS, ["gone"])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E1, {}, 10)) == ["keep"]
    assert ids(index.lexical(NS, "tea kitchen", {}, 10)) == ["keep"]
    assert index.lexical(NS, "kitchen", {}, 10) == []


def test_delete_of_unknown_ids_is_harmless(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1)])

    index.delete(NS, ["never-there"])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E1, {}, 10)) == ["a"]


def test_a_deleted_id_can_be_upserted_again(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1, "first text")])
    index.delete(NS, ["a"])

    index.upsert(NS, [doc("a", E2, "second text")])

    assert index.count(NS) == 1
    assert ids(index.knn(NS, E2, {}, 10)) == ["a"]
    assert index.knn(NS, E2, {}, 10)[0].score == pytest.approx(1.0, abs=1e-5)
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
def test_namespaces_are_isolated(index: VectorIndex) -> None:
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


# ----------------------------------------------------------- count, clear ---
def test_count_and_clear(index: VectorIndex) -> None:
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


# ------------------------------------------------------------ persistence ---
def test_a_second_instance_sees_persisted_docs(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1, "persisted memory", scope=["s1"]), doc("b", E2, "another one")])

    second = index_opener()

    assert second.count(NS) == 2
    hits = second.knn(NS, E1, {}, 10)
    assert ids(hits) == ["a", "b"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert ids(second.knn(NS, E2, {"scope": ["s1"]}, 10)) == ["a"]
    assert ids(second.lexical(NS, "persisted", {}, 10)) == ["a"]


def test_deletes_and_clears_are_persisted(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1), doc("b", E2)])
    first.upsert("other", [doc("c", E3)])
    first.delete(NS, ["a"])
    first.clear("other")

    second = index_opener()

    assert second.count(NS) == 1
    assert ids(second.knn(NS, E1, {}, 10)) == ["b"]
    assert second.count("other") == 0


def test_an_instance_sees_writes_made_by_another_after_it_loaded(index_opener: Opener) -> None:
    writer, reader = index_opener(), index_opener()
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


def test_writes_from_both_instances_are_kept(index_opener: Opener) -> None:
    first, second = index_opener(), index_opener()
    first.upsert(NS, [doc("a", E1)])
    assert second.count(NS) == 1

    second.upsert(NS, [doc("b", E2)])
    first.upsert(NS, [doc("c", E3)])

    assert sorted(ids(first.knn(NS, E1, {}, 10))) == ["a", "b", "c"]
    assert sorted(ids(second.knn(NS, E1, {}, 10))) == ["a", "b", "c"]


# -------------------------------------------------------------- dimension ---
def test_upsert_of_a_vector_of_the_wrong_dimension_raises(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1, "four dimensions")])

    with pytest.raises(ValueError):
        index.upsert(NS, [doc("b", unit(1, 0, 0), "three dimensions")])

    hits = index.knn(NS, E1, {}, 10)
    assert ids(hits) == ["a"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_a_rejected_upsert_writes_nothing(index_opener: Opener) -> None:
    first = index_opener()
    first.upsert(NS, [doc("a", E1, "kept")])
    with pytest.raises(ValueError):
        first.upsert(NS, [doc("a", E2, "good replacement"), doc("b", unit(1, 0, 0), "bad")])
    assert ids(first.knn(NS, E1, {}, 10)) == ["a"]
    reopened = index_opener()
    assert reopened.count(NS) == 1
    assert first.knn(NS, E1, {}, 1)[0].score == pytest.approx(1.0, abs=1e-5)


def test_knn_with_a_query_of_the_wrong_dimension_raises(index: VectorIndex) -> None:
    index.upsert(NS, [doc("a", E1)])

    with pytest.raises(ValueError):
        index.knn(NS, unit(1, 0, 0), {}, 10)

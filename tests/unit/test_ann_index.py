"""The local index's HNSW path, its saved graph, its change log and vectorised BM25.

``exact_below=0`` sends every k-NN to the graph; the same data answered with a
huge ``exact_below`` is the reference. Indexes are a few thousand 16-dimension
vectors, where HNSW with efSearch 256 finds the true neighbours.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mnemo.adapters.local import ann
from mnemo.adapters.local.lexical import Bm25, analyse, idf, term_score
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.ports import Hit, IndexDoc

NS = "memory"
DIMS = 16
SIZE = 1500
EXACT = 10**9


def vectors(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((count, DIMS)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def docs(matrix: np.ndarray, start: int = 0) -> list[IndexDoc]:
    scopes = ["s1", "s2", "s3"]
    return [
        IndexDoc(
            f"d{start + i}",
            vector.tolist(),
            f"memory number {start + i} about {'coffee' if i % 2 else 'tea'}",
            {"scope": [scopes[(start + i) % 3]], "tags": ["even"] if (start + i) % 2 == 0 else []},
        )
        for i, vector in enumerate(matrix)
    ]


def ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def graph_files(path: Path) -> list[Path]:
    return sorted(Path(str(path) + ".ann").glob("*.faiss"))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.db"


@pytest.fixture
def filled(path: Path) -> Path:
    LocalVectorIndex(path).upsert(NS, docs(vectors(SIZE, 1)))
    return path


QUERIES = vectors(20, 2)


@pytest.mark.parametrize("storage", ["sq8", "fp16", "flat"])
def test_hnsw_answers_equal_exact_answers(filled: Path, storage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "STORAGE", storage)
    approximate, exact = LocalVectorIndex(filled, exact_below=0), LocalVectorIndex(filled, exact_below=EXACT)

    found = 0
    for query in QUERIES:
        got, want = approximate.knn(NS, query.tolist(), {}, 10), exact.knn(NS, query.tolist(), {}, 10)
        found += len(set(ids(got)) & set(ids(want)))
        scores = {hit.id: hit.score for hit in want}
        for hit in got:
            if hit.id in scores:  # re-scored from the float32 rows, whatever the graph stores
                assert hit.score == pytest.approx(scores[hit.id], abs=1e-6)
        assert [hit.score for hit in got] == sorted((hit.score for hit in got), reverse=True)

    assert found / (10 * len(QUERIES)) >= 0.98
    assert graph_files(filled), "the graph path was not taken"


@pytest.mark.parametrize("storage", ["sq8", "flat"])
def test_rescoring_ranks_the_graphs_candidates_by_their_exact_inner_product(
    storage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "RESCORE", 3)
    matrix = vectors(SIZE, 1)
    graph = ann.Graph.empty(DIMS, storage)
    graph.add(matrix)
    allowed = np.ones(SIZE, dtype=bool)
    allowed[::4] = False
    count = int(allowed.sum())

    for query in QUERIES:
        rows, scores = graph.search(query, allowed, count, 10, matrix)
        # The graph's own 3 * k nearest (by its stored vectors) ...
        candidates = graph.candidates(query, allowed, count, 30)
        assert candidates.shape == (30,)
        # ... ranked exactly: the ten best of them by the float32 inner product, with those scores.
        exact = matrix[candidates] @ query
        order = np.argsort(-exact, kind="stable")[:10]
        assert rows.tolist() == candidates[order].tolist()
        assert np.allclose(scores, exact[order], atol=1e-6)
        assert np.all(np.diff(scores) <= 0)
        assert allowed[rows].all()


@pytest.mark.parametrize("storage", ["sq8", "fp16", "flat"])
def test_a_graph_row_matches_only_the_vector_it_was_built_from(storage: str) -> None:
    matrix = vectors(200, 4)
    graph = ann.Graph.empty(DIMS, storage)
    graph.add(matrix)

    assert graph.matches(0, matrix).all()
    assert graph.matches(150, matrix[150:]).all()
    moved = matrix[10:20].copy()
    moved[::2] = -moved[::2]  # another vector: another code
    assert graph.matches(10, moved).tolist() == [False, True] * 5


def test_a_graph_saved_with_another_storage_is_still_used(filled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "STORAGE", "flat")
    first = LocalVectorIndex(filled, exact_below=0)
    expected = [ids(first.knn(NS, query.tolist(), {}, 10)) for query in QUERIES]
    (saved,) = graph_files(filled)
    monkeypatch.setattr(ann, "STORAGE", "sq8")

    second = LocalVectorIndex(filled, exact_below=0)

    assert [ids(second.knn(NS, query.tolist(), {}, 10)) for query in QUERIES] == expected
    assert json.loads(saved.with_suffix(".json").read_text())["storage"] == "flat"


def test_hnsw_respects_filters(filled: Path) -> None:
    approximate, exact = LocalVectorIndex(filled, exact_below=0), LocalVectorIndex(filled, exact_below=EXACT)

    for flt in ({"scope": ["s1"]}, {"scope": ["s2", "s3"]}, {"scope": ["s1", "s2"], "tags": ["even"]}):
        for query in QUERIES[:5]:
            got = approximate.knn(NS, query.tolist(), flt, 20)
            want = exact.knn(NS, query.tolist(), flt, 20)
            assert len(got) == 20
            assert all(hit.keywords["scope"][0] in flt["scope"] for hit in got)
            if "tags" in flt:
                assert all(hit.keywords["tags"] == ["even"] for hit in got)
            assert len(set(ids(got)) & set(ids(want))) >= 19
    assert approximate.knn(NS, QUERIES[0].tolist(), {"scope": ["nowhere"]}, 10) == []


def test_a_filter_allowing_few_rows_still_finds_them_all(filled: Path) -> None:
    index = LocalVectorIndex(filled, exact_below=0)
    index.upsert(NS, [IndexDoc("rare", QUERIES[0].tolist(), "rare one", {"scope": ["rare"]})])

    hits = index.knn(NS, QUERIES[1].tolist(), {"scope": ["rare"]}, 10)

    assert ids(hits) == ["rare"]


def test_hnsw_never_returns_deleted_or_replaced_vectors(filled: Path) -> None:
    index = LocalVectorIndex(filled, exact_below=0)
    query = QUERIES[3].tolist()
    before = ids(index.knn(NS, query, {}, 10))

    index.delete(NS, before[:5])
    index.upsert(NS, [IndexDoc(before[5], (-QUERIES[3]).tolist(), "moved away", {"scope": ["s1"]})])
    index.upsert(NS, [IndexDoc("new", query, "right on the query", {"scope": ["s2"]})])

    after = index.knn(NS, query, {}, 10)
    assert ids(after)[0] == "new"
    assert after[0].score == pytest.approx(1.0, abs=1e-5)
    assert not set(ids(after)) & set(before[:6])
    assert ids(index.knn(NS, (-QUERIES[3]).tolist(), {"scope": ["s1"]}, 1)) == [before[5]]
    assert index.count(NS) == SIZE - 5 + 1


def test_a_restart_reads_the_saved_graph(filled: Path) -> None:
    first = LocalVectorIndex(filled, exact_below=0)
    expected = [ids(first.knn(NS, query.tolist(), {"scope": ["s2"]}, 10)) for query in QUERIES]
    (saved,) = graph_files(filled)
    inode = saved.stat().st_ino

    second = LocalVectorIndex(filled, exact_below=0)

    assert [ids(second.knn(NS, query.tolist(), {"scope": ["s2"]}, 10)) for query in QUERIES] == expected
    assert saved.stat().st_ino == inode  # answered from the file it read, not from a graph built and saved anew


def test_a_stale_saved_graph_is_checked_row_by_row(filled: Path) -> None:
    LocalVectorIndex(filled, exact_below=0).knn(NS, QUERIES[0].tolist(), {}, 1)  # builds and saves the graph
    # Changed behind the saved graph's back: a handle that never builds one (exact) rewrites, deletes and adds.
    other = LocalVectorIndex(filled, exact_below=EXACT, persist_graph=False)
    other.upsert(NS, [IndexDoc("d7", QUERIES[4].tolist(), "moved onto query four", {"scope": ["s1"]})])
    other.delete(NS, ["d8", "d9"])
    other.upsert(NS, docs(vectors(50, 3), start=SIZE))

    reopened = LocalVectorIndex(filled, exact_below=0)
    exact = LocalVectorIndex(filled, exact_below=EXACT)

    assert reopened.count(NS) == SIZE - 2 + 50
    assert ids(reopened.knn(NS, QUERIES[4].tolist(), {}, 1)) == ["d7"]
    for query in [*QUERIES[:5], *vectors(5, 3)]:
        got = ids(reopened.knn(NS, query.tolist(), {}, 10))
        assert not {"d8", "d9"} & set(got)
        assert len(set(got) & set(ids(exact.knn(NS, query.tolist(), {}, 10)))) >= 9


@pytest.mark.parametrize("damage", ["flip", "truncate", "ids"])
def test_a_corrupt_saved_graph_is_ignored_and_replaced(filled: Path, damage: str) -> None:
    LocalVectorIndex(filled, exact_below=0).knn(NS, QUERIES[0].tolist(), {}, 1)
    (saved,) = graph_files(filled)
    meta = saved.with_suffix(".json")
    if damage == "flip":
        content = bytearray(saved.read_bytes())
        content[len(content) // 2] ^= 0xFF
        saved.write_bytes(bytes(content))
    elif damage == "truncate":
        saved.write_bytes(saved.read_bytes()[:1000])
    else:
        description = json.loads(meta.read_text())
        description["ids"] = description["ids"][:-1]
        meta.write_text(json.dumps(description))
    assert ann.load(saved.parent, NS) is None

    reopened = LocalVectorIndex(filled, exact_below=0)
    exact = LocalVectorIndex(filled, exact_below=EXACT)
    for query in QUERIES[:5]:
        got = ids(reopened.knn(NS, query.tolist(), {}, 10))
        assert len(set(got) & set(ids(exact.knn(NS, query.tolist(), {}, 10)))) >= 9

    replaced = ann.load(saved.parent, NS)
    assert replaced is not None
    assert replaced.graph.rows == SIZE
    assert sorted(replaced.ids) == sorted(f"d{i}" for i in range(SIZE))


def test_two_handles_see_each_others_writes_on_the_graph_path(filled: Path) -> None:
    writer, reader = LocalVectorIndex(filled, exact_below=0), LocalVectorIndex(filled, exact_below=0)
    query = QUERIES[6].tolist()
    first = ids(reader.knn(NS, query, {}, 5))  # the reader has built its graph

    writer.upsert(NS, [IndexDoc("fresh", query, "fresh memory", {"scope": ["s3"]})])
    writer.delete(NS, first[:2])

    assert ids(reader.knn(NS, query, {}, 5))[0] == "fresh"
    assert not set(first[:2]) & set(ids(reader.knn(NS, query, {}, 20)))
    assert ids(reader.lexical(NS, "fresh", {}, 5)) == ["fresh"]
    assert reader.count(NS) == SIZE - 1

    reader.upsert(NS, [IndexDoc("from-reader", (-np.asarray(query)).tolist(), "other side", {"scope": ["s1"]})])
    assert ids(writer.knn(NS, (-np.asarray(query)).tolist(), {"scope": ["s1"]}, 1)) == ["from-reader"]

    writer.clear(NS)
    assert reader.count(NS) == 0
    assert reader.knn(NS, query, {}, 5) == []


def test_many_deletes_compact_the_namespace_without_changing_answers(path: Path) -> None:
    index = LocalVectorIndex(path, exact_below=0)
    matrix = vectors(3000, 4)
    index.upsert(NS, docs(matrix))
    index.knn(NS, QUERIES[0].tolist(), {}, 1)

    index.delete(NS, [f"d{i}" for i in range(0, 3000, 3)] + [f"d{i}" for i in range(1, 3000, 3)])

    exact = LocalVectorIndex(path, exact_below=EXACT)
    assert index.count(NS) == 1000
    for query in QUERIES[:5]:
        got = ids(index.knn(NS, query.tolist(), {}, 10))
        assert all(int(doc_id[1:]) % 3 == 2 for doc_id in got)
        assert len(set(got) & set(ids(exact.knn(NS, query.tolist(), {}, 10)))) >= 9


# ------------------------------------------------------------------- BM25 ---
WORDS = ["coffee", "tea", "garden", "river", "morning", "report", "budget", "migration", "cluster", "zebra"]


def reference_scores(texts: dict[int, str], query: str) -> dict[int, float]:
    """BM25 from the public formulas, one document at a time."""
    analysed = {row: Counter(analyse(text)) for row, text in texts.items()}
    average = sum(sum(counts.values()) for counts in analysed.values()) / len(analysed)
    scores: dict[int, float] = {}
    for term, query_tf in Counter(analyse(query)).items():
        holders = [row for row, counts in analysed.items() if term in counts]
        if not holders:
            continue
        weight = idf(len(analysed), len(holders)) * query_tf
        for row in holders:
            length = sum(analysed[row].values())
            scores[row] = scores.get(row, 0.0) + term_score(weight, analysed[row][term], length, average)
    return scores


@pytest.mark.parametrize("query", ["coffee", "zebra", "coffee tea garden", "zebra zebra river", "nothing known"])
def test_vectorised_bm25_matches_the_formula(query: str) -> None:
    rng = np.random.default_rng(9)
    # Common words reach most documents (the dense merge), "zebra" few (the sparse one).
    probabilities = np.array([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.019, 0.001])
    texts = {row: " ".join(rng.choice(WORDS, size=int(rng.integers(2, 9)), p=probabilities)) for row in range(800)}
    bm25 = Bm25()
    for row, text in texts.items():
        bm25.add(row, text)
    for row in range(0, 800, 7):  # removed rows leave stale postings behind
        bm25.remove(row, texts.pop(row))

    scores, _ = bm25.scores(query, None)
    expected = reference_scores(texts, query)
    assert scores.keys() == expected.keys()
    for row, score in expected.items():
        assert scores[row] == pytest.approx(score, rel=1e-9)

    rows, top_scores, _ = bm25.top(query, None, 10)
    ranking = sorted(expected.items(), key=lambda pair: (-pair[1], pair[0]))[:10]
    assert rows.tolist() == [row for row, _ in ranking]
    assert top_scores.tolist() == pytest.approx([score for _, score in ranking], rel=1e-9)

    allowed = np.zeros(800, dtype=bool)
    allowed[::2] = True
    masked, _ = bm25.scores(query, set(range(0, 800, 2)))
    rows, top_scores, _ = bm25.top(query, allowed, 800)
    assert dict(zip(rows.tolist(), top_scores.tolist(), strict=True)) == pytest.approx(masked)
    assert masked == pytest.approx({row: score for row, score in expected.items() if row % 2 == 0})


def test_bm25_rows_can_be_reused() -> None:
    bm25 = Bm25()
    bm25.add(0, "coffee garden")
    bm25.add(1, "tea river")
    bm25.remove(0, "coffee garden")
    bm25.add(0, "tea morning")

    fresh = Bm25()
    fresh.add(0, "tea morning")
    fresh.add(1, "tea river")
    for query in ["coffee", "garden tea", "morning river"]:
        scores, reference = bm25.scores(query, None)
        fresh_scores, fresh_reference = fresh.scores(query, None)
        assert scores == pytest.approx(fresh_scores)
        assert reference == pytest.approx(fresh_reference)


@pytest.mark.parametrize("k", [1, 3, 10, 60])
def test_bm25_top_k_is_the_head_of_the_full_ranking(k: int) -> None:
    """The top k skip rows below a floor (the k-th best contribution of one term): the same rows, scores and
    tie order as ranking every matching row."""
    rng = np.random.default_rng(k)
    probabilities = np.array([0.3, 0.2, 0.15, 0.1, 0.08, 0.07, 0.05, 0.03, 0.019, 0.001])
    bm25 = Bm25()
    for row in range(3000):
        bm25.add(row, " ".join(rng.choice(WORDS, size=int(rng.integers(1, 6)), p=probabilities)))
    allowed = rng.random(3000) < 0.5

    for query in ["coffee tea", "coffee tea garden river", "zebra coffee", "tea tea morning", "garden"]:
        for mask, keep in ((None, None), (allowed, set(np.flatnonzero(allowed).tolist()))):
            every, _ = bm25.scores(query, keep)
            ranking = sorted(every.items(), key=lambda pair: (-pair[1], pair[0]))[:k]
            rows, scores, _ = bm25.top(query, mask, k)
            assert rows.tolist() == [row for row, _ in ranking]
            assert scores.tolist() == [score for _, score in ranking]

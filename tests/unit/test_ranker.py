"""The one hybrid ranker (mnemo.retrieval.ranker) over the embedded index and the hashing embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.errors import ProviderError
from mnemo.ports import Hit, IndexDoc, Match
from mnemo.retrieval.ranker import Candidate, Ranking, hybrid_rank, query_names, subject_of
from mnemo.retrieval.scoring import Context, calibration_for

NS = "t=acme|memory"
TEXTS = {
    "pg": "the billing service stores invoices in PostgreSQL",
    "py": "Alice writes the billing service in Python",
    "ski": "Bob went skiing in the Alps last winter",
    "tea": "Carol prefers green tea in the morning",
}


class BrokenEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError("embedder down")


@pytest.fixture
def index(tmp_path: Path) -> LocalVectorIndex:
    store = LocalVectorIndex(tmp_path / "vectors.db")
    embedder = HashingEmbedder()
    docs = [
        IndexDoc(doc_id, vector, text, {"scope": ["s1" if doc_id != "tea" else "s2"]})
        for (doc_id, text), vector in zip(TEXTS.items(), embedder.embed(list(TEXTS.values())), strict=True)
    ]
    store.upsert(NS, docs)
    return store


def test_candidates_carry_the_calibrated_blend_of_both_signals(index: LocalVectorIndex) -> None:
    ranking = hybrid_rank(index, HashingEmbedder(), NS, "which database stores the billing invoices", {"scope": ["s1"]})
    assert ranking.dense
    assert ranking.retrieval == "hybrid"
    assert ranking.candidates[0].id == "pg"
    calibration = calibration_for("hashing")
    for found in ranking.candidates:
        assert found.cosine is not None
        assert found.score == round(calibration.score(found.cosine, found.lexical), 4)
    scores = [found.score for found in ranking.candidates]
    assert scores == sorted(scores, reverse=True)
    assert "tea" not in {found.id for found in ranking.candidates}  # the filter holds


def test_a_candidate_only_bm25_found_counts_the_lowest_cosine_that_made_the_dense_cut(
    index: LocalVectorIndex,
) -> None:
    ranking = hybrid_rank(index, HashingEmbedder(), NS, "billing", {"scope": ["s1"]}, k=1)
    assert {found.id for found in ranking.candidates} == {"pg", "py"}
    lexical_only = [found for found in ranking.candidates if found.id != ranking.candidates[0].id]
    floor = min(found.cosine for found in ranking.candidates if found.cosine is not None)
    assert all(found.cosine == floor for found in lexical_only)


def test_an_embedder_outage_ranks_by_keywords_alone(index: LocalVectorIndex) -> None:
    ranking = hybrid_rank(index, BrokenEmbedder(), NS, "skiing in the Alps", {"scope": ["s1"]})
    assert not ranking.dense
    assert ranking.retrieval == "lexical"
    assert [found.id for found in ranking.candidates] == ["ski"]
    assert ranking.candidates[0].cosine is None
    assert ranking.candidates[0].score == round(
        calibration_for("hashing").score(None, ranking.candidates[0].lexical), 4
    )


def test_lexical_only_never_embeds_and_related_needs_a_shared_word_then(index: LocalVectorIndex) -> None:
    ranking = hybrid_rank(index, BrokenEmbedder(), NS, "Python", {"scope": ["s1"]}, lexical_only=True)
    assert [found.id for found in ranking.candidates] == ["py"]
    assert all(found.related(ranking.calibration) for found in ranking.candidates)
    hybrid = hybrid_rank(index, HashingEmbedder(), NS, "Python", {"scope": ["s1"]})
    unrelated = [found for found in hybrid.candidates if found.lexical == 0.0]
    assert all(
        found.related(hybrid.calibration) == (hybrid.calibration.dense(found.cosine or 0) > 0) for found in unrelated
    )


# ------------------------------------------------------------ context signals ---
def _context_index(tmp_path: Path, docs: dict[str, tuple[str, dict[str, list[str]]]]) -> LocalVectorIndex:
    store = LocalVectorIndex(tmp_path / "context.db")
    embedder = HashingEmbedder()
    texts = [text for text, _ in docs.values()]
    store.upsert(
        NS,
        [
            IndexDoc(doc_id, vector, text, {"scope": ["s1"], **keywords})
            for (doc_id, (text, keywords)), vector in zip(docs.items(), embedder.embed(texts), strict=True)
        ],
    )
    return store


def _by_id(ranking: Ranking) -> dict[str, Candidate]:
    return {found.id: found for found in ranking.candidates}


def test_without_context_the_score_is_the_blend_alone(index: LocalVectorIndex) -> None:
    ranking = hybrid_rank(index, HashingEmbedder(), NS, "billing service", {"scope": ["s1"]}, context=False)
    calibration = ranking.calibration
    for found in ranking.candidates:
        assert found.score == round(calibration.score(found.cosine, found.lexical), 4)


def test_a_link_lifts_both_ends_by_the_other_ones_blend(tmp_path: Path) -> None:
    docs = {
        "q": ("did you go camping in the mountains", {"after": ["x"], "episode": ["2023-05-08"]}),
        "a": ("yes twice it was lovely", {"after": ["q"], "episode": ["2023-05-08"]}),
        "b": ("yes twice it was grey", {"episode": ["2023-05-09"]}),
    }
    index = _context_index(tmp_path, docs)
    ranking = hybrid_rank(
        index, HashingEmbedder(), NS, "camping in the mountains twice", {"scope": ["s1"]}, context=True
    )
    found = _by_id(ranking)
    calibration = ranking.calibration
    blend = {doc_id: calibration.blend(c.cosine, c.lexical) for doc_id, c in found.items()}

    day = max(blend["q"], blend["a"])
    assert found["a"].score == round(
        calibration.score(found["a"].cosine, found["a"].lexical, Context(blend["q"], day, 0.0, dated=True)), 4
    )
    assert found["q"].score == round(
        calibration.score(found["q"].cosine, found["q"].lexical, Context(blend["a"], day, 0.0, dated=True)), 4
    )
    assert found["b"].score == round(
        calibration.score(found["b"].cosine, found["b"].lexical, Context(0.0, blend["b"], 0.0, dated=True)), 4
    )
    assert found["a"].score > found["b"].score  # the two answers are alike; the linked one wins


def test_an_episode_shares_its_best_blend(tmp_path: Path) -> None:
    docs = {
        "strong": ("the billing service moved to PostgreSQL", {"episode": ["2023-05-08"]}),
        "same day": ("we also renamed the billing queue", {"episode": ["2023-05-08"]}),
        "other day": ("we also renamed the billing topic", {"episode": ["2023-06-01"]}),
    }
    index = _context_index(tmp_path, docs)
    ranking = hybrid_rank(index, HashingEmbedder(), NS, "billing service PostgreSQL", {"scope": ["s1"]}, context=True)
    found = _by_id(ranking)
    calibration = ranking.calibration
    strong = calibration.blend(found["strong"].cosine, found["strong"].lexical)

    same_day = Context(0.0, strong, 0.0, dated=True)
    expected = calibration.score(found["same day"].cosine, found["same day"].lexical, same_day)
    assert found["same day"].score == round(expected, 4)
    assert found["same day"].score > found["other day"].score


def test_a_query_naming_the_subject_of_a_memory_lifts_it(tmp_path: Path) -> None:
    docs = {
        "carol": ("Carol: I started a pottery class", {"subject": ["carol"]}),
        "dave": ("Dave: I started a pottery class too", {"subject": ["dave"]}),
    }
    index = _context_index(tmp_path, docs)
    asked = hybrid_rank(index, HashingEmbedder(), NS, "What class did Carol start?", {"scope": ["s1"]}, context=True)
    assert asked.candidates[0].id == "carol"
    carol, calibration = asked.candidates[0], asked.calibration
    assert carol.score == round(calibration.score(carol.cosine, carol.lexical, Context(subject=1.0)), 4)
    assert carol.score > round(calibration.score(carol.cosine, carol.lexical), 4)
    asked = hybrid_rank(index, HashingEmbedder(), NS, "What class did Dave start?", {"scope": ["s1"]}, context=True)
    assert asked.candidates[0].id == "dave"


def test_query_names_and_subjects() -> None:
    assert query_names("What did Caroline research after Melanie's talk?") == {"caroline", "melanie"}
    assert query_names("Caroline moved where?") == set()  # the first word is capitalised anyway
    assert subject_of("Caroline: I went to the support group") == "caroline"
    assert subject_of("Alice deploys on Fridays") == "alice"
    assert subject_of("the build uses Python") is None
    assert subject_of("I went home") is None
    assert subject_of("") is None


class KnnDown(LocalVectorIndex):
    def knn(
        self, namespace: str, vector: Sequence[float], flt: dict[str, list[str]], k: int, *, where: Match | None = None
    ) -> list[Hit]:
        raise ProviderError("k-NN unavailable")


def test_a_knn_failure_ranks_by_keywords_alone(tmp_path: Path) -> None:
    store = KnnDown(tmp_path / "down.db")
    embedder = HashingEmbedder()
    store.upsert(NS, [IndexDoc("ski", embedder.embed([TEXTS["ski"]])[0], TEXTS["ski"], {"scope": ["s1"]})])
    ranking = hybrid_rank(store, embedder, NS, "skiing in the Alps", {"scope": ["s1"]})
    assert not ranking.dense
    assert ranking.retrieval == "lexical"
    assert [found.id for found in ranking.candidates] == ["ski"]
    assert ranking.candidates[0].cosine is None

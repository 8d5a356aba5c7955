"""The one hybrid ranker (mnemo.retrieval.ranker) over the embedded index and the hashing embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.errors import ProviderError
from mnemo.memory.scoring import calibration_for
from mnemo.ports import IndexDoc
from mnemo.retrieval.ranker import rank

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
    ranking = rank(index, HashingEmbedder(), NS, "which database stores the billing invoices", {"scope": ["s1"]})
    assert ranking.dense and ranking.retrieval == "hybrid"
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
    ranking = rank(index, HashingEmbedder(), NS, "billing", {"scope": ["s1"]}, k=1)
    assert {found.id for found in ranking.candidates} == {"pg", "py"}
    lexical_only = [found for found in ranking.candidates if found.id != ranking.candidates[0].id]
    floor = min(found.cosine for found in ranking.candidates if found.cosine is not None)
    assert all(found.cosine == floor for found in lexical_only)


def test_an_embedder_outage_ranks_by_keywords_alone(index: LocalVectorIndex) -> None:
    ranking = rank(index, BrokenEmbedder(), NS, "skiing in the Alps", {"scope": ["s1"]})
    assert not ranking.dense and ranking.retrieval == "lexical"
    assert [found.id for found in ranking.candidates] == ["ski"]
    assert ranking.candidates[0].cosine is None
    assert ranking.candidates[0].score == round(
        calibration_for("hashing").score(None, ranking.candidates[0].lexical), 4
    )


def test_lexical_only_never_embeds_and_related_needs_a_shared_word_then(index: LocalVectorIndex) -> None:
    ranking = rank(index, BrokenEmbedder(), NS, "Python", {"scope": ["s1"]}, lexical_only=True)
    assert [found.id for found in ranking.candidates] == ["py"]
    assert all(found.related(ranking.calibration) for found in ranking.candidates)
    hybrid = rank(index, HashingEmbedder(), NS, "Python", {"scope": ["s1"]})
    unrelated = [found for found in hybrid.candidates if found.lexical == 0.0]
    assert all(
        found.related(hybrid.calibration) == (hybrid.calibration.dense(found.cosine or 0) > 0) for found in unrelated
    )

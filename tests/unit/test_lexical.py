"""Text analysis and incremental BM25 (mnemo.adapters.local.lexical)."""

from __future__ import annotations

import pytest

from mnemo.adapters.local.lexical import Bm25, analyse

DOCS = {
    0: "Alice prefers dark roast coffee",
    1: "Bob drinks green tea and coffee every day",
    2: "The cat sleeps on the warm windowsill",
    3: "Coffee beans are roasted in small batches",
}


def _index(docs: dict[int, str]) -> Bm25:
    bm25 = Bm25()
    for row, text in docs.items():
        bm25.add(row, text)
    return bm25


# ---------------------------------------------------------------- analyse ---
def test_analyse_lowercases() -> None:
    assert analyse("COFFEE Tea") == ["coffe", "tea"]
    assert analyse("Coffee") == analyse("coffee")


def test_analyse_removes_stop_words() -> None:
    assert analyse("the and of is") == []
    assert analyse("The cat is on the mat") == ["cat", "mat"]


def test_analyse_stems() -> None:
    assert analyse("running runs run") == ["run", "run", "run"]
    assert analyse("prefers preferences preferred") == ["prefer", "prefer", "prefer"]
    assert analyse("foxes jumping") == ["fox", "jump"]


def test_analyse_splits_on_punctuation_and_underscores() -> None:
    assert analyse("dogs, cats! snake_case") == ["dog", "cat", "snake", "case"]
    assert analyse("") == []
    assert analyse("... !!! ___") == []


def test_analyse_keeps_order_and_repeats() -> None:
    assert analyse("tea coffee tea") == ["tea", "coffe", "tea"]


# ------------------------------------------------------------------- Bm25 ---
def test_scores_only_rows_holding_a_query_term() -> None:
    scores, reference = _index(DOCS).scores("coffee", None)

    assert set(scores) == {0, 1, 3}
    assert all(score > 0 for score in scores.values())
    assert reference > 0


def test_stemmed_query_matches_inflected_documents() -> None:
    scores, _ = _index(DOCS).scores("roasting", None)

    assert set(scores) == {0, 3}


def test_reference_is_positive_when_terms_match() -> None:
    _, reference = _index(DOCS).scores("warm windowsill", None)

    assert reference > 0


def test_no_known_term_gives_empty_scores_and_zero_reference() -> None:
    bm25 = _index(DOCS)

    assert bm25.scores("zebra quantum", None) == ({}, 0.0)
    assert bm25.scores("the and of", None) == ({}, 0.0)
    assert bm25.scores("", None) == ({}, 0.0)
    assert Bm25().scores("coffee", None) == ({}, 0.0)


def test_unknown_terms_do_not_change_the_scores_of_known_ones() -> None:
    bm25 = _index(DOCS)

    assert bm25.scores("coffee zebra", None) == bm25.scores("coffee", None)


def test_rarer_term_scores_higher() -> None:
    bm25 = _index({0: "apple banana", 1: "banana cherry", 2: "banana date", 3: "elderberry fig"})

    rare, rare_reference = bm25.scores("apple", None)
    common, common_reference = bm25.scores("banana", None)

    assert rare[0] > common[0]
    assert rare_reference > common_reference


def test_more_occurrences_score_higher_at_equal_length() -> None:
    bm25 = _index({0: "coffee coffee tea", 1: "coffee tea milk", 2: "water juice soda"})

    scores, _ = bm25.scores("coffee", None)

    assert scores[0] > scores[1]


def test_allowed_restricts_rows() -> None:
    bm25 = _index(DOCS)
    everything, reference = bm25.scores("coffee", None)

    some, some_reference = bm25.scores("coffee", {1, 2})

    assert set(some) == {1}
    assert some[1] == pytest.approx(everything[1])
    assert some_reference == pytest.approx(reference)
    assert bm25.scores("coffee", set())[0] == {}


def test_removed_document_no_longer_scores() -> None:
    bm25 = _index(DOCS)

    bm25.remove(3, DOCS[3])

    scores, _ = bm25.scores("coffee roasted", None)
    assert 3 not in scores
    assert set(scores) == {0, 1}
    assert bm25.scores("beans batches", None) == ({}, 0.0)


def test_add_and_remove_keep_scores_consistent_with_a_fresh_index() -> None:
    bm25 = _index(DOCS)
    bm25.add(7, "Iced coffee in summer")
    bm25.remove(1, DOCS[1])
    bm25.remove(7, "Iced coffee in summer")

    remaining = {row: text for row, text in DOCS.items() if row != 1}
    fresh = _index(remaining)
    for query in ["coffee", "roast coffee", "cat", "tea", "iced summer"]:
        scores, reference = bm25.scores(query, None)
        fresh_scores, fresh_reference = fresh.scores(query, None)
        assert scores.keys() == fresh_scores.keys(), query
        for row, score in fresh_scores.items():
            assert scores[row] == pytest.approx(score), (query, row)
        assert reference == pytest.approx(fresh_reference), query


def test_remove_of_an_unknown_row_is_a_no_op() -> None:
    bm25 = _index(DOCS)
    before = bm25.scores("coffee cat", None)

    bm25.remove(42, "coffee cat")

    assert bm25.scores("coffee cat", None) == before


def test_removing_every_document_leaves_nothing_to_score() -> None:
    bm25 = _index(DOCS)

    for row, text in DOCS.items():
        bm25.remove(row, text)

    assert bm25.scores("coffee cat tea", None) == ({}, 0.0)


def test_the_english_stemmer_imported_alone_stems_as_the_package_does() -> None:
    """bm25_text imports snowballstemmer's English module without the package's __init__ (cold start)."""
    import snowballstemmer

    from mnemo.adapters import bm25_text

    words = [
        "running",
        "runs",
        "ran",
        "databases",
        "generously",
        "connection",
        "connected",
        "caresses",
        "ponies",
        "relational",
        "conditional",
        "hopefulness",
        "electricity",
        "adjustment",
        "dependent",
        "replacement",
        "Lisbon",
        "moved",
        "migrating",
        "PostgreSQL",
        "naïve",
        "cafés",
        "agreed",
        "feed",
        "hopping",
        "tanned",
    ]
    package = snowballstemmer.stemmer("english")
    assert type(bm25_text._stemmer).__name__ == "EnglishStemmer"
    assert [bm25_text._stemmer.stemWord(w) for w in words] == [package.stemWord(w) for w in words]

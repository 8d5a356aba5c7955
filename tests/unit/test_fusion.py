"""Behaviour of the fusion of conversation turns and extracted facts (mnemo.retrieval.fusion)."""

from __future__ import annotations

from mnemo.retrieval.fusion import FactHit, Fused, TurnHit, fuse


def ids(results: list[Fused]) -> list[str]:
    return [result.id for result in results]


def test_turns_alone_keep_their_order() -> None:
    turns = [TurnHit("D1:3", 0.9), TurnHit("D2:1", 0.8), TurnHit("D1:1", 0.5)]
    results = fuse(turns, [])
    assert ids(results) == ["D1:3", "D2:1", "D1:1"]
    assert [r.kind for r in results] == ["turn"] * 3
    assert results[0].sources == ("D1:3",)
    assert results[0].score == 0.9


def test_a_fact_votes_for_the_turn_it_cites() -> None:
    turns = [TurnHit("a", 0.9), TurnHit("b", 0.85), TurnHit("c", 0.8)]
    facts = [FactHit("f1", 0.95, ("c",))]
    results = fuse(turns, facts, show_facts=False)
    # c, third among turns, is cited by the best fact: it passes b, not a.
    assert ids(results) == ["a", "c", "b"]


def test_fact_scores_do_not_crowd_out_turns() -> None:
    # Facts score higher than turns as a rule; ranks, not scores, are fused.
    turns = [TurnHit(f"t{i}", 0.5 - i / 100) for i in range(10)]
    facts = [FactHit(f"f{i}", 0.99, (f"x{i}",)) for i in range(10)]
    results = fuse(turns, facts, limit=10)
    assert ids(results)[:3] == ["t0", "t1", "t2"]


def test_a_turn_found_only_through_a_fact_is_shown_as_the_fact() -> None:
    results = fuse([TurnHit("a", 0.7)], [FactHit("f", 0.9, ("z",))])
    assert [(r.id, r.kind, r.sources) for r in results] == [("a", "turn", ("a",)), ("f", "fact", ("z",))]
    assert results[1].score == 0.9


def test_a_fact_ranked_better_than_its_turn_stands_for_it_and_covers_its_turns() -> None:
    turns = [TurnHit("a", 0.9), TurnHit("b", 0.8), TurnHit("c", 0.7)]
    facts = [FactHit("f", 0.95, ("c", "b"))]
    results = fuse(turns, facts)
    kinds = {r.id: r.kind for r in results}
    assert kinds["f"] == "fact"
    assert "b" not in kinds and "c" not in kinds  # covered by the fact
    assert set().union(*(set(r.sources) for r in results)) == {"a", "b", "c"}


def test_memories_without_provenance_count_like_turns() -> None:
    turns = [TurnHit("a", 0.6), TurnHit("b", 0.5)]
    facts = [FactHit("m", 0.8)]
    results = fuse(turns, facts)
    assert ids(results)[:2] == ["a", "m"] or ids(results)[:2] == ["m", "a"]
    memory = next(r for r in results if r.id == "m")
    assert memory.kind == "fact" and memory.sources == ()


def test_limit_and_order_are_deterministic() -> None:
    turns = [TurnHit(f"t{i}", 0.5) for i in range(30)]
    facts = [FactHit(f"f{i}", 0.9, (f"t{29 - i}",)) for i in range(30)]
    first = fuse(turns, facts, limit=7)
    assert len(first) == 7
    assert first == fuse(list(turns), list(facts), limit=7)
    assert [r.fused for r in first] == sorted((r.fused for r in first), reverse=True)


def test_duplicates_count_once_at_their_best_rank() -> None:
    turns = [TurnHit("a", 0.9), TurnHit("a", 0.1), TurnHit("b", 0.8)]
    facts = [FactHit("f", 0.9, ("b", "b")), FactHit("f", 0.1, ("a",))]
    results = fuse(turns, facts, show_facts=False)
    assert ids(results) == ["a", "b"]

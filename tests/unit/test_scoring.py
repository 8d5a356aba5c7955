"""The relevance score calibration (mnemo.retrieval.scoring)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from mnemo.retrieval.scoring import (
    CALIBRATIONS,
    DEFAULT_CALIBRATION,
    DEFAULT_THRESHOLD,
    Calibration,
    Context,
    calibration_for,
)

ALL = [pytest.param(DEFAULT_CALIBRATION, id="default")] + [
    pytest.param(calibration, id=name) for name, calibration in CALIBRATIONS.items()
]
GRID = [i / 100 for i in range(101)]


@pytest.mark.parametrize("calibration", ALL)
def test_score_is_strictly_increasing_in_raw(calibration: Calibration) -> None:
    scores = [calibration.score(None, raw) for raw in GRID]

    assert all(later > earlier for earlier, later in pairwise(scores))


@pytest.mark.parametrize("calibration", ALL)
def test_anchor_maps_to_exactly_the_default_threshold(calibration: Calibration) -> None:
    assert DEFAULT_THRESHOLD == 0.7
    assert calibration.score(None, calibration.anchor) == 0.7


@pytest.mark.parametrize("calibration", ALL)
def test_score_ends_are_fixed(calibration: Calibration) -> None:
    assert calibration.score(None, 0.0) == 0.0
    assert calibration.score(None, 1.0) == 1.0


@pytest.mark.parametrize("calibration", ALL)
def test_score_stays_in_the_unit_interval(calibration: Calibration) -> None:
    for raw in GRID:
        assert 0.0 <= calibration.score(None, raw) <= 1.0


@pytest.mark.parametrize("calibration", ALL)
def test_score_is_below_threshold_under_the_anchor_and_above_it_over(calibration: Calibration) -> None:
    assert calibration.score(None, calibration.anchor - 0.01) < DEFAULT_THRESHOLD
    assert calibration.score(None, calibration.anchor + 0.01) > DEFAULT_THRESHOLD


def test_score_is_piecewise_linear_around_the_anchor() -> None:
    calibration = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.5, anchor=0.5)

    assert calibration.score(None, 0.25) == pytest.approx(0.35)
    assert calibration.score(None, 0.75) == pytest.approx(0.85)


@pytest.mark.parametrize("calibration", ALL)
def test_score_preserves_the_ranking_of_raw(calibration: Calibration) -> None:
    pairs = [(cosine / 10, lexical / 10) for cosine in range(11) for lexical in range(11)]

    by_raw = sorted(pairs, key=lambda pair: calibration.raw(*pair))
    scores = [calibration.score(*pair) for pair in by_raw]

    assert scores == sorted(scores)


# ------------------------------------------------------------------ dense ---
@pytest.mark.parametrize("calibration", ALL)
def test_dense_clips_below_floor_to_zero(calibration: Calibration) -> None:
    assert calibration.dense(calibration.dense_floor) == 0.0
    assert calibration.dense(calibration.dense_floor - 0.1) == 0.0
    assert calibration.dense(-1.0) == 0.0


@pytest.mark.parametrize("calibration", ALL)
def test_dense_clips_above_ceiling_to_one(calibration: Calibration) -> None:
    assert calibration.dense(calibration.dense_ceiling) == pytest.approx(1.0)
    assert calibration.dense(calibration.dense_ceiling + 0.05) == 1.0
    assert calibration.dense(1.0) == 1.0


@pytest.mark.parametrize("calibration", ALL)
def test_dense_is_linear_between_floor_and_ceiling(calibration: Calibration) -> None:
    middle = (calibration.dense_floor + calibration.dense_ceiling) / 2
    quarter = calibration.dense_floor + (calibration.dense_ceiling - calibration.dense_floor) / 4

    assert calibration.dense(middle) == pytest.approx(0.5)
    assert calibration.dense(quarter) == pytest.approx(0.25)


# -------------------------------------------------------------------- raw ---
@pytest.mark.parametrize("calibration", ALL)
def test_without_cosine_only_lexical_counts(calibration: Calibration) -> None:
    all_dense = Calibration(calibration.dense_floor, calibration.dense_ceiling, 1.0, calibration.anchor)
    for lexical in [0.0, 0.3, 0.8, 1.0]:
        assert calibration.raw(None, lexical) == lexical
        assert all_dense.raw(None, lexical) == lexical
        assert all_dense.score(None, lexical) == calibration.score(None, lexical)
    assert calibration.raw(None, 0.3) != calibration.raw(calibration.dense_ceiling, 0.3)


def test_raw_mixes_dense_and_lexical_by_weight() -> None:
    calibration = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.6, anchor=0.45)

    assert calibration.raw(0.5, 0.25) == pytest.approx(0.6 * 0.5 + 0.4 * 0.25)
    assert calibration.raw(0.8, 0.0) == pytest.approx(0.6)
    assert calibration.raw(0.1, 1.0) == pytest.approx(0.4)


def test_score_with_cosine_goes_through_raw() -> None:
    calibration = Calibration(dense_floor=0.2, dense_ceiling=0.8, dense_weight=0.6, anchor=0.45)

    raw = calibration.raw(0.65, 0.2)

    assert calibration.score(0.65, 0.2) == pytest.approx(calibration.score(None, raw))


# ------------------------------------------------------------ calibration ---
def test_calibration_for_a_known_model() -> None:
    for name, calibration in CALIBRATIONS.items():
        assert calibration_for(name) is calibration
    assert calibration_for("bge-small-en-v1.5-int8") is not DEFAULT_CALIBRATION


def test_calibration_for_an_unknown_model_is_the_default() -> None:
    assert calibration_for("some-other-model") is DEFAULT_CALIBRATION
    assert calibration_for("") is DEFAULT_CALIBRATION


def test_calibrations_are_well_formed() -> None:
    for calibration in [DEFAULT_CALIBRATION, *CALIBRATIONS.values()]:
        assert 0.0 <= calibration.dense_floor < calibration.dense_ceiling <= 1.0
        assert 0.0 <= calibration.dense_weight <= 1.0
        assert 0.0 < calibration.anchor < 1.0


# ---------------------------------------------------------------- context ---
@pytest.mark.parametrize("calibration", ALL)
def test_context_lifts_the_blend_by_neighbour_and_episode_and_a_named_subject_adds_its_weight(
    calibration: Calibration,
) -> None:
    a, b, c = calibration.neighbour_weight, calibration.episode_weight, calibration.subject_weight
    blend = calibration.blend(0.6, 0.3)
    near = (blend + a * 0.9 + b * 0.8) / (1 + a + b)

    assert calibration.raw(0.6, 0.3, Context(neighbour=0.9, episode=0.8, dated=True)) == pytest.approx(near)
    named = calibration.raw(0.6, 0.3, Context(neighbour=0.9, episode=0.8, subject=1.0, dated=True))
    assert named == pytest.approx(near + c)
    assert calibration.raw(1.0, 1.0, Context(1.0, 1.0, 1.0, dated=True)) == pytest.approx(1.0 + c)
    assert calibration.score(1.0, 1.0, Context(1.0, 1.0, 1.0, dated=True)) == pytest.approx(1.0)
    assert calibration.raw(0.0, 0.0, Context()) == 0.0


@pytest.mark.parametrize("calibration", ALL)
def test_context_never_lowers_a_memory_and_without_any_it_is_the_blend(calibration: Calibration) -> None:
    blend = calibration.blend(0.7, 0.4)
    assert calibration.raw(0.7, 0.4, Context()) == pytest.approx(blend)
    assert calibration.raw(0.7, 0.4, Context(neighbour=0.1, episode=0.2)) == pytest.approx(blend)
    assert calibration.raw(0.7, 0.4, Context(neighbour=0.9)) > blend
    # an undated memory is scored on the blend's anchor (above it, the map runs on to 1 + subject weight)
    assert calibration.score(0.7, 0.4, Context()) == pytest.approx(
        calibration.calibrated(blend, calibration.anchor, 1.0 + calibration.subject_weight)
    )
    assert calibration.score(0.7, 0.4, Context(episode=blend, dated=True)) == pytest.approx(
        calibration.calibrated(blend, calibration.context_anchor, 1.0 + calibration.subject_weight)
    )
    # below the anchor, context or not, the map is the same line through 0
    low = calibration.blend(calibration.dense_floor, 0.1)
    assert calibration.score(calibration.dense_floor, 0.1, Context()) == calibration.score(calibration.dense_floor, 0.1)
    assert low < calibration.anchor


@pytest.mark.parametrize("calibration", ALL)
def test_the_context_anchor_of_a_dated_memory_maps_to_the_default_threshold(calibration: Calibration) -> None:
    assert 0.0 < calibration.context_anchor < 1.0
    lexical = calibration.context_anchor  # no cosine: the blend is the lexical score
    assert calibration.score(None, lexical, Context(episode=lexical, dated=True)) == pytest.approx(DEFAULT_THRESHOLD)


@pytest.mark.parametrize("calibration", ALL)
def test_context_score_is_non_decreasing_in_every_signal_and_stays_in_the_unit_interval(
    calibration: Calibration,
) -> None:
    steps = [i / 10 for i in range(11)]
    for signal in ("neighbour", "episode", "subject"):
        scores = [calibration.score(0.6, 0.3, Context(**{signal: step}, dated=True)) for step in steps]
        assert all(later >= earlier for earlier, later in pairwise(scores))
        assert scores[-1] > scores[0]
        assert all(0.0 <= score <= 1.0 for score in scores)

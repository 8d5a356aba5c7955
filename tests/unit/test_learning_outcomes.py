"""The learning package's types: what a strategy does is data on it, and what a run or a notice did is a value."""

from __future__ import annotations

import pytest

from mnemo.learning.outcomes import Failed, Left, NoTarget, NoticeOutcome, Retry, RunOutcome, StrategyOutcome
from mnemo.learning.strategies import (
    FACTS,
    GRAPH,
    LESSONS,
    PROFILE,
    STRATEGIES,
    STRATEGY_NAMES,
    SUMMARY,
    Strategy,
    keeps_running,
)


def test_every_strategy_name_has_its_strategy_in_order() -> None:
    assert tuple(STRATEGIES) == STRATEGY_NAMES


@pytest.mark.parametrize(
    ("strategy", "conversation", "execution", "session", "running"),
    [
        (FACTS, True, False, False, False),
        (SUMMARY, True, False, True, True),
        (LESSONS, False, True, False, False),
        (GRAPH, True, False, False, False),
        (PROFILE, False, False, False, True),
    ],
)
def test_a_strategy_says_what_it_reads_and_how_it_behaves(
    strategy: Strategy, conversation: bool, execution: bool, session: bool, running: bool
) -> None:
    assert STRATEGIES[strategy.name] is strategy
    assert strategy.reads("conversation") is conversation
    assert strategy.reads("execution") is execution
    assert strategy.needs_session is session
    assert strategy.running is running
    assert keeps_running(strategy.name) is running


def test_a_memory_of_no_known_strategy_is_not_a_running_one() -> None:
    assert not keeps_running(None) and not keeps_running("manual")


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        (NoticeOutcome(0, Left.OFF), "off"),
        (NoticeOutcome(0, Left.NOTHING), "idle"),
        (NoticeOutcome(2, Left.NOTHING), "ran 2"),
        (NoticeOutcome(0, Left.NOT_DUE), "waiting"),
        (NoticeOutcome(1, Left.NOT_DUE), "ran 1, waiting"),
        (NoticeOutcome(1, Left.FAILED), "ran 1, failed"),
        (NoticeOutcome(20, Left.MORE), "ran 20, more waiting"),
    ],
)
def test_the_worker_logs_a_notice_outcome_in_a_word(outcome: NoticeOutcome, said: str) -> None:
    assert str(outcome) == said


def test_a_run_failed_only_when_every_strategy_that_ran_failed() -> None:
    run = RunOutcome("run_1", "2026-01-01T00:00:00Z", "turns", False, "s1", ["m1"])
    assert not run.failed, "no strategy ran: not a failure"
    run.strategies.append(StrategyOutcome(FACTS, "m", failure=Failed("down", retry=Retry.FREE)))
    assert run.failed
    run.strategies.append(StrategyOutcome(SUMMARY, "m"))
    assert not run.failed


def test_a_failure_is_stored_in_the_wire_shape_whatever_it_means_for_the_turns() -> None:
    missing = NoTarget("agent", "agent")
    assert missing.retry is Retry.NEVER
    assert StrategyOutcome(LESSONS, "m", failure=missing).view()["failure"] == {
        "message": "the agent layer needs a agent id, and the turns were written without one",
        "raw": None,
        "attempts": 1,
    }

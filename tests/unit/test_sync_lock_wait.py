"""An S3 object event waits for the tenant's sync lock instead of failing at once."""

from __future__ import annotations

import pytest

from mnemo.entry.sync_events import MAX_WAIT_SECONDS, RESERVE_SECONDS, waiting_for_the_lock
from mnemo.errors import Conflict


def test_it_backs_off_until_the_lock_is_free() -> None:
    attempts: list[int] = []
    slept: list[float] = []

    def operation() -> dict[str, int]:
        attempts.append(1)
        if len(attempts) < 4:
            raise Conflict("A sync of this tenant is already running")
        return {"updated": 1}

    assert waiting_for_the_lock(operation, lambda: 300.0, slept.append) == {"updated": 1}
    assert slept == [0.25, 0.5, 1.0]


def test_it_gives_up_when_the_invocation_runs_out_of_time() -> None:
    slept: list[float] = []

    def busy() -> dict[str, int]:
        raise Conflict("A sync of this tenant is already running")

    with pytest.raises(Conflict):
        waiting_for_the_lock(busy, lambda: RESERVE_SECONDS + 0.1, slept.append)
    assert slept == []


def test_it_never_waits_longer_than_the_limit() -> None:
    slept: list[float] = []

    def busy() -> dict[str, int]:
        raise Conflict("A sync of this tenant is already running")

    with pytest.raises(Conflict):
        waiting_for_the_lock(busy, lambda: 10_000.0, slept.append)
    assert slept
    assert sum(slept) <= MAX_WAIT_SECONDS
    assert max(slept) == 8.0


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def broken() -> dict[str, int]:
        calls.append(1)
        raise ValueError("boom")

    with pytest.raises(ValueError):
        waiting_for_the_lock(broken, lambda: 300.0, lambda _: None)
    assert calls == [1]

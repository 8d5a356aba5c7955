"""`mnemo serve --workers`: ``auto`` (the default) is one process per core this process may use; a whole
number of at least 1 is itself; anything else is one clear line from the command line parser (status 2).

The parser is the real `mnemo` one (``build_parser``). "The cores this process may use" is the affinity mask,
not the machine's count: narrowed to one core, ``auto`` is 1 (``os.sched_setaffinity`` on the calling thread,
restored after).
"""

from __future__ import annotations

import os

import pytest

from mnemo.cli import build_parser
from mnemo.entry.local_server import usable_cores


def workers(*args: str) -> int:
    return int(build_parser().parse_args(["serve", *args]).workers)


def test_auto_is_the_default_and_the_cores_this_process_may_use() -> None:
    allowed = os.sched_getaffinity(0)
    assert usable_cores() == len(allowed)
    assert workers() == workers("--workers", "auto") == workers("--workers", "AUTO") == len(allowed)


def test_auto_follows_the_affinity_mask_not_the_machine() -> None:
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        assert (usable_cores(), workers(), workers("--workers", "auto")) == (1, 1, 1)
    finally:
        os.sched_setaffinity(0, allowed)
    assert workers() == len(allowed)


@pytest.mark.parametrize("count", [1, 2, 3, 64])
def test_a_number_is_itself_whatever_the_cores(count: int) -> None:
    assert workers("--workers", str(count)) == count


@pytest.mark.parametrize("given", ["0", "-1", "-8", "x", "1.5", "two", "", " "])
def test_anything_else_is_refused_in_one_line(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["serve", "--workers", given])
    assert stopped.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (
        f"mnemo serve: error: argument --workers: must be auto or a whole number of at least 1, not {given!r}"
    )


def test_the_help_says_auto_and_what_it_is_here(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["serve", "--help"])
    assert stopped.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    cores = usable_cores()
    assert f"--workers auto|N server processes: auto is one per core this process may use ({cores} here)" in shown
    assert "1 serves from this process alone (default: auto)" in shown

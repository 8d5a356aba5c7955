"""Constraint patterns, compiled by RE2 so that matching is linear in the input.

A constraint's pattern comes from a knowledge file and runs against whatever an
agent sends to knowledge_check. Python's ``re`` backtracks, so one pattern like
``(a+)+$`` and a long line would hold a Lambda for minutes; RE2 never
backtracks. RE2 rejects backreferences and lookaround: such a pattern is
reported when its item is synced or validated (``PatternError``), never when a
check runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol


class PatternError(ValueError):
    """The pattern is not a valid RE2 expression."""


class CompiledPattern(Protocol):
    def search(self, text: str) -> Any: ...

    def fullmatch(self, text: str) -> Any: ...


def _options(ignore_case: bool) -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # a rejected pattern is reported to the caller, not logged to stderr
    options.case_sensitive = not ignore_case
    options.max_mem = 8 << 20  # bounds the DFA of a hostile pattern
    # Only whole matches are used; without groups RE2 keeps to its fast engines on long matches.
    options.never_capture = True
    return options


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str, ignore_case: bool = False) -> CompiledPattern:
    """Compile ``pattern`` with RE2; raise PatternError with RE2's reason if it is rejected."""
    import re2

    try:
        compiled: CompiledPattern = re2.compile(pattern, _options(ignore_case))
    except re2.error as error:
        reason = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise PatternError(f"not a valid RE2 pattern ({reason})") from None
    return compiled


def validate_pattern(pattern: str) -> str | None:
    """The reason RE2 rejects ``pattern``, or None when it compiles."""
    try:
        compile_pattern(pattern)
    except PatternError as error:
        return str(error)
    return None

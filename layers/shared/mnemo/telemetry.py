"""Where a figure arises, it is counted here; where it goes is someone else's business.

Adapters know what only they see (Titan's ``inputTextTokenCount``, Converse's
``usage``, a provider throttling them) but must not know about the doors or the
metrics library. They call :func:`count`; the door's observability
(``mnemo.observability``) installs the recorder that turns counts into metrics
for the invocation under way. With no recorder installed (tests, the CLI, the
local server) a count costs one comparison.

This module imports only the standard library, so any layer may depend on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

#: ``(metric name, value, unit)``; units are CloudWatch's ("Count", "Milliseconds"...).
Recorder = Callable[[str, float, str], None]

_recorder: Recorder | None = None


def install(recorder: Recorder | None) -> Recorder | None:
    """Send counts to ``recorder`` (None: drop them); returns the recorder it replaces."""
    global _recorder
    previous, _recorder = _recorder, recorder
    return previous


def count(name: str, value: float = 1, unit: str = "Count") -> None:
    """Record ``value`` of metric ``name``. Never raises: a figure lost is better than a call failed.

    ``name`` must come from the code, never from data, so that the set of metrics stays small.
    """
    recorder = _recorder
    if recorder is None or not value:
        return
    with contextlib.suppress(Exception):  # counting must not break the work it counts
        recorder(name, value, unit)

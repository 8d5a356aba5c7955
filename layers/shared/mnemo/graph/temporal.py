"""Time on facts, both axes (bi-temporal, as Zep/Graphiti keeps it).

- **Valid time**: ``validAt`` / ``invalidAt``, when the fact was true in the world.
- **Transaction time**: ``createdAt`` / ``expiredAt``, when Mnemo learned it and
  when Mnemo learned it no longer holds.

Times are stored as fixed-width UTC strings (microseconds always written), so
they compare as text in records and index filters alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mnemo.clock import iso, now  # noqa: F401  (``now``: the graph's modules read the clock here)
from mnemo.graph.models import FactStatus


def stamp(moment: datetime) -> str:
    """The stored form, fixed width so that it sorts in time order: ``2026-01-07T10:00:00.000000Z``."""
    return iso(moment, "microseconds")


def status_at(fact: dict[str, Any], moment: str, known: str | None = None) -> FactStatus | None:
    """Whether a fact held at ``moment``: valid, invalid (it had ended) or future (not yet begun).

    With ``known``, as Mnemo knew things then: None for a fact not yet learned,
    and an end recorded (``expiredAt``) after ``known`` is not seen.
    """
    if known is not None and fact["createdAt"] > known:
        return None
    if fact["validAt"] > moment:
        return "future"
    invalid_at = fact.get("invalidAt")
    if invalid_at is not None and known is not None and (fact.get("expiredAt") or "") > known:
        invalid_at = None
    return "invalid" if invalid_at is not None and invalid_at <= moment else "valid"

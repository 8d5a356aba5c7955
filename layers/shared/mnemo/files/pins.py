"""Pinned StoredAssets and the token budget each pinned context must stay within.

A pinner (an agent, or a user calling without an agent id) keeps one record,
``PINS|{pinner scope}`` / ``SET``: its pins in context order, each with the
pinned file's tokens, and their total. A pinned file's ``P#{name}`` record
lists its pinners, so that a write to a file shared by a project checks the
budget of everyone who has it pinned, and a delete takes it out of every
pinned context. Every change writes both records with conditions on the
versions it read: a pin racing a write (or another pin) gets CONFLICT, and
no pinned total ever drifts from the files' real sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mnemo.errors import BudgetExceeded
from mnemo.ports import Item, Put, RecordStore

PINS_PREFIX = "PINS|"
PIN_SET = "SET"
#: Files one pinner may have pinned.
MAX_PINS = 200
#: Pinners one file may have (a write updates all of their records in one transaction).
MAX_PINNERS = 40


def total_of(pins: list[dict[str, Any]]) -> int:
    return sum(int(pin["tokens"]) for pin in pins)


@dataclass
class PinSet:
    """One pinner's pins as read: ``{"pk", "name", "tokens"}`` each, in context order."""

    pinner: str
    pins: list[dict[str, Any]] = field(default_factory=list)
    version: int = 0

    @property
    def total(self) -> int:
        return total_of(self.pins)

    def position(self, pk: str, name: str) -> int | None:
        return next((n for n, pin in enumerate(self.pins) if pin["pk"] == pk and pin["name"] == name), None)

    def put(self, pins: list[dict[str, Any]]) -> Put:
        data = {"pins": pins, "total": total_of(pins)}
        return Put(
            Item(PINS_PREFIX + self.pinner, PIN_SET, data, version=self.version + 1),
            expect=self.version or "absent",
        )


def read_pin_sets(records: RecordStore, pinners: list[str]) -> dict[str, PinSet]:
    found = {
        item.pk.removeprefix(PINS_PREFIX): item
        for item in records.batch_get([(PINS_PREFIX + pinner, PIN_SET) for pinner in pinners])
    }
    return {
        pinner: PinSet(pinner, list(found[pinner].data["pins"]), found[pinner].version)
        if pinner in found
        else PinSet(pinner)
        for pinner in pinners
    }


def _k(tokens: int) -> str:
    """Exact, with thousands separators: a rounded figure could read 99,990 as the whole 100k."""
    return f"{tokens:,}"


def budget_exceeded(
    *, field: str, path: str, current: int, limit: int, size: int, would_be: int, yours: bool
) -> BudgetExceeded:
    """The seed's back-pressure error, with the numbers an agent acts on."""
    whose = "Your pinned context" if yours else "The pinned context of another agent that has this file pinned"
    advice = (
        "Compact a pinned block (file_write a shorter version of it) or unpin one (block_unpin) to free space, "
        "then retry."
        if yours
        else "Write a shorter version, or ask that agent to unpin it."
    )
    return BudgetExceeded(
        f"Block budget exceeded: {_k(current)}/{_k(limit)} tokens pinned. This would use {_k(size)} tokens. "
        f"{whose} would hold {_k(would_be)}. {advice}",
        {
            "field": field,
            "reason": "BLOCK_BUDGET_EXCEEDED",
            "path": path,
            "unit": "tokens",
            "current": current,
            "limit": limit,
            "size": size,
            "wouldBe": would_be,
            "yours": yours,
            "advice": advice,
        },
    )

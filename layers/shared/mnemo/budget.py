"""Answers that fit their transport.

Each front door puts the size its transport can carry into
``RequestContext.response_budget`` (Lambda proxy 5.5 MB, MCP 1 MiB, Bedrock a
share of 25 kB). A read whose answer could exceed it keeps the longest head of
its list that fits, says so in the answer, and never leaves a transport to fail
with a bare 502. Sizes are UTF-8 bytes of the compact JSON answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

#: Room kept for what a trimmed answer gains (a cursor, a note, changed counts).
RESERVE_BYTES = 256
#: How a text shortened to fit (with no way to read the rest) ends.
SHORTENED = "\n\n[… shortened to fit the response size limit]"


def wire_bytes(value: Any) -> int:
    """UTF-8 bytes of a value as compact JSON on the wire (a model by its aliases)."""
    if isinstance(value, BaseModel):
        return len(value.model_dump_json(by_alias=True).encode())
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


def fit_head[T](
    answer: BaseModel, items: Sequence[T], budget: int | None, weight: Callable[[T], int] | None = None
) -> list[T]:
    """The longest head of ``items`` (a list ``answer`` holds) with which ``answer`` stays within ``budget``.

    ``weight`` is what one item adds to the answer, when the answer repeats it (a name in a message too).
    """
    kept = list(items)
    if budget is None:
        return kept
    size = wire_bytes(answer) + RESERVE_BYTES
    while kept and size > budget:
        item = kept.pop()
        size -= (weight(item) if weight is not None else wire_bytes(item)) + 1  # the item and its comma
    return kept


def longest_prefix(text: str, fits: Callable[[str], bool]) -> int:
    """How many leading characters of ``text`` the answer can hold: the most for which ``fits`` is true.

    A binary search (``fits`` must hold for the empty prefix and be monotone): escaping makes a
    character's cost on the wire vary, so the answer is measured rather than estimated.
    """
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return low

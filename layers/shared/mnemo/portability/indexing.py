"""Which imported records the vector index mirrors, and the outbox marker that has the target index them.

An imported record is written with its marker in the same all-or-nothing write,
as every service writes its own records; the import then drains the outbox,
so the target's families embed the records with the target's model, and a
crash half-way leaves markers that the next drain (or the same import run
again) completes. Which records the index mirrors is each family's ``index``
(``mnemo.families``).
"""

from __future__ import annotations

from mnemo.families import Families
from mnemo.graph.store import NAMESPACE as GRAPH_FAMILY
from mnemo.memory.records import NAMESPACE as MEMORY_FAMILY
from mnemo.outbox import IndexOutbox
from mnemo.ports import Item, Put

__all__ = ["GRAPH_FAMILY", "MEMORY_FAMILY", "index_marker"]


def index_marker(outbox: IndexOutbox, families: Families, item: Item) -> Put | None:
    """The marker for ``item``, or None when the index holds nothing for it."""
    entry = families.index_entry(item)
    return outbox.marker(entry.family, entry.reference) if entry is not None else None

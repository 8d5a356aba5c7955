"""Which imported records the vector index mirrors, and the outbox marker that has the target index them.

An imported record is written with its marker in the same all-or-nothing write,
as every service writes its own records; the import then drains the outbox,
so the target's families embed the records with the target's model, and a
crash half-way leaves markers that the next drain (or the same import run
again) completes.
"""

from __future__ import annotations

from mnemo.assets.store import HEAD as FILE_HEAD
from mnemo.conversations.indexing import EntryFamily
from mnemo.graph.store import ENTITY, FACT
from mnemo.outbox import IndexOutbox
from mnemo.ports import Item, Put
from mnemo.topics.service import HEAD as TOPIC_HEAD

MEMORY_FAMILY, TOPIC_FAMILY, BLOCK_FAMILY, GRAPH_FAMILY = "memory", "topics", "blocks", "graph"
CONVERSATION_FAMILIES = {"conversations": "conversations", "executions": "executions"}


def index_marker(outbox: IndexOutbox, family: str, item: Item) -> Put | None:
    """The marker for ``item`` of export ``family``, or None when the index holds nothing for it."""
    scope = item.pk.split("|", 1)[1]
    if family == "memories" and item.sk.startswith("MEM#"):
        return outbox.marker(MEMORY_FAMILY, {"pk": item.pk, "sk": item.sk})
    if family in CONVERSATION_FAMILIES and item.sk.startswith("MSG#"):
        reference = EntryFamily.reference(scope, item.sk.removeprefix("MSG#"))
        return outbox.marker(CONVERSATION_FAMILIES[family], reference)
    if family == "topics" and item.sk.startswith(TOPIC_HEAD):
        layer = "user" if "|user|" in f"{scope}|" else "project"
        return outbox.marker(TOPIC_FAMILY, {"layer": layer, "scope": scope, "key": item.sk.removeprefix(TOPIC_HEAD)})
    if family == "blocks" and item.sk.startswith(FILE_HEAD) and not item.data.get("deleted"):
        return outbox.marker(BLOCK_FAMILY, {"pk": item.pk, "name": item.sk.removeprefix(FILE_HEAD)})
    if family == "graph" and item.sk.startswith((ENTITY, FACT)):
        return outbox.marker(GRAPH_FAMILY, {"pk": item.pk, "sk": item.sk})
    return None

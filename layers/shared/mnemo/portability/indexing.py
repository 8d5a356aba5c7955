"""Which imported records the vector index mirrors, and the outbox marker that has the target index them.

An imported record is written with its marker in the same all-or-nothing write,
as every service writes its own records; the import then drains the outbox,
so the target's families embed the records with the target's model, and a
crash half-way leaves markers that the next drain (or the same import run
again) completes.
"""

from __future__ import annotations

from mnemo.conversations import store as conversations
from mnemo.conversations.indexing import EntryFamily
from mnemo.files import store as files
from mnemo.files.index import NAMESPACE as BLOCK_FAMILY
from mnemo.graph import store as graph
from mnemo.graph.index import NAMESPACE as GRAPH_FAMILY
from mnemo.memory import records as memories
from mnemo.memory.indexing import NAMESPACE as MEMORY_FAMILY
from mnemo.outbox import IndexOutbox
from mnemo.ports import Item, Put
from mnemo.topics import records as topics
from mnemo.topics.service import NAMESPACE as TOPIC_FAMILY

#: Export family -> outbox family of the conversation kinds.
CONVERSATION_FAMILIES = {
    "conversations": conversations.CONVERSATIONS.namespace,
    "executions": conversations.EXECUTIONS.namespace,
}


def index_marker(outbox: IndexOutbox, family: str, item: Item) -> Put | None:
    """The marker for ``item`` of export ``family``, or None when the index holds nothing for it."""
    scope = item.pk.split("|", 1)[1]
    if family == "memories" and memories.is_record(item.sk):
        return outbox.marker(MEMORY_FAMILY, {"pk": item.pk, "sk": item.sk})
    if family in CONVERSATION_FAMILIES and item.sk.startswith(conversations.RECORD):
        reference = EntryFamily.reference(scope, conversations.message_id_of(item.sk))
        return outbox.marker(CONVERSATION_FAMILIES[family], reference)
    if family == "topics" and item.sk.startswith(topics.HEAD):
        layer = topics.layer_of(scope)
        return outbox.marker(TOPIC_FAMILY, {"layer": layer, "scope": scope, "key": topics.key_of(item.sk)})
    if family == "blocks" and item.sk.startswith(files.HEAD) and not item.data.get("deleted"):
        return outbox.marker(BLOCK_FAMILY, {"pk": item.pk, "name": item.sk.removeprefix(files.HEAD)})
    if family == "graph" and item.sk.startswith((graph.ENTITY, graph.FACT)):
        return outbox.marker(GRAPH_FAMILY, {"pk": item.pk, "sk": item.sk})
    return None

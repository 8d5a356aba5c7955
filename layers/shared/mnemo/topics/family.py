"""The topics family (``TOPIC|{scope}``): what the cross-cutting parts know of it (``mnemo.families``).

No change events. The index mirrors each topic's head (``TOPIC#``); the general section (``GENERAL``) counts
as one topic in an erasure's receipt. Erased with the user's personal scopes, exported.
"""

from __future__ import annotations

from mnemo.families import IndexEntry, RecordFamily
from mnemo.ports import Item
from mnemo.topics.records import BODY, GENERAL, HEAD, NAMESPACE, PARTITION, doc_id, key_of, layer_of


def index(item: Item) -> IndexEntry | None:
    """A topic head's index document."""
    if not item.sk.startswith(HEAD):
        return None
    scope, key = item.pk.removeprefix(PARTITION), key_of(item.sk)
    return IndexEntry(NAMESPACE, {"layer": layer_of(scope), "scope": scope, "key": key}, doc_id(scope, key))


def count_as(sk: str) -> str:
    return "topics" if sk.startswith(HEAD) or sk == GENERAL else "otherRecords"


FAMILY = RecordFamily(
    name="topics",
    partition=PARTITION,
    package="mnemo.topics",
    sort_keys=(HEAD, BODY, GENERAL),
    index=index,
    personal=True,
    erasure_order=40,
    count_as=count_as,
    exported_as="topics",
)

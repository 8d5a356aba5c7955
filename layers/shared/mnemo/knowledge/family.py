"""The knowledge catalog family (``KNOW|{scope}``): what the cross-cutting parts know of it
(``mnemo.families``). Its items (``ITEM#{id}``) mirror the knowledge files of a shared layer.

No events (sync.completed is the sync state's), not erased (knowledge is the organisation's, not a user's),
not exported (the import's sync rebuilds it from the knowledge files).
"""

from __future__ import annotations

from mnemo.families import RecordFamily

PARTITION = "KNOW|"
ITEM = "ITEM#"

FAMILY = RecordFamily(name="knowledgeCatalog", partition=PARTITION, package="mnemo.knowledge", sort_keys=(ITEM,))

"""The sync state family (``SYNC|t={tenant}``): what the cross-cutting parts know of it (``mnemo.families``).

Records: ``STATE`` (the last run: ``lastSyncAt``, ``lastResult``), ``LOCK`` (the tenant's run lock),
``ITEM#{path}`` (what was synced of each knowledge file, with its content tag) and ``FAIL#{path}`` (a file
that failed to sync).

Events: sync.completed when ``STATE``'s ``lastSyncAt`` moves. Not erased (a tenant's, not a user's), not
exported (the import's sync rebuilds it).
"""

from __future__ import annotations

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.families import RecordFamily

PARTITION = "SYNC|"
STATE = "STATE"
LOCK = "LOCK"
ITEM = "ITEM#"
FAILURE = "FAIL#"


def partition_of(tenant: str) -> str:
    """A tenant's sync partition: ``SYNC|t={tenant}``."""
    return f"{PARTITION}t={tenant}"


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """sync.completed, with the run's counts, when the state's ``lastSyncAt`` moves."""
    new = change.new
    if change.sk != STATE or new is None:
        return []
    if change.old is not None and change.old.get("lastSyncAt") == new.get("lastSyncAt"):
        return []
    result = new.get("lastResult") or {}
    data = {key: result.get(key) for key in ("added", "updated", "deleted", "unchanged", "failed") if key in result}
    time = new.get("lastSyncAt") if isinstance(new.get("lastSyncAt"), str) else None
    return [make_event(change, owner, "sync.completed", {}, data={"counts": data}, time=time)]


FAMILY = RecordFamily(
    name="sync",
    partition=PARTITION,
    package="mnemo.sync",
    sort_keys=(STATE, LOCK, ITEM, FAILURE),
    captures=lambda sk: sk == STATE,
    events=events,
)

"""The erasure receipt family (``ERASURE#t={tenant}``): what the cross-cutting parts know of it
(``mnemo.families``). A receipt's sort key is ``{userHash}#{startedAt}#{erasureId}`` (``mnemo.portability.erasure``).

Events: user.erased when a receipt becomes ``completed``; it names the user by ``userHash`` only, as the
receipt does. Not erased (it is the proof of the erasure) and not exported.
"""

from __future__ import annotations

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.families import RecordFamily

#: Partition of a tenant's erasure receipts.
PARTITION = "ERASURE#"


def partition_of(tenant: str) -> str:
    """The partition of a tenant's erasure receipts: ``ERASURE#t={tenant}``."""
    return f"{PARTITION}t={tenant}"


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """user.erased, once, when a receipt's status becomes ``completed``."""
    new, old = change.new, change.old or {}
    if new is None or new.get("status") != "completed" or old.get("status") == "completed":
        return []
    erased = Owner(owner.tenant, "user", {})
    subject = {"erasureId": str(new.get("erasureId") or change.sk.rsplit("#", 1)[-1])}
    counts = new.get("counts") if isinstance(new.get("counts"), dict) else {}
    data = {"userHash": new.get("userHash"), "counts": counts}
    completed = new.get("completedAt") if isinstance(new.get("completedAt"), str) else None
    return [make_event(change, erased, "user.erased", subject, data=data, time=completed)]


FAMILY = RecordFamily(
    name="erasureReceipts", partition=PARTITION, package="mnemo.portability", captures=lambda sk: True, events=events
)

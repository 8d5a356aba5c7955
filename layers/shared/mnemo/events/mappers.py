"""From one record change to its change events: the family that owns the record maps it.

Each record family declares which of its records' changes can give an event (``RecordFamily.captures``) and
what events one gives (``RecordFamily.events``); the registry (``mnemo.runtime.record_families``) finds the
family by the change's partition. docs/events.md lists every kind and the change that gives it.

Every other record gives no event (history, idempotency records, outbox markers, locks, ledger turns, ...).
``Families.captured`` says which keys can give one, so the local change log stores only those and the AWS stream
filter passes only those (template.yaml's ChangeEventsFunction filter; a test keeps the two in step).
"""

from __future__ import annotations

from mnemo.changes import ChangeEvent, RecordChange, owner_of
from mnemo.families import Families


def events_of(change: RecordChange, families: Families) -> list[ChangeEvent]:
    """The change events of one record change (none for most records); their envelopes: ``ChangeEvent.envelope``.

    The owner (tenant, layer, ids) comes from the partition key, never from the body."""
    family = families.owning(change.pk)
    if family is None:
        return []
    owner = owner_of(family.scope_of(change.pk))
    return family.events(change, owner) if owner is not None else []

"""Change events: one event per change to what a user keeps, derived from record changes.

No write path publishes an event. A change event is derived, after the fact, from
the change of one record (``RecordChange``: its key, its body before and after,
its versions, and whether the store itself removed it, as DynamoDB's TTL does):

- on AWS from the records table's DynamoDB stream (``mnemo.entry.change_events``,
  which publishes to EventBridge, one detail-type per kind);
- locally from the change log the SQLite record store writes in the same
  transaction as the change (``mnemo.events.delivery``, which POSTs each event,
  signed, to the webhooks in the settings).

So a write costs what it cost before, an event is never lost once its change is
stored (the stream or the change log holds it until it is delivered), and a
change delivered again gives the same event id.

The change, the event and its envelope are ``mnemo.changes``; each record
family maps its own changes (``mnemo.families``). Modules: ``mappers`` (a change
to the events of the family that owns it), ``signing`` (the webhook signature)
and ``delivery`` (the local webhook worker). docs/events.md is the
reference; docs/events/<kind>.schema.json the schema of each kind.
"""

from mnemo.changes import KINDS, ChangeEvent, RecordChange
from mnemo.events.mappers import events_of

__all__ = ["KINDS", "ChangeEvent", "RecordChange", "events_of"]

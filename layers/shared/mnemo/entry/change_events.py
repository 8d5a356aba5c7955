"""Change events on AWS: the records table's stream in, one EventBridge event per change out.

ChangeEventsFunction (template.yaml, when the ``ChangeEvents`` parameter is ``on``)
reads the records table's stream (NEW_AND_OLD_IMAGES). Its event filter passes only
the keys that can give an event (each family's ``captures``, ``mnemo.families``), so the common
write that gives none (history, idempotency records, outbox markers, locks,
turns) never invokes it. Each stream record becomes a ``RecordChange`` (its keys,
the ``data`` and ``version`` of its old and new images, its approximate creation
time, and whether DynamoDB's TTL removed it: ``userIdentity`` ``{"type":
"Service", "principalId": "dynamodb.amazonaws.com"}``), then zero or more change
events (``mnemo.events.events_of``), published with the EventPublisher port:
``Source`` ``mnemo``, ``DetailType`` the kind, ``Detail`` the envelope
(docs/events.md). Content is in the envelope only with ``MNEMO_CHANGE_EVENT_CONTENT``
(the ``ChangeEventContent`` parameter).

A record whose events cannot be published is reported back (ReportBatchItemFailures)
and retried by Lambda, then sent to the dead-letter queue: delivery is at least
once, and a retried record gives the same event ids.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from mnemo import clock, observability
from mnemo.events import RecordChange, events_of
from mnemo.observability import logger
from mnemo.ports import Event
from mnemo.runtime import get_services, record_families

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)

#: The userIdentity DynamoDB puts on a removal its TTL made.
TTL_PRINCIPAL = "dynamodb.amazonaws.com"


def _body(image: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int | None]:
    """An image's record body and version (None, None when there is no image)."""
    if not image or "data" not in image:
        return None, None
    data = json.loads(str(image["data"]))
    version = image.get("version")
    return (data if isinstance(data, dict) else None), (int(version) if version is not None else None)


def _at(record: DynamoDBRecord) -> str:
    stamp = record.dynamodb.approximate_creation_date_time if record.dynamodb else None
    if isinstance(stamp, datetime):
        moment = stamp
    elif stamp is not None:
        moment = datetime.fromtimestamp(float(stamp), UTC)
    else:  # not in a real stream record; a made-up one still gets a time
        moment = clock.now()
    return clock.iso(moment)


def change_of(record: DynamoDBRecord) -> RecordChange:
    """One stream record as a RecordChange."""
    stream = record.dynamodb
    keys = stream.keys if stream else None
    if not keys or "pk" not in keys or "sk" not in keys:
        raise ValueError("stream record without pk/sk keys")
    old, old_version = _body(stream.old_image if stream else None)
    new, new_version = _body(stream.new_image if stream else None)
    identity = record.user_identity or {}
    return RecordChange(
        pk=str(keys["pk"]),
        sk=str(keys["sk"]),
        old=old,
        new=new,
        at=_at(record),
        old_version=old_version,
        new_version=new_version,
        by_service=identity.get("type") == "Service" and identity.get("principalId") == TTL_PRINCIPAL,
    )


def handle_record(record: DynamoDBRecord) -> int:
    """Publish the change events of one stream record; how many."""
    services = get_services()
    include_content = services.settings.change_event_content
    changed = events_of(change_of(record), record_families())
    events = [Event(detail_type=event.kind, detail=event.envelope(include_content)) for event in changed]
    if events:
        services.events.publish(events)
    return len(events)


@observability.door(observability.SCHEDULE_OR_STREAM)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A stream batch in; the records whose events could not be published out (batch item failures)."""
    logger.append_keys(batchSize=len(event.get("Records") or []))
    response = process_partial_response(event=event, record_handler=handle_record, processor=processor, context=context)
    observability.count("ChangeEventsFailedRecords", len(response.get("batchItemFailures") or []))
    return dict(response)

"""The indexer: DynamoDB Stream records in, vector index brought in line.

A scheduled event (every five minutes) also drains the index outbox
(``mnemo.outbox``): the memories, conversations, executions and topics whose
index write did not complete when they were written.

The stream's event filter (template.yaml, the RecordsStream event) passes only
what needs this function, so the common write costs it nothing:

- an outbox marker queued for it (a write labelled ``STREAM_LABEL``: a
  memory_add whose inline index write failed or timed out, or any family's
  writer that gave up on its index write): drained at once
  (``IndexOutbox.on_marker``), from the record as it is now (the source of
  truth), with no API time limit, so a memory that reached DynamoDB is indexed
  even when OpenSearch failed or was waking from idle during memory_add;
- the removal of a ``MEM#`` item: a removal no marker covers, such as an item
  deleted outside Mnemo, still takes the memory out of the index
  (``MemoryIndexSync.sync_index``);
- a removal by DynamoDB TTL (``userIdentity`` ``{"type": "Service", "principalId":
  "dynamodb.amazonaws.com"}``) of an expired memory (``MEM#``): its history is
  kept from the stream's ``OldImage`` (the folded ADD entry and an EXPIRE item,
  written once however often the record is delivered) and its index document
  removed (``MemoryExpiry.on_removed``); of an expired turn (``MSG#`` in a
  ``CONV|``/``EXEC|`` partition): its index document removed
  (``ConversationService.sync_removed``). See docs/lifecycle.md.

Other ``MEM#`` writes (a stack whose filter still passes every ``MEM#`` write)
are handled as before: a version whose writer indexed it costs one read. An
index write that fails here counts an attempt on the marker, which the drains
retry (and dead-letter after ``MAX_ATTEMPTS``); a record that cannot be read at
all is reported back (ReportBatchItemFailures) for Lambda to retry, then to
the dead-letter queue; a later ``mnemo reindex`` rebuilds everything from the
table anyway.

The drain's metrics (``IndexOutboxDepth``, ``IndexOutboxDeadLetters``) are
emitted only when not zero, so an idle stack sends none: the alarms on them
treat missing data as not breaching.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import (
    DynamoDBRecord,
    DynamoDBRecordEventName,
)

from mnemo import observability
from mnemo.adapters.aws.dynamodb_records import item_of
from mnemo.conversations.store import RECORD as TURN_RECORD
from mnemo.memory.records import is_record
from mnemo.observability import logger
from mnemo.outbox import OUTBOX_PREFIX
from mnemo.runtime import get_services

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def _keys(record: DynamoDBRecord) -> tuple[str, str]:
    keys = record.dynamodb.keys if record.dynamodb else None
    if not keys or "pk" not in keys or "sk" not in keys:
        raise ValueError("stream record without pk/sk keys")
    return str(keys["pk"]), str(keys["sk"])


#: The ``userIdentity`` of a stream record whose item DynamoDB's TTL deleted (AWS: "Time to Live and Streams").
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def _expired(record: DynamoDBRecord) -> bool:
    """Whether a stream record is a removal by TTL: an expired item, not a delete by a caller."""
    identity = record.get("userIdentity") or {}
    return record.event_name == DynamoDBRecordEventName.REMOVE and all(
        identity.get(key) == value for key, value in TTL_IDENTITY.items()
    )


def _on_expired(record: DynamoDBRecord, pk: str, sk: str) -> str:
    """An item TTL removed: a memory's history kept and its document removed, a turn's document removed."""
    services = get_services()
    if is_record(sk):
        image = (record.get("dynamodb") or {}).get("OldImage")
        if image and "data" in image:  # NEW_AND_OLD_IMAGES (template.yaml): the record as it was
            outcome = services.memory.expiry.on_removed(item_of(image))
        else:  # a stream without old images: the document still goes
            outcome = services.memory.sync_index(pk, sk, removed=True)
    elif sk.startswith(TURN_RECORD):
        outcome = services.conversations.sync_removed(pk, sk)
    else:
        outcome = "skipped"
    logger.debug("expired", extra={"item": sk, "outcome": outcome})
    return outcome


def handle_record(record: DynamoDBRecord) -> str:
    pk, sk = _keys(record)
    if pk.startswith(OUTBOX_PREFIX) and record.event_name != DynamoDBRecordEventName.REMOVE:
        outcome = get_services().outbox.on_marker(pk, sk)
        logger.debug("drained", extra={"marker": sk, "outcome": outcome})
        return outcome
    if _expired(record):
        return _on_expired(record, pk, sk)
    if not is_record(sk):
        return "skipped"
    outcome = get_services().memory.sync_index(pk, sk, removed=record.event_name == DynamoDBRecordEventName.REMOVE)
    logger.debug("synced", extra={"memory": sk, "outcome": outcome})
    return outcome


def drain_pending() -> dict[str, Any]:
    """Drain the index outbox; ``deadLetters`` (all of them, not only this run's) feeds an alarm."""
    outbox = get_services().outbox
    report = outbox.drain()
    dead_letters = len(outbox.dead_letters())
    summary = {
        "indexed": report.indexed,
        "stillPending": report.failed,
        "deadLettered": report.dead_lettered,
        "deadLetters": dead_letters,
        "indexedByFamily": report.by_family,
    }
    # Only when not zero: a metric every five minutes is a cost of its own while the stack is idle, and the
    # alarms on these two treat missing data as not breaching.
    if report.failed:
        observability.count("IndexOutboxDepth", report.failed)
    if dead_letters:
        observability.count("IndexOutboxDeadLetters", dead_letters)
    if summary["deadLetters"]:
        logger.warning("the index outbox holds dead letters: run `mnemo reindex --pending`", extra=summary)
    else:
        logger.info("drained the index outbox", extra=summary)
    return summary


@observability.door(observability.SCHEDULE_OR_STREAM)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Stream batches re-sync their memories; the scheduled event drains the index outbox."""
    if event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event":
        return drain_pending()
    logger.append_keys(batchSize=len(event.get("Records") or []))
    response = process_partial_response(event=event, record_handler=handle_record, processor=processor, context=context)
    observability.count("IndexerFailedRecords", len(response.get("batchItemFailures") or []))
    return dict(response)

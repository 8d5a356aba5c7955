"""The indexer: DynamoDB Stream records of memories in, vector index brought in line.

A scheduled event (every five minutes) also drains the index outbox
(``mnemo.outbox``): the memories, conversations, executions and topics whose
index write did not complete when they were written.

Every insert, update or removal of a ``MEM#`` item re-syncs that memory from
the table (the source of truth), so a memory that reached DynamoDB is indexed
even when OpenSearch failed during memory_add. Failed records are reported
back (ReportBatchItemFailures) for Lambda to retry, then to the dead-letter
queue; a later ``mnemo reindex`` rebuilds everything from the table anyway.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from mnemo.runtime import get_services

logger = Logger(service="mnemo-indexer")
processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def _keys(record: DynamoDBRecord) -> tuple[str, str]:
    keys = record.dynamodb.keys if record.dynamodb else None
    if not keys or "pk" not in keys or "sk" not in keys:
        raise ValueError("stream record without pk/sk keys")
    return str(keys["pk"]), str(keys["sk"])


def handle_record(record: DynamoDBRecord) -> str:
    pk, sk = _keys(record)
    if not sk.startswith("MEM#"):
        return "skipped"
    outcome = get_services().memory.sync_index(pk, sk)
    logger.debug("synced", extra={"memory": sk, "outcome": outcome})
    return outcome


def drain_pending() -> dict[str, Any]:
    """Drain the index outbox; ``deadLetters`` (all of them, not only this run's) feeds an alarm."""
    outbox = get_services().outbox
    report = outbox.drain()
    summary = {
        "indexed": report.indexed,
        "stillPending": report.failed,
        "deadLettered": report.dead_lettered,
        "deadLetters": len(outbox.dead_letters()),
        "indexedByFamily": report.by_family,
    }
    if summary["deadLetters"]:
        logger.warning("the index outbox holds dead letters: run `mnemo reindex --pending`", extra=summary)
    else:
        logger.info("drained the index outbox", extra=summary)
    return summary


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Stream batches re-sync their memories; the scheduled event drains the index outbox."""
    if event.get("source") == "aws.events" and event.get("detail-type") == "Scheduled Event":
        return drain_pending()
    response = process_partial_response(event=event, record_handler=handle_record, processor=processor, context=context)
    return dict(response)

"""The EventBridge front door of sync: the schedule, and S3 object events of the knowledge bucket.

- ``Scheduled Event`` (source ``aws.events``): a full sync of every tenant that
  has knowledge files. A tenant whose sync is already running is skipped (that
  run covers it); any other failure is raised after the other tenants ran, so
  the invocation counts as an error and alarms.
- ``Object Created`` / ``Object Deleted`` (source ``aws.s3``): an incremental
  sync of just that object (``knowledge/{tenant}/{path}``). Keys outside the
  knowledge tree are ignored. A push of many files sends a burst of events that
  all want the tenant's sync lock: each waits for it (backing off, while the
  invocation has time left) instead of failing; only if the lock stays taken is
  the CONFLICT raised, so that Lambda's asynchronous retries deliver the event later.

Shapes as documented for EventBridge: ``detail-type``, ``source`` and, for
S3, ``detail.bucket.name`` and ``detail.object.key``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from mnemo import observability
from mnemo.errors import Conflict, MnemoError, ProviderError
from mnemo.knowledge.documents import is_knowledge_file, split_key
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.sync.models import SyncNowInput

S3_DETAIL_TYPES = {"Object Created", "Object Deleted"}
#: Seconds an object event keeps for itself after waiting for the lock (a sync of one file is quick).
RESERVE_SECONDS = 30.0
MAX_WAIT_SECONDS = 120.0


def waiting_for_the_lock(
    operation: Callable[[], dict[str, Any]],
    seconds_left: Callable[[], float],
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Run ``operation``; while another sync holds the tenant's lock, back off and try again."""
    delay, waited = 0.25, 0.0
    while True:
        try:
            return operation()
        except Conflict:
            pause = min(delay, 8.0)
            if waited + pause > MAX_WAIT_SECONDS or seconds_left() - pause < RESERVE_SECONDS:
                raise
            sleep(pause)
            waited += pause
            delay *= 2


def _knowledge_paths(key: str) -> dict[str, list[str]]:
    """Tenant -> paths the key may name: as sent and URL-decoded.

    S3's own notifications URL-encode keys ("red flower.md" arrives as
    "red+flower.md"); whether its EventBridge events do is not documented, so both
    readings are synced. A path that names no stored file and no synced item is a
    no-op for sync, so the wrong reading costs one read.
    """
    found: dict[str, list[str]] = {}
    for candidate in dict.fromkeys([key, unquote_plus(key)]):
        split = split_key(candidate)
        if split is not None and is_knowledge_file(split[1]):
            found.setdefault(split[0], []).append(split[1])
    return found


def sync_object(key: str) -> dict[str, Any]:
    candidates = _knowledge_paths(key)
    if not candidates:
        logger.info("ignored object outside the knowledge tree", extra={"key": key})
        return {"ignored": key}
    answer: dict[str, Any] = {}
    for tenant, paths in candidates.items():
        output = get_services().sync.sync(tenant, SyncNowInput(), actor="s3-event", paths=paths)
        logger.info("synced object", extra={"tenant": tenant, "paths": paths, "result": output.result.model_dump()})
        answer = {"tenant": tenant, "path": paths[0], "result": output.result.model_dump(by_alias=True)}
    return answer


def sync_all() -> dict[str, Any]:
    """Sync every tenant that has knowledge files. The summary line is INFO when something changed (an item
    added, updated or deleted, or a failure) and DEBUG otherwise: `mnemo serve` runs this every minute, and a
    line a minute that says nothing happened buries the lines that matter."""
    services = get_services()
    results: dict[str, Any] = {}
    failed: list[str] = []
    changed = False
    tenants = services.repository.tenants()
    # A random order: if the invocation runs out of time, it is not always the same tenants that wait.
    random.shuffle(tenants)
    for tenant in tenants:
        try:
            output = services.sync.sync(tenant, SyncNowInput(), actor="schedule")
        except Conflict:
            results[tenant] = "skipped: a sync is already running"
            continue
        except Exception as error:  # the other tenants still sync
            logger.exception("scheduled sync failed", extra={"tenant": tenant})
            results[tenant] = f"failed: {error}"
            failed.append(tenant)
            continue
        counts = output.result
        changed = changed or counts.added + counts.updated + counts.deleted + counts.failures > 0
        results[tenant] = counts.model_dump(by_alias=True)
    (logger.info if changed or failed else logger.debug)("scheduled sync", extra={"results": results})
    if failed:
        raise ProviderError(f"sync failed for {len(failed)} tenant(s)", {"tenants": failed})
    return results


def _seconds_left(context: Any) -> float:
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return remaining() / 1000.0 if callable(remaining) else MAX_WAIT_SECONDS + RESERVE_SECONDS


@observability.door(observability.EVENTBRIDGE)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    detail_type = event.get("detail-type")
    if event.get("source") == "aws.s3" and detail_type in S3_DETAIL_TYPES:
        try:
            key = event["detail"]["object"]["key"]
        except (KeyError, TypeError):
            raise ValueError("an S3 event without detail.object.key") from None
        try:
            return waiting_for_the_lock(lambda: sync_object(str(key)), lambda: _seconds_left(context))
        except MnemoError as error:
            logger.warning("object sync failed; the event will be retried", extra={"error": error.envelope()})
            raise
    if detail_type == "Scheduled Event":
        return sync_all()
    raise ValueError(f"unexpected event: source={event.get('source')!r} detail-type={detail_type!r}")

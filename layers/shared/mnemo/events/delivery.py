"""The local webhook worker: logged changes in, signed POSTs out, retried with backoff, every attempt logged.

``run_once`` does two steps, each on leased rows (``mnemo.ports.ChangeLog``), so
the server's processes never work on one row at the same time and a worker killed
mid-way loses nothing (its leases run out and the next worker takes the rows):

1. changes to deliveries: each logged change is mapped to its events
   (``mnemo.events.mappers``), each event to one delivery per webhook that wants
   its kind; the deliveries are stored and the changes forgotten in one
   transaction, so a change is either still logged or has its deliveries;
2. deliveries to webhooks: each due delivery is POSTed with the same body and the
   same ``Mnemo-Event-Id`` every attempt, signed afresh (``mnemo.events.signing``).
   A 2xx answer delivers it; anything else (another status, no answer) is retried
   after 1 s, 2 s, 4 s ... up to ``MAX_BACKOFF_SECONDS``, and given up (status
   ``failed``) after ``MAX_ATTEMPTS``.

Delivery is at least once: a worker killed between a receiver's 2xx and the
record of it sends that event again, with the same id.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mnemo.changes import RecordChange
from mnemo.events.mappers import events_of
from mnemo.events.signing import ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_KIND_HEADER, SIGNATURE_HEADER, sign
from mnemo.families import Families
from mnemo.ports import ChangeLog, Delivery
from mnemo.settings import Webhook

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 12
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 600.0
#: How long a worker holds the rows it took (longer than a batch's POSTs take).
LEASE_SECONDS = 120.0
POST_TIMEOUT_SECONDS = 10.0
BATCH = 100

#: POST(url, headers, body, timeout) -> (HTTP status, None) or (None, why it was not delivered).
Poster = Callable[[str, dict[str, str], bytes, float], tuple[int | None, str | None]]


@dataclass(frozen=True)
class DeliveryReport:
    """What one ``run_once`` did."""

    changes: int = 0
    queued: int = 0
    delivered: int = 0
    retrying: int = 0
    failed: int = 0


def backoff(attempts: int) -> float:
    """Seconds before the attempt after ``attempts`` failed ones: 1, 2, 4, ... at most ``MAX_BACKOFF_SECONDS``."""
    return float(min(FIRST_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS))


class WebhookDelivery:
    """Maps logged changes to events and POSTs them to the webhooks (see the module docstring)."""

    def __init__(
        self,
        log: ChangeLog,
        post: Poster,
        webhooks: Sequence[Webhook],
        *,
        families: Families,
        include_content: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._log = log
        self._post = post
        self._families = families
        self._webhooks = {webhook.url: webhook for webhook in webhooks}
        self._include_content = include_content
        self._clock = clock
        self._worker = f"w-{secrets.token_hex(6)}"
        # One round at a time per worker: its leases are its own, so two rounds of it could take the same rows.
        self._round = threading.Lock()

    def run_once(self) -> DeliveryReport:
        """Turn every logged change into deliveries, then attempt every delivery that is due (nothing when a round
        of this worker is under way in another thread)."""
        if not self._round.acquire(blocking=False):
            return DeliveryReport()
        try:
            return self._run()
        finally:
            self._round.release()

    def _run(self) -> DeliveryReport:
        changes = queued = 0
        while True:
            logged = self._log.lease_changes(self._worker, BATCH, LEASE_SECONDS)
            if not logged:
                break
            deliveries = self._deliveries_or_skip(logged)
            self._log.settle_changes([row.seq for row in logged if row.seq is not None], deliveries)
            changes, queued = changes + len(logged), queued + len(deliveries)
        delivered = retrying = failed = 0
        while True:
            due = self._log.lease_deliveries(self._worker, BATCH, LEASE_SECONDS, self._clock())
            if not due:
                break
            for delivery in due:
                outcome = self.attempt(delivery)
                self._log.record_attempt(outcome)
                delivered += outcome.status == "delivered"
                failed += outcome.status == "failed"
                retrying += outcome.status == "pending"
            if retrying + failed >= len(due) and not delivered:
                break  # every one failed: a receiver is down, the next round tries again
        return DeliveryReport(changes, queued, delivered, retrying, failed)

    def _deliveries_or_skip(self, logged: Sequence[RecordChange]) -> list[Delivery]:
        """``deliveries_of``, row by row when the batch fails: a row that cannot be mapped is logged and settled
        with no delivery, so it never holds back every change logged after it."""
        try:
            return self.deliveries_of(logged)
        except Exception:
            deliveries: list[Delivery] = []
            for row in logged:
                try:
                    deliveries.extend(self.deliveries_of([row]))
                except Exception:
                    logger.exception("change %s (%s %s) gives no event; skipped", row.seq, row.pk, row.sk)
            return deliveries

    def deliveries_of(self, logged: Sequence[RecordChange]) -> list[Delivery]:
        """One delivery per event of these changes and webhook that wants its kind."""
        deliveries: list[Delivery] = []
        now = self._clock()
        for row in logged:
            for event in events_of(row, self._families):
                body = json.dumps(event.envelope(self._include_content), separators=(",", ":"), sort_keys=True)
                for url, webhook in self._webhooks.items():
                    if webhook.kinds is None or event.kind in webhook.kinds:
                        deliveries.append(
                            Delivery(event.id, url, event.kind, body, created_at=now, updated_at=now, next_at=now)
                        )
        return deliveries

    def attempt(self, delivery: Delivery) -> Delivery:
        """POST one delivery once; the delivery as it stands after."""
        now = self._clock()
        attempts = delivery.attempts + 1
        webhook = self._webhooks.get(delivery.target)
        if webhook is None:
            return replace(delivery, status="failed", last_error="no such webhook configured any more", updated_at=now)
        body = delivery.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "mnemo-webhooks/1",
            EVENT_ID_HEADER: delivery.event_id,
            EVENT_KIND_HEADER: delivery.kind,
            ATTEMPT_HEADER: str(attempts),
            SIGNATURE_HEADER: sign(webhook.secret, body, int(now)),
        }
        status, error = self._post(delivery.target, headers, body, POST_TIMEOUT_SECONDS)
        after = self._clock()
        if status is not None and 200 <= status < 300:
            return replace(
                delivery, status="delivered", attempts=attempts, last_status=status, last_error=None, updated_at=after
            )
        reason = error if status is None else f"HTTP {status}"
        gave_up = attempts >= MAX_ATTEMPTS
        return replace(
            delivery,
            status="failed" if gave_up else "pending",
            attempts=attempts,
            last_status=status,
            last_error=reason,
            updated_at=after,
            next_at=after + backoff(attempts),
        )

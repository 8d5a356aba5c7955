"""The webhook signature: HMAC-SHA256 over ``"{timestamp}.{body}"`` with the webhook's secret.

Each POST carries ``Mnemo-Signature: t=<unix seconds>,v1=<hex digest>``. A receiver recomputes the
digest over the timestamp and the raw body it received, compares in constant time, and refuses a
timestamp too far from its clock (a replayed request). ``verify`` is that check; docs/events.md
shows the same in a dozen lines a receiver can copy.
"""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Mnemo-Signature"
EVENT_ID_HEADER = "Mnemo-Event-Id"
EVENT_KIND_HEADER = "Mnemo-Event-Kind"
ATTEMPT_HEADER = "Mnemo-Delivery-Attempt"
#: How far a signature's timestamp may be from the receiver's clock.
TOLERANCE_SECONDS = 300


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The ``Mnemo-Signature`` value of ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(
    secret: str, header: str, body: bytes, *, now: float | None = None, tolerance: int = TOLERANCE_SECONDS
) -> bool:
    """Whether ``header`` is a valid signature of ``body`` with ``secret``, made within ``tolerance`` of ``now``."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected.encode(), fields.get("v1", "").encode())  # bytes: any text compares

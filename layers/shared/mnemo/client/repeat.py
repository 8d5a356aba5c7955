"""Which calls the client may send again when it cannot know whether the first one ran.

API Gateway answers 504 when its integration timeout passes, but the function behind it keeps running,
and a client's own read timeout or a gateway 502 (the function failed midway) leave the same doubt. A
second attempt then runs beside, or after, a first that may have done its work. Only two kinds of call
are sent again in that case:

- **reads**: tools that change nothing the caller stores (the outline tools refresh a derived index of
  the workspace, which a repeat leaves as it was);
- **writes carrying a key the service stores once under**: ``memory_add`` with ``idempotencyKey`` (a
  repeat answers the stored response), ``add_conversation`` and ``add_execution`` with ``message_id``
  (one record per message id; the same content again is a repeat), and ``memory_add_batch`` when every
  item carries its ``idempotencyKey``.

Every other write (and build_memory_from_text, whose model calls are billed each time) raises the
error instead, so the caller decides: look before writing again (``memory_search``, ``sync_status``,
``get_memory_object``). Answers that say the call was not run (429, 503, a refused connection, an error
envelope marked retryable by the service) are retried for every tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemo.client.tools import REPEATABLE

#: Tools that write nothing the caller keeps: generated from the catalog's ``repeatable`` marks.
READ_ONLY = REPEATABLE
#: Writes the service stores once per value of this request field.
KEYED_WRITES = {"memory_add": "idempotencyKey", "add_conversation": "message_id", "add_execution": "message_id"}
#: Statuses after which the call may have run: the gateway's integration timeout, a function that failed.
OUTCOME_UNKNOWN_STATUSES = frozenset({502, 504})
#: Batches of keyed writes: tool -> (the list of items, the keys each item must carry, each by any of its names).
#: A message of add_messages is a repeat only with its id and its time: without ``at`` the service stamps its
#: own time, and the second sending would differ from the first (CONFLICT).
KEYED_BATCHES: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "memory_add_batch": ("items", (("idempotencyKey", "idempotency_key"),)),
    "add_messages": ("messages", (("id",), ("at",))),
}


def safe_to_repeat(tool: str, body: Mapping[str, Any]) -> bool:
    """Whether sending ``body`` to ``tool`` twice has the effect of sending it once."""
    if tool in READ_ONLY:
        return True
    key = KEYED_WRITES.get(tool)
    if key is not None:
        return bool(body.get(key))
    batch = KEYED_BATCHES.get(tool)
    if batch is None:
        return False
    items, keys = batch
    found = body.get(items)
    return (
        isinstance(found, list)
        and bool(found)
        and all(
            isinstance(item, Mapping) and all(any(item.get(name) for name in names) for names in keys) for item in found
        )
    )


def outcome_unknown(code: str, status: int | None, details: Mapping[str, Any]) -> bool:
    """Whether an error leaves open that the call ran: a 502 or 504, a TIMEOUT, or no answer in time."""
    return status in OUTCOME_UNKNOWN_STATUSES or code == "TIMEOUT" or details.get("outcome") == "unknown"

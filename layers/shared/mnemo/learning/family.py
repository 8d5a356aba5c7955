"""The extraction ledger (``LEARN|{stream}``) and its queue (``LEARNQ|{shard}``): what the cross-cutting parts
know of them (``mnemo.families``).

Events: a run's record insert (``RUN#``) is extraction.completed, with its strategies and the decisions on
their candidates. Erasure: the ledger of the user's personal scopes (waiting turns, stream state, runs), then
the user's streams in the queue's lists (``extractionQueue``). Neither is exported: a target extracts anew.
"""

from __future__ import annotations

from collections.abc import Iterator

from mnemo.changes import ChangeEvent, Owner, RecordChange, make_event
from mnemo.families import ErasurePage, ErasureScope, ErasureStep, RecordFamily, is_personal_scope, paged
from mnemo.families import personal_prefixes as scope_prefixes
from mnemo.learning.ledger import PARTITION, QUEUE, RUN, STATE, TURN, decision_counts, queue_partitions


def captures(sk: str) -> bool:
    return sk.startswith(RUN)


def events(change: RecordChange, owner: Owner) -> list[ChangeEvent]:
    """extraction.completed when a run's record is stored."""
    view = change.new
    if not change.sk.startswith(RUN) or not change.inserted or view is None:
        return []
    decisions, failed = decision_counts(view)
    run_id = str(view.get("runId") or change.sk.rsplit("#", 1)[-1])
    data = {
        "trigger": view.get("trigger"),
        "turns": len(view.get("turns") or []),
        "strategies": [str(part.get("strategy")) for part in view.get("strategies") or []],
        "failedStrategies": failed,
        "decisions": decisions,
    }
    return [make_event(change, owner, "extraction.completed", {"runId": run_id}, data=data)]


def queue_entries(where: ErasureScope) -> Iterator[ErasurePage]:
    """The user's streams in the lists of streams with waiting turns."""
    found = [
        item
        for partition in queue_partitions()
        for prefix in scope_prefixes("", where.tenant, where.user)
        for item in where.records.query(partition, prefix, limit=10_000)
        if is_personal_scope(item.sk, where.tenant, where.user)
    ]
    yield from paged(found)


FAMILY = RecordFamily(
    name="extraction",
    partition=PARTITION,
    package="mnemo.learning",
    sort_keys=(STATE, TURN, RUN),
    captures=captures,
    events=events,
    personal=True,
    erasure_order=100,
    count_as=lambda sk: "extraction",
)
QUEUE_FAMILY = RecordFamily(
    name="extractionQueue",
    partition=QUEUE,
    package="mnemo.learning",
    steps=(ErasureStep("extractionQueue", 130, queue_entries, count_as=lambda sk: "extraction"),),
)

"""`mnemo reindex`: the vector index rebuilt from the records, or only what failed to index earlier; `mnemo expire`:
expired memories and turns removed now (what the local server's maintenance does every minute)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mnemo.outbox import IndexOutbox
    from mnemo.runtime import Services


def sweep_expired(services: Services) -> dict[str, int]:
    """Remove the expired items the record store still holds (``mnemo.expiry.sweep``): memories with their
    history kept, turns, and the rest; the counts ``memories``, ``turns``, ``other``."""
    from mnemo.expiry import ExpiringFamily, sweep

    expiring: list[ExpiringFamily] = [services.memory.expiry, services.conversations]
    counts = sweep(services.records, expiring, services.families, services.index)
    memory, turns = services.memory.expiry.expiring_prefixes[0], services.conversations.expiring_prefixes[0]
    return {"memories": counts.get(memory, 0), "turns": counts.get(turns, 0), "other": counts.get("other", 0)}


def cmd_expire(args: argparse.Namespace) -> int:
    """`mnemo expire`: remove what has expired now and print the counts (DynamoDB's TTL does it on AWS)."""
    from mnemo.runtime import get_services

    counts = sweep_expired(get_services())
    print(f"removed {counts['memories']} expired memories, {counts['turns']} turns and {counts['other']} other items")
    return 0


def _reindex_pending(outbox: IndexOutbox, *, retry_dead: bool) -> int:
    """Drain the index outbox and report what is left; non-zero while anything waits or is dead."""
    if retry_dead:
        print(f"queued {outbox.retry_dead_letters()} dead letters again")
    report = outbox.drain()
    families = ", ".join(f"{count} {name}" for name, count in sorted(report.by_family.items())) or "nothing"
    print(f"indexed {families}; {report.failed} still pending, {report.dead_lettered} newly dead-lettered")
    dead = outbox.dead_letters()
    for letter in dead:
        print(
            f"dead letter: {letter['family']} {json.dumps(letter['ref'], sort_keys=True)} "
            f"after {letter['attempts']} attempts: {letter.get('lastError', '')}"
        )
    if dead:
        print(f"{len(dead)} dead letters: fix the cause, then `mnemo reindex --pending --retry-dead`")
    return 0 if report.failed == 0 and not dead else 1


def cmd_reindex(args: argparse.Namespace) -> int:
    """`mnemo reindex`: rebuild the vector index of every indexed family from its records and print the counts; with
    ``--pending`` only drain the index outbox (non-zero while anything waits or is dead-lettered)."""
    from mnemo.runtime import get_services

    services = get_services()
    if args.pending:
        return _reindex_pending(services.outbox, retry_dead=args.retry_dead)
    count = services.memory.reindex()
    topics = services.topics.reindex()
    conversations = services.conversations.reindex()
    blocks = services.block_index.reindex()
    graph = services.graph.reindex()
    print(
        f"reindexed {count} memories, {topics} topics, {conversations} conversation and execution records, "
        f"{blocks} blocks and skills, {graph} graph entities and facts"
    )
    return 0


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add the `reindex` parser."""
    reindex = commands.add_parser(
        "reindex",
        help="rebuild the vector index from the records (memories, topics, conversations, blocks and skills)",
    )
    reindex.add_argument("--data-dir", type=Path)
    reindex.add_argument("--pending", action="store_true", help="only index what failed to index earlier")
    reindex.add_argument(
        "--retry-dead", action="store_true", help="with --pending: queue the dead letters again before draining"
    )
    reindex.set_defaults(run=cmd_reindex)
    expire = commands.add_parser(
        "expire",
        help="remove expired memories and turns now, with their index documents (memory_history keeps EXPIRE)",
    )
    expire.add_argument("--data-dir", type=Path)
    expire.set_defaults(run=cmd_expire)

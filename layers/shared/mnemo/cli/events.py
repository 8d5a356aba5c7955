"""`mnemo events`: the local change events' delivery log, newest first (docs/events.md, "Local webhooks").

Each line is one event's delivery to one webhook: its status (pending, delivered, failed: given up), the
attempts so far, the kind, the event id, the webhook, and the last answer (an HTTP status or why none came).
``--failed`` shows only those whose last attempt failed; ``--json`` prints them as JSON. Reads the data
directory's SQLite file; the server need not run.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from mnemo import clock


def _when(epoch: float) -> str:
    return clock.iso_of_epoch(epoch, "seconds")


def cmd_events(args: argparse.Namespace) -> int:
    """Print the most recent deliveries (``--limit``), only the failed ones with ``--failed``; 0 always (an empty
    log is not an error)."""
    from mnemo.adapters.local.change_log import SqliteChangeLog
    from mnemo.cli.output import print_json
    from mnemo.settings import Settings

    settings = Settings.from_env()
    if not settings.sqlite_path.exists():
        deliveries, waiting = [], 0
    else:
        log = SqliteChangeLog(settings.sqlite_path)
        deliveries, waiting = log.deliveries(args.limit, failed_only=args.failed), log.pending_changes()
    if args.json:
        rows = [{**{k: v for k, v in asdict(d).items() if k != "body"}} for d in deliveries]
        for row in rows:
            for key in ("created_at", "updated_at", "next_at"):
                row[key] = _when(row[key])
        print_json({"deliveries": rows, "changesWaiting": waiting})
        return 0
    if not deliveries:
        print("no failed deliveries" if args.failed else "no deliveries yet")
    for d in deliveries:
        answer = f"HTTP {d.last_status}" if d.last_status is not None else (d.last_error or "-")
        retry = f" next try {_when(d.next_at)}" if d.status == "pending" and d.attempts else ""
        print(f"{_when(d.updated_at)} {d.status:<9} x{d.attempts} {d.kind:<22} {d.event_id} {d.target} {answer}{retry}")
    if waiting:
        print(f"{waiting} changes wait to be made into events (the server delivers them)")
    return 0


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add the `events` parser."""
    events = commands.add_parser("events", help="show the change events' deliveries to the webhooks (newest first)")
    events.add_argument("--data-dir", type=Path)
    events.add_argument("--failed", action="store_true", help="only deliveries whose last attempt failed")
    events.add_argument("--json", action="store_true", help="print JSON")
    events.add_argument("--limit", type=int, default=50, help="the most deliveries to show")
    events.set_defaults(run=cmd_events)

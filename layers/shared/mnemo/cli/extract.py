"""`mnemo extract`: backfill, the strategies run over conversations stored before extraction was on.

``--repair`` instead merges each subject's current duplicates that the code before the subject pointer left
(``mnemo.learning.repair``): one JSON line with what it did; idempotent, and safe to run again if cut short.

Every user with stored conversation or execution records (or the one ``--user`` names, of ``--tenant``)
has the turns not yet extracted queued and extracted to the end, a progress bar on stderr; the answer
is one JSON line with the users and runs. Idempotent: a second run finds nothing to do.
"""

from __future__ import annotations

import argparse
import json
import sys


def cmd_extract(args: argparse.Namespace) -> int:
    """Backfill every user's (or one user's) stored turns; 2 when extraction is off (the message says how to turn
    it on)."""
    from pydantic import ValidationError

    from mnemo.cli.progress import Progress
    from mnemo.context import RequestContext
    from mnemo.runtime import get_services

    services = get_services()
    if args.repair:
        from mnemo.learning.repair import Repair

        print(json.dumps(Repair(services.records).run().view()))
        return 0
    learning = services.learning
    if not learning.enabled:
        print(f"extraction is off: {learning.how_to_enable}", file=sys.stderr)
        return 2
    try:
        users = [RequestContext(tenant=args.tenant, user=args.user)] if args.user else learning.users_with_turns()
    except ValidationError:
        print("--user and --tenant use letters, digits and ._@:+=,/- (at most 256)", file=sys.stderr)
        return 2
    progress = Progress("extracted", len(users), sys.stderr)
    runs = 0
    for done, context in enumerate(users, 1):
        runs += learning.backfill(context)
        progress.update(done, f"{context.tenant}/{context.user}")
    progress.close()
    print(json.dumps({"users": len(users), "runs": runs}))
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `extract` parser."""
    parser = commands.add_parser(
        "extract", help="run the extraction strategies over stored conversations (backfill), with a progress bar"
    )
    parser.add_argument("--user", help="only this user's turns (default: every user with stored turns)")
    parser.add_argument("--tenant", default="local", help="the tenant of --user (default local)")
    parser.add_argument("--data-dir", help="where the embedded stores live (env MNEMO_DATA_DIR)")
    parser.add_argument(
        "--repair",
        action="store_true",
        help="instead: merge each subject's current duplicates left by earlier versions (idempotent)",
    )
    parser.set_defaults(run=cmd_extract)

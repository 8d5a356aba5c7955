"""`mnemo erase-user`: erase everything stored for one user of one tenant (GDPR), and print the receipt.

The operator's door to ``mnemo.portability.erasure``: whoever can run it can reach the stores, so no role is
asked (the ``erase_user`` tool needs ``admin``). The stores are those the MNEMO_* settings name, as for
`mnemo export`: the embedded default under ``--data-dir``, or DynamoDB and S3 (``MNEMO_RECORDS=dynamodb``,
``MNEMO_BLOBS=s3`` ...) with the vector index ``MNEMO_VECTOR_INDEX`` names.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mnemo.errors import InvalidInput, MnemoError, ProviderError

ERASE_HELP = """\
Deletes, for USER of TENANT: memories of their own layers (user, agent,
session) with their history, the memories they wrote into shared layers,
conversations, executions, topics, StoredAssets and pins, their personal
workspace files with every blob version, graph entities and facts, extraction
state, idempotency records and the index documents of all of these. Prints the
receipt: counts per family; it keeps a hash of the user id, never the id, and
is kept a year (docs/security.md, "Erasing a user").

Resumable: an erasure that stops part-way (a failure, Ctrl-C) is resumed by
running the same command again; the counts add up across runs. `--receipts`
prints the receipts kept for the user and erases nothing.

Exit status: 0 when the erasure completed (or the receipts were printed), 1 on
an error (its envelope on stderr; run again to resume)."""


def cmd_erase_user(args: argparse.Namespace) -> int:
    """`mnemo erase-user`: erase the user (or resume their erasure) and print the receipt; ``--receipts`` prints the
    kept receipts instead. Exit status 0, or 1 on an error (its envelope on stderr)."""
    from mnemo.context import RequestContext
    from mnemo.runtime import get_services

    tenant = args.tenant or os.environ.get("MNEMO_TENANT") or "local"
    try:
        # The same id rules as every identity (mnemo.context): a malformed one names its option.
        RequestContext(tenant=tenant, user=args.user)
    except ValueError:
        print(json.dumps(InvalidInput("tenant/user: not an id", {"field": "user"}).envelope()), file=sys.stderr)
        return 1
    try:
        services = get_services()
        erasure = services.erasure
        if args.receipts:
            found = [receipt.model_dump(mode="json", by_alias=True) for receipt in erasure.receipts(tenant, args.user)]
            print(json.dumps(found, indent=None if args.json else 2))
            return 0
        receipt = erasure.erase(tenant, args.user)
    except MnemoError as error:
        print(json.dumps(error.envelope()), file=sys.stderr)
        return 1
    except Exception as error:  # a store failure: an envelope, never a traceback; the next run resumes
        stopped = ProviderError(
            f"the erasure stopped: {type(error).__name__}: {error}; run the command again to resume", {}
        )
        print(json.dumps(stopped.envelope()), file=sys.stderr)
        return 1
    answer = receipt.model_dump(mode="json", by_alias=True)
    if args.json:
        print(json.dumps(answer))
    else:
        counted = ", ".join(f"{value} {key}" for key, value in answer["counts"].items() if value) or "nothing"
        print(f"erased user of tenant {tenant!r} ({answer['erasureId']}, {answer['status']}): {counted}")
    return 0


def add_command(commands: argparse._SubParsersAction) -> None:
    """Add the `erase-user` parser."""
    parser = commands.add_parser(
        "erase-user",
        help="erase everything stored for one user of a tenant (GDPR), resumable, and print the receipt",
        description="Erase one user of one tenant from every family, and print the receipt.",
        epilog=ERASE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tenant", help="the tenant (default MNEMO_TENANT, else local)")
    parser.add_argument("--user", required=True, help="the user to erase")
    parser.add_argument("--json", action="store_true", help="print the receipt as one JSON line")
    parser.add_argument("--receipts", action="store_true", help="print the user's kept receipts; erase nothing")
    parser.add_argument("--data-dir", type=Path)
    parser.set_defaults(run=cmd_erase_user)

"""`mnemo serve` and `mnemo mcp`: the tools served over HTTP (the local API Gateway) or over MCP on stdio."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path

from mnemo.cli.help import EXPERIMENTAL_HELP


def _workers(text: str) -> int:
    """``--workers``: ``auto`` (one per usable core) or a whole number of at least 1 (``worker_count``)."""
    from mnemo.entry.local_server import worker_count

    try:
        return worker_count(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _use_aws_endpoint(endpoint: str) -> None:
    """Point every AWS adapter at one endpoint (a moto server) and create what is missing there."""
    from mnemo.adapters.aws.bootstrap import ensure_bucket, ensure_records_table
    from mnemo.adapters.aws.clients import aws_client
    from mnemo.settings import Settings

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")  # moto accepts any credentials
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ["MNEMO_AWS_ENDPOINT"] = endpoint
    os.environ.setdefault("MNEMO_AWS_REGION", os.environ.get("AWS_REGION", "us-east-1"))
    os.environ["MNEMO_RECORDS"] = "dynamodb"
    os.environ["MNEMO_BLOBS"] = "s3"
    os.environ["MNEMO_EVENTS"] = "eventbridge"
    os.environ.setdefault("MNEMO_BLOB_BUCKET", "mnemo-knowledge")
    settings = Settings.from_env()
    region = settings.aws_region or "us-east-1"
    if ensure_records_table(aws_client("dynamodb", region, endpoint), settings.records_table):
        print(f"created table {settings.records_table} at {endpoint}", flush=True)
    if ensure_bucket(aws_client("s3", region, endpoint), settings.blob_bucket or "mnemo-knowledge", region):
        print(f"created bucket {settings.blob_bucket} at {endpoint}", flush=True)


def _maintain_forever(interval: float, sync_every: int) -> None:
    """Index what an index outage left queued every ``interval`` seconds, and sync knowledge and remove what has
    expired every ``sync_every`` rounds (what the indexer, the sync schedule and DynamoDB TTL do on AWS)."""
    import time

    from mnemo.cli.reindex import sweep_expired
    from mnemo.entry.sync_events import sync_all
    from mnemo.runtime import get_services

    rounds = 0
    while True:
        time.sleep(interval)
        rounds += 1
        try:
            get_services().outbox.drain()
            if rounds % sync_every == 0:
                sweep_expired(get_services())
                sync_all()
        except Exception as error:  # the next round tries again
            print(f"background maintenance failed: {error}", file=sys.stderr, flush=True)


def _deliver_change_events(interval: float) -> None:
    """POST change events to the webhooks (MNEMO_WEBHOOKS) every ``interval`` seconds, at once on start: what a
    crash left logged or undelivered goes first (docs/events.md)."""
    import time

    from mnemo.runtime import get_services

    delivery = get_services().change_delivery
    if delivery is None:
        return
    while True:
        try:
            delivery.run_once()
        except Exception as error:  # the next round tries again; nothing is lost, the rows stay
            print(f"change event delivery failed: {error}", file=sys.stderr, flush=True)
        time.sleep(interval)


def _deliver_before_exit(timeout: float) -> None:
    """One last delivery round at shutdown, given at most ``timeout`` seconds (what it leaves, the next start
    delivers: the rows stay)."""
    from mnemo.runtime import get_services

    delivery = get_services().change_delivery
    if delivery is not None:
        last = threading.Thread(target=delivery.run_once, daemon=True, name="change-events-exit")
        last.start()
        last.join(timeout)


def cmd_serve(args: argparse.Namespace) -> int:
    """`mnemo serve`: bind the port first (1 when it is taken), optionally switch to the AWS adapters at
    ``--aws-endpoint`` and load ``--knowledge``, then serve HTTP until interrupted, with outbox draining and knowledge
    sync in a background thread."""
    from mnemo.entry.local_server import PortInUse, ServeOptions, bind, serve, start_extraction_worker

    options = ServeOptions(
        host=args.host,
        port=args.port,
        workers=args.workers,
        allowed_hosts=tuple(args.allow_host or ()),
        allowed_origins=tuple(args.allow_origin or ()),
        verbose=args.verbose,
    )
    try:  # bound first, so that a busy port is one line before anything else starts
        sock = bind(options.host, options.port, options.backlog)
    except PortInUse as error:
        print(error, file=sys.stderr, flush=True)
        return 1
    if args.aws_endpoint:
        _use_aws_endpoint(args.aws_endpoint)
    if args.knowledge:
        from mnemo.cli.knowledge import load_knowledge
        from mnemo.entry.identity import context_from_environment

        print(load_knowledge(Path(args.knowledge), context_from_environment(os.environ).tenant), flush=True)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    workers = f", {options.workers} worker processes" if options.workers > 1 else ""
    print(f"mnemo serving on http://{shown}:{port} (docs at /docs, console at /ui/{workers})", flush=True)
    # With worker processes, this one only supervises them, so it does the maintenance alone.
    threading.Thread(target=_maintain_forever, args=(15.0, 4), daemon=True).start()
    threading.Thread(target=_deliver_change_events, args=(1.0,), daemon=True, name="change-events").start()
    # Alone, this process serves and drains its own notices too; with workers, each drains its own (local_server).
    start_extraction_worker(sweep=True)
    try:
        serve(options, sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        _deliver_before_exit(5.0)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """`mnemo mcp`: serve the tools over MCP on stdio until the client closes it."""
    import anyio

    from mnemo.entry.mcp_server import serve_stdio

    anyio.run(serve_stdio)
    return 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `serve` and `mcp` parsers."""
    from mnemo.entry.local_server import AUTO_WORKERS, usable_cores

    serve = commands.add_parser("serve", help="serve the tools over HTTP (the local API Gateway)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8765")), help="port (env PORT)")
    serve.add_argument("--data-dir", type=Path, help="where the embedded stores live (env MNEMO_DATA_DIR)")
    serve.add_argument(
        "--workers",
        type=_workers,
        default=AUTO_WORKERS,
        metavar="auto|N",
        help=f"server processes: auto is one per core this process may use ({usable_cores()} here); "
        "1 serves from this process alone",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="serve requests whose Host is NAME too (besides localhost, 127.0.0.1, [::1]); repeatable, * for any",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="accept requests from web pages at ORIGIN (e.g. http://localhost:3000); repeatable, * for any",
    )
    serve.add_argument("--verbose", action="store_true", help="log every request")
    serve.add_argument(
        "--knowledge", metavar="DIR", help="push this knowledge repository (tenant MNEMO_TENANT, else local) and sync"
    )
    serve.add_argument(
        "--aws-endpoint", help="use the AWS adapters (DynamoDB, S3, EventBridge) against this endpoint, e.g. moto"
    )
    serve.set_defaults(run=cmd_serve)
    for command in (
        serve,
        mcp := commands.add_parser(
            "mcp", help="serve the tools over MCP on stdio (identity from MNEMO_*/MEMORY_USER_ID)"
        ),
    ):
        command.add_argument("--experimental", action="store_true", help=EXPERIMENTAL_HELP)

    mcp.add_argument("--data-dir", type=Path)
    mcp.set_defaults(run=cmd_mcp)

"""The `mnemo` command: serve, call and describe the tools."""

from __future__ import annotations

import os

# One BLAS thread per process, for every local entry point (serve, call, mcp, import, ...): OpenBLAS threads
# waiting on each other made a 10k x 256 matrix-vector product take 11 ms instead of 0.3 ms on a busy 2-core
# machine, and a pool only fights the embedder's own threads. Set before anything can import numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemo.errors import InvalidInput, MnemoError

if TYPE_CHECKING:
    from mnemo.outbox import IndexOutbox


def _settings_env(args: argparse.Namespace) -> None:
    if getattr(args, "data_dir", None):
        os.environ["MNEMO_DATA_DIR"] = str(args.data_dir)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _print_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


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
    """Index what an index outage left queued every ``interval`` seconds, and sync knowledge
    every ``sync_every`` rounds (what the indexer and the sync schedule do on AWS)."""
    import time

    from mnemo.entry.sync_events import sync_all
    from mnemo.runtime import get_services

    rounds = 0
    while True:
        time.sleep(interval)
        rounds += 1
        try:
            get_services().outbox.drain()
            if rounds % sync_every == 0:
                sync_all()
        except Exception as error:  # the next round tries again
            print(f"background maintenance failed: {error}", file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from mnemo.entry.local_server import PortInUse, ServeOptions, bind, serve

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
        from mnemo.cli_knowledge import load_knowledge
        from mnemo.entry.identity import context_from_environment

        print(load_knowledge(Path(args.knowledge), context_from_environment(os.environ).tenant), flush=True)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    workers = f", {options.workers} worker processes" if options.workers > 1 else ""
    print(f"mnemo serving on http://{shown}:{port} (docs at /docs, console at /ui/{workers})", flush=True)
    # With worker processes, this one only supervises them, so it does the maintenance alone.
    threading.Thread(target=_maintain_forever, args=(15.0, 4), daemon=True).start()
    try:
        serve(options, sock)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from mnemo.entry.mcp_server import serve_stdio

    anyio.run(serve_stdio)
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from mnemo.tools.registry import load_catalog
    from mnemo.tools.schema import tool_listing

    listing = tool_listing(load_catalog())
    if args.json:
        _print_json(listing)
    else:
        for entry in listing:
            print(f"{entry['name']:<16} {entry['description']}")
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    from mnemo.entry.identity import context_from_environment
    from mnemo.runtime import get_services
    from mnemo.tools.registry import get_tool

    try:
        try:
            payload = json.loads(args.payload)
        except json.JSONDecodeError as error:
            raise InvalidInput(f"body: not valid JSON ({error.msg})", {"field": "body"}) from None
        tool = get_tool(args.tool)
        result = tool.invoke(get_services(), context_from_environment(os.environ), payload)
    except MnemoError as error:
        _print_json(error.envelope())
        return 1
    _print_json(result)
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    from mnemo.tools.registry import load_catalog
    from mnemo.tools.schema import openapi_document

    if args.bedrock:
        return _bedrock_definitions(args.output_dir)
    if args.output_dir:
        print("--output-dir goes with --bedrock (one file per action group)", file=sys.stderr)
        return 2
    document = json.dumps(openapi_document(load_catalog(), server_url=args.server_url), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(document)
    else:
        sys.stdout.write(document)
    return 0


def _bedrock_definitions(output_dir: str | None) -> int:
    """Per action group: <group>.openapi.json and <group>.functions.json (to a directory, or stdout)."""
    from mnemo.tools.bedrock_schema import action_groups, bedrock_functions, bedrock_openapi
    from mnemo.tools.registry import load_catalog

    if output_dir:
        from mnemo.tools.bedrock_schema import write_definitions

        for path in write_definitions(load_catalog(), Path(output_dir)):
            print(f"wrote {path}")
        return 0
    documents = {}
    for group, tools in action_groups(load_catalog().values()).items():
        documents[f"{group}.openapi.json"] = bedrock_openapi(group, tools)
        documents[f"{group}.functions.json"] = bedrock_functions(tools)
    _print_json(documents)
    return 0


def cmd_client_gen(args: argparse.Namespace) -> int:
    from mnemo.tools.client_gen import render_client_catalog, render_client_module
    from mnemo.tools.registry import load_catalog

    catalog = load_catalog(experimental=True)
    Path(args.output).write_text(render_client_module(catalog))
    listing = Path(args.output).with_name("catalog.json")
    listing.write_text(render_client_catalog(catalog))
    print(f"wrote {args.output} and {listing}")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from mnemo.tools.docs import render_tools_markdown
    from mnemo.tools.registry import load_catalog

    Path(args.output).write_text(render_tools_markdown(load_catalog(experimental=True)))
    print(f"wrote {args.output}")
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


_EXPERIMENTAL_HELP = "serve the experimental tools too (code outline); as MNEMO_EXPERIMENTAL=1"


def build_parser() -> argparse.ArgumentParser:
    from mnemo import __version__
    from mnemo.cli_help import CommandParser

    parser = CommandParser(prog="mnemo", description="Memory and knowledge tools for AI agents.")
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    # Every sub-command (and theirs) is a CommandParser: its help shows each option's default.
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)

    serve = commands.add_parser("serve", help="serve the tools over HTTP (the local API Gateway)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8765")), help="port (env PORT)")
    serve.add_argument("--data-dir", type=Path, help="where the embedded stores live (env MNEMO_DATA_DIR)")
    serve.add_argument(
        "--workers", type=_positive, default=1, help="server processes; more than 1 uses more cores for tool calls"
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
        command.add_argument("--experimental", action="store_true", help=_EXPERIMENTAL_HELP)

    mcp.add_argument("--data-dir", type=Path)
    mcp.set_defaults(run=cmd_mcp)

    tools = commands.add_parser("tools", help="list the tool catalog")
    tools.add_argument("--json", action="store_true", help="names, descriptions and JSON Schemas")
    tools.add_argument("--experimental", action="store_true", help=_EXPERIMENTAL_HELP)
    tools.set_defaults(run=cmd_tools)

    call = commands.add_parser("call", help="call one tool in process; identity from MNEMO_* variables")
    call.add_argument("tool")
    call.add_argument("payload", nargs="?", default="{}")
    call.add_argument("--data-dir", type=Path)
    call.add_argument("--experimental", action="store_true", help=_EXPERIMENTAL_HELP)
    call.set_defaults(run=cmd_call)

    openapi = commands.add_parser("openapi", help="print the OpenAPI 3.0 document")
    openapi.add_argument("--output", "-o")
    openapi.add_argument("--server-url")
    openapi.add_argument(
        "--bedrock", action="store_true", help="Bedrock Agents action groups: OpenAPI and function details per family"
    )
    openapi.add_argument("--output-dir", help="with --bedrock: write <group>.openapi.json and <group>.functions.json")
    openapi.set_defaults(run=cmd_openapi)

    docs = commands.add_parser("docs", help="write the tool reference (docs/tools.md)")
    docs.add_argument("--output", "-o", default="docs/tools.md")
    docs.set_defaults(run=cmd_docs)

    client_gen = commands.add_parser("client-gen", help="write the Python client's typed methods from the catalog")
    client_gen.add_argument("--output", "-o", default="layers/shared/mnemo/client/tools.py")
    client_gen.set_defaults(run=cmd_client_gen)

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

    from mnemo import cli_import, cli_knowledge, cli_portability, cli_workspace

    cli_knowledge.add_commands(commands)
    cli_workspace.add_commands(commands)
    cli_import.add_command(commands)
    cli_portability.add_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "experimental", False):
        # The catalog reads the setting from the environment (front doors consult it before Services exist).
        os.environ["MNEMO_EXPERIMENTAL"] = "1"
    _settings_env(args)
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())

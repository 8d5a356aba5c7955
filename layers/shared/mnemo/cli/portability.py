"""`mnemo export` and `mnemo import`: a tenant, a user or some layers as JSON Lines, and back.

The format (version 2) is described in ``mnemo.portability.lines``; ``mnemo
export --schema`` prints its JSON Schema. The stores are the ones the MNEMO_*
settings name, so the same two commands move data between the embedded default
and DynamoDB/S3 (``MNEMO_RECORDS=dynamodb``, ``MNEMO_BLOBS=s3`` ...).
`mnemo import` also adds memories from JSON Lines (format version 1,
``mnemo.cli.memories``): the file's first line says which it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from mnemo.cli.memories import DEFAULT_BATCH, batch_size, import_memories
from mnemo.cli.output import print_json
from mnemo.cli.progress import Progress
from mnemo.context import MEMORY_LAYERS
from mnemo.errors import InvalidInput, MnemoError, ProviderError

EXPORT_HELP = """\
Writes JSON Lines, format version 2: a header line, every version of the
selection's knowledge and workspace files (base64), every record of its
memories (with their history), conversations, executions, topics, blocks and
pins, workspace and graph, exactly as stored, and an end line with the counts.
Vectors are not exported: `mnemo import` re-embeds with the target's model.
The stores are those the MNEMO_* settings name (MNEMO_RECORDS=dynamodb,
MNEMO_BLOBS=s3, MNEMO_BLOB_BUCKET ... for AWS). `--schema` prints the JSON
Schema of a line.

Exit status: 0 when something was exported; 3 when the selection holds nothing
(a mistyped tenant or user, say: the local server's tenant is `local` unless
X-Mnemo-Tenant or MNEMO_TENANT named another), with a line on stderr saying so,
the summary, and an export that holds only its header and end lines; 1 on an
error (its envelope on stderr)."""

IMPORT_HELP = """\
FILE is JSON Lines (use - for stdin). A file `mnemo export` wrote (its first
line {"mnemoExport": 2, ...}) is imported whole: every family, into the stores
the MNEMO_* settings name, with the identities it was exported with; checked
first, idempotent, re-embedded with this store's model. See `mnemo export -h`.

Otherwise, format version 1:
  an optional first line {"mnemoExport": 1, "kind": "memories"}, then one
  memory_add input per line: {"content": "...", "layer": "user", "tags": [...],
  "metadata": {...}, "occurredAt": "2024-03-01T00:00:00Z", "idempotencyKey": "...",
  "expiresAt": "2030-01-01T00:00:00Z"} (all but content optional; blank lines are
  skipped; an expiresAt must lie ahead, at most 10 years).
Identity comes from MNEMO_TENANT, MNEMO_USER, MNEMO_AGENT, MNEMO_SESSION,
MNEMO_PROJECT, MNEMO_TEAM, MNEMO_ORG and MNEMO_ROLES, as for `mnemo call`.
Every line is validated first; a bad line is refused with its number and field
and nothing is written. Near-identical memories are deduplicated (against the
store and within the file). Lines without an idempotencyKey get one derived
from their content, so re-running an import stores nothing twice. Prints a JSON
summary: added, deduplicated, replayed, queuedForIndex, seconds, perSecond."""

#: `mnemo export`'s exit status when the selection holds no record and no file.
NOTHING_EXPORTED = 3


def cmd_export(args: argparse.Namespace) -> int:
    """`mnemo export`: write the selection (tenant, ``--user``, ``--layer``) as JSON Lines to stdout or ``--output``
    (renamed into place only when whole) and print a summary; ``--schema`` prints a line's JSON Schema instead. Exit
    status: 0, ``NOTHING_EXPORTED`` when the selection is empty, 1 on an error (its envelope on stderr)."""
    from mnemo.portability.lines import line_schema

    if args.schema:
        print_json(line_schema())
        return 0
    from mnemo.portability.exporter import export
    from mnemo.portability.selection import USER_LAYERS, Selection
    from mnemo.runtime import get_services

    tenant = args.tenant or os.environ.get("MNEMO_TENANT") or "local"
    layers = tuple(dict.fromkeys(args.layer or ()))
    shared = [layer for layer in layers if layer not in USER_LAYERS]
    if args.user and shared:
        refused = InvalidInput(
            f"layer: a user's export holds only their own layers ({', '.join(sorted(USER_LAYERS))}), not {shared[0]}",
            {"field": "layer", "layer": shared[0]},
        )
        print(json.dumps(refused.envelope()), file=sys.stderr)
        return 1
    selection = Selection(tenant, args.user, layers)
    progress = Progress("exported", None, sys.stderr)
    started = time.perf_counter()
    try:
        with ExitStack() as stack:
            out: TextIO = sys.stdout
            if args.output != "-":
                target = Path(args.output)
                partial = target.with_name(target.name + ".partial")
                out = stack.enter_context(partial.open("w", encoding="utf-8"))
            counts = export(get_services(), selection, out, progress.update)
        if args.output != "-":
            # Only a whole export takes the name: a crash leaves the .partial file, never a cut-off export.
            os.replace(partial, target)
    except MnemoError as error:
        print(json.dumps(error.envelope()), file=sys.stderr)
        return 1
    except Exception as error:  # a store failure: an envelope, never a traceback
        stopped = ProviderError(f"the export stopped: {type(error).__name__}: {error}", {"output": args.output})
        print(json.dumps(stopped.envelope()), file=sys.stderr)
        return 1
    progress.close()
    summary = {
        "output": args.output,
        "kind": selection.kind,
        "selection": {"tenant": selection.tenant, "user": selection.user, "layers": list(selection.layers)},
        "records": counts.records,
        "blobs": counts.blobs,
        "missingBlobs": counts.missing_blobs,
        "seconds": round(time.perf_counter() - started, 3),
    }
    print(json.dumps(summary, indent=2), file=sys.stderr if args.output == "-" else sys.stdout)
    if not any(counts.records.values()) and not any(counts.blobs.values()):
        print(f"nothing to export: {_emptiness(selection)}", file=sys.stderr)
        return NOTHING_EXPORTED
    return 0


def _emptiness(selection: Any) -> str:
    """The line that says the selection is empty, with the likeliest cause."""
    words = f"tenant {selection.tenant!r}"
    if selection.user:
        words += f", user {selection.user!r}"
    if selection.layers:
        words += f", layers {', '.join(selection.layers)}"
    words += " holds no records and no files"
    if selection.tenant != "local":
        words += " (the local server's tenant is 'local' unless X-Mnemo-Tenant named another)"
    return words


def cmd_import(args: argparse.Namespace) -> int:
    """`mnemo import FILE`: a full export (format 2) is imported whole, anything else is added as memories (format 1);
    the input is read from a private copy. 1 with an envelope when FILE is missing or unreadable."""
    from mnemo.portability.importer import is_full_export

    if args.file != "-" and not Path(args.file).is_file():
        envelope = InvalidInput(f"file: no such file {args.file}", {"field": "file", "file": args.file})
        print_json(envelope.envelope())
        return 1
    try:
        if args.file == "-":
            copy = spooled(sys.stdin.buffer)
        else:
            with Path(args.file).open("rb") as source:
                copy = spooled(source)
    except OSError as error:
        envelope = InvalidInput(f"file: cannot be read ({error.strerror})", {"field": "file", "file": args.file})
        print_json(envelope.envelope())
        return 1
    try:
        if is_full_export(_first_line(copy)):
            return import_full(copy, args.file)
        return import_memories(copy, args.file, args.batch)
    finally:
        copy.unlink(missing_ok=True)


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return next((line for line in handle if line.strip()), "")


def import_full(path: Path, label: str) -> int:
    """Check the whole file, then write it; one JSON summary (or envelope) on stdout. ``path`` is the
    command's own copy of the input, so what is written is what was checked."""
    from mnemo.portability.importer import Importer, check
    from mnemo.runtime import get_services

    started = time.perf_counter()
    try:
        with path.open(encoding="utf-8") as handle:
            plan = check(handle, get_services().families)
        progress = Progress("imported", plan.lines, sys.stderr)
        summary = Importer(get_services(), plan, progress.update).run(path)
        progress.close()
    except MnemoError as error:
        print_json(error.envelope())
        return 1
    except UnicodeDecodeError as error:
        print_json(InvalidInput(f"file: not UTF-8 text ({error.reason})", {"field": "file"}).envelope())
        return 1
    except Exception as error:  # a store or index failure: an envelope, never a traceback
        stopped = ProviderError(
            f"the import stopped: {type(error).__name__}: {error}. What was written is kept; running the same "
            "import again completes it (records already there are left as they are)",
            {"file": label},
        )
        print_json(stopped.envelope())
        return 1
    answer = {
        "file": label,
        "format": plan.header.mnemo_export,
        "kind": plan.header.kind,
        "selection": plan.header.selection.model_dump(by_alias=True),
        "lines": plan.lines,
        **summary.as_json(),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if summary.index_pending:
        answer["next"] = "some records are not indexed yet: run `mnemo reindex --pending` once the cause is fixed"
    print_json(answer)
    return 0


def spooled(source: BinaryIO) -> Path:
    """A private copy of the input, byte for byte: an import reads it more than once (check, then write),
    and the copy cannot change in between."""
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as handle:
        try:
            shutil.copyfileobj(source, handle)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise
    return Path(handle.name)


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the `import` and `export` parsers."""
    _add_import(commands)
    _add_export(commands)


def _add_import(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "import",
        help="import what `mnemo export` wrote, or add memories from JSON Lines (identity from MNEMO_*)",
        description="Import an export (format 2), or add memories from JSON Lines through the batch path.",
        epilog=IMPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    parser.add_argument(
        "--batch",
        type=batch_size,
        default=DEFAULT_BATCH,
        metavar="N",
        help=f"memories embedded, written and indexed together (default {DEFAULT_BATCH})",
    )
    parser.add_argument("--data-dir", type=Path)
    parser.set_defaults(run=cmd_import)


def _add_export(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "export",
        help="write a tenant, a user or some layers as JSON Lines (every family; `mnemo import` reads it)",
        description="Export a tenant, one user of it, or some of its layers, as JSON Lines.",
        epilog=EXPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--output", "-o", default="-", metavar="FILE", help="where to write (default - : stdout)")
    parser.add_argument("--tenant", help="the tenant (default MNEMO_TENANT, else local)")
    parser.add_argument("--user", help="only this user's layers (agent, user, session): their own memories and records")
    parser.add_argument(
        "--layer", action="append", choices=MEMORY_LAYERS, help="only this layer (repeat for more); default all"
    )
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema of a line and stop")
    parser.add_argument("--data-dir", type=Path)
    parser.set_defaults(run=cmd_export)

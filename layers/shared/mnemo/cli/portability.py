"""`mnemo export` and the full-export half of `mnemo import`: a tenant, a user or some layers as JSON Lines.

The format (version 2) is described in ``mnemo.portability.lines``; ``mnemo
export --schema`` prints its JSON Schema. The stores are the ones the MNEMO_*
settings name, so the same two commands move data between the embedded default
and DynamoDB/S3 (``MNEMO_RECORDS=dynamodb``, ``MNEMO_BLOBS=s3`` ...).
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

#: `mnemo export`'s exit status when the selection holds no record and no file.
NOTHING_EXPORTED = 3


def _write(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


def cmd_export(args: argparse.Namespace) -> int:
    from mnemo.portability.lines import line_schema

    if args.schema:
        _write(line_schema())
        return 0
    from mnemo.cli.progress import Progress
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
            counts = export(get_services(), selection, out, lambda done, what: progress.update(done, what))
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


def import_full(path: Path, label: str) -> int:
    """Check the whole file, then write it; one JSON summary (or envelope) on stdout. ``path`` is the
    command's own copy of the input, so what is written is what was checked."""
    from mnemo.cli.progress import Progress
    from mnemo.portability.importer import Importer, check
    from mnemo.runtime import get_services

    started = time.perf_counter()
    try:
        with path.open(encoding="utf-8") as handle:
            plan = check(handle)
        progress = Progress("imported", plan.lines, sys.stderr)
        summary = Importer(get_services(), plan, progress.update).run(path)
        progress.close()
    except MnemoError as error:
        _write(error.envelope())
        return 1
    except UnicodeDecodeError as error:
        _write(InvalidInput(f"file: not UTF-8 text ({error.reason})", {"field": "file"}).envelope())
        return 1
    except Exception as error:  # a store or index failure: an envelope, never a traceback
        stopped = ProviderError(
            f"the import stopped: {type(error).__name__}: {error}. What was written is kept; running the same "
            "import again completes it (records already there are left as they are)",
            {"file": label},
        )
        _write(stopped.envelope())
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
    _write(answer)
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


def add_command(commands: Any) -> None:
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

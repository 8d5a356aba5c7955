"""`mnemo import FILE`: a whole export (format 2, ``mnemo.cli.portability``), or memories from JSON Lines
through the batch path (mnemo.memory.batch).

The format, version 1 (``FORMAT_HELP`` is what ``mnemo import --help`` shows):

* An optional first line ``{"mnemoExport": 1, "kind": "memories"}`` names the
  format version and what the file holds: ``memories``. A first line with
  ``mnemoExport`` 2 or later is a whole export, which ``mnemo.portability``
  reads (and refuses by name when its version is not one it knows).
* Then one ``memory_add`` input per line: ``content`` and optionally ``layer``,
  ``tags``, ``metadata``, ``occurredAt``, ``idempotencyKey``. Blank lines are
  skipped. Identity never comes from the file: it is the caller's, from the
  MNEMO_* variables, as for ``mnemo call``.

Every line is validated before anything is written; the first bad one is
refused with its line number and the offending field. A line with no
``idempotencyKey`` gets one derived from its request (and how many identical
requests came before it in the file), so running the same import again,
even after a crash and before the index has caught up, stores nothing twice:
its lines are answered as replays (for 24 hours; after that the near-duplicate
check finds them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import ValidationError

from mnemo.cli.progress import Progress
from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, MnemoError, ProviderError, from_validation_errors
from mnemo.memory.models import MemoryAddInput
from mnemo.models import ToolRequest

FORMAT_VERSION = 1
DEFAULT_BATCH = 500

FORMAT_HELP = """\
FILE is JSON Lines (use - for stdin). A file `mnemo export` wrote (its first
line {"mnemoExport": 2, ...}) is imported whole: every family, into the stores
the MNEMO_* settings name, with the identities it was exported with; checked
first, idempotent, re-embedded with this store's model. See `mnemo export -h`.

Otherwise, format version 1:
  an optional first line {"mnemoExport": 1, "kind": "memories"}, then one
  memory_add input per line: {"content": "...", "layer": "user", "tags": [...],
  "metadata": {...}, "occurredAt": "2024-03-01T00:00:00Z", "idempotencyKey": "..."}
  (all but content optional; blank lines are skipped).
Identity comes from MNEMO_TENANT, MNEMO_USER, MNEMO_AGENT, MNEMO_SESSION,
MNEMO_PROJECT, MNEMO_TEAM, MNEMO_ORG and MNEMO_ROLES, as for `mnemo call`.
Every line is validated first; a bad line is refused with its number and field
and nothing is written. Near-identical memories are deduplicated (against the
store and within the file). Lines without an idempotencyKey get one derived
from their content, so re-running an import stores nothing twice. Prints a JSON
summary: added, deduplicated, replayed, queuedForIndex, seconds, perSecond."""


class ExportHeader(ToolRequest):
    """The optional first line: which format version and what kind of records follow."""

    mnemo_export: Literal[1]
    kind: Literal["memories"]


@dataclass(frozen=True)
class ImportLine:
    number: int
    request: MemoryAddInput


def _at_line(error: MnemoError, number: int) -> MnemoError:
    return type(error)(f"line {number}: {error.message}", {**error.details, "line": number})


def _lines(handle: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(handle, start=1):
        if raw.strip():
            yield number, raw


def read_lines(handle: Iterable[str], context: RequestContext) -> list[ImportLine]:
    """Every memory line validated as memory_add validates its body; the first bad one raises, naming it."""
    from mnemo.identity_claims import strip_identity_claims
    from mnemo.tools.registry import get_tool, parse_json_body

    tool = get_tool("memory_add")
    found: list[ImportLine] = []
    first = True
    for number, raw in _lines(handle):
        try:
            payload = parse_json_body(raw)
            if first and isinstance(payload, dict) and "mnemoExport" in payload:
                _check_header(payload)
                first = False
                continue
            first = False
            request = tool.parse(strip_identity_claims(payload, context))
        except MnemoError as error:
            raise _at_line(error, number) from None
        assert isinstance(request, MemoryAddInput)
        found.append(ImportLine(number, request))
    return found


def _check_header(payload: dict[str, Any]) -> None:
    try:
        ExportHeader.model_validate(payload)
    except ValidationError as error:
        raise from_validation_errors(error.errors(include_url=False)) from None


def with_derived_keys(lines: list[ImportLine]) -> list[ImportLine]:
    """Give each keyless line a key from its request and the count of identical requests before it."""
    from mnemo.memory.batch import request_hash

    seen: dict[str, int] = {}
    keyed: list[ImportLine] = []
    for line in lines:
        if line.request.idempotency_key is not None:
            keyed.append(line)
            continue
        digest = request_hash(line.request)
        occurrence = seen.get(digest, 0)
        seen[digest] = occurrence + 1
        key = f"import-{digest[:40]}-{occurrence}"
        keyed.append(ImportLine(line.number, line.request.model_copy(update={"idempotency_key": key})))
    return keyed


def run_import(
    lines: list[ImportLine],
    context: RequestContext,
    *,
    batch: int = DEFAULT_BATCH,
    progress: TextIO | None = None,
) -> dict[str, Any]:
    """Add the lines through the batch path; the summary. Errors name the line they concern."""
    from mnemo.memory.batch import BatchAdd
    from mnemo.runtime import get_services

    started = time.perf_counter()
    bar = Progress("imported", len(lines), progress)

    def report(done: int, total: int) -> None:
        bar.update(done, "memories")

    adder = BatchAdd(get_services().memory, context, batch=batch, progress=report)
    try:
        outcomes = adder.run([line.request for line in lines])
    except MnemoError as error:
        index = error.details.get("index")
        if isinstance(index, int) and 0 <= index < len(lines):
            error.details.pop("index")
            raise _at_line(error, lines[index].number) from None
        raise
    bar.close()
    seconds = time.perf_counter() - started
    replayed = sum(outcome.replayed for outcome in outcomes)
    deduplicated = sum(outcome.output.deduplicated and not outcome.replayed for outcome in outcomes)
    return {
        "lines": len(lines),
        "added": len(outcomes) - replayed - deduplicated,
        "deduplicated": deduplicated,
        "replayed": replayed,
        "queuedForIndex": adder.queued,
        "seconds": round(seconds, 3),
        "perSecond": round(len(lines) / seconds, 1) if seconds > 0 else None,
    }


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return next((line for line in handle if line.strip()), "")


def cmd_import(args: argparse.Namespace) -> int:
    from mnemo.cli.portability import import_full, spooled
    from mnemo.entry.identity import context_from_environment
    from mnemo.portability.importer import is_full_export

    if args.file != "-" and not Path(args.file).is_file():
        envelope = InvalidInput(f"file: no such file {args.file}", {"field": "file", "file": args.file})
        sys.stdout.write(json.dumps(envelope.envelope(), indent=2) + "\n")
        return 1
    try:
        if args.file == "-":
            copy = spooled(sys.stdin.buffer)
        else:
            with Path(args.file).open("rb") as source:
                copy = spooled(source)
    except OSError as error:
        envelope = InvalidInput(f"file: cannot be read ({error.strerror})", {"field": "file", "file": args.file})
        sys.stdout.write(json.dumps(envelope.envelope(), indent=2) + "\n")
        return 1
    try:
        if is_full_export(_first_line(copy)):
            return import_full(copy, args.file)
        return _import_memories(args, copy, context_from_environment)
    finally:
        copy.unlink(missing_ok=True)


def _import_memories(args: argparse.Namespace, path: Path, identity: Any) -> int:
    try:
        context = identity(os.environ)
        with path.open(encoding="utf-8") as handle:
            lines = read_lines(handle, context)
        summary = run_import(with_derived_keys(lines), context, batch=args.batch, progress=sys.stderr)
    except MnemoError as error:
        sys.stdout.write(json.dumps(error.envelope(), indent=2) + "\n")
        return 1
    except UnicodeDecodeError as error:
        envelope = InvalidInput(f"file: not UTF-8 text ({error.reason})", {"field": "file"}).envelope()
        sys.stdout.write(json.dumps(envelope, indent=2) + "\n")
        return 1
    except Exception as error:  # a store or index failure: an envelope, never a traceback
        stopped = ProviderError(
            f"the import stopped: {type(error).__name__}: {error}. The memories written before it are kept; "
            "running the same import again resumes it (lines already stored are replayed)",
            {"file": args.file},
        )
        sys.stdout.write(json.dumps(stopped.envelope(), indent=2) + "\n")
        return 1
    sys.stdout.write(json.dumps({"file": args.file, **summary}, indent=2) + "\n")
    return 0


def _batch_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return value


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        "import",
        help="import what `mnemo export` wrote, or add memories from JSON Lines (identity from MNEMO_*)",
        description="Import an export (format 2), or add memories from JSON Lines through the batch path.",
        epilog=FORMAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    parser.add_argument(
        "--batch",
        type=_batch_size,
        default=DEFAULT_BATCH,
        metavar="N",
        help=f"memories embedded, written and indexed together (default {DEFAULT_BATCH})",
    )
    parser.add_argument("--data-dir", type=Path)
    parser.set_defaults(run=cmd_import)

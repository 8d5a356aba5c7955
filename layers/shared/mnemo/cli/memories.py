"""The memories half of `mnemo import FILE`: memories from JSON Lines through the batch path
(mnemo.memory.batch); a whole export (format 2) is ``mnemo.cli.portability``'s.

The format, version 1 (``mnemo import --help`` shows it too):

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
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import ValidationError

from mnemo.cli.output import print_json
from mnemo.cli.progress import Progress
from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, MnemoError, ProviderError, from_validation_errors
from mnemo.memory.models import MemoryAddInput
from mnemo.models import ToolRequest

FORMAT_VERSION = 1
#: Memories embedded, written and indexed together, unless ``mnemo import --batch`` says otherwise.
DEFAULT_BATCH = 500


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


def import_memories(path: Path, label: str, batch: int) -> int:
    """Validate every line of ``path``, then add them; ``label`` names the file in the summary."""
    from mnemo.entry.identity import context_from_environment

    try:
        context = context_from_environment(os.environ)
        with path.open(encoding="utf-8") as handle:
            lines = read_lines(handle, context)
        summary = run_import(with_derived_keys(lines), context, batch=batch, progress=sys.stderr)
    except MnemoError as error:
        print_json(error.envelope())
        return 1
    except UnicodeDecodeError as error:
        print_json(InvalidInput(f"file: not UTF-8 text ({error.reason})", {"field": "file"}).envelope())
        return 1
    except Exception as error:  # a store or index failure: an envelope, never a traceback
        stopped = ProviderError(
            f"the import stopped: {type(error).__name__}: {error}. The memories written before it are kept; "
            "running the same import again resumes it (lines already stored are replayed)",
            {"file": label},
        )
        print_json(stopped.envelope())
        return 1
    print_json({"file": label, **summary})
    return 0


def batch_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError("must be between 1 and 10000")
    return value

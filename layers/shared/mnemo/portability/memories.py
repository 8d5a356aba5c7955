"""Memories from JSON Lines, added through the batch path (mnemo.memory.batch): what `mnemo import FILE`
does with a file that is not a whole export (format 2, ``mnemo.portability.importer``).

The format, version 1 (``mnemo import --help`` shows it too):

* An optional first line ``{"mnemoExport": 1, "kind": "memories"}`` names the
  format version and what the file holds: ``memories``. A first line with
  ``mnemoExport`` 2 or later is a whole export, which ``mnemo.portability``
  reads (and refuses by name when its version is not one it knows).
* Then one ``memory_add`` input per line: ``content`` and optionally ``layer``,
  ``tags``, ``metadata``, ``occurredAt``, ``idempotencyKey``, ``expiresAt``. Blank lines are
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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from mnemo.context import RequestContext
from mnemo.errors import MnemoError, from_validation_errors
from mnemo.identity_claims import strip_identity_claims
from mnemo.memory.batch import BatchAdd, request_hash
from mnemo.memory.models import MemoryAddInput
from mnemo.models import ToolRequest
from mnemo.portability.services import Progress

if TYPE_CHECKING:
    from mnemo.memory.service import MemoryService

FORMAT_VERSION = 1

#: How a line's text becomes JSON and its JSON a memory_add request. The catalog's own parsers
#: (``parse_json_body`` and memory_add's ``Tool.parse``) are passed in: portability never imports the catalog.
ParseJson = Callable[[str], Any]
ParseRequest = Callable[[Any], BaseModel]


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


def read_lines(
    handle: Iterable[str], context: RequestContext, *, parse_json: ParseJson, parse_request: ParseRequest
) -> list[ImportLine]:
    """Every memory line validated as memory_add validates its body; the first bad one raises, naming it."""
    found: list[ImportLine] = []
    first = True
    for number, raw in _lines(handle):
        try:
            payload = parse_json(raw)
            if first and isinstance(payload, dict) and "mnemoExport" in payload:
                _check_header(payload)
                first = False
                continue
            first = False
            request = parse_request(strip_identity_claims(payload, context))
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
    memory: MemoryService,
    lines: list[ImportLine],
    context: RequestContext,
    *,
    batch: int,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Add the lines through the batch path; the counts (lines, added, deduplicated, replayed,
    queuedForIndex). Errors name the line they concern. ``progress`` is told the memories done so far,
    after each batch."""

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, "memories")

    adder = BatchAdd(memory, context, batch=batch, progress=report)
    try:
        outcomes = adder.run([line.request for line in lines])
    except MnemoError as error:
        index = error.details.get("index")
        if isinstance(index, int) and 0 <= index < len(lines):
            error.details.pop("index")
            raise _at_line(error, lines[index].number) from None
        raise
    replayed = sum(outcome.replayed for outcome in outcomes)
    deduplicated = sum(outcome.output.deduplicated and not outcome.replayed for outcome in outcomes)
    return {
        "lines": len(lines),
        "added": len(outcomes) - replayed - deduplicated,
        "deduplicated": deduplicated,
        "replayed": replayed,
        "queuedForIndex": adder.queued,
    }

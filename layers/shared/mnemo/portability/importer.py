"""Reading an export into a store: checked whole first, then written so that running it again changes nothing.

**Checked first.** Every line is validated (``mnemo.portability.lines``) before
anything is written: its shape, that each record's partition is of its family
and inside the header's selection, that each blob is under the selection's
knowledge or workspace and matches its sha256, and that the end line's counts
agree with the lines before it. A bad or cut-off file is refused, naming the
line and field, and nothing is written.

**Idempotent.** A record is written only where its key is absent. One already
there with the same body and version is ``unchanged``; one that differs is
``kept``: the target's own record wins and is never overwritten (the summary
names the first few). A blob version is stored with the ``mnemo-origin`` it
came from, so a version already imported is found again instead of stored twice;
workspace records are rewritten to name the target's blob versions.

**Re-embedded.** Vectors never travel. Each new record the index mirrors is
written with its index outbox marker in the same write, and the import then
drains the outbox, so the target's families embed with the target's model. A
crash leaves markers: the next drain, or the same import again, completes it.
Knowledge files are followed by a sync of the tenant, which rebuilds the
knowledge catalog and its index from them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from mnemo.assets.scopes import workspace_location_of
from mnemo.assets.store import HEAD, HISTORY
from mnemo.errors import InvalidInput, MnemoError, from_validation_errors
from mnemo.portability.indexing import index_marker
from mnemo.portability.lines import FORMAT_VERSION, LINE, BlobLine, End, Header, RecordLine
from mnemo.portability.selection import Selection, split_partition
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Item, Put
from mnemo.progress import Progress
from mnemo.runtime import Services

#: Blob metadata naming the source version a target version was imported from.
ORIGIN = "mnemo-origin"
#: Records checked and written together (one batched read, then as few writes as the limits allow).
RECORD_BATCH = 25
#: JSON bytes of one write at most (a DynamoDB transaction moves at most 4 MB).
WRITE_BYTES = 3_000_000
#: How many kept records the summary names.
KEPT_SHOWN = 20


def origin(key: str, version: str, sha256: str) -> str:
    return hashlib.sha256(f"{key}\n{version}\n{sha256}".encode()).hexdigest()[:40]


def _at(line: int, error: MnemoError) -> MnemoError:
    return type(error)(f"line {line}: {error.message}", {**error.details, "line": line})


def _invalid(line: int, field_name: str, message: str) -> InvalidInput:
    return InvalidInput(f"line {line}: {field_name}: {message}", {"field": field_name, "line": line})


def _numbered(handle: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, raw in enumerate(handle, start=1):
        if raw.strip():
            yield number, raw


def is_full_export(first_line: str) -> bool:
    """Whether a file's first line is a whole export's header, of this format version or a later one (which
    ``check`` refuses by name); else the file is memory_add lines (format 1)."""
    try:
        payload = json.loads(first_line)
    except ValueError:
        return False
    version = payload.get("mnemoExport") if isinstance(payload, dict) else None
    return isinstance(version, int) and version >= FORMAT_VERSION


@dataclass
class Plan:
    """What a checked file holds."""

    header: Header
    selection: Selection
    lines: int = 0
    records: dict[str, int] = field(default_factory=dict)
    blobs: dict[str, int] = field(default_factory=dict)


def check(handle: Iterable[str]) -> Plan:
    """Validate a whole file; the first bad line raises INVALID_INPUT naming it and its field."""
    plan: Plan | None = None
    stage = 0  # 0 header, 1 blobs, 2 records, 3 after the end line
    workspace_keys: list[tuple[int, str]] = []
    workspace_roots: set[str] = set()
    for number, raw in _numbered(handle):
        try:
            payload = json.loads(raw)
        except ValueError:
            raise _invalid(number, "line", "not valid JSON") from None
        try:
            if plan is None:
                if isinstance(payload, dict) and payload.get("mnemoExport") != FORMAT_VERSION:
                    raise _invalid(
                        number,
                        "mnemoExport",
                        f"format version {payload.get('mnemoExport')!r} is not one this Mnemo reads "
                        f"({FORMAT_VERSION}): import it with the Mnemo that wrote it, or a later one",
                    )
                header = Header.model_validate(payload)
                selection = Selection(header.selection.tenant, header.selection.user, tuple(header.selection.layers))
                plan = Plan(header, selection)
                stage = 1
                continue
            line = LINE.validate_python(payload)
        except ValidationError as error:
            # A line's errors are located under its type (the union's tag): the field is what matters.
            tag = payload.get("type") if plan is not None and isinstance(payload, dict) else None
            errors = error.errors(include_url=False)
            raise _at(
                number, from_validation_errors(errors, drop_prefix=tag if isinstance(tag, str) else None)
            ) from None
        except ValueError as error:
            raise _invalid(number, "selection", str(error)) from None
        plan.lines += 1
        if stage == 3:
            raise _invalid(number, "type", "nothing may follow the end line")
        if isinstance(line, BlobLine):
            if stage != 1:
                raise _invalid(number, "type", "blob lines come before the record lines")
            _check_blob(number, line, plan, workspace_keys)
            plan.blobs[line.family] = plan.blobs.get(line.family, 0) + 1
        elif isinstance(line, RecordLine):
            stage = 2
            found = split_partition(line.pk)
            if found is None or found[0] != line.family:
                raise _invalid(number, "pk", f"not a partition of the {line.family} family")
            if not plan.selection.holds(found[1]):
                raise _invalid(number, "pk", "outside the selection the header names")
            where = workspace_location_of(line.pk)
            if where is not None and where.blob_prefix is not None:
                workspace_roots.add(where.blob_prefix)
            plan.records[line.family] = plan.records.get(line.family, 0) + 1
        else:
            _check_end(number, line, plan)
            stage = 3
    if plan is None:
        raise InvalidInput("file: empty; an export starts with its header line", {"field": "file"})
    if stage != 3:
        raise InvalidInput(
            "file: the end line is missing: the file was cut off, and nothing was imported", {"field": "file"}
        )
    for number, key in workspace_keys:
        if not any(key.startswith(root) for root in workspace_roots):
            raise _invalid(number, "key", "a workspace file that no workspace record of the file names")
    return plan


def _check_blob(number: int, line: BlobLine, plan: Plan, workspace_keys: list[tuple[int, str]]) -> None:
    try:
        content = base64.b64decode(line.content, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid(number, "content", "not base64") from None
    if hashlib.sha256(content).hexdigest() != line.sha256:
        raise _invalid(number, "sha256", "does not match the content")
    if line.family == "knowledge":
        if not plan.selection.holds_knowledge(line.key):
            raise _invalid(number, "key", "not a knowledge file of the selection")
    else:
        if not line.key.startswith(f"workspace/{plan.selection.tenant}/") or "/../" in f"{line.key}/":
            raise _invalid(number, "key", "not a workspace file of the selection's tenant")
        workspace_keys.append((number, line.key))


def _check_end(number: int, line: End, plan: Plan) -> None:
    for what, stated, found in (("records", line.records, plan.records), ("blobs", line.blobs, plan.blobs)):
        if {k: v for k, v in stated.items() if v} != found:
            raise _invalid(number, what, f"the end line counts {stated} but the file holds {found}")


# ------------------------------------------------------------------ writing
@dataclass
class ImportSummary:
    records: dict[str, dict[str, int]] = field(default_factory=dict)
    blobs: dict[str, dict[str, int]] = field(default_factory=dict)
    kept: list[dict[str, str]] = field(default_factory=list)
    indexed: int = 0
    index_pending: int = 0
    sync: dict[str, Any] | None = None

    def count(self, table: dict[str, dict[str, int]], family: str, outcome: str) -> None:
        row = table.setdefault(family, {"added": 0, "unchanged": 0, **({"kept": 0} if table is self.records else {})})
        row[outcome] += 1

    def as_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "blobs": self.blobs,
            "kept": self.kept,
            "indexed": self.indexed,
            "indexPending": self.index_pending,
            "sync": self.sync,
        }


class Importer:
    def __init__(self, services: Services, plan: Plan, progress: Progress | None = None) -> None:
        self._services = services
        self._plan = plan
        self._progress = progress
        self._done = 0
        self.summary = ImportSummary()
        #: (blob key, source version) -> the target's version id.
        self._versions: dict[tuple[str, str], str] = {}
        self._origins: dict[str, dict[str, str]] = {}
        self._pending: list[tuple[RecordLine, Item]] = []
        self._deleted_files: list[str] = []
        self._embedder_name = services.embedder.name

    def run(self, handle: Iterable[str]) -> ImportSummary:
        """Write a file ``check`` accepted (the same lines, read again)."""
        first = True
        for _, raw in _numbered(handle):
            if first:
                first = False
                continue
            line = LINE.validate_json(raw)
            if isinstance(line, BlobLine):
                self._blob(line)
            elif isinstance(line, RecordLine):
                self._record(line)
            self._step(line)
        self._flush()
        for key in self._deleted_files:
            if self._services.blobs.get(key) is not None:
                self._services.blobs.delete(key)
        self._drain()
        if self._plan.blobs.get("knowledge"):
            self._sync()
        return self.summary

    def _step(self, line: Any) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress.update(self._done, getattr(line, "family", ""))

    # ------------------------------------------------------------ blobs
    def _blob(self, line: BlobLine) -> None:
        blobs = self._services.blobs
        if line.key not in self._origins:
            self._origins[line.key] = {
                version.metadata[ORIGIN]: version.version
                for version in blobs.versions(line.key)
                if not version.deleted and ORIGIN in version.metadata
            }
        known = self._origins[line.key]
        mark = origin(line.key, line.version, line.sha256)
        if mark in known:
            self.summary.count(self.summary.blobs, line.family, "unchanged")
        else:
            content = base64.b64decode(line.content)
            known[mark] = blobs.put(line.key, content, {**line.metadata, ORIGIN: mark})
            self.summary.count(self.summary.blobs, line.family, "added")
        self._versions[(line.key, line.version)] = known[mark]

    # ---------------------------------------------------------- records
    def _record(self, line: RecordLine) -> None:
        data = line.data
        where = workspace_location_of(line.pk)
        if where is not None and line.sk.startswith((HEAD, HISTORY)) and "blobVersion" in data:
            name = line.sk[2:].rsplit("#", 1)[0] if line.sk.startswith(HISTORY) else line.sk[2:]
            mapped = self._versions.get((where.blob_key(name), str(data["blobVersion"])))
            if mapped is not None:
                data = {**data, "blobVersion": mapped}
        if line.family == "memories" and line.sk.startswith("MEM#") and "embeddingModel" in data:
            # The target embeds it again, with its own model; the record names the model its vector is from.
            data = {**data, "embeddingModel": self._embedder_name}
        self._pending.append((line, Item(line.pk, line.sk, data, line.version, line.expires_at)))
        if len(self._pending) >= RECORD_BATCH:
            self._flush()

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        if not pending:
            return
        records = self._services.records
        stored = {(item.pk, item.sk): item for item in records.batch_get([(i.pk, i.sk) for _, i in pending])}
        units: list[tuple[RecordLine, Item, list[Put]]] = []
        for line, item in pending:
            there = stored.get((item.pk, item.sk))
            if there is None:
                units.append((line, item, self._unit(line, item)))
            else:
                self._settled(line, item, there)
        group: list[tuple[RecordLine, Item, list[Put]]] = []
        operations = size = 0
        for unit in units:
            unit_size = sum(len(json.dumps(op.item.data)) for op in unit[2])
            if group and (operations + len(unit[2]) > MAX_WRITE_OPERATIONS or size + unit_size > WRITE_BYTES):
                self._write(group)
                group, operations, size = [], 0, 0
            group.append(unit)
            operations += len(unit[2])
            size += unit_size
        self._write(group)

    def _unit(self, line: RecordLine, item: Item) -> list[Put]:
        marker = index_marker(self._services.outbox, line.family, item)
        return [Put(item, expect="absent"), *([marker] if marker else [])]

    def _write(self, group: list[tuple[RecordLine, Item, list[Put]]]) -> None:
        if not group:
            return
        try:
            self._services.records.write([op for _, _, ops in group for op in ops])
        except ConditionFailed:  # someone wrote one of these keys meanwhile: one by one, to know which
            for unit in group:
                self._write_one(*unit)
            return
        for line, _, _ in group:
            self._added(line)

    def _write_one(self, line: RecordLine, item: Item, operations: list[Put]) -> None:
        try:
            self._services.records.write(operations)
        except ConditionFailed:
            there = self._services.records.get(item.pk, item.sk)
            if there is None:  # gone again: a race on the same key, not a lost record; the next run settles it
                raise
            self._settled(line, item, there)
            return
        self._added(line)

    def _added(self, line: RecordLine) -> None:
        self.summary.count(self.summary.records, line.family, "added")
        if line.family == "workspace" and line.sk.startswith(HEAD) and line.data.get("deleted"):
            where = workspace_location_of(line.pk)
            if where is not None:
                self._deleted_files.append(where.blob_key(line.sk[2:]))

    def _settled(self, line: RecordLine, item: Item, there: Item) -> None:
        if there.data == item.data and there.version == item.version:
            self.summary.count(self.summary.records, line.family, "unchanged")
            return
        self.summary.count(self.summary.records, line.family, "kept")
        if len(self.summary.kept) < KEPT_SHOWN:
            self.summary.kept.append({"pk": item.pk, "sk": item.sk})

    # ------------------------------------------------------- index, sync
    def _drain(self) -> None:
        outbox = self._services.outbox
        while True:
            report = outbox.drain()
            self.summary.indexed += report.indexed
            if self._progress is not None:
                self._progress.update(self._done, f"indexed {self.summary.indexed:,}")
            if report.indexed == 0:
                break
        self.summary.index_pending = len(outbox.pending())

    def _sync(self) -> None:
        from mnemo.sync.models import SyncNowInput

        try:
            result = self._services.sync.sync(self._plan.selection.tenant, SyncNowInput())
        except MnemoError as error:
            self.summary.sync = error.envelope()
            return
        self.summary.sync = result.model_dump(by_alias=True, mode="json")

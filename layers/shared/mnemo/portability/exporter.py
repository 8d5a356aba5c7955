"""Writing an export: the selection's blobs and records, as the lines of ``mnemo.portability.lines``.

Records are exported exactly as stored, so every family keeps what makes it
whole: a memory its history items, a file its versions, a graph fact its
validity and invalidation. What other records are derived from is exported and
what is derived is not:

* the knowledge catalog (``KNOW|``) and sync state (``SYNC|``) are rebuilt by
  the sync the import runs, from the knowledge files;
* code outlines (``OUTLINE|``) are rebuilt by the next outline call;
* vectors are never exported: the target embeds with its own model;
* index outbox markers and dead letters are the source's own bookkeeping.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from mnemo import clock
from mnemo.families import Families
from mnemo.files.scopes import workspace_location_of
from mnemo.files.store import HEAD, HISTORY
from mnemo.portability.lines import FORMAT_VERSION
from mnemo.portability.selection import Selection, split_partition
from mnemo.portability.services import PortabilityServices as Services
from mnemo.portability.services import Progress
from mnemo.ports import BlobStore, Item, RecordStore

#: Called with (lines written so far, what is being exported).


@dataclass
class ExportCounts:
    records: dict[str, int] = field(default_factory=dict)
    blobs: dict[str, int] = field(default_factory=dict)
    #: Workspace versions whose content the source's blob store no longer holds (their records still go).
    missing_blobs: int = 0

    def add(self, counts: dict[str, int], family: str) -> None:
        """Count one more of ``family`` in ``counts``."""
        counts[family] = counts.get(family, 0) + 1


def _header(services: Services, selection: Selection) -> dict[str, Any]:
    settings = services.settings
    return {
        "type": "header",
        "mnemoExport": FORMAT_VERSION,
        "kind": selection.kind,
        "selection": {"tenant": selection.tenant, "user": selection.user, "layers": list(selection.layers)},
        "exportedAt": clock.now_iso(),
        "source": {
            "records": settings.records,
            "blobs": settings.blobs,
            "vectorIndex": settings.vector_index,
            "embedder": services.embedder.name,
        },
    }


def _blob_line(family: str, key: str, version: str, content: bytes, **rest: Any) -> dict[str, Any]:
    return {
        "type": "blob",
        "family": family,
        "key": key,
        "version": version,
        **rest,
        "content": base64.b64encode(content).decode("ascii"),
        "sha256": hashlib.sha256(content).hexdigest(),
    }


def knowledge_lines(blobs: BlobStore, selection: Selection) -> Iterator[dict[str, Any]]:
    """Every kept version of the selection's knowledge files, oldest first (deletions are not versions)."""
    for key in blobs.list_keys(f"knowledge/{selection.tenant}/"):
        if not selection.holds_knowledge(key):
            continue
        for version in reversed(blobs.versions(key)):
            blob = None if version.deleted else blobs.get(key, version.version)
            if blob is not None:
                yield _blob_line(
                    "knowledge",
                    key,
                    blob.version,
                    blob.content,
                    modifiedAt=version.modified_at,
                    metadata=dict(version.metadata),
                )


class WorkspaceVersions:
    """The workspace file versions that exported records name, collected as the records go out (so the blobs
    exported are exactly those the exported records need), oldest first.

    History entries come in version order (their keys are zero-padded); a head only adds a version whose
    history entry is missing, so the target's blob store gets each file's versions in the same order.
    """

    def __init__(self) -> None:
        self._named: dict[tuple[str, str], None] = {}
        self._heads: dict[tuple[str, str], None] = {}

    def note(self, item: Item) -> None:
        """Remember the blob version a workspace record (a file's head or one of its versions) names."""
        where = workspace_location_of(item.pk)
        if where is None or "blobVersion" not in item.data:
            return
        if item.sk.startswith(HISTORY):
            self._named[(where.blob_key(item.sk[2:].rsplit("#", 1)[0]), str(item.data["blobVersion"]))] = None
        elif item.sk.startswith(HEAD):
            self._heads[(where.blob_key(item.sk[2:]), str(item.data["blobVersion"]))] = None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from self._named
        yield from (head for head in self._heads if head not in self._named)


def records_of(records: RecordStore, selection: Selection, families: Families) -> Iterator[tuple[str, Item]]:
    """(family, item) of every record of the selection, of every exported family."""
    for prefix in selection.scan_prefixes(families):
        for item in records.scan(prefix):
            found = split_partition(item.pk, families)
            if found is not None and selection.holds(found[1]):
                yield found[0], item


def record_line(family: str, item: Item) -> dict[str, Any]:
    """An export line for one record, exactly as stored (keys, version, expiry, data)."""
    return {
        "type": "record",
        "family": family,
        "pk": item.pk,
        "sk": item.sk,
        "version": item.version,
        "expiresAt": item.expires_at,
        "data": item.data,
    }


def export(services: Services, selection: Selection, out: TextIO, progress: Progress | None = None) -> ExportCounts:
    """Write the selection to ``out`` as JSON Lines; the counts, as the end line states them."""
    counts = ExportCounts()
    written = 0

    def emit(line: dict[str, Any], what: str) -> None:
        nonlocal written
        out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        written += 1
        if progress is not None:
            progress(written, what)

    emit(_header(services, selection), "header")
    workspace = WorkspaceVersions()
    for family, item in records_of(services.records, selection, services.families):
        workspace.note(item)
        counts.add(counts.records, family)
        emit(record_line(family, item), family)
    for line in knowledge_lines(services.blobs, selection):
        counts.add(counts.blobs, "knowledge")
        emit(line, "knowledge files")
    for key, version in workspace:
        blob = services.blobs.get(key, version)
        if blob is None:  # the source lost it: its records still go, and read as missing on the target too
            counts.missing_blobs += 1
            continue
        counts.add(counts.blobs, "workspace")
        meta = {"modifiedAt": blob.modified_at, "metadata": blob.metadata}
        emit(_blob_line("workspace", key, version, blob.content, **meta), "workspace files")
    emit({"type": "end", "records": counts.records, "blobs": counts.blobs}, "end")
    return counts

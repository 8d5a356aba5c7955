"""The outline index: each workspace file's outline, kept on the records store beside the workspace.

=====================================  ==============================================================
key                                    holds
=====================================  ==============================================================
pk ``OUTLINE|{scope}``                 the outlines of one workspace (the same scope as ``WS|{scope}``)
sk ``F#{language}#{path}``             the file's outline (``mnemo.outline.structure.FileOutline``),
                                       the sha256 and version of the content it was made from, its
                                       module key; or, for a file the outline skips, why
=====================================  ==============================================================

``refresh`` brings a language's outlines in line with the workspace: it reads
the workspace heads (names, hashes, sizes), parses only the files whose content
or module key changed, and deletes the outlines of files that are gone. The tools
run it before answering, so a call parses at most what changed since the last
one; the sync job runs ``refresh_path`` for the one file an S3 event names. The
index is derived: losing it loses nothing (the next refresh rebuilds it), and
two refreshes racing write the same outline for the same content.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mnemo.errors import invalid_field
from mnemo.files.store import FileStore, Location
from mnemo.outline.family import FILE
from mnemo.outline.family import PARTITION as OUTLINE_PREFIX
from mnemo.outline.languages import LanguageSpec, extract
from mnemo.outline.structure import FileOutline
from mnemo.ports import Delete, Item, Put, RecordStore

logger = logging.getLogger(__name__)
#: The stored outline's layout: an outline stored under another (older code) is made again, never misread.
OUTLINE_FORMAT = 1
#: The most files of one language an outline covers; a bigger project gets INVALID_INPUT, not a timeout.
MAX_PROJECT_FILES = 5_000
#: The most bytes of one language's source an outline covers.
MAX_PROJECT_BYTES = 20_000_000
#: A larger file is listed as skipped, not parsed (generated code, bundles, data).
MAX_FILE_BYTES = 1_000_000
#: A file's outline must fit one DynamoDB item (400 KB) with room to spare.
MAX_OUTLINE_JSON_BYTES = 350_000
_GO_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)
_READERS = 8  # workspace contents read in parallel (S3 round trips)


@dataclass(frozen=True)
class WorkspaceFile:
    path: str
    sha256: str
    bytes: int
    version: int
    head: Item


@dataclass
class Refresh:
    """What one refresh found and did."""

    outlines: list[FileOutline] = field(default_factory=list)
    #: Files of the language the outline does not cover, each with the reason.
    skipped: list[dict[str, str]] = field(default_factory=list)
    parsed: int = 0
    removed: int = 0
    #: Every (path, sha256) of the language: equal fingerprints mean equal outlines.
    fingerprint: tuple[tuple[str, str], ...] = ()


def outline_pk(workspace: Location) -> str:
    return OUTLINE_PREFIX + workspace.pk.split("|", 1)[1]


class OutlineIndex:
    def __init__(self, records: RecordStore, files: FileStore) -> None:
        self._records = records
        self._files = files

    # ------------------------------------------------------------ reads
    def workspace_files(self, where: Location) -> dict[str, WorkspaceFile]:
        found: dict[str, WorkspaceFile] = {}
        after: str | None = None
        while True:
            heads, more = self._files.heads(where, "", after, 1000)
            for head in heads:
                name = head.data["name"]
                found[name] = WorkspaceFile(name, head.data["sha256"], int(head.data["bytes"]), head.version, head)
            if not more or not heads:
                return found
            after = heads[-1].data["name"]

    def stored(self, pk: str, language: str) -> dict[str, Item]:
        prefix = f"{FILE}{language}#"
        found: dict[str, Item] = {}
        low, high = prefix, prefix + "\U0010ffff"
        while True:
            page = self._records.query(pk, between=(low, high), limit=500)
            found.update((item.sk.removeprefix(prefix), item) for item in page)
            if len(page) < 500:
                return found
            low = page[-1].sk + "\x00"

    def go_modules(self, where: Location, workspace: dict[str, WorkspaceFile]) -> dict[str, str]:
        """Each go.mod's module path and its folder ('.' at the root): how Go imports name the project."""
        found: dict[str, str] = {}
        for item in workspace.values():
            if item.path == "go.mod" or item.path.endswith("/go.mod"):
                content, _ = self._files.content(where, item.head)
                match = _GO_MODULE.search(content)
                if match:
                    found[match.group(1).strip('"`')] = item.path.rpartition("/")[0] or "."
        return found

    # ------------------------------------------------------------ refresh
    def check_size(self, spec: LanguageSpec, files: list[WorkspaceFile]) -> None:
        """INVALID_INPUT naming ``language`` when ``files`` (the language's and its companions') are more than
        one outline covers; every outline tool resolves the whole project, so this holds for all three."""
        total = sum(item.bytes for item in files)
        if len(files) > MAX_PROJECT_FILES or total > MAX_PROJECT_BYTES:
            languages = " and ".join([spec.name, *spec.companions])
            raise invalid_field(
                "language",
                f"the workspace holds {len(files):,} {languages} files ({total:,} bytes); an outline covers at most "
                f"{MAX_PROJECT_FILES:,} files and {MAX_PROJECT_BYTES:,} bytes. Remove generated, vendored or "
                "unrelated code from the workspace (file_delete), or keep it in another project's workspace",
                limitFiles=MAX_PROJECT_FILES,
                limitBytes=MAX_PROJECT_BYTES,
                files=len(files),
                bytes=total,
            )

    def refresh(
        self,
        where: Location,
        spec: LanguageSpec,
        workspace: dict[str, WorkspaceFile] | None = None,
        stored: dict[str, Item] | None = None,
    ) -> Refresh:
        """The language's outlines, brought up to date with the workspace first."""
        workspace = self.workspace_files(where) if workspace is None else workspace
        paths = frozenset(workspace)
        files = sorted((item for item in workspace.values() if spec.claims(item.path)), key=lambda item: item.path)
        self.check_size(spec, files)
        pk = outline_pk(where)
        stored = self.stored(pk, spec.name) if stored is None else stored
        result = Refresh(fingerprint=tuple((item.path, item.sha256) for item in files))
        stale = [item for item in files if not _current(stored.get(item.path), item, spec.module_key(item.path, paths))]
        # Each outline is written as soon as it is made: a call cut short keeps what it finished.
        stored.update(self._parse(where, spec, stale, paths))
        gone = [path for path in stored if path not in workspace or not spec.claims(path)]
        for path in gone:
            self._records.write([Delete(pk, stored.pop(path).sk)])
        result.parsed, result.removed = len(stale), len(gone)
        for item in files:
            data = stored[item.path].data
            if "outline" in data:
                result.outlines.append(FileOutline.from_json(json.loads(data["outline"])))
            else:
                result.skipped.append({"path": item.path, "reason": data["skipped"]})
        return result

    def refresh_path(self, where: Location, spec: LanguageSpec, path: str) -> str:
        """Bring one file's outline up to date (the sync job, on a workspace object event): 'parsed',
        'current', 'removed' or 'absent'. Other files whose module key the change moves (a new
        ``__init__.py``) are caught by the next full refresh, which every tool call runs."""
        pk = outline_pk(where)
        sk = f"{FILE}{spec.name}#{path}"
        head = self._files.head(where, path)
        stored = self._records.get(pk, sk)
        if head is None:
            if stored is None:
                return "absent"
            self._records.write([Delete(pk, sk)])
            return "removed"
        item = WorkspaceFile(path, head.data["sha256"], int(head.data["bytes"]), head.version, head)
        known = self._package_markers(where, path) if spec.name == "python" else frozenset({path})
        if _current(stored, item, spec.module_key(path, known)):
            return "current"
        self._parse(where, spec, [item], known)
        return "parsed"

    def _package_markers(self, where: Location, path: str) -> frozenset[str]:
        """``path`` and the ``__init__.py`` files above it that exist: all a Python module name depends on,
        read with one lookup per folder instead of a listing of the workspace for every event."""
        found = {path}
        folders = path.split("/")[:-1]
        while folders:
            marker = "/".join([*folders, "__init__.py"])
            if self._files.head(where, marker) is None:
                break
            found.add(marker)
            folders.pop()
        return frozenset(found)

    def _parse(
        self, where: Location, spec: LanguageSpec, stale: list[WorkspaceFile], paths: frozenset[str]
    ) -> dict[str, Item]:
        pk = outline_pk(where)

        def one(item: WorkspaceFile) -> Item:
            made = outline_item(item)
            self._records.write([Put(made)])
            return made

        def outline_item(item: WorkspaceFile) -> Item:
            data: dict[str, Any] = {
                "path": item.path,
                "sha256": item.sha256,
                "version": item.version,
                "moduleKey": spec.module_key(item.path, paths),
                "format": OUTLINE_FORMAT,
            }
            if item.bytes > MAX_FILE_BYTES:
                data["skipped"] = f"{item.bytes:,} bytes; files over {MAX_FILE_BYTES:,} bytes are not outlined"
                return Item(pk, f"{FILE}{spec.name}#{item.path}", data)
            content, _ = self._files.content(where, item.head)
            try:
                outline = extract(spec, item.path, content.encode(), paths)
            except RecursionError:
                data["skipped"] = "its code nests deeper than the outline follows"
                return Item(pk, f"{FILE}{spec.name}#{item.path}", data)
            except Exception:  # one file the extractor cannot read must not take the project's outline down
                logger.exception("outline extraction failed", extra={"path": item.path, "language": spec.name})
                data["skipped"] = "the outline could not read this file (logged)"
                return Item(pk, f"{FILE}{spec.name}#{item.path}", data)
            encoded = json.dumps(outline.to_json(), separators=(",", ":"))
            if len(encoded) > MAX_OUTLINE_JSON_BYTES:
                data["skipped"] = f"its outline takes {len(encoded):,} bytes, over {MAX_OUTLINE_JSON_BYTES:,}"
            else:
                data["outline"] = encoded
            return Item(pk, f"{FILE}{spec.name}#{item.path}", data)

        run: Callable[[WorkspaceFile], Item] = one
        if len(stale) <= 1:
            return {item.path: run(item) for item in stale}
        with ThreadPoolExecutor(max_workers=min(_READERS, len(stale))) as pool:
            return {item.path: parsed for item, parsed in zip(stale, pool.map(run, stale), strict=True)}


def _current(stored: Item | None, item: WorkspaceFile, module_key: str) -> bool:
    return (
        stored is not None
        and stored.data.get("format") == OUTLINE_FORMAT
        and stored.data["sha256"] == item.sha256
        and stored.data["moduleKey"] == module_key
    )

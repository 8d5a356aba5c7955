"""BlobStore in a directory, with every version kept (the embedded stand-in for versioned S3).

A key ``company/adr-042.md`` lives in ``<root>/company/adr-042.md.versions/``
as numbered files with a JSON sidecar for metadata; a delete adds a tombstone
version, as S3 adds a delete marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from mnemo import clock
from mnemo.blob_keys import check_blob_key
from mnemo.ports import Blob, BlobVersion

#: The most bytes a file system takes in one name (ext4, APFS, NTFS: 255).
MAX_NAME_BYTES = 255
#: Where a directory whose name had to be shortened records the key it holds (list_keys reads it).
KEY_FILE = "key"


def _on_disk(part: str, suffix: str = "") -> str:
    """A key segment as a file name: itself, or when too long (a quoted name takes up to three times its
    bytes) its start and a hash of the whole after ``%~``, which percent-quoting never writes, so no segment
    of a quoted name can be this name."""
    if len(part.encode()) + len(suffix) <= MAX_NAME_BYTES:
        return part + suffix
    return f"{part[:120]}%~{hashlib.sha256(part.encode()).hexdigest()}{suffix}"


def _etag_of(content: bytes) -> str:
    """The content's tag: a hash of its bytes, so equal tags mean equal bytes, whatever the version."""
    return hashlib.sha256(content).hexdigest()[:32]


class LocalBlobStore:
    """The BlobStore port in a directory (the layout: the module docstring); version ids count up from "1".

    Writes of one process take turns on a lock; a version becomes visible once its sidecar is renamed
    into place, so a reader never sees half a version.
    """

    def __init__(self, root: Path | str) -> None:
        self._root = Path(root)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _dir(self, key: str) -> Path:
        """The directory of a key's versions; InvalidInput for a key that could escape the root."""
        parts = check_blob_key(key)
        return self._root.joinpath(*(_on_disk(part) for part in parts[:-1]), _on_disk(parts[-1], ".versions"))

    @staticmethod
    def _numbers(directory: Path) -> list[int]:
        """The version numbers in a key's directory, oldest first."""
        if not directory.is_dir():
            return []
        return sorted(int(p.stem) for p in directory.glob("*.json"))

    def _meta(self, directory: Path, number: int) -> dict[str, object]:
        """One version's sidecar: metadata, modifiedAt and deleted."""
        loaded: dict[str, object] = json.loads((directory / f"{number:08d}.json").read_text())
        return loaded

    def _write_version(self, key: str, content: bytes | None, metadata: dict[str, str]) -> str:
        """Add the next version (``content`` None: a tombstone); its number."""
        directory = self._dir(key)
        with self._lock:
            directory.mkdir(parents=True, exist_ok=True)
            if directory.relative_to(self._root).as_posix() != key + ".versions":
                (directory / KEY_FILE).write_text(key)
            number = (self._numbers(directory) or [0])[-1] + 1
            if content is not None:
                (directory / f"{number:08d}.blob").write_bytes(content)
            meta = {
                "metadata": metadata,
                "modifiedAt": clock.now().isoformat(),
                "deleted": content is None,
                "etag": None if content is None else _etag_of(content),
            }
            # The sidecar appears last and atomically: a version exists once its metadata does.
            handle, temporary = tempfile.mkstemp(dir=directory)
            with os.fdopen(handle, "w") as out:
                json.dump(meta, out)
            os.replace(temporary, directory / f"{number:08d}.json")
        return str(number)

    def put(self, key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        """Write the next numbered version."""
        return self._write_version(key, content, dict(metadata or {}))

    def get(self, key: str, version: str | None = None) -> Blob | None:
        """The latest version, or the numbered one (a version id that is not a number reads the latest)."""
        directory = self._dir(key)
        numbers = self._numbers(directory)
        if not numbers:
            return None
        number = int(version) if version is not None and version.isdigit() else numbers[-1]
        if number not in numbers:
            return None
        meta = self._meta(directory, number)
        if meta["deleted"]:
            return None
        return Blob(
            key=key,
            content=(directory / f"{number:08d}.blob").read_bytes(),
            version=str(number),
            metadata=dict(meta["metadata"]),  # type: ignore[call-overload]
            modified_at=str(meta["modifiedAt"]),
            etag=self._etag(directory, number, meta),
        )

    @staticmethod
    def _etag(directory: Path, number: int, meta: dict[str, object]) -> str:
        """A version's content tag: from its sidecar, or (a version written before sidecars held it) its bytes."""
        if isinstance(meta.get("etag"), str):
            return str(meta["etag"])
        return _etag_of((directory / f"{number:08d}.blob").read_bytes())

    def _current(self, prefix: str) -> Iterator[tuple[str, Path, int, dict[str, object]]]:
        """(key, directory, latest number, its sidecar) of every key under the prefix whose latest version is
        not a tombstone."""
        for directory in self._root.rglob("*.versions"):
            named = directory / KEY_FILE
            key = (
                named.read_text()
                if named.is_file()
                else directory.relative_to(self._root).as_posix().removesuffix(".versions")
            )
            numbers = self._numbers(directory)
            if key.startswith(prefix) and numbers:
                meta = self._meta(directory, numbers[-1])
                if not meta["deleted"]:
                    yield key, directory, numbers[-1], meta

    def list_keys(self, prefix: str = "") -> list[str]:
        """Every key directory under the root whose latest version is not a tombstone, filtered by prefix."""
        return sorted(key for key, *_ in self._current(prefix))

    def list_etags(self, prefix: str = "") -> dict[str, str]:
        """Every current key under the prefix with its latest version's content tag."""
        return {key: self._etag(directory, number, meta) for key, directory, number, meta in self._current(prefix)}

    def versions(self, key: str) -> list[BlobVersion]:
        """Every numbered version, highest (newest) first."""
        directory = self._dir(key)
        out = []
        for number in reversed(self._numbers(directory)):
            meta = self._meta(directory, number)
            out.append(
                BlobVersion(
                    version=str(number),
                    modified_at=str(meta["modifiedAt"]),
                    metadata=dict(meta["metadata"]),  # type: ignore[call-overload]
                    deleted=bool(meta["deleted"]),
                )
            )
        return out

    def delete(self, key: str) -> None:
        """Add a tombstone version, unless the key is already missing or deleted."""
        if self.get(key) is not None:
            self._write_version(key, None, {})

    def purge(self, key: str) -> None:
        """Remove the key's directory (every version, tombstones and sidecars), then the folders it leaves empty."""
        directory = self._dir(key)
        with self._lock:
            if directory.is_dir():
                shutil.rmtree(directory)
            parent = directory.parent
            while parent != self._root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent

"""Versioned files on the records store: heads, history and content, with optimistic writes.

One layout serves StoredAssets (partition ``ASSET|{scope}``) and workspace
files (``WS|{scope}``):

=====================================  =========================================================
sk                                     holds
=====================================  =========================================================
``F#{name}``                           the head, at the file's version: size, tokens, hash,
                                       dates; a delete leaves a head marked ``deleted``
``H#{name}#{version:010d}``            one history entry per version (who, when, what size)
``V#{name}#{version:010d}#{n:03d}``    StoredAssets: the content, in chunks under DynamoDB's
                                       item limit; the last ``KEEP_VERSIONS`` versions are kept
``P#{name}``                           StoredAssets: who has the file pinned
=====================================  =========================================================

A workspace file's content is a blob (S3 object version, or a file in the
local blob directory) under the scope's prefix; its head names the blob
version, so the head decides what a read returns, whatever order concurrent
blob writes landed in. Every write puts the head with a condition on the
version it read: a concurrent edit gets CONFLICT, never a lost update.
``#`` cannot occur in a name (see ``mnemo.files.paths``), so no name's keys
fall under another's prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from mnemo import clock
from mnemo.errors import NotFound, invalid_field
from mnemo.ports import BlobStore, Delete, Item, Put, RecordStore

#: Partition prefixes: StoredAssets, and workspace files.
ASSET_PREFIX = "ASSET|"
WORKSPACE_PREFIX = "WS|"
HEAD = "F#"
HISTORY = "H#"
CONTENT = "V#"
PINNERS = "P#"
#: Content versions of a StoredAsset kept for reading back (the history entries stay).
KEEP_VERSIONS = 20
#: Bytes of JSON one content chunk may take (a DynamoDB item holds at most 400 KB).
CHUNK_JSON_BYTES = 300_000
#: Bytes of JSON a StoredAsset's content may take in all (a transaction moves at most 4 MB).
MAX_STORED_JSON_BYTES = 2_000_000
_PIECE_CHARS = 20_000
#: The start of a file kept on its head, for search results.
PREVIEW_CHARS = 240


def now_iso(after: str | None = None) -> str:
    """Now in UTC, or just after ``after`` when the clock has not passed it: lastUpdated always grows."""
    moment = clock.now()
    if after is not None:
        before = datetime.fromisoformat(after)
        if moment <= before:
            moment = before + timedelta(microseconds=1)
    return clock.iso(moment)


def _json_bytes(text: str) -> int:
    return len(json.dumps(text)) - 2


def chunks_of(text: str) -> list[str]:
    """``text`` cut into pieces that each take at most CHUNK_JSON_BYTES as stored (at least one piece)."""
    pieces = [text[start : start + _PIECE_CHARS] for start in range(0, len(text), _PIECE_CHARS)] or [""]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        cost = _json_bytes(piece)
        if current and size + cost > CHUNK_JSON_BYTES:
            chunks.append("".join(current))
            current, size = [], 0
        current.append(piece)
        size += cost
    chunks.append("".join(current))
    return chunks


def check_storable(text: str, field: str) -> None:
    size = _json_bytes(text)
    if size > MAX_STORED_JSON_BYTES:
        raise invalid_field(
            field,
            f"this content takes {size} bytes as stored (non-ASCII characters take up to 12), "
            f"a StoredAsset at most {MAX_STORED_JSON_BYTES}; split it into several files",
            limit=MAX_STORED_JSON_BYTES,
        )


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _version_key(version: int) -> str:
    return f"{version:010d}"


def head_of(sk: str) -> str | None:
    """The sort key of the head of the file an item belongs to (its own for a head); None for any other item."""
    kind, _, rest = sk.partition("#")
    owners = {HEAD: rest, PINNERS: rest, HISTORY: rest.rsplit("#", 1)[0], CONTENT: rest.rsplit("#", 2)[0]}
    name = owners.get(f"{kind}#")
    return None if name is None else f"{HEAD}{name}"


@dataclass(frozen=True)
class Location:
    """Where one scope's files live: their partition, and (workspace only) their blob prefix."""

    pk: str
    blob_prefix: str | None = None

    def blob_key(self, name: str) -> str:
        assert self.blob_prefix is not None
        return self.blob_prefix + "/".join(quote(segment, safe="") for segment in name.split("/"))


def blob_prefix(*parts: str) -> str:
    """A blob folder made of ids (which may hold '/' or ':'): each quoted, so none reaches another's folder."""
    return "".join(_segment(part) + "/" for part in parts)


def _segment(part: str) -> str:
    """One key segment: quoted, and never '.' or '..' (which ids may be, and key checks refuse)."""
    quoted = quote(part, safe="")
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


class FileStore:
    def __init__(self, records: RecordStore, blobs: Callable[[], BlobStore]) -> None:
        self._records = records
        self._blobs = blobs  # only workspace files need the blob store: built on first use

    # ------------------------------------------------------------- reads
    def head(self, where: Location, name: str) -> Item | None:
        """The file's head, or None when it never existed or was deleted."""
        item = self._records.get(where.pk, HEAD + name)
        return None if item is None or item.data.get("deleted") else item

    def raw_head(self, where: Location, name: str) -> Item | None:
        """The head as stored, a deleted file's included (its version goes on growing)."""
        return self._records.get(where.pk, HEAD + name)

    def heads(
        self, where: Location, prefix: str, after: str | None, limit: int, *, consistent: bool = True
    ) -> tuple[list[Item], bool]:
        """Live heads whose name starts with ``prefix``, after the name ``after``, in name order; and whether
        more follow. With ``consistent=False`` (file_list) a file written within the last second may be
        missing or show its previous version; the outline index, which writes from what it reads, reads
        consistently."""
        found: list[Item] = []
        low = HEAD + prefix if after is None else HEAD + after + "\x00"
        high = HEAD + prefix + "\U0010ffff"
        while len(found) <= limit:
            page = self._records.query(where.pk, between=(low, high), limit=limit + 1, consistent=consistent)
            found.extend(item for item in page if not item.data.get("deleted"))
            if len(page) <= limit:
                break
            low = page[-1].sk + "\x00"
        return found[:limit], len(found) > limit

    def content(self, where: Location, head: Item, version: int | None = None) -> tuple[str, dict[str, Any]]:
        """The text of the file at ``version`` (the head's by default), with that version's entry."""
        name = head.data["name"]
        entry: dict[str, Any] = head.data
        if version is not None and version != head.version:
            found = self._records.get(where.pk, f"{HISTORY}{name}#{_version_key(version)}")
            if found is None or found.data.get("deleted"):
                raise NotFound(
                    f"'{name}' has no version {version}",
                    {"field": "version", "currentVersion": head.version},
                )
            entry = found.data
        wanted = version or head.version
        if where.blob_prefix is None:
            text = self.chunked_contents([(where.pk, name, wanted, int(entry["chunks"]))]).get((where.pk, name))
            if text is None:
                raise NotFound(
                    f"version {wanted} of '{name}' is no longer kept (the last {KEEP_VERSIONS} are)",
                    {"field": "version", "currentVersion": head.version},
                )
            return text, entry
        blob = self._blobs().get(where.blob_key(name), entry["blobVersion"])
        if blob is None:
            raise NotFound(f"the content of '{name}' version {wanted} is missing", {"field": "path"})
        # Written as UTF-8 by file_write; a blob changed behind the service's back must not fail the read.
        return blob.content.decode(errors="replace"), entry

    def chunked_contents(
        self, wanted: Sequence[tuple[str, str, int, int]], *, consistent: bool = True
    ) -> dict[tuple[str, str], str]:
        """The text of StoredAssets, each ``(pk, name, version, chunks)``, in batched reads (one round trip
        per 100 chunks, not one per file); a version whose chunks are gone (pruned), or (``consistent=False``)
        not yet visible, is left out."""
        keys = [
            (pk, f"{CONTENT}{name}#{_version_key(version)}#{n:03d}")
            for pk, name, version, chunks in wanted
            for n in range(chunks)
        ]
        found = {(item.pk, item.sk): item.data["text"] for item in self._records.batch_get(keys, consistent=consistent)}
        texts = {}
        for pk, name, version, chunks in wanted:
            prefix = f"{CONTENT}{name}#{_version_key(version)}#"
            parts = [found.get((pk, f"{prefix}{n:03d}")) for n in range(chunks)]
            if all(part is not None for part in parts):
                texts[(pk, name)] = "".join(part for part in parts if part is not None)
        return texts

    # ------------------------------------------------------------ writes
    def write_ops(
        self,
        where: Location,
        name: str,
        current: Item | None,
        content: str,
        *,
        tokens: int,
        by: str | None,
    ) -> tuple[list[Put | Delete], Item]:
        """What to write (all or nothing) to make ``content`` the file's next version, and the new head.

        ``current`` is the head as read (a deleted one included); the head's put expects its version.
        A workspace file's blob is stored here, first: until the head names it, no read returns it.
        """
        version = (current.version if current else 0) + 1
        raw = content.encode()
        created = current.data["createdAt"] if current and not current.data.get("deleted") else None
        at = now_iso(current.data["lastUpdated"] if current else None)
        data: dict[str, Any] = {
            "name": name,
            "tokens": tokens,
            "bytes": len(raw),
            "chars": len(content),
            "lines": content.count("\n") + (1 if content and not content.endswith("\n") else 0),
            "sha256": digest(content),
            "preview": content[:PREVIEW_CHARS],
            "createdAt": created or at,
            "lastUpdated": at,
            "updatedBy": by,
        }
        operations: list[Put | Delete] = []
        if where.blob_prefix is None:
            pieces = chunks_of(content)
            data["chunks"] = len(pieces)
            kept = [entry for entry in (current.data.get("kept", []) if current else [])]
            for old_version, old_chunks in kept[: max(0, len(kept) - KEEP_VERSIONS + 1)]:
                operations += [
                    Delete(where.pk, f"{CONTENT}{name}#{_version_key(old_version)}#{n:03d}") for n in range(old_chunks)
                ]
            data["kept"] = [*kept[max(0, len(kept) - KEEP_VERSIONS + 1) :], [version, len(pieces)]]
            operations += [
                Put(Item(where.pk, f"{CONTENT}{name}#{_version_key(version)}#{n:03d}", {"text": piece}, version))
                for n, piece in enumerate(pieces)
            ]
        else:
            data["blobVersion"] = self._blobs().put(
                where.blob_key(name), raw, {"author": quote(by or "unknown", safe=""), "mnemo-version": str(version)}
            )
        head = Item(where.pk, HEAD + name, data, version)
        operations.append(Put(head, expect=current.version if current else "absent"))
        operations.append(self._history(where, name, version, data, "write"))
        return operations, head

    def delete_ops(self, where: Location, head: Item, *, by: str | None) -> tuple[list[Put | Delete], Item]:
        """The tombstone head (the version goes on), and its history entry."""
        version = head.version + 1
        data: dict[str, Any] = {
            **{key: head.data[key] for key in ("name", "createdAt") if key in head.data},
            "deleted": True,
            "lastUpdated": now_iso(head.data["lastUpdated"]),
            "updatedBy": by,
            "kept": head.data.get("kept", []),
        }
        tombstone = Item(where.pk, HEAD + head.data["name"], data, version)
        return [
            Put(tombstone, expect=head.version),
            self._history(where, head.data["name"], version, data, "delete"),
        ], tombstone

    def after_delete(self, where: Location, name: str) -> None:
        """Mark a deleted workspace file deleted in the blob store too (S3 keeps its versions)."""
        if where.blob_prefix is not None:
            self._blobs().delete(where.blob_key(name))

    @staticmethod
    def _history(where: Location, name: str, version: int, data: dict[str, Any], action: str) -> Put:
        entry: dict[str, Any] = {
            "version": version,
            "action": action,
            "at": data["lastUpdated"],
            "by": data.get("updatedBy"),
            **{key: data[key] for key in ("tokens", "bytes", "sha256", "chunks", "blobVersion") if key in data},
        }
        if action == "delete":
            entry["deleted"] = True
        return Put(Item(where.pk, f"{HISTORY}{name}#{_version_key(version)}", entry, version))

    def write(self, operations: Sequence[Put | Delete]) -> None:
        self._records.write(operations)

"""The knowledge repository: a tenant's markdown files in the blob store, with their history.

Every push is a new blob version carrying its author and message as object
metadata (percent-encoded: S3 metadata is ASCII), so a file's history is its
version list. Pushing unchanged content writes nothing.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

from mnemo.knowledge.documents import ROOT, is_knowledge_file, split_key, tenant_prefix
from mnemo.knowledge.models import HistoryEntry
from mnemo.ports import Blob, BlobStore

AUTHOR = "author"
MESSAGE = "message"


class KnowledgeRepository:
    def __init__(self, blobs: BlobStore) -> None:
        self._blobs = blobs

    def paths(self, tenant: str) -> list[str]:
        """Relative paths of the tenant's knowledge files (markdown under a layer folder)."""
        return sorted(self.listing(tenant))

    def listing(self, tenant: str) -> dict[str, str]:
        """The tenant's knowledge files by relative path, each with its content's tag (``Blob.etag``)."""
        prefix = tenant_prefix(tenant)
        found = ((key.removeprefix(prefix), etag) for key, etag in self._blobs.list_etags(prefix).items())
        return {path: etag for path, etag in sorted(found) if is_knowledge_file(path)}

    def tenants(self) -> list[str]:
        """Every tenant with knowledge files (for the scheduled sync; never on a user's request)."""
        found = {parts[0] for key in self._blobs.list_keys(ROOT + "/") if (parts := split_key(key)) is not None}
        return sorted(found)

    def read(self, tenant: str, path: str) -> Blob | None:
        return self._blobs.get(tenant_prefix(tenant) + path)

    def push(self, tenant: str, path: str, content: bytes, *, author: str, message: str) -> str | None:
        """Store a new version unless the current one has the same bytes; the new version id or None."""
        current = self.read(tenant, path)
        if current is not None and current.content == content:
            return None
        metadata = {AUTHOR: quote(author, safe=" @.-_"), MESSAGE: quote(message, safe=" @.-_,:;()")}
        return self._blobs.put(tenant_prefix(tenant) + path, content, metadata)

    def remove(self, tenant: str, path: str) -> None:
        self._blobs.delete(tenant_prefix(tenant) + path)

    def history(self, tenant: str, path: str) -> list[HistoryEntry]:
        """Every stored version of a file, newest first (deletions included)."""
        entries = []
        for version in self._blobs.versions(tenant_prefix(tenant) + path):
            message = unquote(version.metadata.get(MESSAGE, ""))
            entries.append(
                HistoryEntry(
                    version=version.version,
                    timestamp=version.modified_at,
                    author=unquote(version.metadata.get(AUTHOR, "")) or "unknown",
                    message=("deleted" if not message else f"deleted: {message}") if version.deleted else message,
                )
            )
        return entries

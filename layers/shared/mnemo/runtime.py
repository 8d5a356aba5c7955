"""Wiring: builds each port's adapter from settings, lazily and once per container.

A handler that never embeds never loads a model, and a Lambda container keeps
its clients between invocations.
"""

from __future__ import annotations

from functools import cached_property

from mnemo.memory.service import MemoryService
from mnemo.ports import Embedder, RecordStore, VectorIndex
from mnemo.settings import Settings


class Services:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()

    @cached_property
    def records(self) -> RecordStore:
        from mnemo.adapters.local.sqlite_records import SqliteRecordStore

        return SqliteRecordStore(self.settings.sqlite_path)

    @cached_property
    def index(self) -> VectorIndex:
        from mnemo.adapters.local.vector_index import LocalVectorIndex

        return LocalVectorIndex(self.settings.data_dir / "index.sqlite3")

    @cached_property
    def embedder(self) -> Embedder:
        from mnemo.adapters.local.embedders import BgeSmallEmbedder, HashingEmbedder

        if self.settings.embedder == "hashing":
            return HashingEmbedder(self.settings.hashing_dimensions)
        return BgeSmallEmbedder()

    @cached_property
    def memory(self) -> MemoryService:
        return MemoryService(self.records, self.index, self.embedder, dedupe_similarity=self.settings.dedupe_similarity)


_services: Services | None = None


def get_services() -> Services:
    """The process-wide services, built on first use from the environment."""
    global _services
    if _services is None:
        _services = Services()
    return _services


def set_services(services: Services | None) -> None:
    global _services
    _services = services

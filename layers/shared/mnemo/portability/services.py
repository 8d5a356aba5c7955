"""What export and import need from the running service, named here so portability never imports the wiring.

``mnemo.runtime.Services`` has all of these; a test or a benchmark may pass any object that does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from mnemo.families import Families
from mnemo.outbox import IndexOutbox
from mnemo.ports import BlobStore, Embedder, RecordStore, VectorIndex
from mnemo.settings import Settings

if TYPE_CHECKING:
    from mnemo.sync.service import SyncService

#: Told the lines done so far and what is being done, as a long export or import goes on.
Progress = Callable[[int, str], None]


class PortabilityServices(Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def records(self) -> RecordStore: ...
    @property
    def blobs(self) -> BlobStore: ...
    @property
    def index(self) -> VectorIndex: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def outbox(self) -> IndexOutbox: ...
    @property
    def sync(self) -> SyncService: ...
    @property
    def families(self) -> Families: ...

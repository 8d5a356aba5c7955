"""Read your own resend: a memory_add answered from its idempotency record is searchable at once.

The first call stored its record but not its index document (the index failed, or the process
died before its write): a marker waits in the index outbox. The resend finds the idempotency
record and, before it answers, does the index write the marker waits for (``IndexOutbox.complete``),
so a search right after the answer finds the memory, with no drain in between. Shown on the
embedded record store and on DynamoDB (moto).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from aws_fixtures import create_records_table, shared_moto_server

from helpers import ctx, with_outbox
from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.adapters.local.embedders import HashingEmbedder
from mnemo.adapters.local.sqlite_records import SqliteRecordStore
from mnemo.adapters.local.vector_index import LocalVectorIndex
from mnemo.memory.models import MemoryAddInput, MemorySearchInput
from mnemo.memory.service import MemoryService
from mnemo.outbox import IndexOutbox
from mnemo.ports import IndexDoc, RecordStore

_tables = itertools.count()


class WritesFail(LocalVectorIndex):
    """The local index whose writes fail while ``failing`` (an outage, or a process killed mid-write)."""

    failing = True

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        if self.failing:
            raise ConnectionError("vector index unavailable")
        super().upsert(namespace, docs)


@pytest.fixture(params=["sqlite", "dynamodb"])
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RecordStore]:
    if request.param == "sqlite":
        yield SqliteRecordStore(tmp_path / "records.sqlite3")
        return
    client = shared_moto_server().client("dynamodb")
    name = f"resend-{next(_tables)}"
    create_records_table(client, name, stream=False)
    yield DynamoDbRecordStore(name, lambda: client)
    client.delete_table(TableName=name)


def _service(records: RecordStore, index: LocalVectorIndex) -> tuple[MemoryService, IndexOutbox]:
    def build(box: IndexOutbox) -> MemoryService:
        return MemoryService(records, index, HashingEmbedder(256), box)

    return with_outbox(records, build)


def _found(service: MemoryService, memory_id: str) -> bool:
    answer = service.search(ctx(), MemorySearchInput(query="orchard ledger copper", threshold=0.0, limit=5))
    return memory_id in {result.memory_id for result in answer.results}


def test_a_resent_add_completes_its_pending_index_write_before_it_answers(records: RecordStore, tmp_path: Path) -> None:
    index = WritesFail(tmp_path / "index.sqlite3")
    service, outbox = _service(records, index)
    request = MemoryAddInput(content="The orchard ledger is bound in copper", idempotency_key="resend-1")

    first = service.add(ctx(), request)
    assert first.success and not first.deduplicated
    assert len(outbox.pending()) == 1, "the failed index write left no marker: the window was not exercised"
    index.failing = False
    assert not _found(service, first.memory_id), "indexed without the marker being drained"

    resent = service.add(ctx(), request)

    assert resent.memory_id == first.memory_id
    assert _found(service, resent.memory_id), "the resend answered before its index write was done"
    assert outbox.pending() == []


def test_resends_while_the_index_is_still_down_answer_and_leave_the_marker_as_it_was(
    records: RecordStore, tmp_path: Path
) -> None:
    index = WritesFail(tmp_path / "index.sqlite3")
    service, outbox = _service(records, index)
    request = MemoryAddInput(content="The orchard ledger is bound in copper", idempotency_key="resend-2")
    first = service.add(ctx(), request)

    for _ in range(8):  # the index is still down: each answer stands, and the marker waits as it was
        assert service.add(ctx(), request).memory_id == first.memory_id

    [marker] = outbox.pending()
    assert marker["state"] == "queued" and marker["attempts"] == 0, "resends pushed it towards the dead letters"
    assert outbox.dead_letters() == []
    index.failing = False
    assert service.add(ctx(), request).memory_id == first.memory_id
    assert _found(service, first.memory_id)

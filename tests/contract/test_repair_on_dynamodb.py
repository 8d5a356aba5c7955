"""The repair of subjects with duplicate current memories on DynamoDB (moto), through the extraction Lambda.

The extraction function invoked directly with ``{"mnemoRepair": {}}`` (docs/deploy.md, "Repairing duplicate
memories") runs one pass and answers its report: the store written as the code before the subject pointer
wrote it is repaired the first time, and the second invocation finds nothing to do. An invocation with too
little time left stops before any subject and says so (``done: false``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import create_records_table, dynamodb_settings, shared_moto_server

from aws_events import FakeLambdaContext
from mnemo.entry.extraction_events import handler
from mnemo.runtime import Services, set_services
from tests.service.test_consolidation_invariants import ALICE, legacy


class Context(FakeLambdaContext):
    function_name = "mnemo-dev-extraction"
    remaining_millis = 300_000


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    create_records_table(server.client("dynamodb"), "repair-records", stream=False)
    built = Services(dynamodb_settings(server, "repair-records", tmp_path))
    set_services(built)
    yield built
    set_services(None)


def superseded_by(services: Services, memory_id: str) -> Any:
    stored = services.memory.extracted.get(ALICE.scope_key("user"), memory_id)
    assert stored is not None
    return stored.data.get("supersededBy")


def test_the_extraction_function_repairs_once_and_then_finds_nothing(services: Services) -> None:
    old = legacy(services, "Alice works at Acme Corp.", "Alice's employer", "m1", "2025-03-01T09:00:00Z")
    older = legacy(services, "Alice is employed by Acme.", "Alice's employer", "m0", "2025-02-01T09:00:00Z")
    new = legacy(services, "Alice works at Globex.", "Alice's employer", "m2", "2025-05-01T09:00:00Z")
    short = Context()
    short.remaining_millis = 1_000
    assert handler({"mnemoRepair": {}}, short)["done"] is False, "no subject begun without time to finish it"
    first = handler({"mnemoRepair": {}}, Context())
    assert (first["duplicates"], first["pointers"], first["done"]) == (2, 1, True)
    assert superseded_by(services, old) == superseded_by(services, older) == new
    assert superseded_by(services, new) is None
    second = handler({"mnemoRepair": {}}, Context())
    assert (second["duplicates"], second["pointers"], second["done"]) == (0, 0, True)

"""Erasing a user: alice of acme is gone from every family and every read, while bob of acme and alice of globex
keep everything (0 leaks); the receipt's counts say exactly what went, even for an erasure interrupted part-way.
Runs on the embedded default; tests/contract/test_erasure_on_aws.py runs the same on DynamoDB and S3."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from erasure_support import (
    ADMIN,
    ALICE,
    OTHER_ALICE,
    call,
    erase_alice_and_check,
    exported,
    interrupt_and_resume,
    nothing_left_for_alice,
    populate_person,
)
from scripted_model import ScriptedModel

from helpers import ctx, make_services
from mnemo.errors import Unauthorized
from mnemo.portability.erasure import Erasure
from mnemo.runtime import Services
from mnemo.settings import Settings


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    """The embedded stack with extraction on (a scripted model that extracts nothing), so turns wait in the
    extraction ledger and memory_extract records runs."""
    model = ScriptedModel()
    yield Services(
        Settings(data_dir=tmp_path, embedder="hashing", openai_base_url=model.url, extraction_strategies=("facts",))
    )
    model.close()


def test_erasing_alice_leaves_nothing_of_her_and_everything_of_the_others(services: Services, tmp_path: Path) -> None:
    erase_alice_and_check(services, tmp_path)


def test_only_an_admin_erases_and_only_in_their_own_tenant(services: Services, tmp_path: Path) -> None:
    populate_person(services, OTHER_ALICE)
    before = exported(services, OTHER_ALICE, tmp_path / "before.jsonl")
    for roles in ((), ("writer",)):
        with pytest.raises(Unauthorized) as refused:
            call(services, ctx(user="root", tenant="globex", roles=roles), "erase_user", {"subjectUserId": "alice"})
        assert refused.value.details == {"field": "subjectUserId", "requiredRole": "admin"}
    # acme's admin erases acme's alice (who has nothing): globex's alice is untouched.
    assert call(services, ADMIN, "erase_user", {"subjectUserId": "alice"})["counts"]["records"] == 0
    assert exported(services, OTHER_ALICE, tmp_path / "after.jsonl") == before


@pytest.mark.parametrize("deletes", [0, 150, 400])
def test_an_interrupted_erasure_resumes_and_its_counts_add_up(tmp_path: Path, deletes: int) -> None:
    interrupt_and_resume(
        make_services(tmp_path / "reference"), make_services(tmp_path / "interrupted"), tmp_path, deletes
    )


def test_an_erasure_past_its_deadline_answers_running_and_the_next_call_finishes(
    services: Services, tmp_path: Path
) -> None:
    populate_person(services, ALICE)
    erasure = Erasure(services.records, services.index, services.blobs)
    first = erasure.erase("acme", "alice", deadline=0.0)
    assert first.status == "running"
    assert first.completed_at is None
    finished = erasure.erase("acme", "alice")
    assert (finished.status, finished.erasure_id, finished.runs) == ("completed", first.erasure_id, 2)
    assert finished.completed_at is not None
    assert finished.counts.records > 0
    nothing_left_for_alice(services, tmp_path)

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
    BOB,
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
from mnemo.memory.records import LAST
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
    erasure = services.erasure
    first = erasure.erase("acme", "alice", deadline=0.0)
    assert first.status == "running"
    assert first.completed_at is None
    finished = erasure.erase("acme", "alice")
    assert (finished.status, finished.erasure_id, finished.runs) == ("completed", first.erasure_id, 2)
    assert finished.completed_at is not None
    assert finished.counts.records > 0
    nothing_left_for_alice(services, tmp_path)


def test_a_shared_scopes_pointer_keeps_no_end_of_an_erased_memory(services: Services) -> None:
    """A dated memory's LAST pointer keeps the end of its content (docs/scoring.md): erasing its author takes the
    pointer of a shared scope that names it, and leaves one that names another's memory."""
    day = "2026-03-02T09:00:00Z"
    project, team = "MEM|" + ALICE.scope_key("project"), "MEM|" + ALICE.scope_key("team")
    call(
        services,
        ALICE,
        "memory_add",
        {"content": "alice: the launch slips to May", "layer": "project", "occurredAt": day},
    )
    call(services, ALICE, "memory_add", {"content": "alice: the budget is frozen", "layer": "team", "occurredAt": day})
    call(services, BOB, "memory_add", {"content": "bob: noted, thanks", "layer": "team", "occurredAt": day})
    assert "alice" in services.records.get(project, LAST).data["tail"]  # type: ignore[union-attr]

    receipt = call(services, ADMIN, "erase_user", {"subjectUserId": "alice"})

    assert services.records.get(project, LAST) is None
    assert services.records.get(team, LAST).data["tail"] == "bob: noted, thanks"  # type: ignore[union-attr]
    assert receipt["counts"]["sharedMemories"] == 2

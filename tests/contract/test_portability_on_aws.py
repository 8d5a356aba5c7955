"""Export and import between the two adapter sets: the embedded default (SQLite, local blobs) and DynamoDB with
versioned S3 (moto), counted at every step, and back again to an exact copy of where it started."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

from helpers import make_services
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.runtime import Services
from mnemo.settings import Settings
from portability_support import (
    ALICE,
    answers,
    call,
    export_to,
    file_counts,
    import_from,
    outcome,
    populate,
    records_by_key,
)

_names = itertools.count()


@pytest.fixture
def on_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    """An empty stack on DynamoDB and versioned S3 (moto), embedding with 128 dimensions (the source: 256)."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    server = shared_moto_server()
    number = next(_names)
    table, bucket = f"portability-records-{number}", f"portability-blobs-{number}"
    create_records_table(server.client("dynamodb"), table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    yield Services(
        dynamodb_settings(server, table, tmp_path / "aws", blobs="s3", blob_bucket=bucket, hashing_dimensions=128)
    )


def test_embedded_to_dynamodb_and_s3_and_back_loses_nothing(on_aws: Services, tmp_path: Path) -> None:
    source = make_services(tmp_path / "source")
    populate(source)
    exported = export_to(source, tmp_path / "acme.jsonl")
    counts = file_counts(exported)
    assert counts["memories"] > 30
    assert counts["workspace"] > 30
    assert counts["blob:knowledge"] == 13

    # embedded -> DynamoDB + S3: every record and file version added, then found by the target's own index
    summary = import_from(on_aws, exported)
    assert outcome(summary, "added") == counts
    assert summary["indexPending"] == 0
    assert summary["sync"]["result"] == {
        "added": 13,
        "updated": 0,
        "deleted": 0,
        "unchanged": 0,
        "failures": 0,
    }
    assert answers(on_aws) == answers(source)
    assert on_aws.settings.records == "dynamodb"
    assert on_aws.settings.blobs == "s3"

    # S3 gave the file versions ids of its own; the workspace records now name those
    moved = records_by_key(export_to(on_aws, tmp_path / "from-aws.jsonl"))
    head = moved[("WS|" + ALICE.scope_key("project"), "F#notes/plan.md")]["data"]
    assert (
        head["blobVersion"]
        != records_by_key(exported)[("WS|" + ALICE.scope_key("project"), "F#notes/plan.md")]["data"]["blobVersion"]
    )
    assert call(on_aws, ALICE, "file_read", {"path": "notes/plan.md", "version": 2})["content"] == "# Plan v2\n"
    assert moved.keys() == records_by_key(exported).keys()
    # a file deleted at the source is deleted in the target's bucket too (its versions stay, as S3 keeps them)
    workspace_keys = on_aws.blobs.list_keys("workspace/acme/")
    assert any(key.endswith("notes/plan.md") for key in workspace_keys)
    assert not any(key.endswith("notes/gone.md") for key in workspace_keys)

    # the same file again changes nothing on AWS either
    again = import_from(on_aws, exported)
    assert outcome(again, "unchanged") == counts
    assert outcome(again, "added") == {}
    assert again["kept"] == []

    # DynamoDB + S3 -> a new embedded store with the source's settings: the very records the source holds
    back = Services(Settings(data_dir=tmp_path / "back", embedder="hashing"))  # type: ignore[call-arg]
    returned = import_from(back, tmp_path / "from-aws.jsonl")
    assert outcome(returned, "added") == counts
    assert records_by_key(export_to(back, tmp_path / "back.jsonl")) == records_by_key(exported)
    assert answers(back) == answers(source)

    # DynamoDB + S3 -> the source itself: S3's copies are known by the origin they carry, so nothing is doubled
    versions = {key: len(source.blobs.versions(key)) for key in source.blobs.list_keys("")}
    home = import_from(source, tmp_path / "from-aws.jsonl")
    assert outcome(home, "added") == {}
    assert home["kept"] == []
    assert {key: len(source.blobs.versions(key)) for key in source.blobs.list_keys("")} == versions

"""Erasing a user on the AWS adapters: records on DynamoDB and workspace blobs on versioned S3 (moto), with the
local vector index (osmem-server answers no k-NN, which memory_add's repeat check needs). The same checks as
tests/isolation/test_erasure_isolation.py: nothing of alice is left, the others keep everything, and an
interrupted erasure resumes with counts that add up; on S3 every object version and delete marker goes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server
from erasure_support import erase_alice_and_check, interrupt_and_resume
from scripted_model import ScriptedModel

from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.runtime import Services

_names = itertools.count()


@pytest.fixture
def on_aws(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], Services]:
    """Stacks on DynamoDB and versioned S3 (moto), each with a table and bucket of its own."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    server = shared_moto_server()
    model = ScriptedModel()  # extraction on (a model that extracts nothing): turns wait in the extraction ledger
    request.addfinalizer(model.close)

    def stack(label: str) -> Services:
        number = next(_names)
        table, bucket = f"erasure-records-{number}", f"erasure-blobs-{number}"
        create_records_table(server.client("dynamodb"), table, stream=False)
        assert ensure_bucket(server.client("s3"), bucket, REGION) is True
        settings = dynamodb_settings(
            server,
            table,
            tmp_path / label,
            blobs="s3",
            blob_bucket=bucket,
            openai_base_url=model.url,
            extraction_strategies=("facts",),
        )
        return Services(settings)

    return stack


@pytest.fixture
def services(on_aws: Callable[[str], Services]) -> Iterator[Services]:
    yield on_aws("stack")


def test_erasing_alice_on_dynamodb_and_s3(services: Services, tmp_path: Path) -> None:
    assert (services.settings.records, services.settings.blobs) == ("dynamodb", "s3")
    erase_alice_and_check(services, tmp_path)


def test_an_interrupted_erasure_on_dynamodb_resumes(on_aws: Callable[[str], Services], tmp_path: Path) -> None:
    interrupt_and_resume(on_aws("reference"), on_aws("interrupted"), tmp_path, 120, memories=100)

"""`mnemo serve --aws-endpoint` runs the AWS adapters against a moto server, over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import SerialMotoServer

from helpers import serve_process


@pytest.fixture(scope="module")
def moto() -> Iterator[SerialMotoServer]:
    server = SerialMotoServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def mnemo_url(moto: SerialMotoServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"MNEMO_EMBEDDER": "hashing", "MNEMO_RECORDS_TABLE": "records-e2e", "AWS_REGION": "eu-west-1"}
    process, url = serve_process(tmp_path_factory.mktemp("serve"), env, ["--aws-endpoint", moto.url])
    yield url
    process.terminate()
    process.wait(timeout=10)


def post(url: str, tool: str, body: dict[str, Any], user: str = "alice") -> Any:
    request = urllib.request.Request(
        f"{url}/v1/tools/{tool}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-Mnemo-User": user, "X-Mnemo-Tenant": "acme"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_memories_land_in_dynamodb_and_come_back_over_http(moto: SerialMotoServer, mnemo_url: str) -> None:
    added = post(mnemo_url, "memory_add", {"content": "The staging cluster runs in eu-west-1", "tags": ["infra"]})
    assert added["success"]
    dynamodb = moto.client("dynamodb")
    items = dynamodb.scan(TableName="records-e2e")["Items"]
    memory_items = [i for i in items if i["sk"]["S"] == f"MEM#{added['memoryId']}"]
    assert len(memory_items) == 1
    assert json.loads(memory_items[0]["data"]["S"])["content"] == "The staging cluster runs in eu-west-1"
    # Its ADD history entry is folded into the record (one item written), and memory_history shows it.
    assert not any(i["sk"]["S"].startswith(f"HIST#{added['memoryId']}#") for i in items)
    history = post(mnemo_url, "memory_history", {"memoryId": added["memoryId"]})
    assert [change["event"] for change in history["changes"]] == ["ADD"]

    found = post(mnemo_url, "memory_search", {"query": "staging cluster region", "threshold": 0})
    assert [r["memoryId"] for r in found["results"]] == [added["memoryId"]]
    assert post(mnemo_url, "memory_search", {"query": "staging cluster", "threshold": 0}, user="bob")["results"] == []

    deleted = post(mnemo_url, "memory_delete", {"memoryId": added["memoryId"]})
    assert deleted["success"]
    remaining = dynamodb.scan(TableName="records-e2e")["Items"]
    assert not [i for i in remaining if i["sk"]["S"] == f"MEM#{added['memoryId']}"]


def test_the_bucket_was_created_with_versioning(moto: SerialMotoServer, mnemo_url: str) -> None:
    s3 = moto.client("s3")
    assert s3.get_bucket_versioning(Bucket="mnemo-knowledge")["Status"] == "Enabled"


def test_reindex_rebuilds_from_dynamodb(moto: SerialMotoServer, mnemo_url: str, tmp_path: Path) -> None:
    added = post(mnemo_url, "memory_add", {"content": "Reindex me from the table"}, user="carol")
    env = {
        **os.environ,
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_RECORDS": "dynamodb",
        "MNEMO_RECORDS_TABLE": "records-e2e",
        "MNEMO_AWS_ENDPOINT": moto.url,
        "MNEMO_AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "MNEMO_DATA_DIR": str(tmp_path),  # an empty local index: everything must come from DynamoDB
        "MNEMO_USER": "carol",
        "MNEMO_TENANT": "acme",
    }
    done = subprocess.run([sys.executable, "-m", "mnemo.cli", "reindex"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "reindexed" in done.stdout
    assert int(done.stdout.split()[1]) >= 1
    found = subprocess.run(
        [sys.executable, "-m", "mnemo.cli", "call", "memory_search", '{"query": "reindex table", "threshold": 0}'],
        env=env,
        capture_output=True,
        text=True,
    )
    assert [r["memoryId"] for r in json.loads(found.stdout)["results"]] == [added["memoryId"]]

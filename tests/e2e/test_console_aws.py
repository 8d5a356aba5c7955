"""The console on the AWS adapters: `mnemo serve --aws-endpoint` (the real command, DynamoDB and S3 on a moto
server) serves /ui, every page loads with no console error, and what the console writes lands in DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from aws_fixtures import SerialMotoServer

from console_support import PAGES, browser, call, seed
from helpers import serve_process

TABLE = "records-console"


@pytest.fixture
def aws_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, SerialMotoServer]]:
    moto = SerialMotoServer()
    env = {"MNEMO_EMBEDDER": "hashing", "MNEMO_RECORDS_TABLE": TABLE, "AWS_REGION": "eu-west-1"}
    process, url = serve_process(tmp_path_factory.mktemp("serve"), env, ["--aws-endpoint", moto.url])
    try:
        yield url, moto
    finally:
        process.terminate()
        process.wait(timeout=10)
        moto.close()


def test_the_console_on_dynamodb_and_s3(aws_console: tuple[str, SerialMotoServer]) -> None:
    base, moto = aws_console
    seed(base)
    with browser(base) as console:
        for page in PAGES:
            console.open(page, "h1")
            console.settle()
        page = console.open("memories")
        page.get_by_label("Content").fill("The staging cluster runs in eu-west-1")
        page.get_by_role("button", name="Add memory").click()
        page.wait_for_selector("#memory-added .ok")
        console.open("graph?name=Alice", "svg.graph .edge")
        assert console.problems == []
    found = call(base, "memory_search", {"query": "staging cluster", "threshold": 0.0})["results"]
    memory_id = next(hit["memoryId"] for hit in found if hit["content"] == "The staging cluster runs in eu-west-1")
    items = moto.client("dynamodb").scan(TableName=TABLE)["Items"]
    stored = [item for item in items if item["sk"]["S"] == f"MEM#{memory_id}"]
    assert json.loads(stored[0]["data"]["S"])["content"] == "The staging cluster runs in eu-west-1"

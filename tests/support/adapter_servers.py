"""`mnemo serve` on either adapter set, for suites that hold every tool to the same answers on both: its
embedded default (SQLite and a local directory) or, with ``--aws-endpoint``, DynamoDB and S3 in a moto
server of its own. The e2e suites share one such server per adapter set per module (the ``server``
fixture of tests/e2e/conftest.py), each test on a tenant of its own."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aws_fixtures import REGION, SerialMotoServer

from helpers import serve_process

#: The adapter sets a server runs on, as the ``server`` fixture is parametrized.
ADAPTER_SETS = ("embedded", "moto")


@dataclass(frozen=True)
class ServerOptions:
    """What a module's servers are started with: the table and bucket on moto, and settings for both."""

    table: str = "records-e2e"
    bucket: str = "mnemo-e2e"
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Server:
    kind: str
    url: str
    moto: SerialMotoServer | None = None


@contextmanager
def serving(kind: str, data_dir: Path, options: ServerOptions) -> Iterator[Server]:
    """`mnemo serve` (hashing embedder) on the ``kind`` adapter set until the block ends."""
    env = {"MNEMO_EMBEDDER": "hashing", **options.env}
    moto = None
    if kind == "moto":
        moto = SerialMotoServer()
        aws = {"MNEMO_RECORDS_TABLE": options.table, "MNEMO_BLOB_BUCKET": options.bucket, "AWS_REGION": REGION}
        process, url = serve_process(data_dir, {**env, **aws}, ["--aws-endpoint", moto.url])
    else:
        process, url = serve_process(data_dir, env, [])
    try:
        yield Server(kind, url, moto)
    finally:
        process.terminate()
        process.wait(timeout=10)
        if moto is not None:
            moto.close()

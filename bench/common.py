"""Shared by the benchmarks: a fresh embedded stack, one on moto, a table printer, JSON results."""

from __future__ import annotations

import json
import os
import platform
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemo.runtime import Services
from mnemo.settings import Settings

RESULTS = Path(__file__).resolve().parent / "results"


def fresh_services(embedder: str = "bge", data_dir: Path | None = None) -> Services:
    directory = data_dir or Path(tempfile.mkdtemp(prefix="mnemo-bench-"))
    return Services(Settings(data_dir=directory, embedder=embedder))  # type: ignore[arg-type]


def moto_services(name: str, embedder: str, *, bucket: bool = False) -> Services:
    """A stack on DynamoDB (and, with ``bucket``, S3) in the shared moto server of the tests: table ``name``."""
    for variable, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        os.environ.setdefault(variable, value)
    import sys

    tests = str(Path(__file__).resolve().parents[1] / "tests" / "support")
    if tests not in sys.path:  # the tests' moto server and table helpers
        sys.path.insert(0, tests)
    from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

    from mnemo.adapters.aws.bootstrap import ensure_bucket

    server = shared_moto_server()
    create_records_table(server.client("dynamodb"), name, stream=False)
    extra: dict[str, Any] = {}
    if bucket:
        ensure_bucket(server.client("s3"), name, REGION)
        extra = {"blobs": "s3", "blob_bucket": name}
    settings = dynamodb_settings(server, name, Path(tempfile.mkdtemp(prefix=f"mnemo-{name}-moto-")), **extra)
    return Services(settings.model_copy(update={"embedder": embedder}))


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def write_results(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path

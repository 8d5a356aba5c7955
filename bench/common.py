"""Shared by the benchmarks: a fresh embedded stack, one on moto, a table printer, JSON results, smoke mode.

Smoke mode: every script accepts ``--smoke`` (added by ``parse_args`` below), which swaps its sizes for tiny
ones that finish in seconds and still run the script's whole path, tables and JSON included. Results go to
``results_dir()``: ``$MNEMO_BENCH_RESULTS`` when set, else ``bench/results/`` for a full run and a temporary
folder (``mnemo-bench-smoke`` under the system's temporary directory) for a smoke run, so that a smoke run
never overwrites the committed results. Scripts that need the LoCoMo split of ../shared read the small
hand-written fixture ``bench/fixtures/locomo-smoke.json`` in smoke mode (see locomo.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemo.runtime import Services
from mnemo.settings import Settings

BENCH = Path(__file__).resolve().parent
#: The committed results (what docs/benchmarks.md quotes); scripts that read earlier results read them here.
RESULTS = BENCH / "results"
#: Fixtures of smoke mode, committed with the scripts.
FIXTURES = BENCH / "fixtures"
#: Names the folder results are written to (a smoke run's default is a temporary folder).
RESULTS_VARIABLE = "MNEMO_BENCH_RESULTS"
SMOKE_HELP = "tiny sizes that finish in seconds (results to $MNEMO_BENCH_RESULTS or a temporary folder)"

_smoke = False


def smoke() -> bool:
    """Whether this run is a smoke run (``--smoke``, as parsed by ``parse_args``)."""
    return _smoke


def parse_args(
    parser: argparse.ArgumentParser, smoke_defaults: dict[str, Any], argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Add ``--smoke`` to ``parser`` and parse; with ``--smoke``, ``smoke_defaults`` replace the parser's
    defaults (an option given on the command line still wins) and ``smoke()`` answers True."""
    global _smoke
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**smoke_defaults)
        args = parser.parse_args(argv)
    _smoke = bool(args.smoke)
    return args


def results_dir() -> Path:
    """Where results are written: $MNEMO_BENCH_RESULTS, else a temporary folder in smoke mode, else bench/results."""
    configured = os.environ.get(RESULTS_VARIABLE)
    if configured:
        return Path(configured)
    if _smoke:
        return Path(tempfile.gettempdir()) / "mnemo-bench-smoke"
    return RESULTS


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
    """Write ``<name>.json`` to ``results_dir()``, with the benchmark's name, the time and the machine
    (and ``smoke: true`` in smoke mode, so that a smoke file is never taken for a measurement)."""
    directory = results_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    payload = {
        "benchmark": name,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        **({"smoke": True} if _smoke else {}),
        **payload,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path

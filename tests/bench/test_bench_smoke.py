"""Every bench script runs in smoke mode and writes its JSON, so that a benchmark cannot rot unnoticed.

The scripts are found in bench/, not listed here: a module with an ``if __name__ == "__main__":`` entry is a
script; the others are the helpers the scripts import, and must be named in ``HELPERS`` (so that a new
script without its entry point, or a new helper, is noticed). Each script runs as `python bench/<script>
--smoke` from the repository's root, as `make bench-smoke` runs it, with its results sent to the test's own
folder (MNEMO_BENCH_RESULTS): it must exit 0 and leave at least one JSON file there, each a non-empty
object. What the figures are is the benchmark's business, and no clock is asserted on: ``HANG_SECONDS``
only stops a run that hangs, so that it fails rather than holds the suite (a smoke run takes seconds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
MAIN = 'if __name__ == "__main__":'
#: bench/ modules that are not scripts (no ``__main__`` entry): what the scripts import.
HELPERS = {
    "common.py": "stacks, the table printer, results and smoke mode",
    "cost_meter.py": "the AWS request meter of deploy_cost.py",
    "cost_model.py": "deploy_cost.py's template reading and cost arithmetic",
    "locomo.py": "the LoCoMo loader of retrieval.py, calibrate.py and retrieval_lab.py",
    "stand_ins.py": "deploy_cost.py's Titan stand-in, served from a thread of its own",
    "vector_first.py": "retrieval.py --vector-first: the embedded index ranked as the S3 Vectors store ranks",
}
#: Not a limit on speed: a run still going after this long is stuck.
HANG_SECONDS = 600


def is_script(path: Path) -> bool:
    return any(line.startswith(MAIN) for line in path.read_text(encoding="utf-8").splitlines())


MODULES = sorted(path.name for path in BENCH.glob("*.py"))
SCRIPTS = [name for name in MODULES if is_script(BENCH / name)]


def test_every_bench_module_is_a_script_or_a_known_helper() -> None:
    assert SCRIPTS, "no bench script found"
    assert sorted(set(MODULES) - set(SCRIPTS)) == sorted(HELPERS)


@pytest.mark.model  # most scripts load bge-small
@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs_in_smoke_mode_and_writes_its_json(script: str, tmp_path: Path) -> None:
    results, scratch = tmp_path / "results", tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "MNEMO_BENCH_RESULTS": str(results), "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    output = f"--- stdout (tail)\n{done.stdout[-3000:]}\n--- stderr (tail)\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"bench/{script} --smoke exited {done.returncode}\n{output}"
    written = sorted(results.glob("*.json"))
    assert written, f"bench/{script} --smoke wrote no JSON to {results}\n{output}"
    for path in written:
        payload = json.loads(path.read_text(encoding="utf-8"))
        assert isinstance(payload, dict) and payload, f"{path.name} is empty"

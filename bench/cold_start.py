"""Cold start of a tool Lambda's Python: import of functions/<tool>/app.py and its first invocation.

    python bench/cold_start.py [--runs 7] [--functions memory_add,...] [--smoke]

Each run is a fresh interpreter (as a new Lambda container is), timing the
handler module's import and its first call on a REST proxy event, with the
hashing embedder for the tools that embed (Titan plays that part on AWS,
where no local model loads) and the default configuration for the others.
Prints medians and writes bench/results/cold-start.json. --smoke: one run of memory_add (hashing)
and of knowledge_check (bge configured), results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import parse_args, table, write_results

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys, time
started = time.perf_counter()
import importlib.util
spec = importlib.util.spec_from_file_location("app", {app!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
imported = time.perf_counter()
sys.path.insert(0, {tests!r})
from aws_events import FakeLambdaContext, rest_event
out = module.handler(rest_event({tool!r}, {body!r}, {{"user": "u", "tenant": "t"}}), FakeLambdaContext())
done = time.perf_counter()
print(json.dumps({{"import": 1000 * (imported - started), "first": 1000 * (done - imported),
                  "status": out["statusCode"], "modules": len(sys.modules)}}))
"""
CASES = {
    "memory_add": ({"content": "cold start probe"}, "hashing"),
    "memory_search": ({"query": "cold start probe"}, "hashing"),
    "memory_delete": ({"memoryId": "mem_missing"}, "bge"),
    # An empty catalog: the import and the first check's parsers, not the size of a repository.
    "knowledge_check": ({"dependencies": [{"name": "mysql2", "version": "3.0.0"}]}, "bge"),
    "knowledge_query": ({"query": "database selection"}, "hashing"),
    "sync_status": ({}, "bge"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--functions", default=",".join(CASES), help="comma-separated functions of CASES")
    args = parse_args(parser, {"runs": 1, "functions": "memory_add,knowledge_check"})
    rows, payload = [], {}
    for tool in args.functions.split(","):
        body, embedder = CASES[tool]
        samples = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as data_dir:
                code = PROBE.format(
                    app=str(ROOT / "functions" / tool / "app.py"),
                    tests=str(ROOT / "tests" / "support"),
                    tool=tool,
                    body=body,
                )
                env = {"MNEMO_DATA_DIR": data_dir, "MNEMO_EMBEDDER": embedder, "PATH": "/usr/bin:/bin"}
                done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
                samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
        summary = {key: statistics.median(s[key] for s in samples) for key in ("import", "first", "modules")}
        payload[tool] = {**summary, "status": samples[0]["status"]}
        rows.append([tool, summary["import"], summary["first"], int(summary["modules"])])
    print(table(["function", "import ms", "first call ms", "modules loaded"], rows))
    print(f"wrote {write_results('cold-start', {'runs': args.runs, 'medians': payload})}")


if __name__ == "__main__":
    main()

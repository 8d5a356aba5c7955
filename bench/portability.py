"""Export and import throughput: a tenant moved between stores with `mnemo export` / `mnemo import`'s code.

    python bench/portability.py [--memories 10000] [--embedders hashing,bge] [--bge-memories 2000]
                                [--moto-memories 200] [--smoke]

A tenant of --memories memories (through the batch path, in 10 user scopes),
one conversation and one execution per 10 memories, one graph fact per 10
memories and one workspace file per 20, in a fresh embedded stack, is:

* ``export``: written to a file (records and files as stored);
* ``import``: read into an empty embedded stack with each of --embedders (bge on
  --bge-memories), checked first,
  then written, and every indexed record embedded again by the target (the
  outbox drain);
* ``import again``: read once more into that stack, where everything is
  ``unchanged`` and nothing is embedded;
* ``import, moto``: --moto-memories of it read into DynamoDB and S3 on a moto server (the
  AWS adapters' calls, not AWS's speed).

Every run checks the counts: what the import added equals what the file holds.
Writes bench/results/portability.json and prints a table. --smoke: 40 memories (20 with bge), 20 on
moto, results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import fresh_services, moto_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.memory.batch import add_many
from mnemo.memory.models import MemoryAddInput
from mnemo.portability.exporter import export
from mnemo.portability.importer import Importer, check
from mnemo.portability.selection import Selection
from mnemo.runtime import Services, record_families
from mnemo.tools.registry import load_catalog

USERS = 10


def populate(services: Services, memories: int) -> None:
    catalog = load_catalog()
    per_user = memories // USERS
    for user in range(USERS):
        context = RequestContext(tenant="bench", user=f"user{user}", project="p1", roles=frozenset({"writer"}))
        requests = [
            MemoryAddInput(content=f"User {user} fact {n}: the {n % 97}th queue drains into bucket {n * 7} nightly")
            for n in range(per_user)
        ]
        add_many(services.memory, context, requests)
        for n in range(per_user // 10):
            message = f"msg_{user}_{n}"
            catalog["add_conversation"].invoke(
                services,
                context,
                {
                    "user_input": f"question {n}",
                    "agent_response": f"answer {n}",
                    "message_id": message,
                    "explanation": "b",
                },
            )
            catalog["add_execution"].invoke(
                services,
                context,
                {
                    "message_id": message,
                    "explanation": "b",
                    "execution_summary": f"looked up {n}",
                    "tools_used": ["search"],
                    "errors": [],
                    "observations": "none",
                    "success": True,
                },
            )
            catalog["add_memory_link"].invoke(
                services, context, {"subject": f"Person {n}", "predicate": "works_at", "object": f"Company {n % 50}"}
            )
        if user == 0:
            for n in range(memories // 20):
                catalog["file_write"].invoke(services, context, {"path": f"src/m{n}.py", "content": f"X = {n}\n" * 20})


def timed_import(target: Services, path: Path) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    with path.open(encoding="utf-8") as handle:
        plan = check(handle, record_families())
    summary = Importer(target, plan).run(path).as_json()
    return time.perf_counter() - started, summary


def added(summary: dict[str, Any], outcome: str = "added") -> int:
    return sum(row[outcome] for part in ("records", "blobs") for row in summary[part].values())


def run_size(memories: int, embedder: str, workdir: Path, moto: bool) -> list[dict[str, Any]]:
    run = f"{memories}-{embedder}-{'moto' if moto else 'embedded'}"  # each run its own source and file
    source = fresh_services("hashing", workdir / f"source-{run}")
    populate(source, memories)
    path = workdir / f"bench-{run}.jsonl"
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as out:
        counts = export(source, Selection("bench"), out)
    seconds = time.perf_counter() - started
    lines = sum(counts.records.values()) + sum(counts.blobs.values())
    size_mb = path.stat().st_size / 1e6
    rows = [{"step": "export", "memories": memories, "lines": lines, "seconds": seconds, "mb": size_mb}]
    target = moto_services(f"portability-{memories}-{int(time.time())}", embedder, bucket=True) if moto else None
    target = target or fresh_services(embedder, workdir / f"target-{run}")
    step = "import, moto" if moto else "import"
    seconds, summary = timed_import(target, path)
    assert added(summary) == lines, (added(summary), lines)
    rows.append({"step": step, "memories": memories, "lines": lines, "seconds": seconds, "indexed": summary["indexed"]})
    if not moto:
        seconds, again = timed_import(target, path)
        assert added(again, "unchanged") == lines and again["indexed"] == 0
        rows.append({"step": "import again", "memories": memories, "lines": lines, "seconds": seconds, "indexed": 0})
    for row in rows:
        row["embedder"] = embedder if row["step"] != "export" else "-"
        row["linesPerSecond"] = round(row["lines"] / row["seconds"], 1)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--embedders", default="hashing,bge")
    parser.add_argument("--bge-memories", type=int, default=2_000)
    # moto copies its whole table for every transaction (its rollback), so an import into it grows as the
    # square of the table: its figure is moto's, kept small; DynamoDB itself has no such cost.
    parser.add_argument("--moto-memories", type=int, default=200)
    args = parse_args(parser, {"memories": 40, "bge_memories": 20, "moto_memories": 20}, argv)
    workdir = Path(tempfile.mkdtemp(prefix="mnemo-bench-portability-"))
    rows: list[dict[str, Any]] = []
    for embedder in args.embedders.split(","):
        size = args.bge_memories if embedder == "bge" else args.memories
        rows += run_size(size, embedder, workdir, moto=False)
    if args.moto_memories:
        moto = run_size(args.moto_memories, "hashing", workdir, moto=True)
        rows += [row for row in moto if row["step"] != "export"]
    print(
        table(
            ["step", "memories", "embedder", "lines", "seconds", "lines/s", "re-embedded"],
            [
                [
                    r["step"],
                    r["memories"],
                    r["embedder"],
                    r["lines"],
                    r["seconds"],
                    r["linesPerSecond"],
                    r.get("indexed", "-"),
                ]
                for r in rows
            ],
        )
    )
    print(f"wrote {write_results('portability', {'rows': rows, 'args': vars(args)})}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

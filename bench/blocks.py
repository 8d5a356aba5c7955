"""Latency of the ten file tools at 1,000 blocks and a workspace of 1,000 files.

    python bench/blocks.py [--blocks 1000] [--files 1000] [--calls 300] [--pinned 20]
                           [--backend embedded|moto|both] [--embedder hashing|bge] [--smoke]

One agent (user, agent id and project, role writer) on a fresh stack. The fill
writes --blocks blocks (``mnemo:///blocks/b-0000.md``..., synthetic decision
logs of 10-40 lines, 0.4-2.5 KB) and --files workspace files (``src/<pkg>/<mod>.py``
and ``docs/<n>.md``, 20-120 lines) through file_write, and pins --pinned blocks.
Then each tool is called --calls times on files drawn at random (seeded):

* file_write: a whole new version of an unpinned block, of a pinned block
  (the budget is checked against its pinner), and of a workspace file;
* file_edit: an append (``[END]`` replaced by a new line and the marker) to a
  block and to a workspace file;
* file_read: a block (its references resolved), a workspace file;
* file_list: the first page (200 entries) of ``mnemo:///blocks/`` and of ``src/``;
* file_search: a query over the 1,000 blocks (hybrid, top 10);
* block_pin and block_unpin: an unpinned block pinned, then unpinned;
* pinned_context: the --pinned blocks, in order;
* expand_prompt: a prompt with an ``@@block`` and an ``@src/...`` marker;
* file_delete: a block, a workspace file (last, so the others see every file).

Every call goes through the catalog (``get_tool(name).invoke``: validation and
the answer's dump included). ``embedded`` is SQLite, the in-process vector
index and a local blob directory; ``moto`` is DynamoDB and a versioned S3
bucket on an in-process moto server (it measures moto, not AWS), with the
in-process vector index, at --moto-scale of the sizes (0.2: 200 blocks, 200
files, 60 calls), since moto copies the table on every transaction. The embedder is the hashing one unless --embedder
bge. Writes bench/results/blocks.json; clocks are reported, never asserted.

--smoke: 20 blocks, 20 files, 3 calls, 3 pinned, both backends (moto at 0.3 of that), results to a
temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from common import moto_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

CONTEXT = RequestContext(tenant="bench", user="alice", agent="planner", project="checkout", roles=frozenset({"writer"}))
SUBJECTS = ["orders", "payments", "search", "auth", "billing", "releases", "mobile", "data", "oncall", "pricing"]
STORES = ["PostgreSQL 16", "DynamoDB", "Redis", "S3", "OpenSearch", "Kafka", "SQS", "Aurora"]
PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana"]
VERBS = ["decided", "noted", "checked", "changed", "measured", "agreed"]
QUERIES = [
    "which database holds the orders",
    "how are releases rolled out",
    "who owns the payments service",
    "retry policy for the search cluster",
    "billing invoices monthly job",
    "auth token rotation",
    "mobile backend caching decision",
    "on-call escalation after a page",
]


def block_text(rng: random.Random, index: int, lines: int | None = None) -> str:
    subject = SUBJECTS[index % len(SUBJECTS)]
    body = [f"# {subject.title()} decisions ({index})", ""]
    for _ in range(lines or rng.randint(10, 40)):
        body.append(
            f"- {rng.choice(PEOPLE)} {rng.choice(VERBS)} that {subject} uses {rng.choice(STORES)} "
            f"for {rng.choice(['writes', 'reads', 'events', 'caching', 'reports'])} since release "
            f"{rng.randint(1, 9)}.{rng.randint(0, 30)}."
        )
    body.append(f"See src/{subject}/service.py and mnemo:///blocks/b-{(index + 1) % 1000:04d}.md.")
    return "\n".join(body) + "\n[END]\n"


def source_text(rng: random.Random, index: int) -> str:
    lines = [f'"""Module {index}."""', "", "from __future__ import annotations", ""]
    for n in range(rng.randint(4, 24)):
        lines += [
            f"def handler_{n}(event: dict, context: object) -> dict:",
            f'    """Handle {rng.choice(SUBJECTS)} event {n}."""',
            f"    return {{'status': {rng.choice([200, 201, 204, 400])}, 'items': event.get('items', [])}}",
            "",
        ]
    return "\n".join(lines) + "# [END]\n"


def workspace_path(index: int) -> str:
    if index % 5 == 4:
        return f"docs/{index:04d}.md"
    return f"src/{SUBJECTS[index % len(SUBJECTS)]}/module_{index:04d}.py"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "mean": statistics.fmean(ordered),
    }


def run(services: Services, args: argparse.Namespace, label: str) -> dict[str, Any]:
    rng = random.Random(4)

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return get_tool(name).invoke(services, CONTEXT, payload)

    def timed(count: int, make: Callable[[int], tuple[str, dict[str, Any]]]) -> list[float]:
        samples = []
        for i in range(count):
            name, payload = make(i)
            started = time.perf_counter()
            call(name, payload)
            samples.append(1000 * (time.perf_counter() - started))
        return samples

    services.embedder.embed(["warm up"])
    results: dict[str, dict[str, float]] = {}
    started_all = time.perf_counter()
    blocks = [f"mnemo:///blocks/b-{i:04d}.md" for i in range(args.blocks)]
    files = [workspace_path(i) for i in range(args.files)]
    results["file_write, new block (fill)"] = percentiles(
        timed(args.blocks, lambda i: ("file_write", {"path": blocks[i], "content": block_text(rng, i)}))
    )
    results["file_write, new workspace file (fill)"] = percentiles(
        timed(args.files, lambda i: ("file_write", {"path": files[i], "content": source_text(rng, i)}))
    )
    fill_seconds = time.perf_counter() - started_all
    print(f"[{label}] wrote {args.blocks} blocks and {args.files} workspace files in {fill_seconds:.0f} s", flush=True)

    pinned = blocks[: args.pinned]
    for path in pinned:
        call("block_pin", {"path": path})
    unpinned = blocks[args.pinned :]
    calls = args.calls
    sources = sum(path.startswith("src/") for path in files)

    results["file_write, block"] = percentiles(
        timed(
            calls,
            lambda i: (
                "file_write",
                {"path": rng.choice(unpinned), "content": block_text(rng, args.pinned + i, rng.randint(10, 40))},
            ),
        )
    )
    results["file_write, pinned block (budget checked)"] = percentiles(
        timed(calls, lambda i: ("file_write", {"path": rng.choice(pinned), "content": block_text(rng, i, 12)}))
    )
    results["file_write, workspace file"] = percentiles(
        timed(calls, lambda i: ("file_write", {"path": rng.choice(files), "content": source_text(rng, i)}))
    )
    results["file_edit, append to a block"] = percentiles(
        timed(
            calls,
            lambda i: (
                "file_edit",
                {"path": rng.choice(unpinned), "old": "[END]", "new": f"- Appended line {i}.\n[END]"},
            ),
        )
    )
    results["file_edit, workspace file"] = percentiles(
        timed(
            calls,
            lambda i: ("file_edit", {"path": rng.choice(files), "old": "# [END]", "new": f"# edit {i}\n# [END]"}),
        )
    )
    results["file_read, block"] = percentiles(timed(calls, lambda i: ("file_read", {"path": rng.choice(blocks)})))
    results["file_read, workspace file"] = percentiles(
        timed(calls, lambda i: ("file_read", {"path": rng.choice(files)}))
    )
    results[f"file_list, mnemo:///blocks/ (first {min(200, args.blocks)} of {args.blocks:,})"] = percentiles(
        timed(calls, lambda i: ("file_list", {"path": "mnemo:///blocks/"}))
    )
    results[f"file_list, src/ (first {min(200, sources)} of {sources:,})"] = percentiles(
        timed(calls, lambda i: ("file_list", {"path": "src/"}))
    )
    results[f"file_search, top 10 of {args.blocks:,} blocks"] = percentiles(
        timed(calls, lambda i: ("file_search", {"query": QUERIES[i % len(QUERIES)]}))
    )
    to_pin = rng.sample(unpinned, calls)
    pin: list[float] = []
    unpin: list[float] = []
    for path in to_pin:
        pin += timed(1, lambda i, path=path: ("block_pin", {"path": path}))
        unpin += timed(1, lambda i, path=path: ("block_unpin", {"path": path}))
    results["block_pin"] = percentiles(pin)
    results["block_unpin"] = percentiles(unpin)
    context = call("pinned_context", {})
    results[f"pinned_context, {context['count']} blocks ({context['totalTokens']:,} tokens)"] = percentiles(
        timed(calls, lambda i: ("pinned_context", {}))
    )
    results["expand_prompt, two markers"] = percentiles(
        timed(
            calls,
            lambda i: (
                "expand_prompt",
                {"text": f"Follow @@b-{rng.randrange(args.blocks):04d} when changing @{rng.choice(files)}."},
            ),
        )
    )
    doomed_blocks = rng.sample(unpinned, calls)
    doomed_files = rng.sample(files, calls)
    results["file_delete, block"] = percentiles(timed(calls, lambda i: ("file_delete", {"path": doomed_blocks[i]})))
    results["file_delete, workspace file"] = percentiles(
        timed(calls, lambda i: ("file_delete", {"path": doomed_files[i]}))
    )
    total_seconds = time.perf_counter() - started_all

    rows = [[name, int(r["n"]), r["p50"], r["p95"], r["mean"]] for name, r in results.items()]
    print(
        f"\n[{label}] {args.blocks} blocks, {args.files} workspace files, {args.pinned} pinned, "
        f"embedder {services.embedder.name} (ms)"
    )
    print(table(["tool, case", "n", "p50 ms", "p95 ms", "mean ms"], rows))
    print(f"total {total_seconds:.0f} s", flush=True)
    return {
        "embedder": services.embedder.name,
        "fillSeconds": fill_seconds,
        "totalSeconds": total_seconds,
        "milliseconds": results,
    }


def embedded(args: argparse.Namespace) -> Services:
    directory = Path(tempfile.mkdtemp(prefix="mnemo-bench-blocks-"))
    return Services(Settings(data_dir=directory, embedder=args.embedder, block_budget_tokens=100_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--pinned", type=int, default=20)
    parser.add_argument("--backend", default="both", choices=["embedded", "moto", "both"])
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "bge"])
    parser.add_argument("--moto-scale", type=float, default=0.2, help="moto's blocks, files and calls, as a share")
    args = parse_args(parser, {"blocks": 20, "files": 20, "calls": 3, "pinned": 3, "moto_scale": 0.3})

    payload: dict[str, Any] = {
        "blocks": args.blocks,
        "files": args.files,
        "calls": args.calls,
        "pinned": args.pinned,
        "cpus": os.cpu_count(),
    }
    if args.backend in ("embedded", "both"):
        payload["embedded"] = run(embedded(args), args, "embedded: SQLite + local blobs")
    if args.backend in ("moto", "both"):
        # moto copies the whole table on every transaction, so its writes slow down as the table grows: the
        # moto run is smaller (--moto-scale) to finish in minutes.
        scaled = argparse.Namespace(**vars(args))
        for name in ("blocks", "files", "calls"):
            setattr(scaled, name, max(1, round(getattr(args, name) * args.moto_scale)))
        payload["moto"] = run(
            moto_services("bench-blocks", scaled.embedder, bucket=True), scaled, "moto: DynamoDB + S3"
        ) | {
            "blocks": scaled.blocks,
            "files": scaled.files,
            "calls": scaled.calls,
        }
    path = write_results("blocks", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""memory_add and memory_search latency at 10k memories, in process and over HTTP.

    python bench/latency.py [--memories 10000] [--samples 500] [--embedder bge|hashing] [--smoke]

The store is filled through memory_add (one user scope: the worst case for a
search, which scores every memory of the scope), then p50/p95/p99 are taken
for further adds and for searches, first by calling the tools in process and
then through `mnemo serve` over HTTP on loopback (keep-alive connection).
Writes bench/results/latency-<embedder>.json. --smoke: 40 memories and 10 samples with the bge
model, results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.entry.local_server import serve_in_thread
from mnemo.runtime import set_services
from mnemo.tools.registry import get_tool

NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Mo", "Nia", "Oren"]
VERBS = [
    "prefers",
    "maintains",
    "reviewed",
    "migrated",
    "deployed",
    "documented",
    "tested",
    "owns",
    "rewrote",
    "paused",
]
THINGS = [
    "the billing service",
    "the search cluster",
    "the mobile app",
    "the data pipeline",
    "the auth gateway",
    "the design system",
    "the nightly build",
    "the cost report",
    "the onboarding guide",
    "the incident runbook",
    "the Postgres upgrade",
    "the Kafka consumers",
    "the feature flags",
    "the API rate limits",
    "the cache layer",
]
WHEN = ["on Monday", "last sprint", "in March", "before the audit", "after the outage", "every Friday", "in Q3"]
DETAILS = [
    "using Terraform",
    "with pair programming",
    "behind a flag",
    "with zero downtime",
    "for the EU region",
    "to cut latency",
    "after a design review",
    "with a rollback plan",
    "for compliance",
    "to save cost",
]


def synthetic(rng: random.Random, index: int) -> str:
    return (
        f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(WHEN)} "
        f"{rng.choice(DETAILS)} (item {index}, ticket OPS-{rng.randint(1000, 9999)})"
    )


def question(rng: random.Random) -> str:
    return f"Who {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(WHEN)}?"


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "mean": statistics.fmean(ordered)}


def timed(samples: int, call: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(samples):
        started = time.perf_counter()
        call(i)
        out.append(1000 * (time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--embedder", default="bge", choices=["bge", "hashing"])
    args = parse_args(parser, {"memories": 40, "samples": 10})

    rng = random.Random(7)
    services = fresh_services(args.embedder)
    context = RequestContext(tenant="bench", user="latency")
    add, search = get_tool("memory_add"), get_tool("memory_search")
    fill = args.memories - args.samples
    started = time.perf_counter()
    written = 0
    while services.index.count("memory") < fill:  # near-duplicates are merged: add until there are enough
        add.invoke(services, context, {"content": synthetic(rng, written)})
        written += 1
    fill_seconds = time.perf_counter() - started
    print(f"filled {fill} memories in {fill_seconds:.0f} s ({fill / fill_seconds:.0f}/s)", flush=True)

    results: dict[str, dict[str, float]] = {}
    results["memory_add in process"] = percentiles(
        timed(args.samples, lambda i: add.invoke(services, context, {"content": synthetic(rng, written + i)}))
    )
    while services.index.count("memory") < args.memories:  # searches run on the full size
        add.invoke(services, context, {"content": synthetic(rng, written + args.samples)})
        written += 1
    queries = [question(rng) for _ in range(args.samples)]
    search.invoke(services, context, {"query": "warm up"})
    results["memory_search in process"] = percentiles(
        timed(args.samples, lambda i: search.invoke(services, context, {"query": queries[i]}))
    )
    count = services.index.count("memory")

    set_services(services)
    server, thread = serve_in_thread("127.0.0.1", 0)
    connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    headers = {"Content-Type": "application/json", "X-Mnemo-Tenant": "bench", "X-Mnemo-User": "latency"}

    def post(tool: str, body: dict[str, object]) -> None:
        connection.request("POST", f"/v1/tools/{tool}", json.dumps(body), headers)
        response = connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise RuntimeError(f"{tool}: {response.status} {payload[:200]!r}")

    http_samples = max(args.samples // 2, 1)
    results["memory_search over HTTP"] = percentiles(
        timed(args.samples, lambda i: post("memory_search", {"query": queries[i]}))
    )
    results["memory_add over HTTP"] = percentiles(
        timed(http_samples, lambda i: post("memory_add", {"content": synthetic(rng, written + args.samples + i)}))
    )
    connection.close()
    server.shutdown()
    thread.join(timeout=5)

    rows = [[name, *[r[k] for k in ("p50", "p95", "p99", "mean")]] for name, r in results.items()]
    print(f"\n{count} memories in one scope, embedder {services.embedder.name} (ms)")
    print(table(["operation", "p50", "p95", "p99", "mean"], rows))
    path = write_results(
        f"latency-{args.embedder}",
        {
            "embedder": services.embedder.name,
            "memories": count,
            "samples": args.samples,
            "fillPerSecond": fill / fill_seconds,
            "milliseconds": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

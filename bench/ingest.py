"""Ingest throughput: memories/s through the batch path (mnemo.memory.batch), against one-by-one memory_add.

    python bench/ingest.py [--memories 10000] [--embedders hashing,bge] [--bge-memories N] [--bge-threads 2]
                           [--smoke]

A synthetic corpus of --memories memories of mixed lengths (most one short
sentence, some a paragraph), with 2% exact repeats and 2% near repeats (the
same words, other punctuation), goes into one user scope of a fresh embedded
stack (SQLite records, local index). For each embedder it measures:

* ``batch``: add_many over the whole corpus (batches of 500, embedding 256
  texts per call), into an empty scope;
* ``batch, again``: the same corpus once more, as a retried import: every
  memory must come back deduplicated through the store's near-duplicate check
  (knn per memory), and nothing new may be stored;
* ``one by one``: MemoryService.add on a sample, for comparison;
* for bge (model-bound): ``embed only``, the embedder alone on the corpus, and
  ``batch, vectors given``: add_many with the vectors the caller already has,
  i.e. everything but the model; plus the bge embedder's texts/s on a sample
  with each call's texts sorted by length (now) and in the callers' order
  (before), to show what the sorting saves.

bge runs on --bge-memories (default: --memories) with --bge-threads ONNX
threads. Writes bench/results/ingest.json and prints a table; rows of other corpus sizes
stay, and the rows a run replaces are kept under ``superseded`` with when they were measured (from the
ingest.json of the folder results go to). --smoke: 40 memories (12 with bge), 8 one by one, results to
a temporary folder (bench/common.py).
"""

from __future__ import annotations

import os

# One thread of BLAS per process: a pool only fights the embedder's threads (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import fresh_services, parse_args, results_dir, table, write_results
from mnemo.context import RequestContext
from mnemo.memory.batch import add_many
from mnemo.memory.models import MemoryAddInput
from mnemo.runtime import Services

SUBJECTS = ["Alice", "Bob", "Dana", "Eve", "the team", "the on-call engineer", "the billing service", "the customer"]
VERBS = ["prefers", "reviews", "deploys", "moved", "asked about", "rejected", "scheduled", "fixed", "documented"]
OBJECTS = [
    "the invoice export",
    "tea over coffee",
    "the cache warm-up job",
    "the database migration",
    "weekly standups",
    "the release checklist",
    "the pager rotation",
    "the Atlas roadmap",
    "the search ranking change",
]
DETAILS = [
    "because the old one kept timing out",
    "after the incident review",
    "on the second Tuesday of the month",
    "with a canary first and a rollback plan",
    "and wants a reminder the day before",
    "which the auditors asked to keep for seven years",
]


def corpus(count: int, seed: int = 11) -> list[str]:
    """Distinct memories (each carries a unique number), 2% exact and 2% near repeats of earlier ones."""
    rng = random.Random(seed)
    texts: list[str] = []
    for n in range(count):
        roll = rng.random()
        if texts and roll < 0.02:
            texts.append(rng.choice(texts))
            continue
        if texts and roll < 0.04:
            texts.append(rng.choice(texts).rstrip(".") + "!")
            continue
        sentence = (
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (item {n}, ref {rng.randrange(10**6)})"
        )
        length = rng.random()
        if length > 0.7:
            sentence += " " + rng.choice(DETAILS)
        if length > 0.9:  # a paragraph
            sentence += ". " + ". ".join(
                f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(DETAILS)}"
                for _ in range(rng.randint(2, 6))
            )
        texts.append(sentence + ".")
    return texts


def _context() -> RequestContext:
    return RequestContext(tenant="bench", user="importer")


def _requests(texts: Sequence[str]) -> list[MemoryAddInput]:
    return [MemoryAddInput(content=text, tags=["bench"]) for text in texts]


def _stack(embedder: str, threads: int) -> Services:
    services = fresh_services(embedder, Path(tempfile.mkdtemp(prefix=f"mnemo-ingest-{embedder}-")))
    if embedder == "bge":
        from mnemo.adapters.local.embedders import BgeSmallEmbedder

        services.__dict__["embedder"] = BgeSmallEmbedder(threads=threads)  # before the memory service is built
        services.embedder.embed(["warm up"])
    return services


def _row(embedder: str, path: str, count: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "embedder": embedder,
        "path": path,
        "memories": count,
        "seconds": round(seconds, 3),
        "perSecond": round(count / seconds, 1),
        **extra,
    }


def _stored(services: Services) -> int:
    return sum(1 for item in services.records.scan("MEM|") if item.sk.startswith("MEM#"))


def _timed_batch(
    services: Services, context: RequestContext, embedder: str, path: str, texts: list[str]
) -> dict[str, Any]:
    """One batch import of ``texts``, timed, as a result row."""
    started = time.perf_counter()
    answers = add_many(services.memory, context, _requests(texts))
    seconds = time.perf_counter() - started
    deduplicated = sum(answer.deduplicated for answer in answers)
    return _row(embedder, path, len(texts), seconds, deduplicated=deduplicated, stored=_stored(services))


def run_batch(embedder: str, texts: list[str], threads: int) -> list[dict[str, Any]]:
    services = _stack(embedder, threads)
    context = _context()
    rows = [_timed_batch(services, context, embedder, "batch", texts)]
    pending = len(services.outbox.pending())
    assert pending == 0, f"{pending} markers left after a healthy import"
    rows.append(_timed_batch(services, context, embedder, "batch, again (retry)", texts))
    assert rows[-1]["stored"] == rows[0]["stored"], "a retried import stored memories twice"
    return rows


def run_one_by_one(embedder: str, texts: list[str], threads: int) -> dict[str, Any]:
    services = _stack(embedder, threads)
    context = _context()
    started = time.perf_counter()
    outputs = [services.memory.add(context, request) for request in _requests(texts)]
    return _row(
        embedder,
        "one by one (add)",
        len(texts),
        time.perf_counter() - started,
        deduplicated=sum(o.deduplicated for o in outputs),
        stored=_stored(services),
    )


def run_vectors_given(texts: list[str], threads: int) -> list[dict[str, Any]]:
    services = _stack("bge", threads)
    context = _context()
    started = time.perf_counter()
    vectors = services.embedder.embed(texts)
    embed_row = _row("bge", "embed only", len(texts), time.perf_counter() - started)
    started = time.perf_counter()
    outputs = add_many(services.memory, context, _requests(texts), vectors=vectors)
    return [
        embed_row,
        _row(
            "bge",
            "batch, vectors given",
            len(texts),
            time.perf_counter() - started,
            deduplicated=sum(o.deduplicated for o in outputs),
            stored=_stored(services),
        ),
    ]


def _embed_in_order(embedder: Any, texts: Sequence[str]) -> list[list[float]]:
    """What BgeSmallEmbedder.embed did before it sorted by length: batches cut in the callers' order."""
    import numpy as np

    from mnemo.adapters.local.embedders import _BATCH

    vectors: list[list[float]] = []
    for start in range(0, len(texts), _BATCH):
        encoded = embedder._tokenizer.encode_batch(list(texts[start : start + _BATCH]))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        cls = embedder._session.run(None, feed)[0][:, 0]
        vectors.extend(cls.tolist())
    return vectors


def run_sorting(texts: list[str], threads: int, rounds: int = 2) -> dict[str, Any]:
    """bge texts/s on the same texts in calls of 256, sorted by length vs in order; rounds alternate."""
    from mnemo.adapters.local.embedders import BgeSmallEmbedder

    embedder = BgeSmallEmbedder(threads=threads)
    embedder.embed(["warm up"])
    timings: dict[str, list[float]] = {"sorted": [], "inOrder": []}
    for _ in range(rounds):
        for name, embed in (("inOrder", lambda c: _embed_in_order(embedder, c)), ("sorted", embedder.embed)):
            started = time.perf_counter()
            for start in range(0, len(texts), 256):
                embed(texts[start : start + 256])
            timings[name].append(len(texts) / (time.perf_counter() - started))
    return {
        "texts": len(texts),
        "threads": threads,
        "textsPerSecond": {name: round(max(rates), 1) for name, rates in timings.items()},
        "allRounds": {name: [round(rate, 1) for rate in rates] for name, rates in timings.items()},
    }


_CONDITIONS = ("bgeThreads", "openblasThreads", "cpus", "loadAverage")


def _previous_rows(replaced: set[tuple[str, int]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any]:
    """Rows of the last results file for other (embedder, corpus size) pairs, so 10k and 100k runs sit together;
    and the rows this run replaces (with when they were measured), kept as ``superseded`` for comparison."""
    try:
        earlier = json.loads((results_dir() / "ingest.json").read_text())
    except (OSError, ValueError):
        return [], [], None
    kept, superseded = [], []
    for row in earlier.get("rows", []):
        # Files of the first version named the corpus sizes once, at the top.
        corpus = row.get("corpus") or earlier.get("bgeMemories" if row["embedder"] == "bge" else "memories")
        conditions = {key: earlier[key] for key in _CONDITIONS if key in earlier}
        # Rows of files before measuredAt existed: the file's time (that of its last run, at the latest).
        row = {**conditions, **row, "corpus": corpus, "measuredAt": row.get("measuredAt", earlier["at"])}
        (superseded if (row["embedder"], corpus) in replaced else kept).append(row)
    superseded += [row for row in earlier.get("superseded", []) if (row["embedder"], row["corpus"]) not in replaced]
    return kept, superseded, earlier.get("bgeSorting")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--embedders", default="hashing,bge")
    parser.add_argument("--bge-memories", type=int, help="corpus size for bge (default: --memories)")
    parser.add_argument("--bge-threads", type=int, default=2)
    parser.add_argument("--one-by-one", type=int, default=1000, help="sample size of the one-by-one comparison")
    args = parse_args(parser, {"memories": 40, "bge_memories": 12, "one_by_one": 8}, argv)

    rows: list[dict[str, Any]] = []
    sorting: dict[str, Any] | None = None
    for embedder in args.embedders.split(","):
        count = args.bge_memories or args.memories if embedder == "bge" else args.memories
        texts = corpus(count)
        print(f"{embedder}: {count} memories", file=sys.stderr, flush=True)
        measured = run_batch(embedder, texts, args.bge_threads)
        measured.append(run_one_by_one(embedder, texts[: min(count, args.one_by_one)], args.bge_threads))
        if embedder == "bge":
            measured += run_vectors_given(texts, args.bge_threads)
            sorting = run_sorting(texts[:512], args.bge_threads)
        rows += [{**row, "corpus": count} for row in measured]
    headers = ["embedder", "corpus", "path", "memories", "seconds", "memories/s", "deduplicated", "stored"]
    print(
        table(
            headers,
            [
                [
                    r["embedder"],
                    r["corpus"],
                    r["path"],
                    r["memories"],
                    r["seconds"],
                    r["perSecond"],
                    r.get("deduplicated", ""),
                    r.get("stored", ""),
                ]
                for r in rows
            ],
        )
    )
    if sorting is not None:
        rates = sorting["textsPerSecond"]
        print(
            f"\nbge embed, {sorting['threads']} threads, calls of 256: {rates['sorted']} texts/s sorted by length, "
            f"{rates['inOrder']} in the callers' order"
        )
    conditions = {
        "bgeThreads": args.bge_threads,
        "openblasThreads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "cpus": os.cpu_count(),
        "loadAverage": [round(load, 2) for load in os.getloadavg()],
    }
    rows = [{**row, **conditions} for row in rows]
    previous, superseded, earlier_sorting = _previous_rows({(row["embedder"], row["corpus"]) for row in rows})
    at = datetime.now(UTC).isoformat(timespec="seconds")
    payload = {
        "rows": previous + [{**row, "measuredAt": at} for row in rows],
        "superseded": superseded,
        "bgeSorting": sorting or earlier_sorting,
    }
    path = write_results("ingest", payload)
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

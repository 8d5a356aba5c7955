"""LoCoMo retrieval through memory_add and memory_search (protocol: ../shared/bench/README.md).

    python bench/retrieval.py [--embedder bge|hashing] [--limit-conversations N] [--vector-first] [--smoke]

Prints R@1, R@5, R@10, Hit@10 and MRR@10 overall and per category, writes
bench/results/retrieval.json. Searches run with threshold 0 (ranking quality);
a second pass reports what the default threshold of 0.7 keeps.

--vector-first ranks as the S3 Vectors store does (bench/vector_first.py: vector candidates, their text
rescored by BM25), on the embedded index, and writes retrieval-<embedder>-vector-first.json.

--smoke: the same protocol on bench/fixtures/locomo-smoke.json (two short conversations written by hand,
see bench/locomo.py) with the bge model; results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_services, parse_args, table, write_results
from locomo import CATEGORIES, load
from mnemo.context import RequestContext
from mnemo.tools.registry import get_tool


def _metrics(ranked: list[set[str]], evidence: list[str]) -> dict[str, float]:
    wanted = set(evidence)

    def recall(k: int) -> float:
        found = set().union(*ranked[:k]) if ranked[:k] else set()
        return len(found & wanted) / len(wanted)

    first = next((rank for rank, ids in enumerate(ranked[:10], 1) if ids & wanted), None)
    return {
        "R@1": recall(1),
        "R@5": recall(5),
        "R@10": recall(10),
        "Hit@10": 1.0 if first else 0.0,
        "MRR@10": 1.0 / first if first else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", default="bge", choices=["bge", "hashing"])
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--vector-first", action="store_true", help="rank as the S3 Vectors store does")
    args = parse_args(parser, {})

    services = fresh_services(args.embedder)
    if args.vector_first:
        from vector_first import VectorFirstIndex

        services.__dict__["index"] = VectorFirstIndex(services.settings.data_dir / "index.sqlite3")
    add, search = get_tool("memory_add"), get_tool("memory_search")
    conversations = load()[: args.limit_conversations]
    per_category: dict[str, list[dict[str, float]]] = defaultdict(list)
    kept_at_default: list[float] = []
    foreign_with_results = 0
    foreign_total = 0
    add_seconds = search_seconds = 0.0
    adds = searches = deduplicated = 0

    for conversation in conversations:
        context = RequestContext(tenant="bench", user=conversation.sample_id)
        dia_ids: dict[str, set[str]] = defaultdict(set)
        started = time.perf_counter()
        for turn in conversation.turns:
            out = add.invoke(
                services,
                context,
                {
                    "content": turn.content,
                    "occurredAt": turn.occurred_at.isoformat(),
                    "metadata": {"dia_id": turn.dia_id, "source": "import"},
                },
            )
            dia_ids[out["memoryId"]].add(turn.dia_id)
            deduplicated += out["deduplicated"]
            adds += 1
        add_seconds += time.perf_counter() - started

        for question in conversation.questions:
            started = time.perf_counter()
            out = search.invoke(services, context, {"query": question.text, "limit": 10, "threshold": 0.0})
            search_seconds += time.perf_counter() - started
            searches += 1
            ranked = [dia_ids[r["memoryId"]] for r in out["results"]]
            metrics = _metrics(ranked, question.evidence)
            per_category[CATEGORIES[question.category]].append(metrics)
            per_category["overall"].append(metrics)
            at_default = search.invoke(services, context, {"query": question.text, "limit": 10})
            kept = set().union(*(dia_ids[r["memoryId"]] for r in at_default["results"]))
            kept_at_default.append(len(kept & set(question.evidence)) / len(question.evidence))

    # Questions about other people's conversations, asked of this one at the default threshold.
    for index, conversation in enumerate(conversations):
        other = conversations[(index + 1) % len(conversations)]
        if other is conversation:
            continue
        context = RequestContext(tenant="bench", user=conversation.sample_id)
        for question in other.questions[:50]:
            out = search.invoke(services, context, {"query": question.text, "limit": 10})
            foreign_total += 1
            foreign_with_results += bool(out["results"])

    names = ["overall", *CATEGORIES.values()]
    keys = ["R@1", "R@5", "R@10", "Hit@10", "MRR@10"]
    summary = {
        name: {
            "questions": len(per_category[name]),
            **{k: 100 * sum(m[k] for m in per_category[name]) / len(per_category[name]) for k in keys},
        }
        for name in names
        if per_category[name]
    }
    rows = [[name, s["questions"], *[s[k] for k in keys]] for name, s in summary.items()]
    print(table(["category", "questions", *keys], rows))
    threshold_report = {
        "evidenceKeptAtDefaultThreshold": 100 * sum(kept_at_default) / max(len(kept_at_default), 1),
        "foreignQuestionsWithAnyResult": 100 * foreign_with_results / max(foreign_total, 1),
        "foreignQuestions": foreign_total,
    }
    timing = {
        "memories": adds,
        "deduplicated": deduplicated,
        "addMsMean": 1000 * add_seconds / max(adds, 1),
        "searchMsMean": 1000 * search_seconds / max(searches, 1),
    }
    print(
        f"\ndefault threshold 0.7: {threshold_report['evidenceKeptAtDefaultThreshold']:.1f}% of evidence kept; "
        f"{threshold_report['foreignQuestionsWithAnyResult']:.1f}% of {foreign_total} questions about another "
        "conversation return anything"
    )
    print(
        f"{adds} memories ({deduplicated} deduplicated), add {timing['addMsMean']:.1f} ms, "
        f"search {timing['searchMsMean']:.1f} ms mean"
    )
    path = write_results(
        f"retrieval-{args.embedder}" + ("-vector-first" if args.vector_first else ""),
        {"embedder": services.embedder.name, "summary": summary, "threshold": threshold_report, "timing": timing},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

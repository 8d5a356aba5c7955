"""Memory that learns, end to end on LoCoMo: add_messages, memory_extract, memory_search with the turns.

    python bench/extraction.py [--data FILE] [--limit-conversations N] [--profile] [--smoke]

The extraction model is bench/replay_model.py: an OpenAI-compatible server on 127.0.0.1 that answers the
facts strategy with LoCoMo's own observations (each citing its evidence turns) and the summary strategy with
its session summaries, so the figures measure storing, consolidating and retrieving perfect extractions, not
a model. Each conversation is its own user and each LoCoMo session its own session; every turn goes through
``add_messages`` (``{role: user, content, name: speaker, id: dia_id, at: session date}``, at most 100 a
call), then ``memory_extract`` runs until no turn of the session waits. Each question of categories 1-4 is
then asked three ways, scored as bench/retrieval.py scores (R@k: share of the evidence turns in the top
k; a turn result counts for its message id, a memory for its ``metadata.provenance.messageIds``):

- turns + facts: ``memory_search`` with ``includeTurns`` on the stack that extracted (limit 10, threshold 0,
  user layer);
- turns only: the same search on a second stack that stored the same turns with extraction off;
- facts only: ``memory_search`` without ``includeTurns`` on the stack that extracted.

Also reported: the user's current extracted memories per subject, as duplicates per 100 subjects (the
consolidation invariant: 0), the model's requests and tokens (estimated by the replay server as characters / 4, its
prompt counting the tool definition) per 1,000 turns and what they would cost at Amazon Nova Lite and
Claude 3 Haiku on-demand prices, and turns per second of ingest plus extraction (bge embeddings, replay
model: the storage path's own speed, no model latency). The last line is
``extraction R@10 <x> R@5 <y> MRR <z>`` (turns + facts). The data path is $MNEMO_LOCOMO or ../shared's
dev split (bench/locomo.py); --smoke runs on bench/fixtures/locomo-smoke.json.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from replay_model import ReplayModel, load_samples, session_of

from common import parse_args, smoke, table, write_results
from locomo import CATEGORIES, DEFAULT_PATH, SMOKE_PATH, Conversation, load
from mnemo.context import RequestContext
from mnemo.memory.records import RECORD, partition_of
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

#: On-demand prices per million tokens (input, output), USD.
PRICES = {"Amazon Nova Lite": (0.06, 0.24), "Claude 3 Haiku": (0.25, 1.25)}
#: The most messages one add_messages call takes.
BATCH = 100
#: memory_extract calls per session at most (a guard: each call reads up to 50 waiting turns).
MAX_RUNS = 50
KEYS = ["R@1", "R@5", "R@10", "MRR@10"]
CONFIGURATIONS = ["turns + facts", "turns only", "facts only"]


def stack(url: str | None, profile: bool = False) -> Services:
    """A fresh embedded stack (bge); with ``url``, extraction on (facts and summary, and the profile when asked)
    through that model."""
    directory = Path(tempfile.mkdtemp(prefix="mnemo-bench-extraction-"))
    if url is None:
        return Services(Settings(data_dir=directory, embedder="bge"))
    return Services(
        Settings(
            data_dir=directory,
            embedder="bge",
            extractor="openai",
            openai_base_url=url,
            openai_model="replay",
            extraction_strategies=("facts", "summary", "profile") if profile else ("facts", "summary"),
        )
    )


def sessions(conversation: Conversation) -> dict[int, list[dict[str, Any]]]:
    """The add_messages messages of each session, in order."""
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for turn in conversation.turns:
        speaker, _, text = turn.content.partition(": ")
        number = session_of(turn.dia_id) or 0
        found[number].append(
            {"role": "user", "content": text, "name": speaker, "id": turn.dia_id, "at": turn.occurred_at.isoformat()}
        )
    return dict(sorted(found.items()))


def ingest(services: Services, conversation: Conversation, *, extract: bool) -> dict[str, int]:
    """Store one conversation's turns session by session (and extract after each session)."""
    add, run = get_tool("add_messages"), get_tool("memory_extract")
    counts = {"turns": 0, "runs": 0, "failures": 0, "candidates": 0}
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", conversation.sample_id)
    for number, messages in sessions(conversation).items():
        context = RequestContext(tenant="bench", user=conversation.sample_id, session=f"{safe}-s{number}")
        for start in range(0, len(messages), BATCH):
            add.invoke(services, context, {"messages": messages[start : start + BATCH]})
        counts["turns"] += len(messages)
        if not extract:
            continue
        for _ in range(MAX_RUNS):
            out = run.invoke(services, context, {})
            if out.get("run"):
                counts["runs"] += 1
                for part in out["run"]["strategies"]:
                    counts["failures"] += bool(part.get("failure"))
                    counts["candidates"] += len(part.get("candidates") or [])
            if not out["pendingTurns"] or not out.get("run"):
                break
    return counts


def subjects(services: Services, conversation: Conversation) -> dict[str, int]:
    """The user's current extracted memories per subject (strategy and subject key): subjects, the memories
    standing for them, and duplicates (current memories past the first of a subject; consolidation's invariant
    is 0)."""
    scope = RequestContext(tenant="bench", user=conversation.sample_id).scope_key("user")
    per: dict[tuple[str, str], int] = defaultdict(int)
    for item in services.records.query(partition_of(scope), RECORD, limit=100_000):
        metadata = item.data.get("metadata") or {}
        if metadata.get("subjectKey") and not item.data.get("supersededBy"):
            per[(str(metadata.get("strategy")), str(metadata["subjectKey"]))] += 1
    return {
        "subjects": len(per),
        "currentMemories": sum(per.values()),
        "duplicates": sum(count - 1 for count in per.values()),
    }


def cited(result: dict[str, Any]) -> set[str]:
    """The turns a result counts for: a turn its message id, a memory its provenance's message ids."""
    if result.get("kind") == "turn":
        return {result["memoryId"]}
    provenance = (result.get("metadata") or {}).get("provenance") or {}
    ids = provenance.get("messageIds") if isinstance(provenance, dict) else None
    return {str(i) for i in ids} if isinstance(ids, list) else set()


def metrics(ranked: list[set[str]], evidence: list[str]) -> dict[str, float]:
    """R@1, R@5, R@10 and MRR@10 of one question."""
    wanted = set(evidence)

    def recall(k: int) -> float:
        found = set().union(*ranked[:k]) if ranked[:k] else set()
        return len(found & wanted) / len(wanted)

    first = next((rank for rank, ids in enumerate(ranked[:10], 1) if ids & wanted), None)
    return {"R@1": recall(1), "R@5": recall(5), "R@10": recall(10), "MRR@10": 1.0 / first if first else 0.0}


def ask(services: Services, conversation: Conversation, *, turns: bool) -> list[tuple[str, dict[str, float]]]:
    """Each question through memory_search: (category, metrics)."""
    search = get_tool("memory_search")
    context = RequestContext(tenant="bench", user=conversation.sample_id)
    found = []
    for question in conversation.questions:
        request: dict[str, Any] = {"query": question.text, "limit": 10, "threshold": 0, "layers": ["user"]}
        if turns:
            request["includeTurns"] = True
        out = search.invoke(services, context, request)
        ranked = [cited(result) for result in out["results"]]
        found.append((CATEGORIES[question.category], metrics(ranked, question.evidence)))
    return found


def summarise(scored: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Percentages overall and per category."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, values in scored:
        groups["overall"].append(values)
        groups[category].append(values)
    return {
        name: {"questions": len(values), **{k: 100 * sum(v[k] for v in values) / len(values) for k in KEYS}}
        for name, values in groups.items()
    }


def costs(totals: dict[str, Any], turns: int) -> dict[str, Any]:
    """Requests, tokens and dollars per 1,000 turns."""
    per = 1000 / max(turns, 1)
    prompt, completion = totals["promptTokensTotal"] * per, totals["completionTokensTotal"] * per
    return {
        "requestsPer1000Turns": totals["requestsTotal"] * per,
        "inputTokensPer1000Turns": prompt,
        "outputTokensPer1000Turns": completion,
        "dollarsPer1000Turns": {
            name: (prompt * price_in + completion * price_out) / 1e6 for name, (price_in, price_out) in PRICES.items()
        },
    }


def main() -> None:
    """Run the three configurations, print the tables, write extraction.json."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="a LoCoMo-format JSON file")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument(
        "--profile", action="store_true", help="also run the profile strategy (its cost; writes extraction_profile)"
    )
    args = parse_args(parser, {"data": SMOKE_PATH})
    conversations = load(args.data)[: args.limit_conversations]
    model = ReplayModel(load_samples(args.data)).start()
    try:
        learning, plain = stack(model.url, args.profile), stack(None)
        scored: dict[str, list[tuple[str, dict[str, float]]]] = {name: [] for name in CONFIGURATIONS}
        counts: dict[str, int] = defaultdict(int)
        learn_seconds = plain_seconds = 0.0
        for conversation in conversations:
            started = time.perf_counter()
            for key, value in ingest(learning, conversation, extract=True).items():
                counts[key] += value
            learn_seconds += time.perf_counter() - started
            for key, value in subjects(learning, conversation).items():
                counts[key] += value
            started = time.perf_counter()
            ingest(plain, conversation, extract=False)
            plain_seconds += time.perf_counter() - started
            scored["turns + facts"] += ask(learning, conversation, turns=True)
            scored["turns only"] += ask(plain, conversation, turns=True)
            scored["facts only"] += ask(learning, conversation, turns=False)
            print(
                f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(conversation.questions)} questions",
                file=sys.stderr,
                flush=True,
            )
        totals = model.totals()
    finally:
        model.stop()

    summary = {name: summarise(values) for name, values in scored.items()}
    rows = [
        [name, summary[name]["overall"]["questions"], *[summary[name]["overall"][k] for k in KEYS]]
        for name in CONFIGURATIONS
    ]
    print(table(["configuration", "questions", *KEYS], rows))
    categories = [c for c in CATEGORIES.values() if c in summary["turns + facts"]]
    print()
    print(
        table(
            ["R@10 by category", *CONFIGURATIONS],
            [[c, *[summary[name].get(c, {}).get("R@10", 0.0) for name in CONFIGURATIONS]] for c in categories],
        )
    )
    spend = costs(totals, counts["turns"])
    speed = {
        "turnsPerSecondIngestAndExtraction": counts["turns"] / max(learn_seconds, 1e-9),
        "turnsPerSecondIngestOnly": counts["turns"] / max(plain_seconds, 1e-9),
    }
    print()
    print(
        table(
            ["model", "input tokens / 1k turns", "output tokens / 1k turns", "$ / 1k turns"],
            [
                [
                    name,
                    f"{spend['inputTokensPer1000Turns']:.0f}",
                    f"{spend['outputTokensPer1000Turns']:.0f}",
                    f"{d:.4f}",
                ]
                for name, d in spend["dollarsPer1000Turns"].items()
            ],
        )
    )
    print(
        f"\n{counts['turns']} turns, {counts['runs']} extraction runs ({counts['failures']} strategy failures, "
        f"{counts['candidates']} candidates), {totals['requestsTotal']} model requests "
        f"({spend['requestsPer1000Turns']:.0f} per 1k turns); ingest + extraction "
        f"{speed['turnsPerSecondIngestAndExtraction']:.1f} turns/s, "
        f"ingest alone {speed['turnsPerSecondIngestOnly']:.1f}"
    )
    per = 1000 / max(counts["turns"], 1)
    profile_cost = {
        "requestsPer1000Turns": totals["requests"].get("record_profile", 0) * per,
        "inputTokensPer1000Turns": totals["promptTokens"].get("record_profile", 0) * per,
        "outputTokensPer1000Turns": totals["completionTokens"].get("record_profile", 0) * per,
    }
    if args.profile:
        print(
            f"profile: {profile_cost['requestsPer1000Turns']:.0f} requests, "
            f"{profile_cost['inputTokensPer1000Turns']:.0f} input and {profile_cost['outputTokensPer1000Turns']:.0f} "
            "output tokens per 1k turns"
        )
    path = write_results(
        "extraction_profile" if args.profile else "extraction",
        {
            "data": args.data.name,
            "conversations": len(conversations),
            "summary": summary,
            "model": {**totals, **spend},
            "pipeline": dict(counts),
            "speed": speed,
            "profile": profile_cost if args.profile else None,
            "subjects": {
                "subjects": counts["subjects"],
                "currentMemories": counts["currentMemories"],
                "duplicatesPer100Subjects": round(100 * counts["duplicates"] / max(counts["subjects"], 1), 2),
            },
            "smokeRun": smoke(),
        },
    )
    per_hundred = 100 * counts["duplicates"] / max(counts["subjects"], 1)
    print(
        f"subjects: {counts['subjects']} with {counts['currentMemories']} current memories; duplicates per 100 "
        f"subjects {per_hundred:.2f}"
    )
    print(f"wrote {path}")
    best = summary["turns + facts"]["overall"]
    print(f"extraction R@10 {best['R@10']:.1f} R@5 {best['R@5']:.1f} MRR {best['MRR@10']:.1f}")


if __name__ == "__main__":
    main()

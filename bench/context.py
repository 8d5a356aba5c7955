"""memory_context on LoCoMo: how much of a question's evidence reaches the context, at what size and speed.

    python bench/context.py [--data FILE] [--replay] [--scale 10000] [--scale-only] [--limit-conversations N] [--smoke]

Each conversation is its own user and each LoCoMo session its own session; every turn goes through
``add_messages`` as bench/extraction.py sends them (``{role: user, content, name: speaker, id: dia_id, at:
session date}``). Each question of categories 1-4 is then asked of ``memory_context`` over HTTP (``mnemo
serve``'s app on loopback, one keep-alive connection) at budgets of 500, 1,000 and 2,000 tokens, with no
session named (a new session, as when a user comes back):

- *evidence@B*: the share of the question's evidence turns that reach ``sources`` (a turn counts for its own
  message id, an extracted memory for its ``messageIds``), averaged over questions, in percent;
- the median tokens the context used, and the share of answers that left something out (``truncated``);
- p50 and p95 of the calls, in milliseconds.

Configurations: ``turns`` (no extraction model: the turns alone, the goal's configuration) and, with
``--replay``, ``turns + replay`` (extraction on through bench/replay_model.py, which answers the facts and
summary strategies with LoCoMo's own observations and session summaries: perfect extractions, not a model).

Scale: ``--scale N`` fills one user with N items (every conversation's turns through add_messages under
that one user, then memories through memory_add_batch) and times memory_context at 1,000 tokens over HTTP
with the dev questions: the latency goal is p95 <= 50 ms at 10k on the embedded default (bge). Writes
bench/results/context.json (``--scale-only``: only the latency run, to context-scale.json, for a quiet
machine). The last line is ``context evidence@1000 <x> p95 <y> ms``. --smoke runs on
bench/fixtures/locomo-smoke.json with a scale of 200.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from extraction import BATCH, ingest, sessions, stack
from replay_model import ReplayModel, load_samples

from common import parse_args, smoke, table, write_results
from locomo import CATEGORIES, DEFAULT_PATH, SMOKE_PATH, Conversation, load
from mnemo.context import RequestContext
from mnemo.entry.local_server import serve_in_thread
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

BUDGETS = (500, 1000, 2000)
TENANT = "bench"


class Caller:
    """POST /v1/tools/<tool> to a server on loopback as one user, timing each call."""

    def __init__(self, services: Services) -> None:
        set_services(services)
        self._server, self._thread = serve_in_thread("127.0.0.1", 0)
        self._connection = http.client.HTTPConnection("127.0.0.1", self._server.server_address[1], timeout=60)
        self.millis: list[float] = []

    def call(self, user: str, tool: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "X-Mnemo-Tenant": TENANT, "X-Mnemo-User": user}
        started = time.perf_counter()
        self._connection.request("POST", f"/v1/tools/{tool}", json.dumps(body), headers)
        response = self._connection.getresponse()
        payload = response.read()
        self.millis.append((time.perf_counter() - started) * 1000)
        if response.status != 200:
            raise RuntimeError(f"{tool}: {response.status} {payload[:300]!r}")
        answer: dict[str, Any] = json.loads(payload)
        return answer

    def close(self) -> None:
        self._connection.close()
        self._server.shutdown()
        self._thread.join(timeout=5)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def reached(answer: dict[str, Any]) -> set[str]:
    return {message_id for source in answer["sources"] for message_id in source["messageIds"]}


def ask(caller: Caller, conversation: Conversation) -> list[dict[str, Any]]:
    """Each scored question at each budget: its category, evidence share, tokens and whether it was cut."""
    rows = []
    for question in conversation.questions:
        if question.category not in CATEGORIES or not question.evidence:
            continue
        wanted = set(question.evidence)
        row: dict[str, Any] = {"category": CATEGORIES[question.category]}
        for budget in BUDGETS:
            answer = caller.call(conversation.sample_id, "memory_context", {"query": question.text, "budget": budget})
            if answer["tokens"] > budget:
                raise AssertionError(f"{answer['tokens']} tokens for a budget of {budget}")
            row[budget] = {
                "evidence": len(reached(answer) & wanted) / len(wanted),
                "tokens": answer["tokens"],
                "truncated": answer["truncated"],
            }
        rows.append(row)
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per budget: evidence (overall and per category), median tokens, share truncated."""
    summary: dict[str, Any] = {"questions": len(rows)}
    for budget in BUDGETS:
        groups: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            groups["overall"].append(row[budget]["evidence"])
            groups[row["category"]].append(row[budget]["evidence"])
        summary[str(budget)] = {
            "evidence": {name: 100 * sum(values) / len(values) for name, values in groups.items()},
            "medianTokens": statistics.median(row[budget]["tokens"] for row in rows) if rows else 0,
            "truncatedShare": 100 * sum(row[budget]["truncated"] for row in rows) / max(len(rows), 1),
        }
    return summary


def run(services: Services, conversations: list[Conversation], *, extract: bool) -> tuple[dict[str, Any], Caller]:
    for conversation in conversations:
        ingest(services, conversation, extract=extract)
    caller = Caller(services)
    rows: list[dict[str, Any]] = []
    try:
        for conversation in conversations:
            rows += ask(caller, conversation)
            print(f"{conversation.sample_id}: {len(rows)} questions asked", file=sys.stderr, flush=True)
    finally:
        caller.close()
    return summarise(rows), caller


def scale(conversations: list[Conversation], items: int) -> dict[str, Any]:
    """memory_context's latency at 1,000 tokens with ``items`` turns and memories in one user scope."""
    services = Services(Settings(data_dir=Path(tempfile.mkdtemp(prefix="mnemo-bench-context-")), embedder="bge"))
    user = "scale"
    add, batch = get_tool("add_messages"), get_tool("memory_add_batch")
    stored = 0
    for conversation in conversations:
        safe = re.sub(r"[^A-Za-z0-9_-]", "-", conversation.sample_id)
        for number, messages in sessions(conversation).items():
            context = RequestContext(tenant=TENANT, user=user, session=f"{safe}-s{number}")
            for start in range(0, len(messages), BATCH):
                if stored >= items:
                    break
                chunk = [{**m, "id": f"{safe}-{m['id']}"} for m in messages[start : start + BATCH]][: items - stored]
                add.invoke(services, context, {"messages": chunk})
                stored += len(chunk)
    turns = stored
    context = RequestContext(tenant=TENANT, user=user)
    texts = [turn.content for conversation in conversations for turn in conversation.turns]
    while stored < items:
        chunk = [
            {"content": f"{texts[(stored + i) % len(texts)]} (note {stored + i})"}
            for i in range(min(100, items - stored))
        ]
        batch.invoke(services, context, {"items": chunk})
        stored += len(chunk)
    caller = Caller(services)
    questions = [q.text for conversation in conversations for q in conversation.questions]
    try:
        caller.call(user, "memory_context", {"query": "warm up", "budget": 1000})
        caller.millis.clear()
        for text in questions:
            caller.call(user, "memory_context", {"query": text, "budget": 1000})
    finally:
        caller.close()
    return {
        "items": stored,
        "turns": turns,
        "memories": stored - turns,
        "calls": len(caller.millis),
        "p50": percentile(caller.millis, 0.50),
        "p95": percentile(caller.millis, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="a LoCoMo-format JSON file")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--replay", action="store_true", help="also run with extraction through the replay model")
    parser.add_argument("--scale", type=int, default=10_000, help="items in one user scope for the latency run")
    parser.add_argument(
        "--scale-only", action="store_true", help="only the latency run at --scale items (context-scale.json)"
    )
    args = parse_args(parser, {"data": SMOKE_PATH, "scale": 200})
    conversations = load(args.data)[: args.limit_conversations]
    if args.scale_only:
        scaled = scale(load(args.data), args.scale)
        print(
            f"scale: {scaled['items']} items in one user: memory_context at 1000 tokens over HTTP p50 "
            f"{scaled['p50']:.1f} ms, p95 {scaled['p95']:.1f} ms ({scaled['calls']} calls)"
        )
        print(f"wrote {write_results('context-scale', {'data': args.data.name, 'scale': scaled})}")
        print(f"context scale p95 {scaled['p95']:.1f} ms")
        return

    results: dict[str, Any] = {}
    latency: dict[str, Any] = {}
    summary, caller = run(stack(None), conversations, extract=False)
    results["turns"] = summary
    latency["turns"] = {"p50": percentile(caller.millis, 0.5), "p95": percentile(caller.millis, 0.95)}
    if args.replay:
        model = ReplayModel(load_samples(args.data)).start()
        try:
            summary, caller = run(stack(model.url), conversations, extract=True)
        finally:
            model.stop()
        results["turns + replay"] = summary
        latency["turns + replay"] = {"p50": percentile(caller.millis, 0.5), "p95": percentile(caller.millis, 0.95)}

    headers = ["configuration", "questions"]
    for budget in BUDGETS:
        headers += [f"evidence@{budget}", f"tokens@{budget}"]
    headers += ["p50 ms", "p95 ms"]
    rows = []
    for name, summary in results.items():
        row: list[Any] = [name, summary["questions"]]
        for budget in BUDGETS:
            row += [summary[str(budget)]["evidence"]["overall"], summary[str(budget)]["medianTokens"]]
        rows.append([*row, latency[name]["p50"], latency[name]["p95"]])
    print(table(headers, rows))
    categories = [c for c in CATEGORIES.values() if c in results["turns"]["1000"]["evidence"]]
    print()
    print(
        table(
            ["evidence@1000 by category", *results],
            [[c, *[results[name]["1000"]["evidence"].get(c, 0.0) for name in results]] for c in categories],
        )
    )
    scaled = scale(load(args.data), args.scale)
    print(
        f"\nscale: {scaled['items']} items in one user ({scaled['turns']} turns, {scaled['memories']} memories): "
        f"memory_context at 1000 tokens over HTTP p50 {scaled['p50']:.1f} ms, p95 {scaled['p95']:.1f} ms "
        f"({scaled['calls']} calls)"
    )
    path = write_results(
        "context",
        {
            "data": args.data.name,
            "conversations": len(conversations),
            "budgets": list(BUDGETS),
            "results": results,
            "latencyMs": latency,
            "scale": scaled,
            "smokeRun": smoke(),
        },
    )
    print(f"wrote {path}")
    best = results["turns"]["1000"]
    print(f"context evidence@1000 {best['evidence']['overall']:.1f} p95 {scaled['p95']:.1f} ms")


if __name__ == "__main__":
    main()

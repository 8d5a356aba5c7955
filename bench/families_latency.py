"""Latency of the conversation and topic tools, with the bge model, for one user and one project.

    python bench/families_latency.py [--pairs 2000] [--topics 300] [--queries 200] [--embedder bge|hashing]
                                     [--smoke]

Conversations: stores --pairs conversation + execution pairs (synthetic
questions on a handful of subjects, tools drawn from 15 names, about one in six
executions failing with an error type) through add_conversation and
add_execution, timing every call, then times retrieve_conversation (hybrid,
keyword, recent) and retrieve_execution (hybrid, and hybrid with a `tools`
filter) on --queries queries each. Half of the hybrid execution queries name a
tool ("how did I use sql_query"); hit@5 is the share of those whose five best
executions include one that used that tool.

Topics: memorizes --topics topics in the project, then times recall_memory,
list_memories, search_memories by tags and by query (hybrid) and refine_memory.

Every call goes through the catalog (`get_tool(name).invoke`), so request
validation and the response dump are included. Writes
bench/results/families-latency.json. Clocks are reported, never asserted.

--smoke: 20 pairs, 10 topics, 6 queries with the bge model, results to a temporary folder
(bench/common.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_services, parse_args, table, write_results
from mnemo.context import RequestContext
from mnemo.tools.registry import get_tool

TOOLS = [
    "web_search",
    "http_get",
    "weather_api",
    "geocode_city",
    "sql_query",
    "python_exec",
    "file_read",
    "file_write",
    "git_log",
    "jira_search",
    "slack_post",
    "send_email",
    "calendar_lookup",
    "pdf_extract",
    "kubectl_apply",
]

# subject -> (questions, answers, summaries, the tools it tends to use)
SUBJECTS: dict[str, tuple[list[str], list[str], list[str], list[str]]] = {
    "weather": (
        [
            "What's the weather in {city} tomorrow?",
            "Will it rain in {city} this weekend?",
            "Do I need a coat for my trip to {city} on {day}?",
        ],
        [
            "Tomorrow in {city}: {sky}, {temp}°C.",
            "In {city} on {day} expect {sky} and about {temp}°C; pack accordingly.",
        ],
        [
            "Looked up the {city} forecast after resolving the city's coordinates",
            "Checked the {day} forecast for {city}",
        ],
        ["geocode_city", "weather_api", "web_search"],
    ),
    "deploy": (
        [
            "Can you roll out version {version} of the {service} to staging?",
            "Why did the {service} deploy fail on {day}?",
            "Roll back the {service} to the previous release, please.",
        ],
        [
            "Version {version} of the {service} is live on staging; all pods are healthy.",
            "The {service} deploy failed because a migration timed out; I rolled it back.",
        ],
        [
            "Applied the {service} manifests for version {version} and watched the rollout",
            "Investigated the failed {service} deploy from the commit log and the cluster events",
        ],
        ["kubectl_apply", "git_log", "slack_post", "http_get"],
    ),
    "billing": (
        [
            "How much did {customer} spend in {month}?",
            "Which invoices of {customer} are overdue?",
            "Summarize the revenue by plan for {month}.",
        ],
        [
            "{customer} spent {amount} EUR in {month}, mostly on the Pro plan.",
            "{customer} has two overdue invoices totalling {amount} EUR.",
        ],
        [
            "Queried the invoices table for {customer} in {month} and totalled them",
            "Built the {month} revenue summary from the billing database",
        ],
        ["sql_query", "python_exec", "send_email", "file_write"],
    ),
    "research": (
        [
            "Find recent papers on {paper_topic}.",
            "What does the {paper_topic} report say about costs?",
            "Give me three sources comparing approaches to {paper_topic}.",
        ],
        [
            "Here are three recent papers on {paper_topic}, with one-line takeaways.",
            "The report estimates costs fall by about {percent}% with {paper_topic}.",
        ],
        [
            "Searched the web for {paper_topic} and extracted the key tables from the PDFs",
            "Read the {paper_topic} report and summarized its cost section",
        ],
        ["web_search", "http_get", "pdf_extract", "file_read"],
    ),
    "tickets": (
        [
            "What's the status of the {service} bugs this sprint?",
            "Open a ticket for the {service} latency regression.",
            "Which tickets are blocking the {version} release?",
        ],
        [
            "There are {count} open {service} bugs; two are critical.",
            "Created a ticket for the {service} latency regression and pinged the owners.",
        ],
        [
            "Searched the tracker for {service} issues and posted a digest",
            "Filed the {service} regression ticket and notified the channel",
        ],
        ["jira_search", "slack_post", "git_log"],
    ),
    "scheduling": (
        [
            "Find a slot with {person} on {day} for the {service} review.",
            "Move my {day} meeting with {person} to next week.",
            "When am I free on {day} afternoon?",
        ],
        [
            "You and {person} are both free on {day} at 15:00; I sent the invite.",
            "Moved the meeting with {person} to next {day} at 10:00.",
        ],
        [
            "Compared calendars with {person} for {day} and sent an invite",
            "Rescheduled the {day} meeting with {person} and emailed the change",
        ],
        ["calendar_lookup", "send_email", "slack_post"],
    ),
    "data": (
        [
            "Load the {month} export into the warehouse and check row counts.",
            "Why are there duplicate rows in the {month} orders export?",
            "Plot daily signups for {month}.",
        ],
        [
            "The {month} export is loaded: {count} thousand rows, counts match the source.",
            "The duplicates came from a retried upload; I deduplicated on order id.",
        ],
        [
            "Read the {month} export, loaded it and compared row counts with a query",
            "Found and removed duplicate {month} orders with a Python script",
        ],
        ["file_read", "python_exec", "sql_query", "file_write"],
    ),
}
FILL = {
    "city": ["Paris", "Lisbon", "Oslo", "Tokyo", "Denver", "Nairobi", "Lima", "Seoul"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
    "sky": ["light rain", "sunny spells", "overcast", "snow showers", "clear skies"],
    "service": ["checkout API", "search cluster", "auth gateway", "mobile backend", "billing service"],
    "customer": ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"],
    "month": ["January", "February", "March", "April", "May", "June"],
    "paper_topic": ["retrieval-augmented generation", "heat pumps", "vector databases", "battery recycling"],
    "person": ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay"],
}
ERRORS = {
    "timeout": "took over {n} s",
    "rate_limit": "429 Too Many Requests, retry after {n} s",
    "ValidationError": "field 'date' is not a valid date",
    "PermissionDenied": "the service account lacks the required role",
    "NotFound": "no resource matched the given id",
}
OBSERVATIONS = [
    "Worked on the first try.",
    "A retry fixed a transient error; caching would avoid it next time.",
    "Results were partial; asking the user for a narrower range would help.",
    "The slow step was the first call; later calls were fast.",
    "Confirmed the result with a second source before answering.",
]
TOOL_QUERIES = [
    "how did I use {tool}",
    "what happened the last time I ran {tool}",
    "examples of tasks solved with {tool}",
]

TAGS = [
    "deploy", "release", "billing", "auth", "search", "mobile", "data", "warehouse", "oncall", "incident",
    "security", "cost", "api", "frontend", "backend", "testing", "ci", "docs", "onboarding", "design",
    "postgres", "kafka", "cache", "ml", "analytics", "compliance", "eu", "latency", "draft", "decision",
]  # fmt: skip
AREAS = [
    ("deployment", "how releases reach production", "The pipeline builds, tests and deploys on every merge."),
    ("database", "how the Postgres cluster is run", "Backups run nightly and are restored weekly as a test."),
    ("auth", "how users and services authenticate", "Tokens are short-lived and rotated by the gateway."),
    ("search", "how the search cluster is indexed", "Documents are reindexed in batches of one thousand."),
    ("billing", "how invoices are produced", "Invoices are generated on the first of the month."),
    ("oncall", "how incidents are handled", "The on-call engineer acknowledges pages within fifteen minutes."),
    ("frontend", "how the web app is built", "Components live in the design system and are tested visually."),
    ("analytics", "how product metrics are computed", "Events land in the warehouse and are modelled daily."),
]
ASPECTS = ["overview", "runbook", "decisions", "pitfalls", "checklist", "faq", "history", "owners"]
TOPIC_QUERIES = [
    "how do we roll back a release",
    "who owns the database backups",
    "what happens when a page is not acknowledged",
    "how are invoices generated each month",
    "token rotation in the auth gateway",
    "reindexing the search cluster",
    "which metrics are computed daily",
    "visual tests for components",
]


def draw(rng: random.Random) -> dict[str, Any]:
    """One set of slot values, shared by a question, its answer and its execution summary."""
    values: dict[str, Any] = {key: rng.choice(options) for key, options in FILL.items()}
    return values | {
        "temp": rng.randint(-5, 32),
        "version": f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "amount": f"{rng.randint(200, 90_000):,}",
        "percent": rng.randint(5, 60),
        "count": rng.randint(2, 40),
    }


def fill(rng: random.Random, template: str) -> str:
    return template.format(**draw(rng))


def pair(rng: random.Random, index: int, when: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    subject = rng.choice(list(SUBJECTS))
    questions, answers, summaries, preferred = SUBJECTS[subject]
    message_id = f"msg_{index:06d}"
    values = draw(rng)
    conversation = {
        "message_id": message_id,
        "explanation": f"Remember the user's {subject} request and the answer",
        "user_input": rng.choice(questions).format(**values),
        "agent_response": rng.choice(answers).format(**values),
        "timestamp": when.isoformat().replace("+00:00", "Z"),
        "meta_data": {"subject": subject, "platform": rng.choice(["slack", "web", "cli"])},
    }
    # Mostly the subject's tools, sometimes one from anywhere.
    tools = rng.sample(preferred, rng.randint(1, min(3, len(preferred))))
    if rng.random() < 0.3:
        tools.append(rng.choice(TOOLS))
    tools = list(dict.fromkeys(tools))
    failed = rng.random() < 0.15
    errors = []
    if failed or rng.random() < 0.1:  # a failure, or an error that a retry got past
        error_type = rng.choice(list(ERRORS))
        errors.append(
            {
                "error_type": error_type,
                "error_message": ERRORS[error_type].format(n=rng.randint(2, 30)),
                "tool": rng.choice(tools),
            }
        )
    execution = {
        "message_id": message_id,
        "explanation": f"Record how the {subject} request was handled",
        "execution_summary": rng.choice(summaries).format(**values),
        "tools_used": tools,
        "errors": errors,
        "observations": rng.choice(OBSERVATIONS) if not failed else "Gave up after the error; told the user.",
        "success": not failed,
        "duration_ms": rng.randint(200, 20_000),
        "timestamp": (when + timedelta(seconds=rng.randint(1, 30))).isoformat().replace("+00:00", "Z"),
    }
    return conversation, execution


def topic(rng: random.Random, index: int) -> dict[str, Any]:
    area, what, fact = AREAS[index % len(AREAS)]
    aspect = ASPECTS[(index // len(AREAS)) % len(ASPECTS)]
    name = f"{area}-{aspect}-{index}"
    body = [f"# {area.title()} {aspect}", "", f"This note covers {what}. {fact}"]
    for _ in range(rng.randint(3, 8)):
        body.append(
            f"- {rng.choice(FILL['person'])} {rng.choice(['decided', 'noted', 'checked', 'changed'])} "
            f"that the {rng.choice(FILL['service'])} {rng.choice(['uses', 'needs', 'avoids', 'depends on'])} "
            f"{rng.choice(['a feature flag', 'a nightly job', 'a read replica', 'a canary', 'a runbook', 'an alert'])} "
            f"since {rng.choice(FILL['month'])}."
        )
    return {
        "topic": name,
        "tags": rng.sample(TAGS, rng.randint(2, 5)),
        "summary": f"{area.title()} {aspect}: {what}.",
        "content": "\n".join(body),
    }


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    median, mean = statistics.median(ordered), statistics.fmean(ordered)
    return {"n": len(ordered), "median": median, "p95": pick(0.95), "mean": mean}


def timed(samples: int, call: Callable[[int], object]) -> list[float]:
    out = []
    for i in range(samples):
        started = time.perf_counter()
        call(i)
        out.append(1000 * (time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default="bge", choices=["bge", "hashing"])
    args = parse_args(parser, {"pairs": 20, "topics": 10, "queries": 6})

    rng = random.Random(11)
    services = fresh_services(args.embedder)
    context = RequestContext(tenant="bench", user="families", project="bench-project", roles=frozenset({"writer"}))
    tool = {name: get_tool(name) for name in [
        "add_conversation", "add_execution", "retrieve_conversation", "retrieve_execution",
        "memorize_new_topic", "recall_memory", "list_memories", "search_memories", "refine_memory",
    ]}  # fmt: skip

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return tool[name].invoke(services, context, payload)

    services.embedder.embed(["warm up"])  # loads the model outside any timing
    started_all = time.perf_counter()
    results: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------ conversations
    start = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    pairs = [pair(rng, i, start + timedelta(minutes=47 * i)) for i in range(args.pairs)]
    add_conv: list[float] = []
    add_exec: list[float] = []
    for conversation, execution in pairs:
        started = time.perf_counter()
        call("add_conversation", conversation)
        middle = time.perf_counter()
        call("add_execution", execution)
        add_conv.append(1000 * (middle - started))
        add_exec.append(1000 * (time.perf_counter() - middle))
    fill_seconds = time.perf_counter() - started_all
    print(f"stored {args.pairs} pairs in {fill_seconds:.0f} s", flush=True)
    results["add_conversation"] = percentiles(add_conv)
    results["add_execution"] = percentiles(add_exec)

    questions = [fill(rng, rng.choice(SUBJECTS[rng.choice(list(SUBJECTS))][0])) for _ in range(args.queries)]
    for strategy in ("hybrid", "keyword", "recent"):
        payload = {"explanation": "Check what was said before", "max_results": 10, "retrieval_strategy": strategy}
        call("retrieve_conversation", payload | {"query": "warm up"})
        results[f"retrieve_conversation {strategy}"] = percentiles(
            timed(args.queries, lambda i: call("retrieve_conversation", payload | {"query": questions[i]}))  # noqa: B023
        )

    # Every other hybrid execution query names a tool; the rest are task questions.
    exec_queries: list[tuple[str, str | None]] = []
    for i in range(args.queries):
        if i % 2 == 0:
            name = TOOLS[(i // 2) % len(TOOLS)]
            exec_queries.append((rng.choice(TOOL_QUERIES).format(tool=name), name))
        else:
            exec_queries.append((f"how was this solved: {rng.choice(questions)}", None))
    hits: list[bool] = []

    def retrieve_exec(i: int) -> None:
        query, named = exec_queries[i]
        answer = call("retrieve_execution", {"query": query, "explanation": "Reuse what worked", "max_results": 10})
        if named is not None:
            top = answer["data"]["executions"][:5]
            hits.append(any(named in e["execution_details"]["tools_used"] for e in top))

    call("retrieve_execution", {"query": "warm up", "explanation": "warm up"})
    results["retrieve_execution hybrid"] = percentiles(timed(args.queries, retrieve_exec))
    filtered = [(f"how was this solved: {rng.choice(questions)}", rng.choice(TOOLS)) for _ in range(args.queries)]
    results["retrieve_execution hybrid + tools filter"] = percentiles(
        timed(
            args.queries,
            lambda i: call(
                "retrieve_execution",
                {"query": filtered[i][0], "explanation": "Reuse what worked", "tools": [filtered[i][1]]},
            ),
        )
    )
    hit_at_5 = sum(hits) / len(hits)

    # ------------------------------------------------------------------ topics
    topics = [topic(rng, i) for i in range(args.topics)]
    results["memorize_new_topic"] = percentiles(timed(args.topics, lambda i: call("memorize_new_topic", topics[i])))
    names = [t["topic"] for t in topics]
    results["recall_memory"] = percentiles(
        timed(args.queries, lambda i: call("recall_memory", {"topic": rng.choice(names)}))
    )
    results["list_memories"] = percentiles(timed(args.queries, lambda i: call("list_memories", {})))
    results["search_memories by tags"] = percentiles(
        timed(args.queries, lambda i: call("search_memories", {"tags": rng.sample(TAGS, rng.randint(1, 2))}))
    )
    call("search_memories", {"query": "warm up"})
    results["search_memories by query"] = percentiles(
        timed(args.queries, lambda i: call("search_memories", {"query": TOPIC_QUERIES[i % len(TOPIC_QUERIES)]}))
    )
    refined = rng.sample(names, min(args.queries, len(names)))
    results["refine_memory"] = percentiles(
        timed(
            len(refined),
            lambda i: call(
                "refine_memory",
                {
                    "topic": refined[i],
                    "tagsToAdd": [rng.choice(TAGS)],
                    "newSummary": f"Revised after review {i}: {topics[names.index(refined[i])]['summary']}",
                },
            ),
        )
    )
    total_seconds = time.perf_counter() - started_all

    rows = [[name, int(r["n"]), r["median"], r["p95"]] for name, r in results.items()]
    print(
        f"\n{args.pairs} conversation + execution pairs (one user), {args.topics} topics (one project), "
        f"embedder {services.embedder.name} (ms)"
    )
    print(table(["tool / operation", "n", "median ms", "p95 ms"], rows))
    print(f"\nretrieve_execution hit@5 for queries naming a tool: {sum(hits)}/{len(hits)} = {hit_at_5:.1%}")
    print(f"total {total_seconds:.0f} s")
    path = write_results(
        "families-latency",
        {
            "embedder": services.embedder.name,
            "pairs": args.pairs,
            "topics": args.topics,
            "queries": args.queries,
            "fillSeconds": fill_seconds,
            "totalSeconds": total_seconds,
            "toolQueryHitAt5": {"hits": sum(hits), "queries": len(hits), "rate": hit_at_5},
            "milliseconds": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

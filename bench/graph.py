"""Latency of the memory graph tools at 10,000 facts in one user scope.

    python bench/graph.py [--facts 10000] [--entities 2000] [--calls 300] [--memories 1000]
                          [--backend embedded|moto|both] [--embedder hashing|bge] [--moto-scale 0.1] [--smoke]

One agent (user, agent id and project, role writer) on a fresh stack. The fill
adds --facts facts through add_memory_link, in the order of their validAt
(2018 to mid-2025), between --entities seeded synthetic entities of seven
types (people 50%, services 25%, projects 17%, organizations 3%, technologies
2.5%, cities 1.5%, teams 1%). Five hub entities collect hundreds of facts each
(Acme Corp: where a fifth of the people work, Berlin, PostgreSQL, Kubernetes,
the platform team). Four predicates are exclusive (works_at, lives_in,
uses_database, owned_by): a subject's later fact invalidates its earlier one,
so about a fifth of the facts end up as history. The other predicates
(member_of, contributes_to, depends_on, runs_on, knows) accumulate. Every fact
carries a sentence. Then --memories memories are stored through memory_add
(sentences about the same people and systems), and each case is timed --calls
times on entities and facts drawn at random (seeded):

* add_memory_link: a new fact between existing entities; the same open fact
  again (answers created: false); an exclusive works_at to another company
  (invalidates the current one);
* get_memory_object: depth 1 and 2 of an ordinary entity (a person or a
  service, not a hub) and of a hub; a hub with includeHistory;
* graph_search: now, and with asOf in 2021 (facts valid then);
* invalidate_memory_link of an open fact; update_memory_object (a summary);
* delete_memory_object: the preview (no token) of an ordinary entity, of a hub
  and of a fact; nothing is deleted;
* memory_search without and with includeGraph.

Every call goes through the catalog (``get_tool(name).invoke``: validation and
the answer's dump included). ``embedded`` is SQLite and the in-process vector
index; ``moto`` is DynamoDB on an in-process moto server (it measures moto,
not AWS) with the in-process vector index, at --moto-scale of the sizes (0.03:
300 facts, 60 entities, 10 calls, 30 memories; about 2 minutes), since every
moto Query filters the whole partition in Python and all of a scope's graph
records share one partition. The embedder is the hashing one unless --embedder bge. Writes
bench/results/graph.json; clocks are reported, never asserted.

--smoke: 60 facts, 40 entities, 3 calls, 10 memories, both backends (moto at half the facts and
entities), results to a temporary folder (bench/common.py).
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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
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
FIRST = [
    "Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Mo", "Nia", "Oren",
    "Pia", "Quinn", "Rosa", "Sami", "Tess", "Uma", "Vik", "Wen", "Xia", "Yara", "Zoe", "Ari", "Ben", "Cleo", "Dev",
    "Emil", "Fern", "Gil", "Hugo", "Iris", "Joel", "Kira", "Luis", "Maya", "Nils",
]  # fmt: skip
LAST = [
    "Weber", "Okafor", "Tanaka", "Silva", "Novak", "Haddad", "Larsen", "Moreau", "Rossi", "Kowalski", "Nguyen",
    "Garcia", "Schmidt", "Ivanova", "Costa", "Fischer", "Yilmaz", "Dubois", "Jensen", "Kim", "Patel", "Sato",
    "Lopez", "Berg", "Olsen", "Meyer", "Park", "Russo", "Santos", "Wagner", "Ali", "Becker", "Chopra", "Diaz",
    "Eriksen", "Fontaine", "Gomez", "Horvat", "Ito", "Jovanovic",
]  # fmt: skip
ORG_WORDS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Tyrell", "Cyberdyne", "Soylent"]
ORG_KINDS = ["Corp", "Labs", "Systems", "Bank", "Health", "Logistics"]
TECH = [
    "PostgreSQL", "Kubernetes", "MySQL", "DynamoDB", "Redis", "Kafka", "RabbitMQ", "Elasticsearch", "OpenSearch",
    "MongoDB", "Cassandra", "SQLite", "Aurora", "ClickHouse", "Snowflake", "BigQuery", "Nomad", "ECS", "Lambda",
    "Terraform", "Spark", "Flink", "Airflow", "dbt", "Prometheus", "Grafana", "Envoy", "Istio", "Vault", "Consul",
    "gRPC", "GraphQL", "React", "Django", "FastAPI", "Spring", "Rails", "Go", "Rust", "Python", "Java", "TypeScript",
    "Node.js", "Nginx", "HAProxy", "Memcached", "CockroachDB", "Neo4j", "Pinecone", "pgvector",
]  # fmt: skip
DATABASES = ["PostgreSQL", "MySQL", "DynamoDB", "MongoDB", "Cassandra", "Aurora", "CockroachDB", "SQLite"]
PLATFORMS = ["Kubernetes", "Nomad", "ECS", "Lambda"]
CITIES = [
    "Berlin", "Lisbon", "Paris", "London", "Madrid", "Rome", "Vienna", "Prague", "Warsaw", "Oslo", "Stockholm",
    "Helsinki", "Dublin", "Amsterdam", "Brussels", "Zurich", "Munich", "Hamburg", "Lyon", "Porto", "Tokyo", "Osaka",
    "Seoul", "Singapore", "Sydney", "Toronto", "Montreal", "Boston", "Austin", "Denver",
]  # fmt: skip
DOMAINS = [
    "orders", "payments", "search", "auth", "billing", "releases", "mobile", "data", "pricing", "catalog",
    "shipping", "inventory", "checkout", "profile", "notifications", "reporting", "fraud", "ledger", "ads", "chat",
]  # fmt: skip
SERVICE_KINDS = ["api", "worker", "gateway", "indexer", "scheduler", "sync", "exporter", "cache", "web", "stream"]
PROJECT_WORDS = ["migration", "rewrite", "launch", "audit", "cleanup", "upgrade", "pilot", "rollout"]
ROLES = ["data engineer", "product manager", "SRE", "backend engineer", "designer", "analyst", "tech lead"]
HUBS = ["Acme Corp", "Berlin", "PostgreSQL", "Kubernetes", "Platform team"]
# predicate: (subject type, object type, exclusive, share of the facts)
PREDICATES: dict[str, tuple[str, str, bool, float]] = {
    "works_at": ("person", "organization", True, 0.17),
    "lives_in": ("person", "city", True, 0.13),
    "uses_database": ("service", "technology", True, 0.08),
    "owned_by": ("service", "team", True, 0.06),
    "member_of": ("person", "team", False, 0.10),
    "contributes_to": ("person", "project", False, 0.14),
    "depends_on": ("service", "service", False, 0.17),
    "runs_on": ("service", "technology", False, 0.05),
    "knows": ("person", "person", False, 0.10),
}
START, END = datetime(2018, 1, 1, tzinfo=UTC), datetime(2025, 6, 30, tzinfo=UTC)
PAST = "2021-06-01T00:00:00Z"


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def sentence(rng: random.Random, subject: str, predicate: str, obj: str, when: datetime) -> str:
    year = when.year
    match predicate:
        case "works_at":
            return f"{subject} joined {obj} as a {rng.choice(ROLES)} in {when:%B} {year}."
        case "lives_in":
            return f"{subject} moved to {obj} in {year}."
        case "uses_database":
            return f"The {subject} service keeps its data in {obj} since {year}."
        case "owned_by":
            return f"{obj} took over ownership of {subject} in {year}."
        case "member_of":
            return f"{subject} is a member of the {obj}."
        case "contributes_to":
            return f"{subject} contributes to the {obj} project."
        case "depends_on":
            return f"{subject} calls {obj} on its request path."
        case "runs_on":
            return f"{subject} is deployed on {obj}."
        case _:
            return f"{subject} knows {obj} from a {rng.choice(['conference', 'previous job', 'project', 'meetup'])}."


@dataclass
class World:
    """The seeded entities and the facts the fill adds, in the order of their validAt."""

    kinds: dict[str, list[str]]
    types: dict[str, str]
    facts: list[dict[str, Any]]
    hubs: list[str]
    ordinary: list[str] = field(default_factory=list)


def make_world(rng: random.Random, entities: int, facts: int) -> World:
    shares = {"person": 0.50, "service": 0.25, "city": 0.015, "organization": 0.03, "team": 0.01}
    counts = {kind: max(2, round(entities * share)) for kind, share in shares.items()}
    counts["technology"] = max(len(DATABASES) + len(PLATFORMS), round(entities * 0.025))
    counts["project"] = max(2, entities - sum(counts.values()))
    people = [f"{first} {last}" for first in FIRST for last in LAST]
    rng.shuffle(people)
    orgs = [f"{word} {kind}" for kind in ORG_KINDS for word in ORG_WORDS]
    orgs.remove("Acme Corp")
    kinds = {
        "person": people[: counts["person"]],
        "service": [f"{d}-{k}{n}" for n in ["", "-2", "-3", "-4"] for k in SERVICE_KINDS for d in DOMAINS][
            : counts["service"]
        ],
        "project": [f"{d.title()} {w} {n}" for n in range(1, 99) for w in PROJECT_WORDS for d in DOMAINS][
            : counts["project"]
        ],
        "city": CITIES[: counts["city"]],
        "organization": ["Acme Corp", *orgs][: counts["organization"]],
        "team": ["Platform team", *[f"{d.title()} team" for d in DOMAINS]][: counts["team"]],
        "technology": [*DATABASES, *PLATFORMS, *(t for t in TECH if t not in DATABASES + PLATFORMS)][
            : counts["technology"]
        ],
    }
    types = {name: kind for kind, names in kinds.items() for name in names}
    hub_of = {"organization": "Acme Corp", "city": "Berlin", "team": "Platform team"}

    def pick_object(predicate: str, kind: str, subject: str) -> str:
        if predicate == "uses_database":
            return "PostgreSQL" if rng.random() < 0.45 else rng.choice(DATABASES)
        if predicate == "runs_on":
            return "Kubernetes" if rng.random() < 0.7 else rng.choice(PLATFORMS)
        hub = hub_of.get(kind)
        if hub is not None and rng.random() < 0.25:
            return hub
        while True:
            other = rng.choice(kinds[kind])
            if other != subject:
                return other

    span = (END - START).total_seconds()
    planned: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for predicate, (subject_kind, object_kind, exclusive, share) in PREDICATES.items():
        target = round(facts * share * 1.1)  # more than needed: the fill stops at --facts
        if exclusive:
            # Chains: each subject's successive objects, at increasing times.
            subjects = kinds[subject_kind]
            made = 0
            while made < target:
                subject = rng.choice(subjects)
                steps = min(target - made, rng.choice([1, 1, 2, 2, 3, 4]))
                times = sorted(START + timedelta(seconds=rng.random() * span) for _ in range(steps))
                previous = None
                for when in times:
                    obj = pick_object(predicate, object_kind, subject)
                    if obj == previous:
                        continue
                    planned.append({"subject": subject, "predicate": predicate, "object": obj, "when": when})
                    previous = obj
                    made += 1
        else:
            made = 0
            while made < target:
                subject = rng.choice(kinds[subject_kind])
                obj = pick_object(predicate, object_kind, subject)
                if (subject, predicate, obj) in seen:
                    continue
                seen.add((subject, predicate, obj))
                when = START + timedelta(seconds=rng.random() * span)
                planned.append({"subject": subject, "predicate": predicate, "object": obj, "when": when})
                made += 1
    planned.sort(key=lambda fact: fact["when"])
    for fact in planned:
        fact["exclusive"] = PREDICATES[fact["predicate"]][2]
        fact["text"] = sentence(rng, fact["subject"], fact["predicate"], fact["object"], fact["when"])
    return World(kinds=kinds, types=types, facts=planned, hubs=HUBS)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "mean": statistics.fmean(ordered),
    }


def memory_text(rng: random.Random, world: World, index: int) -> str:
    person = rng.choice(world.kinds["person"])
    service = rng.choice(world.kinds["service"])
    return (
        f"{person} {rng.choice(['reviewed', 'migrated', 'paged on', 'documented', 'load-tested'])} {service} "
        f"{rng.choice(['last sprint', 'in March', 'before the audit', 'after the outage'])}; "
        f"{rng.choice(['it reads from', 'the fix touched', 'the plan moves it to'])} {rng.choice(TECH)} "
        f"(note {index})."
    )


def run(services: Services, args: argparse.Namespace, label: str) -> dict[str, Any]:
    rng = random.Random(7)
    world = make_world(rng, args.entities, args.facts)

    def call(name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return get_tool(name).invoke(services, CONTEXT, payload)

    def timed(count: int, make: Callable[[int], tuple[str, dict[str, Any]]]) -> tuple[list[float], list[dict]]:
        samples, answers = [], []
        for i in range(count):
            name, payload = make(i)
            started = time.perf_counter()
            answer = call(name, payload)
            samples.append(1000 * (time.perf_counter() - started))
            answers.append(answer)
        return samples, answers

    checks: dict[str, str] = {}

    def check(what: str, seen: int, expected: int) -> None:
        """Answers that are not what the case means to time are reported, not raised: the run goes on."""
        checks[what] = f"{seen}/{expected}"
        if seen != expected:
            print(f"[{label}] WARNING: {what}: {seen} of {expected}", flush=True)

    services.embedder.embed(["warm up"])
    results: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------------ fill
    open_facts: dict[tuple[str, str, str], str] = {}  # (subject, predicate, object) -> factId, open facts
    current: dict[tuple[str, str], str] = {}  # (subject, exclusive predicate) -> its object now
    fill: list[float] = []
    created = invalidated = 0
    linked: set[str] = set()  # the entities the fill created (a small run may stop before a hub's first fact)
    started_all = time.perf_counter()
    for fact in world.facts:
        if created >= args.facts:
            break
        payload = {
            "subject": fact["subject"],
            "predicate": fact["predicate"],
            "object": fact["object"],
            "subjectType": world.types[fact["subject"]],
            "objectType": world.types[fact["object"]],
            "text": fact["text"],
            "validAt": stamp(fact["when"]),
            "exclusive": fact["exclusive"],
        }
        started = time.perf_counter()
        answer = call("add_memory_link", payload)
        fill.append(1000 * (time.perf_counter() - started))
        if not answer["created"]:
            continue
        created += 1
        linked.update((fact["subject"], fact["object"]))
        key = (fact["subject"], fact["predicate"], fact["object"])
        if fact["exclusive"]:
            old = current.get(key[:2])
            if old is not None:
                open_facts.pop((fact["subject"], fact["predicate"], old), None)
            current[key[:2]] = fact["object"]
        open_facts[key] = answer["factId"]
        invalidated += len(answer["invalidated"])
        if created % 2000 == 0:
            print(f"[{label}] {created} facts, {time.perf_counter() - started_all:.0f} s", flush=True)
    fill_seconds = time.perf_counter() - started_all
    results[f"add_memory_link, fill 0 -> {created:,} facts"] = percentiles(fill)
    print(
        f"[{label}] {created} facts ({invalidated} invalidated by a later one) in {fill_seconds:.0f} s: "
        f"{created / fill_seconds:.0f} facts/s",
        flush=True,
    )
    started = time.perf_counter()
    for i in range(args.memories):
        call("memory_add", {"content": memory_text(rng, world, i)})
    memories_seconds = time.perf_counter() - started
    print(f"[{label}] {args.memories} memories in {memories_seconds:.0f} s", flush=True)

    # The entities' degrees, to tell hubs from ordinary entities.
    degree: dict[str, int] = {}
    for subject, _, obj in open_facts:
        degree[subject] = degree.get(subject, 0) + 1
        degree[obj] = degree.get(obj, 0) + 1
    ordinary = [name for name in world.kinds["person"] + world.kinds["service"] if 2 <= degree.get(name, 0) <= 30]
    hubs = [hub for hub in world.hubs if hub in linked]
    hub_degrees = {hub: call("delete_memory_object", {"name": hub})["factsAffected"] for hub in hubs}
    calls = args.calls

    # --------------------------------------------------------- add_memory_link
    def new_link(i: int) -> tuple[str, dict[str, Any]]:
        while True:
            subject, obj = rng.sample(world.kinds["service"], 2)
            if (subject, "depends_on", obj) not in open_facts:
                open_facts[(subject, "depends_on", obj)] = ""
                return "add_memory_link", {
                    "subject": subject,
                    "predicate": "depends_on",
                    "object": obj,
                    "text": f"{subject} started calling {obj} (change {i}).",
                }

    samples, answers = timed(calls, new_link)
    check("new facts created", sum(answer["created"] for answer in answers), calls)
    results["add_memory_link, new fact"] = percentiles(samples)

    repeats = rng.sample([key for key in open_facts if not PREDICATES[key[1]][2] and open_facts[key]], calls)
    samples, answers = timed(
        calls,
        lambda i: ("add_memory_link", {"subject": repeats[i][0], "predicate": repeats[i][1], "object": repeats[i][2]}),
    )
    check("repeats answered created: false", sum(not answer["created"] for answer in answers), calls)
    results["add_memory_link, same open fact again (created: false)"] = percentiles(samples)

    movers = rng.sample([subject for subject, predicate in current if predicate == "works_at"], calls)

    def move(i: int) -> tuple[str, dict[str, Any]]:
        person = movers[i]
        while (org := rng.choice(world.kinds["organization"])) == current[(person, "works_at")]:
            pass
        return "add_memory_link", {
            "subject": person,
            "predicate": "works_at",
            "object": org,
            "text": f"{person} left for {org}.",
            "exclusive": True,
        }

    samples, answers = timed(calls, move)
    check("exclusive adds that invalidated exactly one fact", sum(len(a["invalidated"]) == 1 for a in answers), calls)
    results["add_memory_link, exclusive (invalidates 1)"] = percentiles(samples)
    for person, answer in zip(movers, answers, strict=True):
        current[(person, "works_at")] = answer["object"]["name"]

    # ------------------------------------------------------- get_memory_object
    for depth in (1, 2):
        samples, answers = timed(
            calls, lambda i, depth=depth: ("get_memory_object", {"name": rng.choice(ordinary), "depth": depth})
        )
        results[f"get_memory_object, ordinary entity, depth {depth}"] = percentiles(samples) | {
            "facts": statistics.fmean(len(a["facts"]) for a in answers),
            "neighbours": statistics.fmean(len(a["neighbours"]) for a in answers),
        }
    for depth in (1, 2):
        samples, answers = timed(
            calls, lambda i, depth=depth: ("get_memory_object", {"name": hubs[i % len(hubs)], "depth": depth})
        )
        results[f"get_memory_object, hub, depth {depth}"] = percentiles(samples) | {
            "facts": statistics.fmean(len(a["facts"]) for a in answers),
            "neighbours": statistics.fmean(len(a["neighbours"]) for a in answers),
        }
    samples, answers = timed(
        calls,
        lambda i: ("get_memory_object", {"name": hubs[i % len(hubs)], "depth": 1, "includeHistory": True}),
    )
    results["get_memory_object, hub, depth 1, includeHistory"] = percentiles(samples)

    # ------------------------------------------------------------ graph_search
    def question(i: int) -> str:
        match i % 5:
            case 0:
                return f"Where does {rng.choice(world.kinds['person'])} work?"
            case 1:
                return f"Which services use {rng.choice(DATABASES)}?"
            case 2:
                return f"Who lives in {rng.choice(world.kinds['city'])}?"
            case 3:
                return f"What does {rng.choice(world.kinds['service'])} depend on?"
            case _:
                return f"Who contributes to {rng.choice(world.kinds['project'])}?"

    samples, answers = timed(calls, lambda i: ("graph_search", {"query": question(i)}))
    results["graph_search, now"] = percentiles(samples) | {
        "facts": statistics.fmean(len(a["facts"]) for a in answers),
        "entities": statistics.fmean(len(a["entities"]) for a in answers),
    }
    samples, answers = timed(calls, lambda i: ("graph_search", {"query": question(i), "asOf": PAST}))
    results["graph_search, asOf 2021-06-01"] = percentiles(samples) | {
        "facts": statistics.fmean(len(a["facts"]) for a in answers),
        "entities": statistics.fmean(len(a["entities"]) for a in answers),
    }

    # ----------------------------------------------------- writes on existing
    doomed = rng.sample([fact_id for key, fact_id in open_facts.items() if fact_id and key[1] == "knows"], calls)
    samples, answers = timed(
        calls, lambda i: ("invalidate_memory_link", {"factId": doomed[i], "reason": "They lost touch."})
    )
    check("invalidations of an open fact", sum(not answer["alreadyInvalid"] for answer in answers), calls)
    results["invalidate_memory_link"] = percentiles(samples)
    samples, _ = timed(
        calls,
        lambda i: (
            "update_memory_object",
            {"name": rng.choice(ordinary), "summary": f"Reviewed in the quarterly audit ({i})."},
        ),
    )
    results["update_memory_object, summary"] = percentiles(samples)

    # ------------------------------------------------- delete_memory_object
    samples, _ = timed(calls, lambda i: ("delete_memory_object", {"name": rng.choice(ordinary)}))
    results["delete_memory_object preview, ordinary entity"] = percentiles(samples)
    samples, _ = timed(calls, lambda i: ("delete_memory_object", {"name": hubs[i % len(hubs)]}))
    results["delete_memory_object preview, hub"] = percentiles(samples)
    some_facts = [fact_id for fact_id in open_facts.values() if fact_id]
    samples, _ = timed(calls, lambda i: ("delete_memory_object", {"factId": rng.choice(some_facts)}))
    results["delete_memory_object preview, fact"] = percentiles(samples)

    # ----------------------------------------------------------- memory_search
    for include in (False, True):
        samples, answers = timed(
            calls, lambda i, include=include: ("memory_search", {"query": question(i), "includeGraph": include})
        )
        name = "memory_search, includeGraph" if include else "memory_search"
        results[name] = percentiles(samples)
        if include:
            results[name]["graphFacts"] = statistics.fmean(len(a["graph"]["facts"]) for a in answers)
    total_seconds = time.perf_counter() - started_all

    rows = [[name, int(r["n"]), r["p50"], r["p95"], r["mean"]] for name, r in results.items()]
    print(
        f"\n[{label}] {created:,} facts, {len(world.types):,} entities, {args.memories:,} memories, "
        f"embedder {services.embedder.name} (ms)"
    )
    print(table(["tool, case", "n", "p50 ms", "p95 ms", "mean ms"], rows))
    print(f"fill {created / fill_seconds:.0f} facts/s; hubs {hub_degrees}; total {total_seconds:.0f} s", flush=True)
    return {
        "embedder": services.embedder.name,
        "facts": created,
        "entities": len(world.types),
        "invalidatedByLaterFacts": invalidated,
        "hubFacts": hub_degrees,
        "memories": args.memories,
        "calls": calls,
        "fillSeconds": fill_seconds,
        "factsPerSecond": created / fill_seconds,
        "totalSeconds": total_seconds,
        "checks": checks,
        "milliseconds": results,
    }


def embedded(args: argparse.Namespace) -> Services:
    directory = Path(tempfile.mkdtemp(prefix="mnemo-bench-graph-"))
    return Services(Settings(data_dir=directory, embedder=args.embedder))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--entities", type=int, default=2_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--memories", type=int, default=1_000)
    parser.add_argument("--backend", default="embedded", choices=["embedded", "moto", "both"])
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "bge"])
    parser.add_argument("--moto-scale", type=float, default=0.03, help="moto's facts, entities and calls, as a share")
    args = parse_args(
        parser, {"facts": 60, "entities": 40, "calls": 3, "memories": 10, "backend": "both", "moto_scale": 0.5}
    )

    payload: dict[str, Any] = {"cpus": os.cpu_count()}
    if args.backend in ("embedded", "both"):
        payload["embedded"] = run(embedded(args), args, "embedded: SQLite")
    if args.backend in ("moto", "both"):
        # moto copies the whole table on every transaction, so its writes slow down as the table grows.
        scaled = argparse.Namespace(**vars(args))
        for name in ("facts", "entities", "calls", "memories"):
            value = getattr(args, name)  # at least 10, or the size itself when it is smaller (--smoke)
            setattr(scaled, name, max(min(10, value), round(value * args.moto_scale)))
        payload["moto"] = run(moto_services("bench-graph", scaled.embedder), scaled, "moto: DynamoDB")
    path = write_results("graph", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

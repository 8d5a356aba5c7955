"""Load and crash test of `mnemo serve`: concurrent clients over HTTP, then every acknowledged write checked.

    python bench/load.py [--clients 50] [--ops 200] [--embedder hashing|bge] [--seed 5]
    python bench/load.py --crash [--clients 8] [--kill-after 400] [--embedder hashing|bge]
    python bench/load.py --smoke [--crash]

Load: `mnemo serve` runs as a subprocess on a free port over a fresh data
directory. One shared topic is memorized in a project first; then --clients
threads (each its own user in that project, role writer, one keep-alive
connection) run --ops operations each, drawn at random: memory_add (a quarter
to the project layer, the rest to the user's own; every content carries a
unique token), memory_search (for the token of one of the client's live
memories, which must come back: read-your-writes), memory_delete (of one of
the client's own earlier adds), add_conversation (a unique message_id), and a
refine of the shared topic: recall_memory for its version and content, then
refine_memory with that expectedVersion and the content plus one unique
marker line. A CONFLICT there is a correct answer and is counted.

Every success must be shaped like its tool's answer, a user-layer search must
return only the caller's own memories, and add_conversation must answer for
the message_id it was sent. Afterwards, against the same server and one caller
at a time: every acknowledged memory_add is found by memory_search on its
token, no deleted memory is found, every acknowledged add_conversation comes
back from retrieve_conversation by message_id and by a keyword retrieval of its
token, and the topic's version is 1 + the successful refines, with every
acknowledged marker in its content and no other. Throughput, p50/p95/p99 per
tool and answers by errorCode are reported; a 5xx, an answer that is not the
envelope or is another tool's, or a broken connection is a failure. Writes
bench/results/load.json (load-bge.json with --embedder bge).

--crash: the same server over a fresh data directory; --clients threads write
(memory_add with an idempotencyKey, add_conversation, memorize_new_topic, and
recall + refine_memory on one shared topic) until the server is killed with
SIGKILL after --kill-after acknowledged writes. It is restarted on the same
data directory; each write that got no answer is sent again as its client
would (the same idempotencyKey, message_id or topic; refines are not resent),
and every acknowledged write must be there as a user finds it: memories by
memory_search, conversations by message_id and by keyword, topics by
recall_memory and search_memories, and every acknowledged refine marker in the
shared topic (whose version is 1 + the markers it holds). A write not found at
once is re-checked up to --tries times, 0.5 s apart (the server drains its
index outbox every 15 s). Writes bench/results/load-crash.json
(load-crash-bge.json with --embedder bge).

The exit status is non-zero when a check fails or a failure was seen.

--smoke: 4 clients of 12 operations (with --crash: 3 writers, killed after 15 acknowledged writes,
10 re-checks), every check the same; results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import parse_args, table, write_results

PROJECT = "load-project"
TOPIC = "shared-load-topic"
TOOLS = ("memory_add", "memory_search", "memory_delete", "add_conversation", "recall_memory", "refine_memory")
# A logical operation of the load run and its weight; "refine" is recall_memory then refine_memory.
MIX = {"add": 30, "search": 25, "delete": 10, "conversation": 20, "refine": 15}
CRASH_MIX = {"add": 35, "conversation": 25, "topic": 15, "refine": 25}
KINDS = ("memory", "conversation", "topic", "refine")  # what the crash burst writes

NAMES = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea", "Mo", "Nia"]
VERBS = ["prefers", "maintains", "reviewed", "migrated", "deployed", "documented", "tested", "owns", "paused"]
THINGS = [
    "the billing service", "the search cluster", "the mobile app", "the data pipeline", "the auth gateway",
    "the nightly build", "the cost report", "the incident runbook", "the Postgres upgrade", "the cache layer",
]  # fmt: skip
WHEN = ["on Monday", "last sprint", "in March", "before the audit", "after the outage", "every Friday", "in Q3"]


# ------------------------------------------------------------------ the server
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """`mnemo serve` as a real subprocess on a free port; its output goes to a log file."""

    def __init__(
        self, data_dir: Path, embedder: str = "hashing", log: Path | None = None, switch_interval: float | None = None
    ) -> None:
        self.data_dir = data_dir
        self.embedder = embedder
        #: The server interpreter's thread switch interval (sys.setswitchinterval): a small one makes races likely.
        self.switch_interval = switch_interval
        self.log = log or data_dir.parent / f"{data_dir.name}-serve.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, ready_tries: int = 600) -> ServerProcess:
        """Start and poll /health until it answers (at most ``ready_tries`` polls, 0.1 s apart)."""
        self.port = free_port()
        env = {**os.environ, "MNEMO_EMBEDDER": self.embedder}
        command = [sys.executable, "-m", "mnemo.cli"]
        if self.switch_interval is not None:
            start = (
                f"import sys; sys.setswitchinterval({self.switch_interval!r}); "
                "from mnemo.cli import main; raise SystemExit(main())"
            )
            command = [sys.executable, "-c", start]
        # One process: a kill -9 of it cuts a write off (tests/e2e/test_crash_recovery.py), and switch_interval
        # reaches the process that serves.
        command += ["serve", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, "--data-dir", str(self.data_dir)], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        for _ in range(ready_tries):
            if self.process.poll() is not None:
                raise RuntimeError(f"mnemo serve exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    connection.close()
                    return self
                connection.close()
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"mnemo serve did not answer /health:\n{self.log_tail()}")

    def kill9(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


# ------------------------------------------------------------------ the client
@dataclass
class Answer:
    tool: str
    status: int  # 0 when no HTTP answer came back
    payload: Any
    ms: float
    transport_error: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == 200 and isinstance(self.payload, dict) and self.payload.get("success") is True

    @property
    def ok(self) -> bool:
        """A success shaped like this tool's answer (under a concurrency fault it may be another tool's)."""
        return self.succeeded and answer_shape_ok(self.tool, self.payload)

    @property
    def outcome(self) -> str:
        if self.transport_error is not None:
            return "no answer"
        if self.succeeded:
            return "ok" if self.ok else "another tool's answer"
        return self.code or "non-envelope"

    @property
    def code(self) -> str | None:
        """The envelope's errorCode, or None for a success or a non-envelope answer."""
        if isinstance(self.payload, dict) and self.payload.get("success") is False:
            code = self.payload.get("errorCode")
            return code if isinstance(code, str) else None
        return None

    @property
    def failure(self) -> str | None:
        """Why this answer is a failure of the server (5xx, not the envelope, no answer), or None."""
        if self.transport_error is not None:
            return f"no answer: {self.transport_error}"
        if self.status >= 500:
            return f"HTTP {self.status} {self.code or 'non-envelope'}"
        if self.ok:
            return None
        if self.succeeded:
            return f"HTTP {self.status} success shaped like another tool's answer"
        envelope = isinstance(self.payload, dict) and {"success", "errorCode", "message", "details"} <= set(
            self.payload
        )
        if not envelope:
            return f"HTTP {self.status} non-envelope answer"
        if self.status < 400:
            return f"HTTP {self.status} with an error envelope"
        return None


def answer_shape_ok(tool: str, payload: dict[str, Any]) -> bool:
    """Whether a success answer has the fields of ``tool``'s answer (tools this benchmark calls)."""
    data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
    shapes: dict[str, Callable[[], bool]] = {
        "memory_add": lambda: "memoryId" in payload and "deduplicated" in payload,
        "memory_search": lambda: "results" in payload and "searchedLayers" in payload,
        "memory_delete": lambda: "memoryId" in payload and "deduplicated" not in payload,
        "add_conversation": lambda: "message_id" in data and "conversations" not in data,
        "retrieve_conversation": lambda: "conversations" in data,
        "recall_memory": lambda: "version" in payload and "content" in payload,
        "refine_memory": lambda: "version" in payload and "topic" in payload and "content" not in payload,
        "memorize_new_topic": lambda: "version" in payload and "topic" in payload and "content" not in payload,
        "search_memories": lambda: "topics" in payload,
    }
    shape = shapes.get(tool)
    return shape() if shape is not None else True


class Client:
    """One keep-alive connection; no retries (a retried write would blur what was acknowledged)."""

    #: `mnemo serve` closes a keep-alive connection idle for 5 s; one idle longer than this is replaced
    #: before use rather than found closed (no retry is needed, so none blurs what was acknowledged).
    IDLE_REUSE_SECONDS = 3.0

    def __init__(self, port: int, headers: dict[str, str], timeout: float = 60.0) -> None:
        self.port = port
        self.headers = {"Content-Type": "application/json", **headers}
        self.timeout = timeout
        self._connection: http.client.HTTPConnection | None = None
        self._last_used = 0.0

    def _open(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        if self._connection is not None and now - self._last_used > self.IDLE_REUSE_SECONDS:
            self.close()
        self._last_used = now
        if self._connection is None:
            self._connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self._connection

    def warm(self) -> None:
        """Connect and make one request, so that connecting is not part of any timing."""
        connection = self._open()
        connection.request("GET", "/health")
        connection.getresponse().read()

    def call(self, tool: str, body: dict[str, Any]) -> Answer:
        started = time.perf_counter()
        try:
            connection = self._open()
            connection.request("POST", f"/v1/tools/{tool}", json.dumps(body), self.headers)
            response = connection.getresponse()
            raw = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as error:
            self.close()
            return Answer(tool, 0, None, 1000 * (time.perf_counter() - started), f"{type(error).__name__}: {error}")
        ms = 1000 * (time.perf_counter() - started)
        try:
            payload: Any = json.loads(raw)
        except ValueError:
            payload = raw[:300].decode(errors="replace")
        return Answer(tool, status, payload, ms)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def identity(tenant: str, user: str) -> dict[str, str]:
    return {"X-Mnemo-Tenant": tenant, "X-Mnemo-User": user, "X-Mnemo-Project": PROJECT, "X-Mnemo-Roles": "writer"}


# ------------------------------------------------------------- bookkeeping
@dataclass
class Stats:
    """What one client saw; merged after the run (no locks while it runs)."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    answers: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    failures: list[str] = field(default_factory=list)
    requests: int = 0

    def record(self, answer: Answer) -> Answer:
        self.requests += 1
        if answer.transport_error is None:
            self.latencies[answer.tool].append(answer.ms)
        self.answers[answer.tool][answer.outcome] += 1
        failure = answer.failure
        if failure is not None:
            self.failures.append(f"{answer.tool}: {failure}: {str(answer.payload)[:200]}")
        return answer

    def merge(self, other: Stats) -> None:
        self.requests += other.requests
        for tool, samples in other.latencies.items():
            self.latencies[tool].extend(samples)
        for tool, counts in other.answers.items():
            self.answers[tool].update(counts)
        self.failures.extend(other.failures)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(ordered), "p50": pick(0.50), "p95": pick(0.95), "p99": pick(0.99), "max": ordered[-1]}


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(WHEN)}"


def token(rng: random.Random, client: int, seq: int) -> str:
    """A word no other memory holds (letters and digits only, so BM25 keeps it whole)."""
    return f"tok{client:03d}x{seq:04d}q{rng.getrandbits(32):08x}"


@dataclass
class Memory:
    token: str
    memory_id: str
    layer: str


# ----------------------------------------------------------------- the load
class LoadClient:
    def __init__(self, index: int, port: int, ops: int, seed: int, tenant: str = "load") -> None:
        self.index = index
        self.ops = ops
        self.rng = random.Random(seed * 1000 + index)
        self.client = Client(port, identity(tenant, f"client-{index:03d}"))
        self.stats = Stats()
        self.operations: Counter[str] = Counter()
        self.live: list[Memory] = []
        self.deleted: list[Memory] = []
        self.deduplicated: list[str] = []
        self.conversations: list[tuple[str, str, str]] = []  # message_id, user_input, its unique word
        self.refines: dict[str, int] = {}  # marker -> the version refine_memory answered
        self.conflicts = 0
        self.missed_own_reads: list[str] = []
        self.foreign_results: list[str] = []  # other users' memories returned from this user's layer
        self.mismatched: list[str] = []  # successes answering another request of the same tool
        self.seq = 0

    def run(self, barrier: threading.Barrier) -> None:
        self.client.warm()
        barrier.wait()
        kinds, weights = list(MIX), list(MIX.values())
        for _ in range(self.ops):
            kind = self.rng.choices(kinds, weights)[0]
            if kind in ("delete", "search") and not self.live:
                kind = "add"
            self.operations[kind] += 1
            getattr(self, f"_{kind}")()
        self.client.close()

    def _call(self, tool: str, body: dict[str, Any]) -> Answer:
        return self.stats.record(self.client.call(tool, body))

    def _add(self) -> None:
        self.seq += 1
        word = token(self.rng, self.index, self.seq)
        layer = "project" if self.rng.random() < 0.25 else "user"
        content = f"{sentence(self.rng)}; reference {word}, ticket OPS-{self.rng.randint(1000, 9999)}"
        answer = self._call("memory_add", {"content": content, "layer": layer, "tags": ["load"]})
        if answer.ok:
            if answer.payload.get("deduplicated"):
                self.deduplicated.append(word)
            else:
                self.live.append(Memory(word, answer.payload["memoryId"], layer))

    def _search(self) -> None:
        memory = self.rng.choice(self.live)
        answer = self._call("memory_search", search_body(memory))
        if not answer.ok:
            return
        if memory.memory_id not in {r["memoryId"] for r in answer.payload["results"]}:
            self.missed_own_reads.append(memory.token)
        if memory.layer == "user":  # only the caller's own memories may come back from its user layer
            own = f"tok{self.index:03d}x"
            self.foreign_results += [r["content"] for r in answer.payload["results"] if own not in r["content"]]

    def _delete(self) -> None:
        memory = self.live.pop(self.rng.randrange(len(self.live)))
        answer = self._call("memory_delete", {"memoryId": memory.memory_id})
        (self.deleted if answer.ok else self.live).append(memory)

    def _conversation(self) -> None:
        self.seq += 1
        message_id = f"load-{self.index:03d}-{self.seq:04d}-{self.rng.getrandbits(32):08x}"
        word = token(self.rng, self.index, self.seq)
        body = conversation_body(message_id, f"Can you check {self.rng.choice(THINGS)} for me? Ref {word}", self.rng)
        answer = self._call("add_conversation", body)
        if answer.ok:
            self.conversations.append((message_id, body["user_input"], word))
            if answer.payload["data"]["message_id"] != message_id:
                self.mismatched.append(f"add_conversation {message_id} answered for {answer.payload['data']}")

    def _refine(self) -> None:
        recalled = self._call("recall_memory", {"topic": TOPIC})
        if not recalled.ok:
            self.conflicts += recalled.code == "CONFLICT"
            return
        self.seq += 1
        marker, body = refine_body(recalled.payload, self.index, self.seq, self.rng)
        answer = self._call("refine_memory", body)
        if answer.ok:
            self.refines[marker] = answer.payload["version"]
        elif answer.code == "CONFLICT":
            self.conflicts += 1


def search_body(memory: Memory) -> dict[str, Any]:
    return {"query": memory.token, "layers": [memory.layer], "threshold": 0, "limit": 10}


def refine_body(recalled: dict[str, Any], client: int, seq: int, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A unique marker line, and the refine of the shared topic that appends it at the version recalled."""
    marker = f"marker-{client:03d}-{seq:04d}-{rng.getrandbits(32):08x}"
    body = {
        "topic": TOPIC,
        "newContent": f"{recalled['content']}\n- {marker}",
        "expectedVersion": recalled["version"],
    }
    return marker, body


def topic_body(topic: str, content: str) -> dict[str, Any]:
    return {"topic": topic, "tags": ["load"], "summary": f"Notes written under load ({topic}).", "content": content}


def in_parallel(
    items: list[Any], check: Callable[[Client, Any], bool], port: int, who: Callable[[Any], str], workers: int = 1
) -> list[Any]:
    """Run ``check`` on every item from ``workers`` threads, as the item's own caller; the items it refused.

    One worker by default: `mnemo serve` may answer concurrent callers with each other's requests
    (Powertools keeps the current event on a class attribute), which would blur the checks.
    """
    refused: list[Any] = []
    lock = threading.Lock()

    def work(share: list[Any]) -> None:
        clients: dict[str, Client] = {}
        bad = []
        for item in share:
            name = who(item)
            if name not in clients:
                clients[name] = Client(port, identity(*name.split("/", 1)))
            if not check(clients[name], item):
                bad.append(item)
        for client in clients.values():
            client.close()
        with lock:
            refused.extend(bad)

    threads = [threading.Thread(target=work, args=(items[i::workers],)) for i in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return refused


def poll(
    items: list[Any], check: Callable[[Client, Any], bool], port: int, who: Callable[[Any], str], tries: int
) -> tuple[list[Any], int]:
    """Check every item; re-check the refused ones up to ``tries`` times, 0.5 s apart.

    Returns the items still refused and how many passed only on a later try.
    """
    refused = in_parallel(items, check, port, who)
    first = len(refused)
    for _ in range(tries):
        if not refused:
            break
        time.sleep(0.5)
        refused = in_parallel(refused, check, port, who)
    return refused, first - len(refused)


def found_by_search(client: Client, memory: Memory) -> bool:
    answer = client.call("memory_search", search_body(memory))
    return answer.ok and memory.memory_id in {r["memoryId"] for r in answer.payload["results"]}


def conversation_body(message_id: str, user_input: str, rng: random.Random) -> dict[str, Any]:
    return {
        "message_id": message_id,
        "explanation": "load test",
        "user_input": user_input,
        "agent_response": f"Done: {sentence(rng)}.",
    }


def conversation_found(client: Client, message_id: str, user_input: str, word: str) -> bool:
    """Found by message_id (a key lookup), and by a keyword retrieval of its unique word (the index)."""
    body = {"query": word, "explanation": "verify the load run", "message_id": message_id}
    answer = client.call("retrieve_conversation", body)
    if not answer.ok:
        return False
    found = answer.payload["data"]["conversations"]
    if not (len(found) == 1 and found[0]["message_id"] == message_id and found[0]["user_input"] == user_input):
        return False
    body = {"query": word, "explanation": "verify the load run", "retrieval_strategy": "keyword", "max_results": 5}
    answer = client.call("retrieve_conversation", body)
    return answer.ok and message_id in {c["message_id"] for c in answer.payload["data"]["conversations"]}


def markers_in(content: str, prefix: str = "marker-") -> list[str]:
    return [line[2:] for line in content.splitlines() if line.startswith(f"- {prefix}")]


def run_load(args: argparse.Namespace) -> int:
    directory = Path(tempfile.mkdtemp(prefix="mnemo-load-"))
    server = ServerProcess(directory / "data", args.embedder).start()
    try:
        status = _load(args, server)
    finally:
        server.stop()
    return _tidy(directory, status)


def _tidy(directory: Path, status: int) -> int:
    """Remove the run's data directory, or keep it (with the server's log) when a check failed."""
    if status == 0:
        shutil.rmtree(directory, ignore_errors=True)
    else:
        print(f"kept the data directory and the server log for inspection: {directory}")
    return status


def _load(args: argparse.Namespace, server: ServerProcess) -> int:
    owner = Client(server.port, identity("load", "owner"))
    created = owner.call("memorize_new_topic", topic_body(TOPIC, "# Shared load topic\n\nOne line per refine:"))
    if not created.ok:
        raise RuntimeError(f"memorize_new_topic failed: {created.payload}")
    owner.call("memory_search", {"query": "warm up"})  # the model is loaded before the clock starts

    clients = [LoadClient(i, server.port, args.ops, args.seed) for i in range(args.clients)]
    barrier = threading.Barrier(args.clients + 1)
    threads = [threading.Thread(target=c.run, args=(barrier,)) for c in clients]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started

    stats, operations = Stats(), Counter[str]()
    for c in clients:
        stats.merge(c.stats)
        operations.update(c.operations)
    live = [m for c in clients for m in c.live]
    deleted = [m for c in clients for m in c.deleted]
    conversations = [item for c in clients for item in c.conversations]
    refines = {marker: version for c in clients for marker, version in c.refines.items()}
    conflicts = sum(c.conflicts for c in clients)
    missed_own_reads = [t for c in clients for t in c.missed_own_reads]
    foreign_results = [t for c in clients for t in c.foreign_results]
    mismatched = [t for c in clients for t in c.mismatched]
    deduplicated = [t for c in clients for t in c.deduplicated]
    print(
        f"{args.clients} clients x {args.ops} operations: {stats.requests} requests in {seconds:.1f} s; verifying",
        flush=True,
    )

    # ------------------------------------------------------------ verification
    user_of = {m.token: f"load/client-{int(m.token[3:6]):03d}" for m in (*live, *deleted)}
    lost_memories, late_memories = poll(live, found_by_search, server.port, lambda m: user_of[m.token], args.tries)
    found_deleted, _ = poll(
        deleted, lambda cl, m: not found_by_search(cl, m), server.port, lambda m: user_of[m.token], 0
    )
    lost_conversations, late_conversations = poll(
        conversations,
        lambda client, item: conversation_found(client, *item),
        server.port,
        lambda item: f"load/client-{item[0][5:8]}",
        args.tries,
    )
    final = owner.call("recall_memory", {"topic": TOPIC})
    owner.close()
    present = markers_in(final.payload["content"]) if final.ok else []
    version = final.payload["version"] if final.ok else None
    versions = sorted(refines.values())
    topic_check = {
        "finalVersion": version,
        "expectedVersion": 1 + len(refines),
        "successfulRefines": len(refines),
        "conflicts": conflicts,
        "ackedMarkersMissing": sorted(set(refines) - set(present)),
        "unackedMarkersPresent": sorted(set(present) - set(refines)),
        "answeredVersionsDistinct": versions == list(range(2, 2 + len(refines))),
    }
    topic_ok = (
        version == 1 + len(refines)
        and not topic_check["ackedMarkersMissing"]
        and not topic_check["unackedMarkersPresent"]
        and topic_check["answeredVersionsDistinct"]
    )

    # ------------------------------------------------------------------ report
    latency = {tool: percentiles(stats.latencies.get(tool, [])) for tool in TOOLS}
    answers = {tool: dict(stats.answers.get(tool, {})) for tool in TOOLS}
    errors_by_code: Counter[str] = Counter()
    for counts in stats.answers.values():
        errors_by_code.update({code: n for code, n in counts.items() if code != "ok"})
    verification = {
        "memoriesAcknowledged": len(live) + len(deleted) + len(deduplicated),
        "memoriesLive": len(live),
        "memoriesLost": len(lost_memories),
        "memoriesLostSample": [f"{m.token} {m.memory_id} ({m.layer})" for m in lost_memories[:10]],
        "memoriesFoundOnlyAfterRetry": late_memories,
        "memoriesDeduplicated": len(deduplicated),
        "deletedMemoriesFound": len(found_deleted),
        "deleted": len(deleted),
        "ownReadsMissedDuringLoad": len(missed_own_reads),
        "ownReadsMissedSample": missed_own_reads[:10],
        "otherUsersMemoriesReturned": len(foreign_results),
        "otherUsersMemoriesSample": foreign_results[:5],
        "answersForAnotherRequest": len(mismatched),
        "answersForAnotherRequestSample": mismatched[:5],
        "conversationsAcknowledged": len(conversations),
        "conversationsLost": len(lost_conversations),
        "conversationsLostSample": [item[0] for item in lost_conversations[:10]],
        "conversationsFoundOnlyAfterRetry": late_conversations,
        "topic": topic_check,
    }
    passed = (
        not lost_memories
        and not found_deleted
        and not lost_conversations
        and not missed_own_reads
        and not foreign_results
        and not mismatched
        and topic_ok
        and not stats.failures
    )

    rows = [
        [tool, latency[tool]["n"], latency[tool]["p50"], latency[tool]["p95"], latency[tool]["p99"],
         ", ".join(f"{code} {n}" for code, n in sorted(answers[tool].items()))]
        for tool in TOOLS
    ]  # fmt: skip
    print(f"\n{args.clients} clients x {args.ops} operations over HTTP, embedder {args.embedder} (ms)")
    print(table(["tool", "n", "p50", "p95", "p99", "answers"], rows))
    print(
        f"\n{sum(operations.values())} operations ({', '.join(f'{k} {v}' for k, v in sorted(operations.items()))}), "
        f"{stats.requests} requests in {seconds:.1f} s: {sum(operations.values()) / seconds:.0f} operations/s, "
        f"{stats.requests / seconds:.0f} requests/s"
    )
    print(f"errors by code: {dict(errors_by_code) or 'none'}; failures (5xx, non-envelope, no answer): "
          f"{len(stats.failures)}")  # fmt: skip
    for line in stats.failures[:10]:
        print(f"  {line}")
    check_rows = [
        ["acknowledged memory_add found by memory_search", f"{len(live) - len(lost_memories)}/{len(live)}"],
        ["deleted memories found", f"{len(found_deleted)}/{len(deleted)}"],
        ["own live memory missed by a search during the load", str(len(missed_own_reads))],
        ["another user's memory returned by a user-layer search", str(len(foreign_results))],
        ["add_conversation answered with another message_id", str(len(mismatched))],
        ["acknowledged add_conversation found by message_id and keyword",
         f"{len(conversations) - len(lost_conversations)}/{len(conversations)}"],
        ["topic version / 1 + successful refines", f"{version} / {1 + len(refines)} ({conflicts} CONFLICT)"],
        ["acknowledged markers missing / unacknowledged present",
         f"{len(topic_check['ackedMarkersMissing'])} / {len(topic_check['unackedMarkersPresent'])}"],
    ]  # fmt: skip
    print()
    print(table(["check", "result"], check_rows))
    print(f"\nverification {'PASSED' if passed else 'FAILED'}")
    path = write_results(
        "load" if args.embedder == "hashing" else f"load-{args.embedder}",
        {
            "embedder": args.embedder,
            "clients": args.clients,
            "opsPerClient": args.ops,
            "seed": args.seed,
            "cpus": os.cpu_count(),
            "seconds": seconds,
            "operations": dict(operations),
            "requests": stats.requests,
            "operationsPerSecond": sum(operations.values()) / seconds,
            "requestsPerSecond": stats.requests / seconds,
            "milliseconds": latency,
            "answers": answers,
            "errorsByCode": dict(errors_by_code),
            "failures": stats.failures[:50],
            "failureCount": len(stats.failures),
            "verification": verification,
            "passed": passed,
        },
    )
    print(f"wrote {path}")
    return 0 if passed else 1


# ---------------------------------------------------------------- the crash
@dataclass
class Written:
    """One write sent in the crash burst: the request, and what became of it."""

    kind: str  # memory, conversation, topic, refine
    client: int
    key: str  # memory token, message_id, topic name or refine marker
    tool: str
    body: dict[str, Any]
    word: str = ""  # the unique word a search finds it by
    answered: bool = False
    acked: bool = False
    retried: bool = False  # acknowledged only when sent again after the restart
    memory_id: str = ""
    retry_answer: str = ""

    @property
    def who(self) -> str:
        return f"crash/writer-{self.client:03d}"


class CrashClient:
    def __init__(self, index: int, port: int, seed: int, on_ack: Callable[[], None], max_ops: int) -> None:
        self.index = index
        self.rng = random.Random(seed * 1000 + index)
        self.client = Client(port, identity("crash", f"writer-{index:03d}"), timeout=30)
        self.on_ack = on_ack
        self.max_ops = max_ops
        self.written: list[Written] = []
        self.stats = Stats()
        self.seq = 0

    def run(self) -> None:
        kinds, weights = list(CRASH_MIX), list(CRASH_MIX.values())
        for _ in range(self.max_ops):
            if not getattr(self, f"_{self.rng.choices(kinds, weights)[0]}")():
                break  # no answer: the server is gone
        self.client.close()

    def _send(self, write: Written) -> bool:
        """Send a write; False when no answer came back."""
        self.written.append(write)
        answer = self.client.call(write.tool, write.body)
        if answer.transport_error is not None:
            return False
        write.answered = True
        self.stats.record(answer)
        if answer.ok:
            write.acked = True
            write.memory_id = answer.payload.get("memoryId", "")
            if answer.payload.get("deduplicated"):
                write.kind = "deduplicated"
            self.on_ack()
        return True

    def _add(self) -> bool:
        self.seq += 1
        word = token(self.rng, self.index, self.seq)
        content = f"{sentence(self.rng)}; reference {word}, ticket OPS-{self.rng.randint(1000, 9999)}"
        layer = "project" if self.rng.random() < 0.25 else "user"
        body = {"content": content, "layer": layer, "idempotencyKey": f"add-{word}"}
        return self._send(Written("memory", self.index, word, "memory_add", body, word))

    def _conversation(self) -> bool:
        self.seq += 1
        message_id = f"crash-{self.index:03d}-{self.seq:04d}-{self.rng.getrandbits(32):08x}"
        word = token(self.rng, self.index, self.seq)
        body = conversation_body(message_id, f"Can you check {self.rng.choice(THINGS)} for me? Ref {word}", self.rng)
        return self._send(Written("conversation", self.index, message_id, "add_conversation", body, word))

    def _topic(self) -> bool:
        self.seq += 1
        name = f"crash-topic-{self.index:03d}-{self.seq:04d}"
        word = token(self.rng, self.index, self.seq)
        body = topic_body(name, f"# {name}\n\n{sentence(self.rng)}; reference {word}")
        return self._send(Written("topic", self.index, name, "memorize_new_topic", body, word))

    def _refine(self) -> bool:
        recalled = self.client.call("recall_memory", {"topic": TOPIC})
        if recalled.transport_error is not None:
            return False
        self.stats.record(recalled)
        if not recalled.ok:
            return True
        self.seq += 1
        marker, body = refine_body(recalled.payload, self.index, self.seq, self.rng)
        return self._send(Written("refine", self.index, marker, "refine_memory", body))


def records_holding(data_dir: Path, words: Iterable[str]) -> set[str] | None:
    """Diagnostics only: which words appear in a memory record of the SQLite store (None if unreadable)."""
    import sqlite3

    try:
        connection = sqlite3.connect(f"file:{data_dir / 'mnemo.sqlite3'}?mode=ro", uri=True, timeout=30)
        try:
            return {
                word
                for word in words
                if connection.execute(
                    "SELECT 1 FROM items WHERE sk LIKE 'MEM#%' AND data LIKE ? LIMIT 1", (f"%{word}%",)
                ).fetchone()
            }
        finally:
            connection.close()
    except sqlite3.Error:
        return None


def retry(client: Client, write: Written) -> bool:
    """Send an unanswered write again, as its client would; False on an unexpected answer."""
    answer = client.call(write.tool, write.body)
    write.retry_answer = f"HTTP {answer.status} {str(answer.payload)[:300]}"
    exists = write.kind == "topic" and answer.code == "CONFLICT"  # stored before the kill
    if answer.ok or exists:
        write.acked = write.retried = True
        if answer.ok:
            write.memory_id = answer.payload.get("memoryId", "")
        return True
    return False


def written_is_there(client: Client, write: Written) -> bool:
    """What a user sees of an acknowledged write: found by its search, and by key where there is one."""
    if write.kind == "memory":
        layer = write.body["layer"]
        return found_by_search(client, Memory(write.word, write.memory_id, layer))
    if write.kind == "conversation":
        return conversation_found(client, write.key, write.body["user_input"], write.word)
    if write.kind == "topic":
        recalled = client.call("recall_memory", {"topic": write.key})
        if not recalled.ok or recalled.payload["content"] != write.body["content"]:
            return False
        found = client.call("search_memories", {"query": write.word, "threshold": 0, "limit": 5})
        return found.ok and write.key in found.payload["topics"]
    raise ValueError(write.kind)


def crash_scenario(
    data_dir: Path,
    *,
    clients: int = 8,
    kill_after: int = 200,
    embedder: str = "hashing",
    seed: int = 5,
    max_ops: int = 100_000,
    tries: int = 60,
) -> dict[str, Any]:
    """Write from ``clients`` threads, SIGKILL the server after ``kill_after`` acknowledged writes,
    restart it on the same data directory, send the unanswered writes again (idempotently), and
    look for every acknowledged write, re-checking a missing one up to ``tries`` times 0.5 s apart
    (``foundOnlyAfterRecheck`` counts those: the restarted server drains its index outbox before it
    serves, so none should need it). Returns the counts."""
    server = ServerProcess(data_dir, embedder).start()
    try:
        owner = Client(server.port, identity("crash", "owner"))
        created = owner.call("memorize_new_topic", topic_body(TOPIC, "# Shared crash topic\n\nOne line per refine:"))
        owner.close()
        if not created.ok:
            raise RuntimeError(f"memorize_new_topic failed: {created.payload}")
        acked = 0
        lock, reached = threading.Lock(), threading.Event()

        def on_ack() -> None:
            nonlocal acked
            with lock:
                acked += 1
                if acked >= kill_after:
                    reached.set()

        writers = [CrashClient(i, server.port, seed, on_ack, max_ops) for i in range(clients)]
        threads = [threading.Thread(target=w.run) for w in writers]
        for thread in threads:
            thread.start()
        while not reached.wait(0.05) and any(t.is_alive() for t in threads):
            pass
        mid_burst = all(t.is_alive() for t in threads)
        killed_pid = server.pid
        server.kill9()
        acked_at_kill = acked
        for thread in threads:
            thread.join()
    finally:
        server.stop()

    restarted = ServerProcess(data_dir, embedder, log=server.log).start()
    try:
        report = _after_restart(data_dir, restarted, writers, tries)
    finally:
        restarted.stop()
    return {"killedPid": killed_pid, "killedMidBurst": mid_burst, "acknowledgedWhenKilled": acked_at_kill, **report}


def _after_restart(data_dir: Path, server: ServerProcess, writers: list[CrashClient], tries: int) -> dict[str, Any]:
    written = [w for writer in writers for w in writer.written]
    stats = Stats()
    for writer in writers:
        stats.merge(writer.stats)
    unanswered = {kind: [w for w in written if w.kind == kind and not w.answered] for kind in KINDS}
    # Diagnostics: an unanswered memory_add may have reached the records before the index.
    in_records = records_holding(data_dir, [w.word for w in unanswered["memory"]])
    retries = {w.key for w in written if w.kind != "refine" and not w.answered}
    refused_retries = in_parallel([w for w in written if w.key in retries], retry, server.port, lambda w: w.who)

    counts: dict[str, dict[str, Any]] = {}
    for kind in ("memory", "conversation", "topic"):
        acked = [w for w in written if w.kind == kind and w.acked]
        lost, late = poll(acked, written_is_there, server.port, lambda w: w.who, tries)
        counts[kind] = {
            "sent": len([w for w in written if w.kind == kind]),
            "acknowledged": len([w for w in acked if not w.retried]),
            "unanswered": len(unanswered[kind]),
            "acknowledgedOnRetry": len([w for w in acked if w.retried]),
            "retryRefused": len([w for w in refused_retries if w.kind == kind]),
            "foundAfterRestart": len(acked) - len(lost),
            "foundOnlyAfterRecheck": late,
            "lost": len(lost),
            "lostKeys": [f"{w.key}{' (retried)' if w.retried else ''}" for w in lost][:20],
        }
    if in_records is not None:
        counts["memory"]["unansweredInRecordsBeforeRetry"] = len(in_records)

    owner = Client(server.port, identity("crash", "owner"))
    final = owner.call("recall_memory", {"topic": TOPIC})
    owner.close()
    present = markers_in(final.payload["content"]) if final.ok else []
    refines = [w for w in written if w.kind == "refine"]
    acked_markers = {w.key for w in refines if w.acked}
    version = final.payload["version"] if final.ok else None
    lost_markers = sorted(acked_markers - set(present))
    counts["refine"] = {
        "sent": len(refines),
        "acknowledged": len(acked_markers),
        "unanswered": len(unanswered["refine"]),
        "unansweredPresent": len(set(present) & {w.key for w in unanswered["refine"]}),
        "foundAfterRestart": len(acked_markers & set(present)),
        "lost": len(lost_markers),
        "lostKeys": lost_markers[:20],
        "finalVersion": version,
        "markersPresent": len(present),
        "versionMatchesMarkers": version == 1 + len(present) and set(present) <= {w.key for w in refines},
    }
    lost = sum(c["lost"] for c in counts.values())
    return {
        "acknowledged": sum(c["acknowledged"] for c in counts.values()),
        "acknowledgedOnRetry": sum(c.get("acknowledgedOnRetry", 0) for c in counts.values()),
        "foundAfterRestart": sum(c["foundAfterRestart"] for c in counts.values()),
        "lost": lost,
        "unanswered": sum(c["unanswered"] for c in counts.values()),
        "deduplicated": len([w for w in written if w.kind == "deduplicated"]),
        "byKind": counts,
        "answersBeforeKill": {tool: dict(c) for tool, c in stats.answers.items()},
        "failuresBeforeKill": stats.failures[:20],
        "refusedRetries": [f"{w.tool} {w.key}: {w.retry_answer}" for w in refused_retries][:20],
        "passed": lost == 0
        and counts["refine"]["versionMatchesMarkers"]
        and not stats.failures
        and not refused_retries,
    }


def run_crash(args: argparse.Namespace) -> int:
    directory = Path(tempfile.mkdtemp(prefix="mnemo-crash-"))
    started = time.perf_counter()
    report = crash_scenario(
        directory / "data",
        clients=args.clients,
        kill_after=args.kill_after,
        embedder=args.embedder,
        seed=args.seed,
        tries=args.tries,
    )
    seconds = time.perf_counter() - started
    headers = ["write", "sent", "acknowledged", "unanswered", "acked on retry", "found after restart", "lost"]
    rows = [
        [kind, c["sent"], c["acknowledged"], c["unanswered"], c.get("acknowledgedOnRetry", "-"),
         c["foundAfterRestart"], c["lost"]]
        for kind, c in report["byKind"].items()
    ]  # fmt: skip
    print(
        f"\n{args.clients} writers, SIGKILL after {report['acknowledgedWhenKilled']} acknowledged writes "
        f"(mid-burst: {report['killedMidBurst']}), restarted on the same data directory, embedder {args.embedder}"
    )
    print(table(headers, rows))
    refine = report["byKind"]["refine"]
    print(
        f"\nshared topic: version {refine['finalVersion']}, {refine['markersPresent']} markers "
        f"(version = 1 + markers: {refine['versionMatchesMarkers']}); "
        f"{refine['unansweredPresent']} of {refine['unanswered']} unanswered refines landed"
    )
    memory = report["byKind"]["memory"]
    if "unansweredInRecordsBeforeRetry" in memory:
        print(
            f"unanswered memory_add: {memory['unansweredInRecordsBeforeRetry']} of {memory['unanswered']} "
            "had reached the records before the kill"
        )
    for line in [*report["failuresBeforeKill"][:10], *report["refusedRetries"][:10]]:
        print(f"  failure: {line}")
    print(
        f"\nacknowledged {report['acknowledged']} (+{report['acknowledgedOnRetry']} on retry), found after restart "
        f"{report['foundAfterRestart']}, lost {report['lost']}: {'PASSED' if report['passed'] else 'FAILED'} "
        f"({seconds:.0f} s)"
    )
    path = write_results(
        "load-crash" if args.embedder == "hashing" else f"load-crash-{args.embedder}",
        {"embedder": args.embedder, "clients": args.clients, "killAfter": args.kill_after, "seed": args.seed,
         "cpus": os.cpu_count(), "seconds": seconds, **report},
    )  # fmt: skip
    print(f"wrote {path}")
    return _tidy(directory, 0 if report["passed"] else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, help="concurrent clients (default 50; with --crash 8)")
    parser.add_argument("--ops", type=int, default=200, help="operations per client")
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "bge"])
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--tries", type=int, default=40, help="re-checks (0.5 s apart) of a write not found at once")
    parser.add_argument("--crash", action="store_true", help="kill -9 the server mid-burst, restart, check")
    parser.add_argument("--kill-after", type=int, default=400, help="with --crash: acknowledged writes before the kill")
    args = parse_args(parser, {"ops": 12, "kill_after": 15, "tries": 10})
    if args.clients is None:
        args.clients = (3 if args.crash else 4) if args.smoke else (8 if args.crash else 50)
    raise SystemExit(run_crash(args) if args.crash else run_load(args))


if __name__ == "__main__":
    main()

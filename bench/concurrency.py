"""Throughput and latency of `mnemo serve` under 1, 2, 4 and 8 concurrent clients.

    python bench/concurrency.py [--clients 1,2,4,8] [--duration 8] [--warmup 2] [--rounds 1]
                                [--embedder bge|hashing] [--source DIR] [--serve-arg ARG ...] [--label NAME]
                                [--smoke]

`mnemo serve` runs as a real subprocess (`python -m mnemo.cli serve`) on a free
port over a fresh data directory, with the bge model unless --embedder says
otherwise. --source names a checkout's layers/shared to serve from: it goes
first on the server's PYTHONPATH, so an older commit is measured with this
same client (the script checks that the server interpreter imports mnemo from
there, and stops if not). Each --serve-arg is passed on to `mnemo serve`
(`--serve-arg=--workers --serve-arg=2`).

First --memories memories are stored through memory_add, spread over as many
users as the largest client count, in one tenant. Then, for memory_search and
then memory_add, at each client count: that many threads, each its own user
with one keep-alive http.client connection (Content-Type: application/json on
every call), call the tool back to back for --warmup seconds, unmeasured, and
then for --duration seconds. A search asks a random sentence of the seeding
vocabulary over the caller's user layer (threshold 0, limit 10, so every
search ranks and returns results). An add stores two new sentences carrying a
unique token, as a user new to that step, so no scope grows from step to step;
adds answered `deduplicated` (no write) are counted in the JSON.

Throughput counts the calls answered within the measured window; p50/p95/p99
are the client's wall time per call in milliseconds. --rounds N sweeps all
steps N times (a busy machine's noise moves single steps a lot): calls/s is
then the median round's, percentiles pool the calls of all rounds, and each
round's calls/s is kept in the JSON. Any answer that is not a success (an
error envelope, a 5xx, a broken connection) is an error: it is counted and its
first examples are printed, the server's log is kept, and the exit status is
non-zero; a server that does not start or dies during a step stops the run
with its log's tail.

Where the cores go: inside each measured window, the CPU time (user + system,
from /proc) of the server's process tree (`mnemo serve` and its worker
processes) and of this client process is read at the window's start and end.
The table shows the cores each used (CPU seconds / window), the server's CPU
milliseconds per call, and the machine's idle share. At 8 clients on 2 cores
this says whether the server is short of CPU, and how much of the machine the
client itself takes.

Prints one table and the ratio of the largest to the smallest client count's
memory_search throughput (8 against 1 by default), and writes
bench/results/concurrency-<label>.json. Client and server share the machine,
so its load average is recorded before and after.

--smoke: 1 and 2 clients, 0.5 s measured after 0.2 s of warm-up, 20 memories, with the bge model;
results to a temporary folder (bench/common.py).
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import NAMES, THINGS, VERBS, WHEN, Client, free_port, percentiles

from common import parse_args, table, write_results

TENANT = "concurrency"
#: The repository's root: paths inside it are recorded relative to it.
ROOT_DIR = str(Path(__file__).resolve().parents[1])
TOOLS = ("memory_search", "memory_add")
ADJECTIVES = ["quietly", "twice", "carefully", "late", "early", "again", "remotely", "by hand", "with help"]


# ------------------------------------------------------------------ the server
class Server:
    """`mnemo serve` from ``source`` (or the installed mnemo) as a subprocess; its output goes to a log file."""

    def __init__(self, directory: Path, embedder: str, source: Path | None, serve_args: list[str]) -> None:
        self.directory = directory
        self.source = source
        self.serve_args = serve_args
        self.log = directory / "serve.log"
        self.env = {**os.environ, "MNEMO_EMBEDDER": embedder}
        if source is not None:
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), os.environ.get("PYTHONPATH")]))
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def mnemo_location(self) -> str:
        """Where the server's interpreter, with the server's environment and directory, imports mnemo from."""
        probe = subprocess.run(
            [sys.executable, "-c", "import mnemo; print(mnemo.__file__)"],
            env=self.env,
            cwd=self.directory,
            capture_output=True,
            text=True,
            check=True,
        )
        return probe.stdout.strip()

    def start(self, ready_seconds: float = 120.0) -> Server:
        """Start and poll /health until it answers; a server that exits or never answers raises with its log."""
        self.port = free_port()
        command = [sys.executable, "-m", "mnemo.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--data-dir", str(self.directory / "data"), *self.serve_args]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + ready_seconds
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/health")
                status = connection.getresponse().status
                connection.close()
                if status == 200:
                    return self
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"mnemo serve did not answer /health within {ready_seconds:.0f} s:\n{self.log_tail()}")

    def check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"mnemo serve exited with status {self.process.returncode}:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def source_commit(source: Path | None) -> str | None:
    """The commit checked out at ``source`` (a directory inside a git work tree), if any."""
    directory = source or Path(__file__).resolve().parent
    probe = subprocess.run(["git", "-C", str(directory), "rev-parse", "HEAD"], capture_output=True, text=True)
    return probe.stdout.strip() or None


# ------------------------------------------------------------------ CPU time
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def process_tree(root: int) -> list[int]:
    """``root`` and every process descending from it (uvicorn's worker processes), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                parents[int(entry.name)] = int(fields[1])  # ppid: the 4th field, 2nd after the name
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (utime and stime, fields 14 and 15)."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])
    return total / _TICKS


def machine_idle_seconds() -> float:
    """Seconds every core of the machine spent idle so far (/proc/stat's idle and iowait, summed over cores)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    return (int(fields[3]) + int(fields[4])) / _TICKS


def cpu_sample(server_root: int | None) -> dict[str, float]:
    """CPU seconds so far: the server's process tree, this (client) process, the machine's idle time."""
    return {
        "server": cpu_seconds(process_tree(server_root)) if server_root else 0.0,
        "client": sum(os.times()[:2]),
        "idle": machine_idle_seconds(),
    }


# ------------------------------------------------------------------- the load
def sentence(rng: random.Random) -> str:
    return f"{rng.choice(NAMES)} {rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(WHEN)} {rng.choice(ADJECTIVES)}"


def user_headers(user: int, writer_of_step: int | None = None) -> dict[str, str]:
    """A seeded user (who searches), or with ``writer_of_step`` a user of that memory_add step alone.

    Adds go to users of their own, new in each step, so that neither the searched scopes nor the scopes
    an add checks for near-duplicates grow from one step or round to the next.
    """
    name = f"user-{user:02d}" if writer_of_step is None else f"writer-{writer_of_step}-{user:02d}"
    return {"X-Mnemo-Tenant": TENANT, "X-Mnemo-User": name}


def body_for(tool: str, rng: random.Random, user: int, seq: int) -> dict[str, Any]:
    if tool == "memory_search":
        return {"query": sentence(rng), "layers": ["user"], "threshold": 0, "limit": 10}
    # Two sentences: with one, about 6% of a user's first 1,000 adds came within bge's near-duplicate
    # cosine of an earlier one and were answered from it without a write; with two, none.
    unique = f"u{user:02d}n{seq:06d}r{rng.getrandbits(32):08x}"
    content = f"{sentence(rng)}, and {sentence(rng).lower()}; ticket OPS-{rng.randint(1000, 9999)}, ref {unique}"
    return {"content": content, "tags": ["bench"]}


@dataclass
class Worker:
    """One client thread: its user, its connection, and what it saw inside the measured window."""

    user: int
    port: int
    seed: int
    latencies: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    deduplicated: int = 0

    def run(self, tool: str, barrier: threading.Barrier, window: list[float]) -> None:
        rng = random.Random(self.seed)
        client = Client(self.port, user_headers(self.user, self.seed if tool == "memory_add" else None))
        try:
            client.warm()
        except (OSError, http.client.HTTPException) as error:
            self.errors.append(f"connect: {type(error).__name__}: {error}")
        barrier.wait()
        start, end = window
        seq = 0
        while time.perf_counter() < end:
            seq += 1
            answer = client.call(tool, body_for(tool, rng, self.user, seq))
            measured = start <= time.perf_counter() <= end  # not in the warm-up, not after the window closed
            if measured:
                self.latencies.append(answer.ms)
            if answer.ok:
                self.outcomes["ok" if measured else "ok, unmeasured"] += 1
                self.deduplicated += measured and bool(answer.payload.get("deduplicated"))
            else:  # an error counts wherever it falls
                self.outcomes[answer.outcome] += 1
                if len(self.errors) < 5:
                    reason = answer.transport_error or f"HTTP {answer.status}"
                    self.errors.append(f"{reason}: {str(answer.payload)[:200]}")
        client.close()


def step(server: Server, tool: str, clients: int, warmup: float, duration: float, seed: int) -> dict[str, Any]:
    """``clients`` threads calling ``tool`` for ``warmup`` + ``duration`` seconds; the measured window's figures.

    ``seed`` must differ between steps: the same seed would send the same memory_add contents again.
    """
    workers = [Worker(user, server.port, seed * 1000 + user) for user in range(clients)]
    window = [0.0, 0.0]

    def open_window() -> None:  # run once every worker has connected, before any is released
        window[0] = time.perf_counter() + warmup
        window[1] = window[0] + duration

    barrier = threading.Barrier(clients, action=open_window)
    threads = [threading.Thread(target=w.run, args=(tool, barrier, window)) for w in workers]
    for thread in threads:
        thread.start()
    # This (main) thread only watches: it reads the CPU counters at the measured window's start and end.
    root = server.process.pid if server.process is not None else None
    while window[1] == 0.0 and any(thread.is_alive() for thread in threads):
        time.sleep(0.01)
    time.sleep(max(0.0, window[0] - time.perf_counter()))
    before = cpu_sample(root)
    time.sleep(max(0.0, window[1] - time.perf_counter()))
    after = cpu_sample(root)
    for thread in threads:
        thread.join()
    server.check_alive()
    latencies = [ms for w in workers for ms in w.latencies]
    outcomes: Counter[str] = Counter()
    for w in workers:
        outcomes.update(w.outcomes)
    errors = sum(n for outcome, n in outcomes.items() if not outcome.startswith("ok"))
    return {
        "tool": tool,
        "clients": clients,
        "callsPerSecond": round(len(latencies) / duration, 1),
        "samples": latencies,
        "errors": errors,
        "outcomes": outcomes,
        "errorSamples": [e for w in workers for e in w.errors][:10],
        "deduplicated": sum(w.deduplicated for w in workers),
        # Cores used inside the measured window (CPU seconds / window seconds), and the machine's idle cores.
        "cores": {key: round((after[key] - before[key]) / duration, 3) for key in ("server", "client", "idle")},
    }


def combine(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One tool and client count over its rounds: the median round's calls/s, percentiles of all calls."""
    samples = [ms for r in rounds for ms in r["samples"]]
    outcomes: Counter[str] = Counter()
    for r in rounds:
        outcomes.update(r["outcomes"])
    return {
        "tool": rounds[0]["tool"],
        "clients": rounds[0]["clients"],
        "calls": len(samples),
        "callsPerSecond": statistics.median(r["callsPerSecond"] for r in rounds),
        "callsPerSecondByRound": [r["callsPerSecond"] for r in rounds],
        "latencyMs": {k: round(v, 1) if isinstance(v, float) else v for k, v in percentiles(samples).items()},
        "errors": sum(r["errors"] for r in rounds),
        "outcomes": dict(outcomes),
        "errorSamples": [e for r in rounds for e in r["errorSamples"]][:10],
        "deduplicated": sum(r["deduplicated"] for r in rounds),
        # The median round's (the same round whose calls/s is reported when rounds are odd).
        "cores": {
            key: round(statistics.median(r["cores"][key] for r in rounds), 2) for key in ("server", "client", "idle")
        },
    }


def seed_memories(server: Server, memories: int, users: int, seed: int) -> int:
    """Store ``memories`` memories spread over ``users`` users (one thread each); answers the count that failed."""
    failed = [0] * users

    def fill(user: int) -> None:
        rng = random.Random(seed * 7919 + user)
        client = Client(server.port, user_headers(user))
        for seq in range(user, memories, users):
            answer = client.call("memory_add", body_for("memory_add", rng, user, seq))
            if not answer.ok:
                failed[user] += 1
                if failed[user] <= 3:
                    print(f"seeding user-{user:02d}: {answer.transport_error or answer.status} {answer.payload}")
        client.close()

    threads = [threading.Thread(target=fill, args=(user,)) for user in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(failed)


# ------------------------------------------------------------------ the run
def run(args: argparse.Namespace) -> int:
    counts = sorted({int(n) for n in args.clients.split(",")})
    directory = Path(tempfile.mkdtemp(prefix="mnemo-concurrency-"))
    server = Server(directory, args.embedder, args.source, args.serve_arg)
    location = server.mnemo_location()
    if args.source is not None and not Path(location).resolve().is_relative_to(args.source.resolve()):
        print(f"the server would import mnemo from {location}, not from --source {args.source}", file=sys.stderr)
        return 2
    commit = source_commit(args.source)
    print(f"serving mnemo from {Path(location).parent} (commit {commit}), mnemo serve {' '.join(args.serve_arg)}")
    load_before = os.getloadavg()
    server.start()
    try:
        started = time.perf_counter()
        failed = seed_memories(server, args.memories, max(counts), args.seed)
        print(f"seeded {args.memories} memories over {max(counts)} users in {time.perf_counter() - started:.1f} s")
        measured: dict[tuple[str, int], list[dict[str, Any]]] = {(t, n): [] for t in TOOLS for n in counts}
        for round_ in range(args.rounds):
            for (tool, clients), rounds in measured.items():
                seed = (args.seed * 100 + round_) * 100 + clients
                result = step(server, tool, clients, args.warmup, args.duration, seed)
                rounds.append(result)
                print(
                    f"  round {round_ + 1}, {tool} x{clients}: {result['callsPerSecond']:.1f} calls/s, "
                    f"p95 {percentiles(result['samples'])['p95']:.1f} ms, errors {result['errors']}",
                    flush=True,
                )
        steps = [combine(rounds) for rounds in measured.values()]
    except Exception:
        server.stop()
        print(f"kept the data directory and the server log for inspection: {directory}", file=sys.stderr)
        raise
    server.stop()
    load_after = os.getloadavg()

    rows = [
        [
            s["tool"],
            s["clients"],
            s["calls"],
            s["callsPerSecond"],
            s["latencyMs"]["p50"],
            s["latencyMs"]["p95"],
            s["latencyMs"]["p99"],
            s["errors"],
            s["cores"]["server"],
            s["cores"]["client"],
            s["cores"]["idle"],
            round(1000 * s["cores"]["server"] / s["callsPerSecond"], 2) if s["callsPerSecond"] else None,
        ]
        for s in steps
    ]
    headers = ["tool", "clients", "calls", "calls/s", "p50 ms", "p95 ms", "p99 ms", "errors"]
    headers += ["server cores", "client cores", "idle cores", "server CPU ms/call"]
    print(table(headers, rows))
    search = {s["clients"]: s["callsPerSecond"] for s in steps if s["tool"] == "memory_search"}
    low, high = min(counts), max(counts)
    ratio = round(search[high] / search[low], 2) if search[low] else None
    print(f"memory_search throughput, {high} clients against {low}: {ratio}x")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    errors = sum(s["errors"] for s in steps) + failed
    for s in steps:
        for sample in s["errorSamples"]:
            print(f"error, {s['tool']} x{s['clients']}: {sample}")

    path = write_results(
        f"concurrency-{args.label}",
        {
            "label": args.label,
            "embedder": args.embedder,
            "source": str(args.source) if args.source else None,
            # Relative to the repository when inside it: a committed result names no machine's folders.
            "mnemoImportedFrom": os.path.relpath(location, ROOT_DIR)
            if os.path.abspath(location).startswith(ROOT_DIR + os.sep)
            else location,
            "commit": commit,
            "serveArgs": args.serve_arg,
            "cores": os.cpu_count(),
            "memoriesSeeded": args.memories,
            "seedingFailures": failed,
            "warmupSeconds": args.warmup,
            "durationSeconds": args.duration,
            "rounds": args.rounds,
            "loadAverageBefore": [round(x, 2) for x in load_before],
            "loadAverageAfter": [round(x, 2) for x in load_after],
            "searchThroughputRatio": {"clients": [high, low], "ratio": ratio},
            "steps": steps,
            "errors": errors,
        },
    )
    print(f"wrote {path}")
    if errors:
        print(f"{errors} errors; kept the data directory and the server log: {directory}", file=sys.stderr)
        return 1
    shutil.rmtree(directory, ignore_errors=True)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="1,2,4,8", help="comma-separated concurrent client counts")
    parser.add_argument("--duration", type=float, default=8.0, help="measured seconds per tool and client count")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each measured window")
    parser.add_argument("--rounds", type=int, default=1, help="sweeps over every step; calls/s is the median round")
    parser.add_argument("--memories", type=int, default=400, help="memories stored before the first step")
    parser.add_argument("--embedder", default="bge", choices=["bge", "hashing"])
    parser.add_argument("--source", type=Path, help="a checkout's layers/shared to serve from (first on PYTHONPATH)")
    parser.add_argument("--serve-arg", action="append", default=[], help="an argument for `mnemo serve` (repeatable)")
    parser.add_argument("--label", default="current", help="names bench/results/concurrency-<label>.json")
    parser.add_argument("--seed", type=int, default=11)
    args = parse_args(parser, {"clients": "1,2", "duration": 0.5, "warmup": 0.2, "memories": 20})
    raise SystemExit(run(args))


if __name__ == "__main__":
    main()

"""`mnemo serve`'s worker processes: as many as the cores by default, gone with their supervisor, and each
one drains the extraction notices it queued.

- A bare `mnemo serve`, and `--workers auto`, serve from one process per core this process may use: the
  processes listening on the port, besides the supervisor, are that many, each the supervisor's child.
- If the supervising process is killed outright (SIGKILL, an OOM kill), its workers would go on serving
  the port and holding the data directory, so a restart would find the port taken. Each worker watches its
  parent and shuts down gracefully once it is gone.
- A worker's calls queue their extraction notices in that worker's own queue; the worker runs them (a run
  triggered by ``turns``), not only the supervisor's sweep of waiting streams (triggered as ``idle``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scripted_model import ScriptedModel

from helpers import http_call, serve_process


def _pids_listening(port: int) -> set[int]:
    """The processes with a socket listening on ``port`` (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                    inodes.add(fields[9])
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    found.add(int(pid))
        except OSError:
            continue
    return found


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_workers_exit_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    process, url = serve_process(tmp_path / "data", {"MNEMO_EMBEDDER": "hashing"}, ["--workers", "2"])
    port = int(url.rsplit(":", 1)[1])
    workers = _pids_listening(port) - {process.pid}
    assert len(workers) == 2, workers
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    for pid in workers:  # each notices within a second or so, then shuts down gracefully
        for _ in range(300):  # up to 30 s: a bound for "it exits", not a measure of how fast
            if _state(pid) in ("gone", "Z"):
                break
            time.sleep(0.1)
        assert _state(pid) in ("gone", "Z"), f"worker {pid} outlived its supervisor"
    assert _refused(port)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


@pytest.mark.parametrize("args", [[], ["--workers", "auto"]], ids=["bare", "auto"])
def test_serve_starts_one_worker_per_usable_core(tmp_path: Path, args: Sequence[str]) -> None:
    cores = len(os.sched_getaffinity(0))  # the test's own cores are the server's: it inherits the mask
    assert cores > 1, "this test needs a machine with two cores or more"
    process, url = serve_process(tmp_path / "data", {"MNEMO_EMBEDDER": "hashing"}, args, one_process=False)
    try:
        workers = _pids_listening(int(url.rsplit(":", 1)[1])) - {process.pid}
        assert len(workers) == cores, workers
        assert {_parent(pid) for pid in workers} == {process.pid}
    finally:
        assert _stop(process) == 0


def _extraction(url: str, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    status, answer = http_call(url, tool, body, tenant="acme", user="alice", session="s1")
    assert status == 200, answer
    return dict(answer)


def test_each_worker_runs_the_extraction_notices_it_queued(tmp_path: Path) -> None:
    model = ScriptedModel()
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MNEMO_", "MEMORY_"))}
    env.update(
        MNEMO_EMBEDDER="hashing",
        MNEMO_OPENAI_BASE_URL=model.url,
        MNEMO_EXTRACTION_STRATEGIES="facts",
        MNEMO_EXTRACTION_JUDGE="false",
        MNEMO_EXTRACTION_EVERY_TURNS="2",
    )
    process, url = serve_process(tmp_path / "data", env, ["--workers", "2"])
    try:
        turns = [
            {"id": "t1", "role": "user", "content": "I moved to Lisbon", "at": "2025-03-01T09:00:00Z"},
            {"id": "t2", "role": "assistant", "content": "Welcome to Lisbon!", "at": "2025-03-01T09:00:05Z"},
        ]
        _extraction(url, "add_messages", {"messages": turns})
        runs: list[dict[str, Any]] = []
        for _ in range(600):  # up to 60 s: a bound for "a run happens", not a measure of how fast
            status = _extraction(url, "extraction_status", {})
            if (runs := status["recentRuns"]) and status["pendingTurns"] == 0:
                break
            time.sleep(0.1)
        # Run by the worker on its own notice ("turns"); the supervisor's sweep, 15 s on, says "idle".
        assert [run["trigger"] for run in runs] == ["turns"], runs
    finally:
        model.close()
        assert _stop(process) == 0

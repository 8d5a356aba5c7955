"""`mnemo serve --workers 2`: worker processes do not outlive their supervisor.

If the supervising process is killed outright (SIGKILL, an OOM kill), its
workers would go on serving the port and holding the data directory, so a
restart would find the port taken. Each worker watches its parent and shuts
down gracefully once it is gone.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

from helpers import serve_process


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

"""Concurrent callers of one real `mnemo serve` each get their own answer, under their own identity.

Tool calls run side by side in the server's threads (``entry/tool_http.py``, no process-wide lock). When
the server resolved through Powertools without a lock, a concurrent request was routed and run with
another's path, body and identity (Powertools keeps the request being resolved in class state); this
holds every answer to its own request. The server runs with a tiny thread switch interval
(sys.setswitchinterval) so that such a race shows in a couple of seconds instead of once in
thousands of calls; the code is unchanged. Every check is on answers, never on a clock.
"""

from __future__ import annotations

import threading
from pathlib import Path

from load import Client, ServerProcess, identity

CALLERS = 8
ROUNDS = 30


def test_concurrent_callers_never_get_each_others_requests(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", "hashing", switch_interval=1e-5).start()
    problems: list[str] = []
    stored: dict[int, list[tuple[str, str]]] = {i: [] for i in range(CALLERS)}
    barrier = threading.Barrier(CALLERS)

    def caller(i: int) -> None:
        client = Client(server.port, identity("concurrent", f"user{i:02d}"))
        client.warm()
        barrier.wait()
        for k in range(ROUNDS):
            word = f"kw{i:02d}x{k:02d}"
            added = client.call("memory_add", {"content": f"note {k} of user{i:02d}: {word}"})
            if added.ok:
                stored[i].append((word, added.payload["memoryId"]))
            else:
                problems.append(f"user{i:02d} memory_add: {added.outcome} {str(added.payload)[:160]}")
            found = client.call("memory_search", {"query": "note of user", "threshold": 0, "limit": 5})
            if not found.ok:
                problems.append(f"user{i:02d} memory_search: {found.outcome} {str(found.payload)[:160]}")
                continue
            for result in found.payload["results"]:
                if f"user{i:02d}" not in result["content"]:
                    problems.append(f"user{i:02d} was shown another user's memory: {result['content']!r}")
        client.close()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # One caller at a time from here: each acknowledged memory must be in its owner's layer.
        for i, memories in stored.items():
            client = Client(server.port, identity("concurrent", f"user{i:02d}"))
            for word, memory_id in memories:
                found = client.call("memory_search", {"query": word, "threshold": 0})
                if not found.ok or memory_id not in [r["memoryId"] for r in found.payload["results"]]:
                    problems.append(f"user{i:02d}'s acknowledged memory {word} is not in user{i:02d}'s layer")
            client.close()
    finally:
        server.stop()
    assert problems == [], f"{len(problems)} problems, e.g. {problems[:5]}"

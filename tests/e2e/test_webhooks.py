"""Local change events as a webhook meets them: `mnemo serve` (the real command, a child process) POSTs every event
of a scripted run to a receiver (a real HTTP server in a thread) that checks each signature with the snippet
docs/events.md gives (run here as written), across a kill -9 of the server.

The receiver is down (503) for the first half of the run, so the server is killed with events logged but not
delivered and deliveries waiting for a retry; then it answers 500 to the first attempt of some events and 200
otherwise. After a restart on the same data directory (with two worker processes), the rest of the run is
written. Deduplicated by event id, what the receiver accepted must be exactly the run's events: none missing,
none unexpected, one id per change, every redelivery with the same id and body. `mnemo events` shows the
delivery log.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from event_schemas import subject, validate

from helpers import serve_process

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec-e2e-5f1d2c3b4a"
HEADERS = {"Content-Type": "application/json", "X-Mnemo-Tenant": "acme", "X-Mnemo-User": "alice"}


def documented_verifier() -> Callable[[str, str, bytes], bool]:
    """``verify_mnemo_signature`` from docs/events.md, the code block after ``<!-- verify-snippet -->``."""
    text = (ROOT / "docs" / "events.md").read_text()
    found = re.search(r"<!-- verify-snippet -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert found, "docs/events.md lost its verification snippet"
    namespace: dict[str, Any] = {}
    exec(compile(found.group(1), "docs/events.md", "exec"), namespace)
    return namespace["verify_mnemo_signature"]  # type: ignore[no-any-return]


class Receiver:
    """What the webhook saw: every POST (id header, body, whether its signature held, the status answered)."""

    def __init__(self) -> None:
        self.verify = documented_verifier()
        self.up = False
        self.lock = threading.Lock()
        self.posts: list[dict[str, Any]] = []

    def answer(self, event_id: str, body: bytes, signature: str) -> int:
        with self.lock:
            signed = self.verify(SECRET, signature, body)
            seen_before = any(post["id"] == event_id for post in self.posts)
            # Up: every event whose id ends in 0-7 (half of them) fails its first attempt.
            status = (
                200 if self.up and (seen_before or event_id[-1] not in "01234567") else (503 if not self.up else 500)
            )
            if not signed:
                status = 401
            self.posts.append({"id": event_id, "body": body, "signed": signed, "status": status})
            return status

    def accepted(self) -> dict[str, dict[str, Any]]:
        with self.lock:
            return {post["id"]: json.loads(post["body"]) for post in self.posts if post["status"] == 200}


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = state.answer(self.headers["Mnemo-Event-Id"], body, self.headers["Mnemo-Signature"])
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_port}/hooks/mnemo"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def call(url: str, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"{url}/v1/tools/{tool}", json.dumps(body).encode(), HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
    assert answer.get("success") is not False, answer
    return answer


def mnemo_events(data_dir: Path, *args: str) -> str:
    command = [sys.executable, "-m", "mnemo.cli", "events", "--data-dir", str(data_dir), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout


def test_every_event_of_a_run_reaches_the_webhook_once_by_id_across_kill_9(
    tmp_path: Path, receiver: tuple[Receiver, str]
) -> None:
    state, hook = receiver
    data_dir = tmp_path / "data"
    env = {
        "MNEMO_EMBEDDER": "hashing",
        "MNEMO_WEBHOOKS": json.dumps([{"url": hook, "secret": SECRET}]),
    }
    process, url = serve_process(data_dir, env)
    expected: set[tuple[str, str]] = set()
    try:
        kept = call(url, "memory_add", {"content": "The audit room is B-204"})["memoryId"]
        gone = call(url, "memory_add", {"content": "Lunch is at noon"})["memoryId"]
        call(url, "memory_delete", {"memoryId": gone})
        fact = call(url, "add_memory_link", {"subject": "Alice", "predicate": "works_at", "object": "Acme"})["factId"]
        call(url, "invalidate_memory_link", {"factId": fact})
        call(url, "file_write", {"path": "mnemo:///blocks/persona.md", "content": "Be brief."})
        expected |= {
            ("memory.added", kept),
            ("memory.added", gone),
            ("memory.deleted", gone),
            ("graph.fact.added", fact),
            ("graph.fact.invalidated", fact),
            ("block.written", "blocks/persona.md"),
        }
        # Until the receiver has refused at least one POST: deliveries are then waiting for a retry.
        for _ in range(200):
            if state.posts:
                break
            time.sleep(0.05)
        assert state.posts and not state.accepted()
        # ...and until the worker has recorded that refusal: a POST answered but not yet written down when the
        # process is killed leaves no failed attempt to list.
        for _ in range(40):
            if "HTTP 503" in mnemo_events(data_dir, "--failed"):
                break
            time.sleep(0.25)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    failed = mnemo_events(data_dir, "--failed")
    assert "HTTP 503" in failed and "pending" in failed, failed

    state.up = True
    process, url = serve_process(data_dir, env, ["--workers", "2"])
    try:
        later = call(url, "memory_add", {"content": "The fire drill is on Friday"})["memoryId"]
        call(url, "file_delete", {"path": "mnemo:///blocks/persona.md"})
        call(url, "file_write", {"path": "mnemo:///skills/review.md", "content": "Check the tests first."})
        expected |= {
            ("memory.added", later),
            ("block.deleted", "blocks/persona.md"),
            ("file.written", "skills/review.md"),
        }
        for _ in range(600):  # the first refusals were retried with backoff (1 s, 2 s, 4 s ...)
            if {subject(body) for body in state.accepted().values()} >= expected:
                break
            time.sleep(0.1)
        time.sleep(1.5)  # anything delivered twice or unexpected would have come by now
        accepted = state.accepted()
        shown = json.loads(mnemo_events(data_dir, "--json"))
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()

    assert all(post["signed"] for post in state.posts), "every POST carried a valid signature"
    by_subject: dict[tuple[str, str], set[str]] = {}
    for event_id, body in accepted.items():
        assert body["id"] == event_id
        validate(body)
        by_subject.setdefault(subject(body), set()).add(event_id)
    assert set(by_subject) - expected == set(), "events nobody caused"
    assert expected - set(by_subject) == set(), "events missing"
    assert all(len(ids) == 1 for ids in by_subject.values()), f"one change, several ids: {by_subject}"
    redelivered = {post["id"] for post in state.posts if post["status"] != 200}
    assert redelivered, "no POST was refused: the retries were not exercised"
    for event_id in redelivered:
        assert event_id in accepted, "a refused event was never delivered"
        bodies = {post["body"] for post in state.posts if post["id"] == event_id}
        assert len(bodies) == 1, "a redelivery changed the body"
    deliveries = {row["event_id"]: row for row in shown["deliveries"]}
    assert set(deliveries) == set(accepted) and all(row["status"] == "delivered" for row in deliveries.values())
    assert any(row["attempts"] > 1 for row in deliveries.values())

"""Helpers the tests import (conftest.py holds only fixtures)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.runtime import Services
from mnemo.settings import Settings


def make_services(data_dir: Path, embedder: str = "hashing") -> Services:
    return Services(Settings(data_dir=data_dir, embedder=embedder))  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


#: The line `mnemo serve` prints once its socket is bound.
_SERVING = re.compile(r"^mnemo serving on (http://\S+) ")


def serve_process(
    data_dir: Path, env: Mapping[str, str], args: Sequence[str] = (), *, one_process: bool = True
) -> tuple[subprocess.Popen[str], str]:
    """`mnemo serve` as a child process (the real command, on a free port), once it answers /health.

    The server binds port 0 and the URL is read from the line it prints: a port picked here and bound
    there could be taken in between by a test running beside it (pytest-xdist workers, other runs).
    Only the lines up to that one are read; the rest of the output is the caller's. ``one_process``: serve
    from one process (``--workers 1``) unless ``args`` name the workers; False leaves serve's default.
    """
    import pytest

    # One process unless the test asks for more: two test workers each starting a server of one process per
    # core would load the machine twice over (tests/e2e/test_http_workers.py covers the default, auto).
    workers = ["--workers", "1"] if one_process and "--workers" not in args else []
    command = [sys.executable, "-m", "mnemo.cli", "serve", "--port", "0", "--data-dir", str(data_dir), *workers, *args]
    process = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    printed: list[str] = []
    announced: list[str] = []

    def read_until_serving() -> None:
        assert process.stdout is not None
        for line in iter(process.stdout.readline, ""):
            printed.append(line)
            if found := _SERVING.match(line):
                announced.append(found.group(1))
                return

    reader = threading.Thread(target=read_until_serving, daemon=True)
    reader.start()
    reader.join(timeout=60)
    if announced:
        url = announced[0]
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)
                return process, url
            except OSError:
                if process.poll() is not None:
                    break
                time.sleep(0.1)
    process.kill()
    reader.join(timeout=10)
    pytest.fail(f"mnemo serve did not start: {''.join(printed)}{process.communicate()[0]}")


def ctx(user: str | None = "alice", tenant: str = "acme", roles: tuple[str, ...] = (), **ids: str) -> RequestContext:
    return RequestContext(tenant=tenant, user=user, roles=frozenset(roles), **ids)


@contextmanager
def local_server(services: Services) -> Iterator[str]:
    """`mnemo serve` in a thread on a free port, over ``services``; yields its base URL."""
    from mnemo.entry.local_server import serve_in_thread
    from mnemo.runtime import set_services

    set_services(services)
    server, thread = serve_in_thread("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        set_services(None)


def http_request(
    base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """One real HTTP request; the status and the JSON (or text) answer, errors included."""
    import json
    import urllib.error
    import urllib.request

    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        status, raw, kind = error.code, error.read(), error.headers.get("Content-Type", "")
    return status, (json.loads(raw) if "json" in kind else raw.decode())


def http_call(base: str, tool: str, body: Any, **identity: str) -> tuple[int, Any]:
    """POST /v1/tools/{tool} with the identity as X-Mnemo-* headers."""
    wire = {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    return http_request(base, "POST", f"/v1/tools/{tool}", body, {"Content-Type": "application/json", **wire})


def with_outbox(records: Any, build: Any) -> tuple[Any, Any]:
    """A service built outside ``Services`` with an index outbox of its own: ``build(outbox)``.

    The outbox drains the families the service brings (itself, or its ``families``).
    """
    from mnemo.outbox import IndexOutbox

    families: dict[str, Any] = {}
    outbox = IndexOutbox(records, lambda: families)
    service = build(outbox)
    for family in getattr(service, "families", (service,)):
        families[family.family] = family
    return service, outbox


def drained(outbox: Any) -> tuple[int, int]:
    """Drain an index outbox: (records indexed, markers still failing)."""
    report = outbox.drain()
    return report.indexed, report.failed


def race(*runs: Callable[[], Any]) -> list[Any]:
    """Run each callable on its own thread, released together; each result or the MnemoError it raised."""
    barrier = threading.Barrier(len(runs))
    results: list[Any] = [None] * len(runs)

    def run(n: int) -> None:
        barrier.wait()
        try:
            results[n] = runs[n]()
        except MnemoError as error:
            results[n] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(runs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(not thread.is_alive() for thread in threads)
    unexpected = [r for r in results if isinstance(r, MnemoError) and r.code != "CONFLICT"]
    assert not unexpected, [(r.code, r.message) for r in unexpected]
    return results


def bedrock_extraction_services(data_dir: Path, model_id: str, **env: str) -> tuple[Services, Any]:
    """The embedded stack configured as the template configures a function that extracts (MNEMO_EXTRACTOR=bedrock,
    the model id, and any other ``MNEMO_*`` settings in ``env``), with its bedrock-runtime client stubbed by
    botocore's Stubber (returned, not yet activated)."""
    import boto3
    from botocore.stub import Stubber

    settings = Settings.from_env(
        {
            "MNEMO_DATA_DIR": str(data_dir),
            "MNEMO_EMBEDDER": "hashing",
            "MNEMO_EXTRACTOR": "bedrock",
            "MNEMO_EXTRACTOR_MODEL_ID": model_id,
            **env,
        }
    )
    services = Services(settings)
    client = boto3.client(
        "bedrock-runtime", region_name="eu-west-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    services._bedrock_for_extraction = lambda: client  # type: ignore[method-assign]
    return services, Stubber(client)

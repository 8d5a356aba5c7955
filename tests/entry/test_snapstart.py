"""mnemo.entry.snapstart: the after-restore hook of the functions SnapStart snapshots (the SnapStart parameter).

The runtime's Snapshot Restore for Python (``snapshot_restore_py``) exists only in Lambda's Python runtime, so
these tests put a stand-in of its one function used here, ``register_after_restore``, in ``sys.modules``: it
records the hooks registered, and a test calls them as Lambda would after a restore. What the hook acts on is
real: a fresh interpreter importing the SnapStart functions' entries (what INIT runs), ``random``'s state, and
a botocore client and the OpenSearch client that pool keep-alive connections to an HTTP server on a free
loopback port, which counts the connections it accepts.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mnemo.entry import snapstart
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings
from mnemo.tools.registry import load_catalog

ROOT = Path(__file__).resolve().parents[2]


class StandIn(types.ModuleType):
    """``snapshot_restore_py`` as this test needs it: the hooks registered after restore, in order."""

    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.after_restore: list[Callable[[], None]] = []

    def register_after_restore(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.after_restore.append(lambda: function(*args, **kwargs))


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    stand_in = StandIn()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", stand_in)
    monkeypatch.setattr(snapstart, "_registered", False)
    return stand_in


def test_without_the_runtime_module_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # what an import outside Lambda finds: none
    monkeypatch.setattr(snapstart, "_registered", False)
    assert snapstart.register() is False


def test_the_hook_is_registered_once(runtime: StandIn) -> None:
    assert snapstart.register() is True
    assert snapstart.register() is True  # a second entry importing it registers nothing more
    assert len(runtime.after_restore) == 1


def test_after_a_restore_random_draws_a_sequence_of_its_own(runtime: StandIn) -> None:
    snapstart.register()
    random.seed(44)  # the state every environment restored from one snapshot would share
    shared = random.getstate()
    (restore,) = runtime.after_restore
    restore()
    assert random.getstate() != shared


# ------------------------------------------------------------- connections ---
class CountingServer(ThreadingHTTPServer):
    """Answers DynamoDB's ListTables and OpenSearch's root with keep-alive, and counts the connections."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self._count = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count:
            self.connections += 1
        super().process_request(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the clients pool the connection

    def _answer(self, body: dict[str, Any], content_type: str) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # DynamoDB's JSON protocol
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer({"TableNames": []}, "application/x-amz-json-1.0")

    def do_GET(self) -> None:  # OpenSearch's root
        self._answer({"version": {"number": "2.19.0"}}, "application/json")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[CountingServer]:
    running = CountingServer()
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()


def test_after_a_restore_the_clients_connect_again(
    runtime: StandIn, server: CountingServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The services as INIT would leave them if it warmed its clients: each pooled connection is dropped, and
    each client opens a new one on its next request, then keeps it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    settings = Settings(
        data_dir=tmp_path,
        records="dynamodb",
        records_table="mnemo-records-snapstart",
        vector_index="opensearch",
        opensearch_endpoint=server.url,
        aws_endpoint=server.url,
        aws_region="eu-west-1",
        embedder="hashing",
    )
    services = Services(settings)
    set_services(services)
    try:
        records = services.records.client  # type: ignore[attr-defined]
        index = services.index.client  # type: ignore[attr-defined]
        for _ in range(2):
            records.list_tables()
            index.transport.perform_request("GET", "/")
        assert server.connections == 2  # one for each client, kept
        snapstart.register()
        (restore,) = runtime.after_restore
        restore()
        assert services.index.client is not index  # type: ignore[attr-defined]  # made anew on first use
        for _ in range(2):
            services.records.client.list_tables()  # type: ignore[attr-defined]
            services.index.client.transport.perform_request("GET", "/")  # type: ignore[attr-defined]
        assert server.connections == 4  # one new connection each, kept again
    finally:
        set_services(None)


def test_without_services_built_a_restore_closes_nothing(runtime: StandIn) -> None:
    set_services(None)
    snapstart.register()
    (restore,) = runtime.after_restore
    restore()  # nothing to close: no client was made
    assert snapstart.drop_connections(Services(Settings())) == 0


# ------------------------------------------------------------------- INIT ---
INIT = """
import json, os, random, sys, runpy
drawn = []
urandom = os.urandom
def counted(n):
    drawn.append(n)
    return urandom(n)
os.urandom = random._urandom = counted  # uuid4 reads the first, secrets (SystemRandom) the second
state = random.getstate()
for entry in sys.argv[1:]:
    runpy.run_path(entry)
import mnemo.runtime
clients = sys.modules.get("mnemo.adapters.aws.clients")
print(json.dumps({
    "urandom": len(drawn),
    "random": random.getstate() == state,
    "services": mnemo.runtime._services is not None,
    "clients": clients._cached_client.cache_info().currsize if clients else 0,
    "botocore": "botocore.client" in sys.modules,
}))
"""


def test_init_of_every_snapstart_function_draws_nothing_random_and_makes_no_client() -> None:
    """What each entry runs at import is what the snapshot holds: no random draw (the OS's random bytes, which
    secrets and uuid4 read, counted), no change to random's state, no services built, no AWS client made."""
    entries = [str(ROOT / "functions" / name / "app.py") for name in [*load_catalog(experimental=True), "mcp"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "POWERTOOLS_", "AWS_LAMBDA_"))}
    env["PYTHONPATH"] = str(ROOT / "layers" / "shared")
    env["MNEMO_EXPERIMENTAL"] = "true"  # as the template sets it where the outline tools are deployed
    done = subprocess.run(
        [sys.executable, "-c", INIT, *entries], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"urandom": 0, "random": True, "services": False, "clients": 0, "botocore": False}


REGISTERED = """
import importlib.util, json, sys, types
hooks = []
stand_in = types.ModuleType("snapshot_restore_py")
stand_in.register_after_restore = lambda function, *args, **kwargs: hooks.append(function)
sys.modules["snapshot_restore_py"] = stand_in
for n, path in enumerate(sys.argv[1:]):
    spec = importlib.util.spec_from_file_location(f"entry{n}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
from mnemo.entry import snapstart
print(json.dumps({"hooks": len(hooks), "ours": bool(hooks) and hooks[0] is snapstart.after_restore}))
"""


@pytest.mark.parametrize("function", ["memory_add", "mcp"])
def test_a_snapstart_functions_init_registers_the_hook_once(function: str) -> None:
    """Importing the entry (INIT, what the snapshot is taken after) registers ``after_restore`` with the runtime's
    module: a hook registered later would never run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMO_", "POWERTOOLS_", "AWS_LAMBDA_"))}
    env["PYTHONPATH"] = str(ROOT / "layers" / "shared")
    entry = str(ROOT / "functions" / function / "app.py")
    done = subprocess.run(
        [sys.executable, "-c", REGISTERED, entry, entry], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"hooks": 1, "ours": True}

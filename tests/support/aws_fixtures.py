"""AWS test fixtures built from template.yaml itself, so test tables cannot drift from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mnemo_codegen import cloudformation_yaml
from mnemo_codegen.cloudformation_yaml import CloudFormationLoader

__all__ = ["CloudFormationLoader"]

ROOT = Path(__file__).resolve().parents[2]
REGION = "eu-west-1"


def load_template() -> dict[str, Any]:
    """template.yaml, each intrinsic function a one-key mapping."""
    return cloudformation_yaml.load_template((ROOT / "template.yaml").read_text())


def create_records_table(client: Any, name: str, *, stream: bool = True) -> None:
    """Create a table with the RecordsTable key schema, stream and TTL that template.yaml declares.

    ``stream=False`` leaves the stream off for bulk tests: moto copies every
    table (and its stream) on each transaction, which grows with their size.
    """
    spec = load_template()["Resources"]["RecordsTable"]["Properties"]
    extra = {"StreamSpecification": {"StreamEnabled": True, **spec["StreamSpecification"]}} if stream else {}
    client.create_table(
        TableName=name,
        AttributeDefinitions=spec["AttributeDefinitions"],
        KeySchema=spec["KeySchema"],
        BillingMode=spec["BillingMode"],
        **extra,
    )
    ttl = spec["TimeToLiveSpecification"]
    client.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)


class SerialMotoServer:
    """A moto server that answers one request at a time.

    moto's own threaded server can interleave the check and the write of two
    conditional requests, which real DynamoDB never does for one item; serving
    requests one by one restores that per-request atomicity, so concurrency
    tests against it mean something.
    """

    def __init__(self) -> None:
        import threading

        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        class QuietHandler(WSGIRequestHandler):
            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass

        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=QuietHandler)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            region_name=REGION,
            endpoint_url=self.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)


#: What ``MotoProcess`` runs: a SerialMotoServer, its URL on stdout, until stdin closes.
_MOTO_PROCESS = """
import gc, sys
sys.path.insert(0, sys.argv[1])
from aws_fixtures import SerialMotoServer
server = SerialMotoServer()
gc.freeze()  # what moto loaded is kept for good: no collection walks it again
print(server.url, flush=True)
sys.stdin.read()
"""


class MotoProcess:
    """A SerialMotoServer in a process of its own, for benchmarks that time other processes against it: its
    heap, its garbage collections and its GIL are not the caller's (whose threads may serve stand-ins), so
    a timed request waits for moto alone. Same ``url``, ``client`` and ``close`` as SerialMotoServer."""

    def __init__(self) -> None:
        import subprocess
        import sys

        self._process = subprocess.Popen(
            [sys.executable, "-c", _MOTO_PROCESS, str(Path(__file__).resolve().parent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        self.url = self._process.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.close()
            raise RuntimeError("the moto process did not start")

    client = SerialMotoServer.client

    def close(self) -> None:
        import subprocess

        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


_shared: SerialMotoServer | None = None


def shared_moto_server() -> SerialMotoServer:
    """One serial moto server for the whole test session (a daemon thread; it ends with pytest)."""
    global _shared
    if _shared is None:
        _shared = SerialMotoServer()
    return _shared


def dynamodb_settings(server: SerialMotoServer, table: str, data_dir: Any, **extra: Any) -> Any:
    """Settings for a stack whose records live in ``table`` on the moto ``server`` (hashing embedder)."""
    from mnemo.settings import Settings

    return Settings(
        records="dynamodb",
        records_table=table,
        aws_endpoint=server.url,
        aws_region=REGION,
        data_dir=data_dir,
        embedder="hashing",
        **extra,
    )

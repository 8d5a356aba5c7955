"""`mnemo serve`: the local stand-in for API Gateway, on uvicorn.

The application is ``http_app`` (Starlette); this module binds the socket and
runs it:

- **One process or several.** ``workers=1`` serves from this process: tool
  calls run in threads side by side. ``workers>1`` starts that many processes
  on the one socket (uvicorn's supervisor); each opens the same data directory,
  and the embedded index replays the writes of the others. `mnemo serve`'s
  ``--workers`` is ``auto`` unless given: one process per core this process may
  use (``usable_cores``), so a bare `mnemo serve` uses the machine.
- **Extraction.** Each serving process drains the extraction notices it queued
  itself (``start_extraction_worker``); the process that owns the socket also
  sweeps every stream with waiting turns (what a restart left, or a notice lost).
- **Connections.** A listen backlog of 2048; at most ``limit_concurrency``
  connections and requests at once (beyond it, 503); an idle keep-alive
  connection closes after 5 s, and a request head must arrive within 10 s
  (``http_protocol``); a body within 30 s (``http_body``).
- **Shutdown.** SIGTERM or Ctrl-C stops accepting, lets requests in flight
  finish (up to 30 s), then drains the index outbox and exits 0.
- **A busy port** is one line and exit status 1 (``PortInUse``), not a trace.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ALLOW_HOSTS_ENV = "MNEMO_ALLOW_HOSTS"
ALLOW_ORIGINS_ENV = "MNEMO_ALLOW_ORIGINS"


#: ``--workers``' word for "one process per usable core".
AUTO_WORKERS = "auto"


def usable_cores() -> int:
    """The cores this process may run on, at least 1: ``os.process_cpu_count()`` on Python 3.13+ (the
    affinity mask, or ``-X cpu_count``), else the affinity mask where the platform has one (Linux), else
    the machine's count. A container's CPU quota (cgroups) is not counted: there, ``--workers N`` says it."""
    count: int | None
    if sys.version_info >= (3, 13):
        count = os.process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:
        count = os.cpu_count()
    return max(1, count or 1)


def worker_count(text: str) -> int:
    """What ``--workers`` asks for: ``auto`` is ``usable_cores()``; a whole number of at least 1 is itself.
    ValueError, with the line to show, for anything else (0, a negative, a fraction, a word)."""
    if text.strip().lower() == AUTO_WORKERS:
        return usable_cores()
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"must be {AUTO_WORKERS} or a whole number of at least 1, not {text!r}")
    return count


class PortInUse(Exception):
    """The address could not be bound; the message is the one line to show."""


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    workers: int = 1
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)
    verbose: bool = False
    #: Connections plus requests in progress beyond which uvicorn answers 503.
    limit_concurrency: int = 4096
    backlog: int = 2048
    graceful_seconds: int = 30


def bind(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket on host:port (IPv4 or IPv6 as the name resolves), or PortInUse."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        raise PortInUse(f"mnemo serve: cannot resolve host {host!r}: {error.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as error:
        sock.close()
        reason = "already in use" if error.errno == errno.EADDRINUSE else (error.strerror or str(error))
        raise PortInUse(f"mnemo serve: port {port} on {host} is {reason}; pick another with --port") from None
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def _config(app: Any, options: ServeOptions, *, factory: bool = False, log_config: Any = "default") -> Any:
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from mnemo.entry.http_protocol import GuardedH11Protocol

    return uvicorn.Config(
        app,
        factory=factory,
        http=GuardedH11Protocol,
        ws="none",
        lifespan="on",
        workers=options.workers,
        # X-Forwarded-* are not trusted: nothing sits in front of this server.
        proxy_headers=False,
        server_header=False,
        access_log=options.verbose,
        log_level="info" if options.verbose else "warning",
        log_config=LOGGING_CONFIG if log_config == "default" else log_config,
        timeout_keep_alive=5,
        limit_concurrency=options.limit_concurrency,
        backlog=options.backlog,
        timeout_graceful_shutdown=options.graceful_seconds,
    )


def app_from_environment() -> Any:
    """The application as a worker process builds it (uvicorn's factory): the allow lists from the environment."""
    from mnemo.entry.http_app import create_app

    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="parent-watch", daemon=True).start()

    hosts = [host for host in os.environ.get(ALLOW_HOSTS_ENV, "").split(",") if host]
    origins = [origin for origin in os.environ.get(ALLOW_ORIGINS_ENV, "").split(",") if origin]
    # The notices this worker's calls queue land in this process's own queue: nobody else can take them.
    start_extraction_worker(sweep=False)
    return create_app(hosts, origins, warm_up=True)


def start_extraction_worker(*, sweep: bool) -> None:
    """The local extraction consumer of this process (what the extraction Lambda does on AWS), when extraction
    is on and its queue is this process's own: the notices this process queued, as they come (a stream's
    ``every_turns``, its idle wake-up); with ``sweep``, also every stream with waiting turns every 15 s, which
    finds what a restart left and what other processes stored. One sweeping process is enough: the one that
    owns the socket. Two processes may run one stream at once, as an on-demand memory_extract may beside the
    background run: the ledger's writes are conditional, and the run that settles the turns first stands."""
    from mnemo.adapters.local.extraction_queue import LocalExtractionQueue
    from mnemo.entry.extraction_events import LocalWorker
    from mnemo.runtime import get_services

    services = get_services()
    queue = services.extraction_queue
    if services.learning.enabled and isinstance(queue, LocalExtractionQueue):
        LocalWorker(queue, sweep=services.learning.run_due if sweep else None).start()


def _exit_with_parent(parent: int) -> None:
    """Shut this worker down gracefully once its supervisor is gone (killed with SIGKILL, say): an orphaned
    worker would go on serving the port and holding the data directory."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def serve(options: ServeOptions, sock: socket.socket) -> None:
    """Serve on ``sock`` until SIGTERM or Ctrl-C, then shut down gracefully and return."""
    import uvicorn

    # uvicorn raises the signal again once it has shut down, for the handler in place before it; this one
    # makes that a normal return, so a SIGTERM ends the process with status 0.
    signal.signal(signal.SIGTERM, lambda *_: None)
    if options.workers <= 1:
        from mnemo.entry.http_app import create_app

        app = create_app(options.allowed_hosts, options.allowed_origins, warm_up=True)
        uvicorn.Server(_config(app, options)).run(sockets=[sock])
        return
    from uvicorn.supervisors import Multiprocess

    os.environ[ALLOW_HOSTS_ENV] = ",".join(options.allowed_hosts)
    os.environ[ALLOW_ORIGINS_ENV] = ",".join(options.allowed_origins)
    config = _config("mnemo.entry.local_server:app_from_environment", options, factory=True)
    Multiprocess(config, sockets=[sock]).run()


class ThreadedServer:
    """A server in a daemon thread of this process (tests, benchmarks): ``server_address`` and ``shutdown()``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, options: ServeOptions | None = None) -> None:
        import uvicorn

        from mnemo.entry.http_app import create_app

        options = options or ServeOptions(host=host, port=port)
        self._socket = bind(host, port, options.backlog)
        self.server_address = self._socket.getsockname()[:2]
        app = create_app(options.allowed_hosts, options.allowed_origins)
        self._server = uvicorn.Server(_config(app, options, log_config=None))
        self.thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        self.thread.start()
        while not self._server.started and self.thread.is_alive():
            self.thread.join(0.01)

    def shutdown(self) -> None:
        self._server.should_exit = True
        self.thread.join(timeout=35)
        self._socket.close()


def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadedServer, threading.Thread]:
    """The server in a thread on ``port`` (0: a free one); stop it with ``server.shutdown()``."""
    server = ThreadedServer(host, port)
    return server, server.thread

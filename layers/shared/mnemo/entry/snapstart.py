"""What a function does when Lambda resumes it from a SnapStart snapshot (the SnapStart parameter; docs/deploy.md).

With SnapStart, a function's INIT runs once, when its version is published, and every execution environment
then starts from a snapshot of that memory. What INIT leaves behind is shared by every environment restored
from it, and what it opened is stale:

- Connections. An HTTP connection pooled before the snapshot (the urllib3 pools of botocore and of the
  OpenSearch client) points at a peer that forgot it long ago. :func:`after_restore` drops the pooled
  connections of the SDK clients the process's services hold: a botocore client is closed (its pools empty, it
  opens new connections on its next request), any other client (OpenSearch's) is forgotten, and its adapter
  makes a new one on first use.
- Randomness. :mod:`random`'s generator state is in the snapshot, so every environment would draw the same
  sequence (the scheduled sync's tenant order, botocore's retry jitter): it is seeded again from the OS.
  ``secrets``, ``uuid.uuid4`` and ``os.urandom`` read the OS on each call, and no id is drawn at import, so the
  ids Mnemo makes (``mem_...``, ``run_...``, history keys) are drawn after the restore, each environment its own.
- Credentials. With SnapStart, Lambda gives the function its role's credentials through the container credentials
  endpoint (``AWS_CONTAINER_CREDENTIALS_FULL_URI``), which botocore refreshes by itself, rather than through
  variables frozen at INIT: a client made before the snapshot keeps signing with current credentials.

Today no entry makes a client, a connection or a random draw during INIT (clients are made on first use:
:mod:`mnemo.adapters.aws.clients`; tests/entry/test_snapstart.py imports the entries and checks), so the hook
has nothing to close; it keeps that true if INIT ever warms them, for a faster first call.

The hooks come from the runtime's Snapshot Restore for Python (``snapshot_restore_py``), part of Lambda's
Python managed runtimes and nowhere else: :func:`register` does nothing where it is missing. It must be called
during INIT (an entry module's import): a hook registered after the snapshot is never run.
"""

from __future__ import annotations

import random
import sys
from typing import Any

_registered = False


def register() -> bool:
    """Register :func:`after_restore` with the runtime's Snapshot Restore for Python, once; False where the runtime
    has no such module (outside Lambda). Without SnapStart the runtime never calls it."""
    global _registered
    if _registered:
        return True
    try:
        from snapshot_restore_py import register_after_restore
    except ImportError:
        return False
    register_after_restore(after_restore)
    _registered = True
    return True


def after_restore() -> None:
    """Run by Lambda in each execution environment it resumes from the snapshot, before its first invocation
    (within the restore's 10 seconds, billed as restore duration): a fresh random state, no stale connection."""
    random.seed()  # from os.urandom: each environment its own sequence
    runtime = sys.modules.get("mnemo.runtime")
    # The process's services as INIT left them, if it built them (never built here: get_services would).
    services = getattr(runtime, "_services", None) if runtime is not None else None
    if services is not None:
        drop_connections(services)


def _adapters(services: Any) -> list[Any]:
    """What ``services`` has built so far (its cached properties), and what its dicts and lists of them hold (the
    extractors by model)."""
    found: list[Any] = []
    for value in vars(services).values():
        if isinstance(value, dict):
            found += value.values()
        elif isinstance(value, list):
            found += value
        else:
            found.append(value)
    return found


def drop_connections(services: Any) -> int:
    """Drop the connections pooled by the SDK clients ``services`` has made so far; how many clients it held.

    Every adapter that holds a client keeps it in ``_client`` (``mnemo.adapters.aws.clients.LazyClient`` and the
    vector indexes alike), made on first use. A botocore client is closed: ``close()`` empties its connection
    pools, which it fills again on its next request (it may be shared: ``aws_client`` hands one client per
    service). Any other client (OpenSearch's) is forgotten, and its adapter makes a new one on first use: that
    holds whatever client the adapter has, without relying on how it closes."""
    from_botocore = sys.modules.get("botocore.client")
    dropped = 0
    for adapter in _adapters(services):
        client = getattr(adapter, "_client", None)
        if client is None:
            continue
        dropped += 1
        if from_botocore is not None and isinstance(client, from_botocore.BaseClient):
            client.close()
        else:
            adapter._client = None
    return dropped

"""sync_now within a time limit: it stops between items, says how many are left, and the next call goes on."""

from __future__ import annotations

from pathlib import Path

from helpers import ctx
from knowledge_helpers import EXAMPLE_COUNT, push_tree
from mnemo.runtime import Services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

TENANT = "acme"
CALLER = ctx(tenant=TENANT)


def test_a_sync_past_its_deadline_defers_the_rest_and_the_next_one_finishes(services: Services) -> None:
    push_tree(services, TENANT)
    stopped = services.sync.sync(TENANT, get_tool("sync_now").request(), seconds=0)
    assert stopped.deferred == EXAMPLE_COUNT
    assert stopped.result.added == 0
    assert f"{EXAMPLE_COUNT} item(s) left" in stopped.message
    assert "call sync_now again" in stopped.message
    assert not services.sync.status(TENANT).running  # the lock is released
    finished = services.sync.sync(TENANT, get_tool("sync_now").request(), seconds=600)
    assert (finished.deferred, finished.result.added) == (0, EXAMPLE_COUNT)


def test_the_tool_takes_its_limit_from_the_setting(tmp_path: Path) -> None:
    limited = Services(Settings(data_dir=tmp_path, embedder="hashing", request_deadline_seconds=1e-9))
    push_tree(limited, TENANT)
    answer = get_tool("sync_now").invoke(limited, CALLER, {})
    assert answer["deferred"] == EXAMPLE_COUNT
    assert answer["success"] is True
    assert (
        get_tool("sync_now").invoke(Services(Settings(data_dir=tmp_path, embedder="hashing")), CALLER, {})["result"][
            "added"
        ]
        == EXAMPLE_COUNT
    )

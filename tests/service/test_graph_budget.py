"""Graph reads fit the transport's response budget (Bedrock's share of 25 kB is the tightest) and say hasMore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import ctx, make_services
from mnemo.budget import wire_bytes
from mnemo.context import RequestContext
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx()
BUDGET = 4096


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Services:
    """One entity with 120 facts, each with a long sentence."""
    services = make_services(Path(tmp_path_factory.mktemp("graph-budget")))
    for n in range(120):
        call(
            services,
            ALICE,
            "add_memory_link",
            {
                "subject": "Payments",
                "predicate": "depends_on",
                "object": f"service-{n}",
                "text": f"Payments calls service-{n} " + "for settlement " * 20,
            },
        )
    return services


def test_get_memory_object_keeps_the_head_that_fits(hub: Services) -> None:
    whole = call(hub, ALICE, "get_memory_object", {"name": "payments", "limit": 200})
    assert len(whole["facts"]) == 120
    assert len(whole["neighbours"]) == 100
    assert whole["hasMore"] is True
    small = call(
        hub,
        ALICE.model_copy(update={"response_budget": BUDGET}),
        "get_memory_object",
        {"name": "payments", "limit": 200},
    )
    assert wire_bytes(small) <= BUDGET
    assert small["hasMore"] is True
    assert 0 < len(small["facts"]) < 120
    assert [fact["factId"] for fact in small["facts"]] == [
        fact["factId"] for fact in whole["facts"][: len(small["facts"])]
    ]


def test_graph_search_keeps_the_best_hits_that_fit(hub: Services) -> None:
    payload = {"query": "Payments calls service for settlement", "limit": 50, "threshold": 0.0}
    whole = call(hub, ALICE, "graph_search", payload)
    small = call(hub, ALICE.model_copy(update={"response_budget": BUDGET}), "graph_search", payload)
    assert wire_bytes(small) <= BUDGET
    assert small["hasMore"] is True
    assert [f["factId"] for f in small["facts"]] == [f["factId"] for f in whole["facts"][: len(small["facts"])]]


def test_memory_search_with_the_graph_fits(hub: Services) -> None:
    for n in range(30):
        call(hub, ALICE, "memory_add", {"content": f"Payments incident {n}: settlement retried " + "slowly " * 30})
    context = ALICE.model_copy(update={"response_budget": BUDGET})
    answer = call(
        hub,
        context,
        "memory_search",
        {"query": "Payments settlement", "includeGraph": True, "threshold": 0.0, "limit": 50},
    )
    assert wire_bytes(answer) <= BUDGET
    assert answer["graph"] is not None
    assert answer["graph"]["entities"] == ["Payments"]

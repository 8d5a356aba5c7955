"""Operator filters over real HTTP: a filtered memory_search and memory_list answer, and a malformed filter is 400
INVALID_INPUT whose details name the path of the offending part (docs/filters.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import http_call, local_server, make_services


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    services = make_services(Path(tmp_path_factory.mktemp("filters")))
    with local_server(services) as url:
        yield url


def test_filters_over_http(server: str) -> None:
    for priority in (1, 4):
        status, answer = http_call(
            server, "memory_add", {"content": f"incident review {priority}", "metadata": {"priority": priority}}
        )
        assert status == 200, answer
    flt = {"and": [{"source": "manual"}, {"metadata.priority": {"gt": 2}}]}
    status, answer = http_call(server, "memory_search", {"query": "incident review", "threshold": 0, "filter": flt})
    assert status == 200, answer
    assert [result["content"] for result in answer["results"]] == ["incident review 4"]
    status, answer = http_call(server, "memory_list", {"filter": {"metadata.priority": {"lte": 2}}})
    assert status == 200, answer
    assert [memory["content"] for memory in answer["memories"]] == ["incident review 1"]


@pytest.mark.parametrize("tool", ["memory_search", "memory_list"])
def test_a_malformed_filter_is_400_invalid_input_naming_its_path(server: str, tool: str) -> None:
    body = {"filter": {"and": [{"tags": "a"}, {"createdAt": {"gt": 5}}]}}
    status, answer = http_call(server, tool, {"query": "x", **body} if tool == "memory_search" else body)
    assert status == 400, answer
    assert answer["success"] is False
    assert answer["errorCode"] == "INVALID_INPUT"
    assert answer["details"]["field"] == "filter.and[1].createdAt.gt"
    assert "Traceback" not in str(answer)

"""The local server's tool calls answer what the API Gateway door answers, request for request.

`mnemo serve` calls the catalog through ``mnemo.entry.tool_http`` (no router,
no process-wide lock); the Lambda functions resolve through Powertools
(``mnemo.entry.apigw``). Both get the same bodies here, for every tool: its
spec's examples, each of its fields set to a value of every wrong JSON type,
and bodies no parser should take. Error answers must be identical (status and
envelope); successes must have the same status and the same fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from door_parity import tool_bodies, without_ids

from aws_events import rest_event
from helpers import make_services
from mnemo.context import RequestContext
from mnemo.entry.apigw import all_tools_resolver, resolve
from mnemo.entry.tool_http import call_tool
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import load_catalog

AUTHORIZER = {"tenant": "parity", "user": "pat", "project": "p1", "roles": "writer"}
CONTEXT = RequestContext(tenant="parity", user="pat", project="p1", roles=frozenset({"writer"}))

HOSTILE_BODIES = [
    None,
    "",
    "   ",
    "null",
    "[]",
    "[{}]",
    "1",
    '"text"',
    "true",
    "{}",
    "nope",
    '{"a": 1, "a": 2}',
    '{"n": NaN}',
    '{"n": 1e999}',
    '{"s": "\\ud800"}',
    "[" * 70 + "]" * 70,
    '{"user_id": "someone-else"}',
    '{"user_id": "pat"}',
    '{"tenant": "other"}',
]
WRONG_VALUES = [None, 0, 1.5, True, "", "x", [], {}, ["x"], -1, 10**30]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Services, Services]]:
    """One store per door, so that each sees the same sequence of calls (a write through one is not a
    conflict for the other)."""
    made = (make_services(tmp_path_factory.mktemp("lambda")), make_services(tmp_path_factory.mktemp("local")))
    yield made
    set_services(None)


def _bodies(name: str) -> list[str | None]:
    return tool_bodies(load_catalog()[name], HOSTILE_BODIES, WRONG_VALUES)


def _lambda_door(name: str, body: str | None, services: Services) -> tuple[int, Any]:
    set_services(services)
    answer = resolve(all_tools_resolver(), rest_event(name, body, AUTHORIZER), None)
    return int(answer["statusCode"]), json.loads(answer["body"])


def _local_door(name: str, body: str | None, services: Services) -> tuple[int, Any]:
    set_services(services)
    status, text = call_tool(name, body, CONTEXT)
    return status, json.loads(text)


@pytest.mark.parametrize("name", sorted(load_catalog()))
def test_both_doors_answer_alike(name: str, stores: tuple[Services, Services]) -> None:
    compared = 0
    for body in _bodies(name):
        lambda_status, lambda_answer = _lambda_door(name, body, stores[0])
        local_status, local_answer = _local_door(name, body, stores[1])
        assert local_status == lambda_status, (body, lambda_answer, local_answer)
        if lambda_status == 200:
            assert set(local_answer) == set(lambda_answer), body
        else:
            assert without_ids(local_answer) == without_ids(lambda_answer), body
        compared += 1
    assert compared >= len(HOSTILE_BODIES)


def test_an_unknown_tool_is_the_same_not_found(stores: tuple[Services, Services]) -> None:
    assert _local_door("no_such_tool", "{}", stores[1]) == _lambda_door("no_such_tool", "{}", stores[0])

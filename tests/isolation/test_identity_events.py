"""Isolation with identity from API Gateway events (REST and HTTP API 2.0), as the deployed API takes it.

The model-based machine (events.py) runs every tool family with identity carried by trusted delegates,
tokens and a service's assumed-role sessions, and attacks the transport (callers not listed, look-alike
roles, spliced and forged headers, a named tenant, a token holder's headers), counting leaks as the
in-process and HTTP runs do. The scenarios below are the plain cases, one by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import load_template
from hypothesis.stateful import run_state_machine_as_test
from identity_events import api_key_event, iam_event, jwt_event
from isolation.events import JWT_CLAIMS, TRUSTED_DELEGATES, EventIsolationMachine, ThroughEvents
from isolation.machine import Stats
from isolation.test_isolation import TOOLS, _settings

from helpers import make_services
from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_event
from mnemo.errors import Unauthorized
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

CATALOG = load_catalog()
ACCOUNT = "111122223333"
DELEGATE = f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRole/task-1"
APIS = pytest.mark.parametrize("http", [False, True], ids=["rest", "http-api"])


@pytest.fixture(autouse=True)
def deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_TRUSTED_DELEGATES", TRUSTED_DELEGATES)
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", JWT_CLAIMS)
    monkeypatch.delenv("MNEMO_API_KEY_TENANT", raising=False)


def test_no_caller_sees_or_changes_another_scope_through_api_gateway_events(
    isolation_report: Callable[[str], None],
) -> None:
    EventIsolationMachine.stats = stats = Stats()
    EventIsolationMachine.doors.clear()
    EventIsolationMachine.attacks.clear()
    started = time.perf_counter()
    try:
        run_state_machine_as_test(EventIsolationMachine, settings=_settings(examples=120, steps=80))
    finally:
        elapsed = time.perf_counter() - started
        doors = ", ".join(f"{door} {count}" for door, count in sorted(EventIsolationMachine.doors.items()))
        attacks = ", ".join(f"{kind} {count}" for kind, count in sorted(EventIsolationMachine.attacks.items()))
        isolation_report(f"{stats.line('API Gateway events')} in {elapsed:.1f} s")
        isolation_report(f"  calls per door: {doors}")
        isolation_report(f"  refused transport attacks: {attacks}")
    assert stats.leaks == 0
    assert stats.cross_scope >= 2000, stats
    assert set(stats.by_tool) == TOOLS, (
        f"every tool of the catalog is called; not: {sorted(TOOLS ^ set(stats.by_tool))}"
    )
    assert len(EventIsolationMachine.attacks) == 5
    assert min(EventIsolationMachine.attacks.values()) >= 50
    assert set(EventIsolationMachine.doors) == {
        *ThroughEvents.DOORS,
        "rest-role-session",
        "http-role-session",
    }


# ------------------------------------------------------------ scenarios


def call(services: Services, event: dict[str, Any], tool: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = CATALOG[tool].invoke(services, context_from_event(event), body)
    return answer


def leaks(answer: dict[str, Any], secrets: list[str]) -> int:
    text = repr(answer)
    return sum(secret in text for secret in secrets)


@APIS
def test_a_delegate_acts_for_two_users_in_two_sessions_without_a_leak(tmp_path: Path, http: bool) -> None:
    services = make_services(tmp_path)
    users = {"alice": "conv-1", "bob": "conv-2"}
    secrets: dict[str, list[str]] = {}
    for number, (user, session) in enumerate(users.items()):
        headers = {"X-Mnemo-User": user, "X-Mnemo-Session": session}
        for layer in ("user", "session"):
            secret = f"sec-{user}-{layer}"
            event = iam_event(DELEGATE.replace("task-1", f"task-{number}"), http=http, headers=headers)
            call(services, event, "memory_add", {"content": f"{secret} note", "layer": layer})
            secrets.setdefault(user, []).append(secret)
    for user, session in users.items():
        other = next(name for name in users if name != user)
        headers = {"X-Mnemo-User": user, "X-Mnemo-Session": session}
        event = iam_event(DELEGATE, http=not http, headers=headers)  # the other API: one identity
        found = call(services, event, "memory_search", {"query": "note", "threshold": 0.0, "limit": 50})
        assert sorted(r["content"].split()[0] for r in found["results"]) == sorted(secrets[user])
        assert leaks(found, secrets[other]) == 0
        # The delegate as itself sees neither user.
        itself = call(services, iam_event(DELEGATE, http=http), "memory_search", {"query": "note", "threshold": 0.0})
        assert itself["results"] == []


@APIS
def test_a_caller_not_listed_is_refused_naming_the_header_and_nothing_happens(tmp_path: Path, http: bool) -> None:
    services = make_services(tmp_path)
    stranger = f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRole2/task-1"
    event = iam_event(stranger, http=http, headers={"X-Mnemo-User": "alice"}, tool="memory_add")
    with pytest.raises(Unauthorized) as raised:
        call(services, event, "memory_add", {"content": "sec-stranger note"})
    assert raised.value.details == {"field": "X-Mnemo-User"}
    as_itself = call(services, iam_event(stranger, http=http), "memory_search", {"query": "note", "threshold": 0.0})
    alice = call(services, iam_event(DELEGATE, headers={"X-Mnemo-User": "alice"}), "memory_search", {"query": "note"})
    assert as_itself["results"] == alice["results"] == []


def test_two_sessions_of_one_assumed_role_see_one_scope(tmp_path: Path) -> None:
    services = make_services(tmp_path)
    first = iam_event(f"arn:aws:sts::{ACCOUNT}:assumed-role/WorkerRole/i-0abc", http=False)
    second = iam_event(f"arn:aws:sts::{ACCOUNT}:assumed-role/WorkerRole/task-9f", http=True)
    other = iam_event(f"arn:aws:sts::{ACCOUNT}:assumed-role/WorkerRole2/task-9f", http=True)
    added = call(services, first, "memory_add", {"content": "sec-worker note"})
    found = call(services, second, "memory_search", {"query": "note", "threshold": 0.0})
    assert [r["memoryId"] for r in found["results"]] == [added["memoryId"]]
    assert call(services, other, "memory_search", {"query": "note", "threshold": 0.0})["results"] == []
    assert context_from_event(second).user == f"arn:aws:iam::{ACCOUNT}:role/WorkerRole"


@pytest.mark.parametrize("http", [False, True], ids=["rest-cognito", "http-api-jwt"])
def test_a_tokens_claims_are_mapped_by_the_custom_mapping(tmp_path: Path, http: bool) -> None:
    claims = {"sub": "ignored", "email": "alice@example.com", "org_id": "acme", "sid": "conv-1", "groups": ["writer"]}
    claims |= {"custom:project": "p1", "custom:tenant": "not-read"}
    context = context_from_event(jwt_event(claims, http=http))
    assert context == RequestContext(
        tenant="acme", user="alice@example.com", session="conv-1", project="p1", roles=frozenset({"writer"})
    )
    services = make_services(tmp_path)
    call(services, jwt_event(claims, http=http), "memory_add", {"content": "sec-p1 note", "layer": "project"})
    teammate = {"email": "bob@example.com", "org_id": "acme", "custom:project": "p1"}
    found = call(services, jwt_event(teammate, http=not http), "memory_search", {"query": "note", "threshold": 0.0})
    assert [r["content"] for r in found["results"]] == ["sec-p1 note"]
    stranger = {**teammate, "org_id": "acme.eu"}
    found = call(services, jwt_event(stranger, http=http), "memory_search", {"query": "note", "threshold": 0.0})
    assert found["results"] == []


def _resolve(value: Any, account: str, template: dict[str, Any]) -> str | None:
    """A value as deployed with every parameter at its default (Ref, and If on a template condition)."""
    parameters = template["Parameters"]
    if value is None or isinstance(value, str):
        return value
    if value == {"Ref": "AWS::AccountId"}:
        return account
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in parameters:
        return str(parameters[value["Ref"]].get("Default", ""))
    if isinstance(value, dict) and set(value) == {"If"}:
        condition, chosen, otherwise = value["If"]
        holds = _holds(template["Conditions"][condition], account, template)
        return _resolve(chosen if holds else otherwise, account, template)
    raise AssertionError(f"MNEMO_API_KEY_TENANT is set to {value!r}, which this test cannot resolve")


def _holds(condition: Any, account: str, template: dict[str, Any]) -> bool:
    if isinstance(condition, dict) and set(condition) == {"Not"}:
        return not _holds(condition["Not"][0], account, template)
    if isinstance(condition, dict) and set(condition) == {"Equals"}:
        left, right = (_resolve(side, account, template) for side in condition["Equals"])
        return left == right
    raise AssertionError(f"the condition {condition!r} is beyond this test")


def api_functions() -> dict[str, str | None]:
    """Each function API Gateway invokes (a tool's or /mcp's) -> its MNEMO_API_KEY_TENANT as deployed."""
    template = load_template()
    variable = "MNEMO_API_KEY_TENANT"
    default = template["Globals"]["Function"].get("Environment", {}).get("Variables", {}).get(variable)
    names = {*CATALOG, "mcp"}
    found: dict[str, str | None] = {}
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        code = str(properties.get("CodeUri", ""))
        if resource["Type"] != "AWS::Serverless::Function" or code.strip("/").split("/")[-1] not in names:
            continue
        variables = properties.get("Environment", {}).get("Variables", {})
        value = variables.get(variable, default)
        found[code.strip("/").split("/")[-1]] = _resolve(value, ACCOUNT, template)
    return found


def test_one_tenant_for_an_api_key_on_every_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each function's environment as template.yaml deploys it: one key, one tenant, one dataset."""
    functions = api_functions()
    assert "mcp" in functions
    assert "memory_add" in functions
    assert len(functions) >= len(CATALOG) - 3
    contexts: dict[str, RequestContext] = {}
    for name, setting in functions.items():
        if setting is None:
            monkeypatch.delenv("MNEMO_API_KEY_TENANT", raising=False)
        else:
            monkeypatch.setenv("MNEMO_API_KEY_TENANT", setting)
        contexts[name] = context_from_event(api_key_event("key-1", tool=name))
    assert {context.tenant for context in contexts.values()} == {ACCOUNT}, contexts
    # Written through one function's identity, read through /mcp's: the same data.
    services = make_services(tmp_path)
    added = CATALOG["memory_add"].invoke(services, contexts["memory_add"], {"content": "sec-key note"})
    found = CATALOG["memory_search"].invoke(services, contexts["mcp"], {"query": "note", "threshold": 0.0})
    assert [r["memoryId"] for r in found["results"]] == [added["memoryId"]]

"""Token claims as identity: the HTTP API JWT authorizer (claims as strings) and REST's Cognito authorizer,
with the default claim names and a MNEMO_JWT_CLAIMS mapping (mnemo.entry.identity.jwt)."""

from __future__ import annotations

from typing import Any

import pytest
from identity_events import fixture, jwt_event

from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_event
from mnemo.entry.identity.settings import DEFAULT_CLAIMS, check_settings, parse_claims
from mnemo.errors import MnemoError, Unauthorized

ACCOUNT = "111122223333"  # the fixtures' API account
APIS = pytest.mark.parametrize("http", [False, True], ids=["rest-cognito", "http-api-jwt"])
CLAIMS = {
    "sub": "7d8e9f00-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
    "custom:tenant": "acme",
    "custom:agent": "support",
    "custom:session": "conv-1",
    "custom:project": "p1",
    "custom:team": "t1",
    "custom:org": "o1",
    "custom:roles": "writer,reader",
    "email": "alice@example.com",
}


@pytest.fixture(autouse=True)
def no_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_JWT_CLAIMS", raising=False)


def refused(event: dict[str, Any]) -> Unauthorized:
    with pytest.raises(Unauthorized) as raised:
        context_from_event(event)
    return raised.value


@APIS
def test_the_default_claims_are_the_cognito_names(http: bool) -> None:
    assert context_from_event(jwt_event(CLAIMS, http=http)) == RequestContext(
        tenant="acme",
        user=CLAIMS["sub"],
        agent="support",
        session="conv-1",
        project="p1",
        team="t1",
        org="o1",
        roles=frozenset({"writer", "reader"}),
    )


@APIS
def test_a_custom_mapping_reads_other_claims(monkeypatch: pytest.MonkeyPatch, http: bool) -> None:
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", "user=email, tenant=org_id,roles=groups,project=https://example.com/project")
    claims = {
        "sub": "ignored-now",
        "email": "alice@example.com",
        "org_id": "org_42",
        "groups": ["writer", "ops"],
        "https://example.com/project": "p9",
        "custom:team": "t1",  # fields not mapped keep their default claim
        "custom:tenant": "not-read",
    }
    context = context_from_event(jwt_event(claims, http=http))
    assert context == RequestContext(
        tenant="org_42", user="alice@example.com", project="p9", team="t1", roles=frozenset({"writer", "ops"})
    )


def test_the_documented_http_api_fixture_with_groups_as_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", "roles=cognito:groups")
    context = context_from_event(fixture("http_jwt"))  # "cognito:groups": "[writer reader]"
    assert (context.tenant, context.roles) == ("acme", frozenset({"writer", "reader"}))
    assert context.user == "7d8e9f00-1a2b-4c3d-8e9f-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("value", "roles"),
    [
        ("[writer reader]", {"writer", "reader"}),  # an HTTP API array claim
        ("[writer]", {"writer"}),
        ("[]", set()),
        ('["writer","reader"]', {"writer", "reader"}),  # a JSON array as text
        ("writer, reader", {"writer", "reader"}),  # a comma list (Cognito custom attribute)
        ("writer", {"writer"}),
        (["writer", "reader"], {"writer", "reader"}),  # typed (REST)
    ],
)
def test_roles_claims_in_every_form_they_arrive(monkeypatch: pytest.MonkeyPatch, value: Any, roles: set[str]) -> None:
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", "roles=groups")
    event = jwt_event({"sub": "u1", "groups": "x"}, http=True)
    event["requestContext"]["authorizer"]["jwt"]["claims"]["groups"] = value
    assert context_from_event(event).roles == frozenset(roles)


@APIS
def test_without_a_tenant_claim_the_tenant_is_the_apis_account(http: bool) -> None:
    assert context_from_event(jwt_event({"sub": "u1"}, http=http)).tenant == ACCOUNT


@APIS
def test_without_the_user_claim_the_token_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, http: bool) -> None:
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", "user=email")
    error = refused(jwt_event({"sub": "u1"}, http=http))
    assert error.details == {"field": "user", "claim": "email"}


@pytest.mark.parametrize(
    ("claims", "field", "claim"),
    [
        ({"sub": "alice smith"}, "user", "sub"),  # an HTTP API array or a name with spaces is no id
        ({"sub": "u1", "custom:project": "[p1 p2]"}, "project", "custom:project"),
        ({"sub": "u1", "custom:tenant": "a|user|u=b"}, "tenant", "custom:tenant"),
    ],
)
def test_claims_that_are_not_ids_are_refused_naming_the_claim(claims: dict[str, Any], field: str, claim: str) -> None:
    error = refused(jwt_event(claims, http=True))
    assert error.details == {"field": field, "claim": claim}
    assert claim in error.message


def test_typed_rest_claims_a_number_is_an_id_a_list_is_not() -> None:
    assert context_from_event(jwt_event({"sub": 42}, http=False)).user == "42"
    error = refused(jwt_event({"sub": ["a", "b"]}, http=False))
    assert error.details == {"field": "user", "claim": "sub"}
    assert refused(jwt_event({"sub": "u", "custom:roles": {"a": 1}}, http=False)).details["claim"] == "custom:roles"


@pytest.mark.parametrize("http", [False, True])
@pytest.mark.parametrize("header", ["X-Mnemo-User", "X-Mnemo-Tenant", "X-Mnemo-Roles"])
def test_a_token_caller_sending_identity_headers_is_refused_naming_the_header(http: bool, header: str) -> None:
    error = refused(jwt_event(CLAIMS, http=http, headers={header: "acme"}))
    assert error.details == {"field": header}


def test_the_claim_setting_format() -> None:
    assert parse_claims("") == DEFAULT_CLAIMS
    assert parse_claims(" user = email ,, roles=cognito:groups")["user"] == "email"
    assert parse_claims("roles=https://example.com/roles")["roles"] == "https://example.com/roles"
    assert parse_claims("user=a=b")["user"] == "a=b"  # the claim is everything after the first '='


@pytest.mark.parametrize("setting", ["usr=email", "user", "user=", "user=a,user=b", "=email"])
def test_an_invalid_claim_setting_is_the_deployments_error(monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    monkeypatch.setenv("MNEMO_JWT_CLAIMS", setting)
    with pytest.raises(MnemoError) as raised:
        context_from_event(jwt_event(CLAIMS))
    envelope = raised.value.envelope()
    assert envelope["errorCode"] == "PROVIDER_ERROR"
    assert envelope["retryable"] is False
    assert envelope["details"] == {"setting": "MNEMO_JWT_CLAIMS"}
    assert check_settings({"MNEMO_JWT_CLAIMS": setting}) == [envelope["message"]]

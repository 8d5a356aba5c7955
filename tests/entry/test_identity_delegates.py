"""SigV4 callers on the deployed API: assumed roles as one caller, trusted delegates naming their end users,
and everyone else's ``X-Mnemo-*`` headers refused (mnemo.entry.identity), on REST and HTTP API events."""

from __future__ import annotations

from typing import Any

import pytest
from identity_events import fixture, iam_event, lambda_event, set_header

from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_event
from mnemo.errors import MnemoError, Unauthorized

ACCOUNT = "111122223333"
OTHER = "444455556666"
DELEGATE = f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRole/task-0f1e2d3c"
DELEGATES = f"arn:aws:iam::{ACCOUNT}:role/AgentRole, ,arn:aws:iam::{OTHER}:role/team/eu/PathRole,"
ALICE = {"X-Mnemo-User": "alice", "X-Mnemo-Agent": "support", "X-Mnemo-Session": "conv-1", "X-Mnemo-Roles": "writer"}
FULL = {**ALICE, "X-Mnemo-Project": "p1", "X-Mnemo-Team": "t1", "X-Mnemo-Org": "o1"}
APIS = pytest.mark.parametrize("http", [False, True], ids=["rest", "http-api"])


@pytest.fixture(autouse=True)
def delegates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_TRUSTED_DELEGATES", DELEGATES)


def refused(event: dict[str, Any]) -> Unauthorized:
    with pytest.raises(Unauthorized) as raised:
        context_from_event(event)
    return raised.value


@APIS
def test_a_listed_delegate_names_the_whole_identity_but_not_the_tenant(http: bool) -> None:
    context = context_from_event(iam_event(DELEGATE, http=http, headers=FULL))
    assert context == RequestContext(
        tenant=ACCOUNT,
        user="alice",
        agent="support",
        session="conv-1",
        project="p1",
        team="t1",
        org="o1",
        roles=frozenset({"writer"}),
    )


@APIS
def test_a_delegate_acts_for_two_users_in_two_sessions(http: bool) -> None:
    bob = {"X-Mnemo-User": "bob", "X-Mnemo-Session": "conv-2"}
    first = context_from_event(iam_event(DELEGATE, http=http, headers=ALICE))
    second = context_from_event(iam_event(DELEGATE.replace("task-0f1e2d3c", "task-99"), http=http, headers=bob))
    assert (first.user, first.session, second.user, second.session) == ("alice", "conv-1", "bob", "conv-2")
    assert first.scope_key("session") != second.scope_key("session")
    assert second.roles == frozenset()  # no X-Mnemo-Roles: no roles


@APIS
def test_a_delegate_that_names_no_one_is_its_role(http: bool) -> None:
    context = context_from_event(iam_event(DELEGATE, http=http))
    assert context == RequestContext(tenant=ACCOUNT, user=f"arn:aws:iam::{ACCOUNT}:role/AgentRole")


@APIS
def test_every_session_of_one_assumed_role_is_one_user(http: bool) -> None:
    users = {
        context_from_event(iam_event(f"arn:aws:sts::{ACCOUNT}:assumed-role/WorkerRole/{session}", http=http))
        for session in ("i-0abc", "task-1", "botocore-session-17")
    }
    assert users == {RequestContext(tenant=ACCOUNT, user=f"arn:aws:iam::{ACCOUNT}:role/WorkerRole")}


@pytest.mark.parametrize(
    ("arn", "user"),
    [
        (f"arn:aws:iam::{ACCOUNT}:user/carol", f"arn:aws:iam::{ACCOUNT}:user/carol"),
        (f"arn:aws:iam::{ACCOUNT}:user/ops/carol", f"arn:aws:iam::{ACCOUNT}:user/ops/carol"),
        (f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/R/s", f"arn:aws-cn:iam::{ACCOUNT}:role/R"),
        (f"arn:aws-us-gov:sts::{OTHER}:assumed-role/R/s", f"arn:aws-us-gov:iam::{OTHER}:role/R"),
        (f"arn:aws:iam::{ACCOUNT}:root", f"arn:aws:iam::{ACCOUNT}:root"),
    ],
)
def test_the_user_an_arn_maps_to_and_its_account_as_tenant(arn: str, user: str) -> None:
    context = context_from_event(iam_event(arn))
    assert (context.tenant, context.user) == (arn.split(":")[4], user)


def test_a_caller_arn_that_is_no_principal_is_refused() -> None:
    event = iam_event(DELEGATE)
    event["requestContext"]["identity"]["userArn"] = "arn:aws:s3:::bucket"
    assert refused(event).details == {"field": "userArn"}


@APIS
@pytest.mark.parametrize("header", [*FULL, "X-Mnemo-Tenant", "x-mnemo-user", "X-MNEMO-ORG", "X-Mnemo-Projects"])
def test_an_unlisted_caller_sending_an_identity_header_is_refused_naming_it(http: bool, header: str) -> None:
    stranger = f"arn:aws:sts::{ACCOUNT}:assumed-role/OtherRole/task-1"
    error = refused(iam_event(stranger, http=http, headers={header: "alice"}))
    named = "-".join(part.capitalize() for part in header.split("-"))
    assert error.details == {"field": named}
    assert "trusted delegate" in error.message
    assert error.code == "UNAUTHORIZED"


@APIS
@pytest.mark.parametrize(
    "arn",
    [
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRole2/task-1",  # a longer name
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRol/task-1",  # a shorter one
        f"arn:aws:sts::{ACCOUNT}:assumed-role/agentrole/task-1",  # names match exactly
        f"arn:aws:sts::{OTHER}:assumed-role/AgentRole/task-1",  # another account
        f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/AgentRole/task-1",  # another partition
        f"arn:aws:iam::{ACCOUNT}:user/AgentRole",  # a user with the role's name
        f"arn:aws:sts::{OTHER}:assumed-role/eu/task-1",  # a role named like the listed one's path
        f"arn:aws:sts::{OTHER}:assumed-role/PathRole2/task-1",
    ],
)
def test_look_alike_callers_are_not_delegates(http: bool, arn: str) -> None:
    error = refused(iam_event(arn, http=http, headers={"X-Mnemo-User": "alice"}))
    assert error.details == {"field": "X-Mnemo-User"}


@APIS
def test_a_listed_role_with_a_path_matches_its_sessions(http: bool) -> None:
    arn = f"arn:aws:sts::{OTHER}:assumed-role/PathRole/i-0abc"
    context = context_from_event(iam_event(arn, http=http, headers={"X-Mnemo-User": "alice"}))
    assert (context.tenant, context.user) == (OTHER, "alice")


@APIS
def test_an_unsigned_delegate_header_could_be_spliced_in_and_is_refused(http: bool) -> None:
    event = iam_event(DELEGATE, http=http, headers=ALICE, signed=["X-Mnemo-User", "X-Mnemo-Agent", "X-Mnemo-Roles"])
    error = refused(event)
    assert error.details == {"field": "X-Mnemo-Session"}
    assert "must be signed" in error.message


@APIS
def test_a_header_added_after_signing_is_refused_even_beside_signed_ones(http: bool) -> None:
    event = iam_event(DELEGATE, http=http, headers={"X-Mnemo-User": "alice"})
    set_header(event, "X-Mnemo-Roles", "writer")  # not in SignedHeaders: someone on the way added it
    assert refused(event).details == {"field": "X-Mnemo-Roles"}


def test_without_an_authorization_header_the_presigned_query_lists_the_signed_headers() -> None:
    event = iam_event(DELEGATE, headers={"X-Mnemo-User": "alice"}, signed=[])
    del event["headers"]["Authorization"], event["multiValueHeaders"]["Authorization"]
    event["queryStringParameters"] = {"X-Amz-SignedHeaders": "host;x-mnemo-user"}
    assert context_from_event(event).user == "alice"
    event["queryStringParameters"] = {"X-Amz-SignedHeaders": "host"}
    assert refused(event).details == {"field": "X-Mnemo-User"}


@APIS
def test_a_delegate_cannot_name_the_tenant(http: bool) -> None:
    error = refused(iam_event(DELEGATE, http=http, headers={"X-Mnemo-User": "alice", "X-Mnemo-Tenant": ACCOUNT}))
    assert error.details == {"field": "X-Mnemo-Tenant"}
    assert ACCOUNT in error.message


@APIS
@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-Mnemo-User", "alice "),  # never trimmed
        ("X-Mnemo-User", " alice"),
        ("X-Mnemo-User", ""),  # empty: refused, not "no user"
        ("X-Mnemo-Session", ""),
        ("X-Mnemo-User", "alice|user|u=bob"),  # a scope key spliced into an id
        ("X-Mnemo-Project", "p1\n"),
        ("X-Mnemo-Org", "o" * 257),
        ("X-Mnemo-Roles", "writer, reader"),
        ("X-Mnemo-Roles", "writer,"),
        ("X-Mnemo-Foo", "x"),  # not an identity header
    ],
)
def test_delegate_values_are_checked_as_every_id(http: bool, header: str, value: str) -> None:
    headers = {"X-Mnemo-User": "alice", header: value}
    error = refused(iam_event(DELEGATE, http=http, headers=headers))
    assert error.details == {"field": header}


def test_delegate_roles_are_a_comma_list_and_empty_means_none() -> None:
    context = context_from_event(iam_event(DELEGATE, headers={"X-Mnemo-User": "a", "X-Mnemo-Roles": "writer,ops"}))
    assert context.roles == frozenset({"writer", "ops"})
    context = context_from_event(iam_event(DELEGATE, headers={"X-Mnemo-User": "a", "X-Mnemo-Roles": ""}))
    assert context.roles == frozenset()


@APIS
def test_a_delegate_naming_anything_must_name_the_user(http: bool) -> None:
    error = refused(iam_event(DELEGATE, http=http, headers={"X-Mnemo-Session": "conv-1"}))
    assert error.details == {"field": "X-Mnemo-User"}


def test_a_header_sent_twice_is_refused() -> None:
    event = iam_event(DELEGATE, headers={"X-Mnemo-User": "bob"})
    event["multiValueHeaders"]["X-Mnemo-User"] = ["alice", "bob"]
    assert refused(event).details == {"field": "X-Mnemo-User"}
    event = iam_event(DELEGATE, headers={"X-Mnemo-User": "bob"})
    event["headers"]["x-mnemo-user"] = "alice"
    assert refused(event).details == {"field": "X-Mnemo-User"}


@pytest.mark.parametrize(
    "setting",
    [
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AgentRole/s",  # a session, not a role
        f"arn:aws:iam::{ACCOUNT}:user/AgentRole",
        "AgentRole",
        f"arn:aws:iam::{ACCOUNT}:role/AgentRole;arn:aws:iam::{OTHER}:role/B",
        "arn:aws:iam::1:role/AgentRole",
    ],
)
def test_an_invalid_delegate_list_is_the_deployments_error(monkeypatch: pytest.MonkeyPatch, setting: str) -> None:
    monkeypatch.setenv("MNEMO_TRUSTED_DELEGATES", setting)
    with pytest.raises(MnemoError) as raised:
        context_from_event(iam_event(DELEGATE))
    envelope = raised.value.envelope()
    assert envelope["errorCode"] == "PROVIDER_ERROR"
    assert envelope["retryable"] is False
    assert envelope["details"] == {"setting": "MNEMO_TRUSTED_DELEGATES"}


def test_no_delegates_listed_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MNEMO_TRUSTED_DELEGATES")
    assert refused(iam_event(DELEGATE, headers={"X-Mnemo-User": "alice"})).details == {"field": "X-Mnemo-User"}


def test_a_lambda_authorizer_is_trusted_and_headers_must_agree_with_it() -> None:
    context = {"tenant": "acme", "user": "alice", "roles": ["writer"]}
    agreeing = {"X-Mnemo-User": "alice", "X-Mnemo-Tenant": "acme", "X-Mnemo-Roles": "writer"}
    assert context_from_event(lambda_event(context, headers=agreeing)).user == "alice"
    error = refused(lambda_event(context, headers={"X-Mnemo-User": "bob"}))
    assert error.details == {"field": "X-Mnemo-User"}
    assert refused(lambda_event(context, headers={"X-Mnemo-Project": "p1"})).details == {"field": "X-Mnemo-Project"}


def test_the_documented_fixtures_identify_their_callers() -> None:
    rest, http = context_from_event(fixture("rest_iam")), context_from_event(fixture("http_iam"))
    assert rest == http == RequestContext(tenant=ACCOUNT, user=f"arn:aws:iam::{ACCOUNT}:role/AgentRole")
    assert context_from_event(fixture("http_lambda")).project == "p1"

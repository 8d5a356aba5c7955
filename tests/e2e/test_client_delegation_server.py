"""The client and the service agree on delegation: what a signed ``on_behalf_of`` request carries, handed to
the service as API Gateway hands it over (a REST event and an HTTP API payload 2.0 event, the caller an
assumed-role session), is read as the end user by a listed delegate, and refused naming the header from a
role that is not listed. The request is the client's real one, recorded by the scripted server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.credentials import Credentials

from client_support import Answer, Script
from mnemo.client import MnemoClient, SigV4
from mnemo.entry.identity import context_from_event
from mnemo.errors import Unauthorized

ACCOUNT = "123456789012"
SESSION_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/SupportAgent/ecs-task-7f3a"


def _event(shape: str, path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The request as API Gateway's Lambda proxy integration hands it over, the caller ``SESSION_ARN``."""
    if shape == "rest":
        return {
            "resource": "/v1/tools/{name}",
            "path": path,
            "httpMethod": "POST",
            "headers": headers,
            "multiValueHeaders": {name: [value] for name, value in headers.items()},
            "pathParameters": {"name": path.rsplit("/", 1)[1]},
            "body": body.decode(),
            "isBase64Encoded": False,
            "requestContext": {
                "accountId": ACCOUNT,
                "stage": "dev",
                "identity": {"accountId": ACCOUNT, "userArn": SESSION_ARN, "caller": "AROAEXAMPLE:ecs-task-7f3a"},
            },
        }
    return {
        "version": "2.0",
        "routeKey": "POST /v1/tools/{name}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {name.lower(): value for name, value in headers.items()},
        "pathParameters": {"name": path.rsplit("/", 1)[1]},
        "body": body.decode(),
        "isBase64Encoded": False,
        "requestContext": {
            "accountId": ACCOUNT,
            "stage": "$default",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1"},
            "authorizer": {"iam": {"accountId": ACCOUNT, "userArn": SESSION_ARN}},
        },
    }


def _sent(scripted: tuple[str, Script], shape: str) -> dict[str, Any]:
    url, script = scripted
    script.answers = [Answer(200)]
    client = MnemoClient(url, auth=SigV4("eu-west-1", credentials=Credentials("AKIDEXAMPLE", "secret", "token")))
    client.on_behalf_of(user="alice", agent="support-bot", session="chat-42", roles=["writer"]).memory_search(
        query="open tickets"
    )
    (_, path, headers) = script.requests[0]
    return _event(shape, path, headers, json.dumps({"query": "open tickets"}).encode())


@pytest.mark.parametrize("shape", ["rest", "http-api"])
def test_a_listed_delegate_acts_for_the_user_the_client_names(
    scripted: tuple[str, Script], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMO_TRUSTED_DELEGATES", f"arn:aws:iam::{ACCOUNT}:role/SupportAgent")
    context = context_from_event(_sent(scripted, shape))
    assert (context.tenant, context.user, context.agent, context.session) == (
        ACCOUNT,
        "alice",
        "support-bot",
        "chat-42",
    )
    assert context.roles == frozenset({"writer"})
    assert context.project is None


@pytest.mark.parametrize("shape", ["rest", "http-api"])
def test_an_unlisted_role_sending_them_is_refused_naming_the_header(
    scripted: tuple[str, Script], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMO_TRUSTED_DELEGATES", f"arn:aws:iam::{ACCOUNT}:role/OtherAgent")
    with pytest.raises(Unauthorized) as refused:
        context_from_event(_sent(scripted, shape))
    assert str(refused.value.details.get("field")).startswith("X-Mnemo-"), refused.value.details

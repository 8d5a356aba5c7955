"""A trusted delegate acting for its users through mnemo.client: ``on_behalf_of`` sends the identity as the
X-Mnemo-* headers on every request, SigV4 signs them (botocore's real signing, checked by signing again
from what the server received), malformed ids fail before anything is sent, with the service's own rule,
and LocalIdentity or an API key cannot be combined with it. Against the scripted server
(tests/support/client_support.py), which records each request's headers, and against a real local server, which
reads the same headers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from client_support import Answer, Script
from helpers import local_server
from mnemo.client import (
    ApiKey,
    AsyncMnemoClient,
    Delegation,
    IdentityValueError,
    LocalIdentity,
    MnemoClient,
    SigV4,
)
from mnemo.client.delegation import FIELDS, ID_PATTERN
from mnemo.context import _ID_PATTERN
from mnemo.entry.identity.local import context_from_headers
from mnemo.errors import Unauthorized
from mnemo.runtime import Services

CREDENTIALS = Credentials("AKIDEXAMPLE", "secret", "session-token")
EVERYONE = Delegation("alice", "support-bot", "chat-42", "atlas", "payments", "acme-eng", ("writer",))
HEADERS = {
    "x-mnemo-user": "alice",
    "x-mnemo-agent": "support-bot",
    "x-mnemo-session": "chat-42",
    "x-mnemo-project": "atlas",
    "x-mnemo-team": "payments",
    "x-mnemo-org": "acme-eng",
    "x-mnemo-roles": "writer",
}


ALICE_HEADERS = {
    "x-mnemo-user": "alice",
    "x-mnemo-agent": "support-bot",
    "x-mnemo-session": "chat-42",
    "x-mnemo-roles": "writer",
}


def mnemo_headers(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name.startswith("x-mnemo-")}


def test_the_id_rule_is_the_services() -> None:
    assert ID_PATTERN.pattern == _ID_PATTERN.pattern


def test_every_request_names_the_delegated_identity(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200), Answer(200)]
    client = MnemoClient(url, on_behalf_of=EVERYONE)
    client.memory_search(query="open tickets")
    client.memory_add(content="prefers email")
    assert [mnemo_headers(headers) for *_, headers in script.requests] == [HEADERS, HEADERS]
    assert client.delegation == EVERYONE


def test_unset_fields_are_left_out_and_no_tenant_is_named(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200)]
    MnemoClient(url, on_behalf_of=Delegation("bob", session="s1")).memory_search(query="x")
    (*_, headers) = script.requests[0]
    assert mnemo_headers(headers) == {"x-mnemo-user": "bob", "x-mnemo-session": "s1"}


def test_empty_roles_send_an_empty_roles_header_meaning_none(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200)]
    MnemoClient(url, on_behalf_of=Delegation("bob", roles=())).memory_search(query="x")
    assert mnemo_headers(script.requests[0][2]) == {"x-mnemo-user": "bob", "x-mnemo-roles": ""}


def test_a_view_per_user_shares_the_client_and_names_only_its_own_identity(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200)] * 4
    auth = SigV4("eu-west-1", credentials=CREDENTIALS)
    client = MnemoClient(url, auth=auth, retries=1)
    alice = client.on_behalf_of(user="alice", agent="support-bot", session="chat-42", roles=["writer"])
    bob = alice.on_behalf_of(user="bob")  # a view of a view: nothing of alice's carries over
    alice.memory_search(query="x")
    bob.memory_search(query="x")
    client.memory_search(query="x")  # the client itself still calls as its own IAM identity
    alice.memory_search(query="x")
    sent = [mnemo_headers(headers) for *_, headers in script.requests]
    assert sent == [ALICE_HEADERS, {"x-mnemo-user": "bob"}, {}, ALICE_HEADERS]
    assert alice.transport.auth is bob.transport.auth is auth
    assert alice.transport.retries == 1
    assert client.delegation is None
    assert bob.delegation == Delegation("bob")


def _signed_headers(authorization: str) -> list[str]:
    return authorization.split("SignedHeaders=")[1].split(",")[0].split(";")


def _signature_over(url: str, body: bytes, received: dict[str, str]) -> str:
    """The signature botocore computes over the headers the server received, as the service's check does:
    only the headers the Authorization lists, at the request's own X-Amz-Date."""
    signed = _signed_headers(received["authorization"])
    request = AWSRequest(method="POST", url=url, data=body, headers={name: received[name] for name in signed})
    request.context["timestamp"] = received["x-amz-date"]
    auth = SigV4Auth(CREDENTIALS, "execute-api", "eu-west-1")
    return auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)


def test_sigv4_signs_the_identity_headers(scripted: tuple[str, Script]) -> None:
    """The Authorization's SignedHeaders lists every X-Mnemo-* header, and the signature, computed again from
    what the server received, matches; with another user in the header it does not (so API Gateway refuses
    a spliced header)."""
    url, script = scripted
    script.answers = [Answer(200)]
    client = MnemoClient(url, auth=SigV4("eu-west-1", credentials=CREDENTIALS), on_behalf_of=EVERYONE)
    client.call("memory_search", {"query": "open tickets"})
    (_, path, received) = script.requests[0]
    signed = _signed_headers(received["authorization"])
    assert set(HEADERS) | {"content-type", "host", "x-amz-date", "x-amz-security-token"} <= set(signed)
    assert mnemo_headers(received) == HEADERS
    body = json.dumps({"query": "open tickets"}).encode()
    signature = received["authorization"].rsplit("Signature=", 1)[1]
    assert _signature_over(url + path, body, received) == signature
    assert _signature_over(url + path, body, {**received, "x-mnemo-user": "mallory"}) != signature


def test_async_views_send_and_sign_the_same_headers(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    script.answers = [Answer(200), Answer(200)]
    client = AsyncMnemoClient(url, auth=SigV4("eu-west-1", credentials=CREDENTIALS))

    async def both() -> None:
        await asyncio.gather(
            client.on_behalf_of(user="alice", session="s1").memory_search(query="x"),
            client.on_behalf_of(user="bob", session="s2").memory_search(query="x"),
        )

    asyncio.run(both())
    seen = sorted((headers["x-mnemo-user"], headers["x-mnemo-session"]) for *_, headers in script.requests)
    assert seen == [("alice", "s1"), ("bob", "s2")]
    for *_, headers in script.requests:
        assert {"x-mnemo-user", "x-mnemo-session"} <= set(_signed_headers(headers["authorization"]))


BAD_IDS: list[Any] = ["", "a b", "alice\n", " alice", "x" * 257, "ünïcode", "a|b", "a;b", 'a"b', 42, b"alice"]
GOOD_IDS = ["alice", "x" * 256, "alice@example.com", "arn:aws:iam::123456789012:role/Agent", "u+1=2,3/4-5_6.7"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", BAD_IDS)
def test_a_malformed_id_is_refused_naming_its_field(field: str, value: Any) -> None:
    fields: dict[str, Any] = {"user": "alice", field: value}
    with pytest.raises(IdentityValueError) as refused:
        Delegation(**fields)
    assert refused.value.field == field
    assert field in str(refused.value)


@pytest.mark.parametrize("value", BAD_IDS[:-2] + GOOD_IDS)
def test_the_client_accepts_exactly_the_ids_the_local_server_accepts(value: str) -> None:
    """The same header, judged by mnemo serve's own reading of it (mnemo.entry.identity.local)."""
    try:
        context_from_headers({"X-Mnemo-User": value}, ())
        served = True
    except Unauthorized:
        served = False
    try:
        Delegation(value)
        sent = True
    except IdentityValueError:
        sent = False
    assert sent == served


def test_the_user_is_required() -> None:
    with pytest.raises(IdentityValueError) as refused:
        Delegation(None)  # type: ignore[arg-type]
    assert refused.value.field == "user"
    with pytest.raises(TypeError):
        MnemoClient("http://127.0.0.1:9").on_behalf_of(session="s1")  # type: ignore[call-arg]


@pytest.mark.parametrize("roles", ["writer", ("a,b",), ("",), ("ok", "bad role"), (7,)])
def test_malformed_roles_are_refused(roles: Any) -> None:
    with pytest.raises(IdentityValueError) as refused:
        Delegation("alice", roles=roles)
    assert refused.value.field == "roles"


def test_a_bad_view_fails_before_the_network(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    client = MnemoClient(url, auth=SigV4("eu-west-1", credentials=CREDENTIALS))
    with pytest.raises(IdentityValueError) as refused:
        client.on_behalf_of(user="alice", session="chat 42").memory_search(query="x")
    assert refused.value.field == "session"
    with pytest.raises(IdentityValueError):
        client.on_behalf_of(user="alice", roles="writer")
    assert script.requests == []


@pytest.mark.parametrize("auth", [LocalIdentity(user="alice"), ApiKey("k")], ids=["local-identity", "api-key"])
def test_on_behalf_of_is_refused_with_an_auth_that_cannot_delegate(auth: Any) -> None:
    with pytest.raises(ValueError, match="on_behalf_of"):
        MnemoClient("http://127.0.0.1:9", auth=auth, on_behalf_of=Delegation("bob"))
    with pytest.raises(ValueError, match="on_behalf_of"):
        MnemoClient("http://127.0.0.1:9", auth=auth).on_behalf_of(user="bob")
    with pytest.raises(ValueError, match="on_behalf_of"):
        AsyncMnemoClient("http://127.0.0.1:9", auth=auth, on_behalf_of=Delegation("bob"))


def test_on_behalf_of_takes_a_delegation() -> None:
    with pytest.raises(TypeError, match="Delegation"):
        MnemoClient("http://127.0.0.1:9", on_behalf_of={"user": "bob"})  # type: ignore[arg-type]


def test_views_against_a_real_server_keep_users_and_sessions_apart(services: Services) -> None:
    """mnemo serve reads the headers a delegate sends: one client, two users, two sessions, no leak."""
    with local_server(services) as url:
        agent = MnemoClient(url)
        alice_s1 = agent.on_behalf_of(user="alice", session="s1")
        alice_s2 = agent.on_behalf_of(user="alice", session="s2")
        bob_s1 = agent.on_behalf_of(user="bob", session="s1")
        in_session = alice_s1.memory_add(content="The refund for order 1234 is pending", layer="session")
        for_alice = alice_s1.memory_add(content="Alice prefers refunds as store credit", layer="user")
        assert in_session["layer"] == "session"
        assert for_alice["layer"] == "user"

        def found(client: MnemoClient) -> set[str]:
            hits = client.memory_search(query="refund order store credit", threshold=0.0)["results"]
            return {hit["memoryId"] for hit in hits}

        assert found(alice_s1) == {in_session["memoryId"], for_alice["memoryId"]}
        assert found(alice_s2) == {for_alice["memoryId"]}
        assert found(bob_s1) == set()
        assert found(agent) == set()  # the client as itself: the local default user

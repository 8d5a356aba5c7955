"""The isolation machine with identity taken from API Gateway events, as the deployed API takes it.

Every call is an event in a documented shape (tests/fixtures/apigw/) handed to
``context_from_event``, the function every API Gateway door calls, and the tool then runs with the
context it returns. The doors take turns: a trusted delegate signing with SigV4 on REST and on an
HTTP API (naming the caller in signed ``X-Mnemo-*`` headers), and a JWT on an HTTP API and a Cognito
token on REST (the caller in claims, read through a custom ``MNEMO_JWT_CLAIMS`` mapping). The tenants
are AWS accounts; in each, one caller with only a user id is a service's role without delegation,
calling from a new assumed-role session every time, so its read-backs prove that every session of one
role is one scope.

On top of the machine's rules, attacks on the transport, each expected UNAUTHORIZED naming the header
and checked for leaks (whatever a refused call answers) and for changes (the victim's data is read back):
callers not listed (look-alike role names, another account, an IAM user) naming a victim; headers
spliced in unsigned beside a delegate's signed ones; forged values; a delegate naming the tenant; a
token holder sending headers.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import rule
from identity_events import iam_event, jwt_event, set_header
from isolation.machine import ACTORS, ID_FIELDS, PROFILES, Actor, IsolationMachine, Outcome, Stats, actors

from mnemo.context import WRITER_ROLE
from mnemo.entry.identity import context_from_event
from mnemo.errors import MnemoError
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog

CATALOG = load_catalog()

ACCOUNTS = ("111122223333", "444455556666")
#: The delegate role of each account; the second is listed with a path, which names the same role.
DELEGATE_NAME = "AgentRole"
LISTED = (f"arn:aws:iam::{ACCOUNTS[0]}:role/{DELEGATE_NAME}", f"arn:aws:iam::{ACCOUNTS[1]}:role/agents/{DELEGATE_NAME}")
TRUSTED_DELEGATES = ",".join(LISTED)
#: A custom claim mapping: the token doors read these claims, never the defaults they replace.
JWT_CLAIMS = "user=email,tenant=org_id,session=sid,roles=groups"
SERVICE_ROLE = "WorkerRole"
#: The profile whose shape (a user id, nothing else, no writer role) a service's role takes.
SERVICE_PROFILE = 3
assert PROFILES[SERVICE_PROFILE][1:] == (None, None, None, None, None, False)


def service_role(account: str) -> str:
    return f"arn:aws:iam::{account}:role/{SERVICE_ROLE}"


def _cast() -> tuple[Actor, ...]:
    cast = []
    for account in ACCOUNTS:
        for index, profile in enumerate(PROFILES):
            user = service_role(account) if index == SERVICE_PROFILE else profile[0]
            cast.append(Actor(account, user, *profile[1:]))
    return tuple(cast)


CAST = _cast()
assert len(CAST) == len(ACTORS)

#: Callers that are not trusted delegates, though they look like one: (ARN, why).
_LOOK_ALIKES = tuple(
    (arn.format(account=account), why)
    for account in ACCOUNTS
    for arn, why in (
        ("arn:aws:sts::{account}:assumed-role/AgentRole2/task-7", "a longer role name"),
        ("arn:aws:sts::{account}:assumed-role/AgentRol/task-7", "a shorter role name"),
        ("arn:aws:sts::{account}:assumed-role/agentrole/task-7", "another case"),
        ("arn:aws:sts::{account}:assumed-role/agents/task-7", "the listed path as a name"),
        ("arn:aws:sts::{account}:assumed-role/WorkerRole/task-7", "the service's own role"),
        ("arn:aws:iam::{account}:user/AgentRole", "an IAM user named like the role"),
        ("arn:aws-cn:sts::{account}:assumed-role/AgentRole/task-7", "another partition"),
    )
)
STRANGERS: tuple[tuple[str, str], ...] = (
    *_LOOK_ALIKES,
    ("arn:aws:sts::999988887777:assumed-role/AgentRole/task-7", "the role's name in another account"),
)
IDENTITY_HEADERS = tuple(f"X-Mnemo-{name.title()}" for name in ID_FIELDS)
ALL_HEADERS = (*IDENTITY_HEADERS, "X-Mnemo-Roles", "X-Mnemo-Tenant")


def identity_headers(actor: Actor) -> dict[str, str]:
    """What a delegate sends for this end user: every id it has, and its roles."""
    headers = {f"X-Mnemo-{name.title()}": value for name in ID_FIELDS if (value := getattr(actor, name)) is not None}
    headers["X-Mnemo-Roles"] = WRITER_ROLE if actor.writer else "reader"
    return headers


def victim_value(victim: Actor, header: str) -> str:
    """What a header would say to pass for the victim (``mallory`` where the victim has no such id)."""
    if header == "X-Mnemo-Tenant":
        return victim.tenant
    return identity_headers(victim).get(header) or "mallory"


def claims(actor: Actor) -> dict[str, Any]:
    """A token for this end user under JWT_CLAIMS (unmapped fields keep their ``custom:`` claims)."""
    found: dict[str, Any] = {"sub": f"sub-{actor.user}", "email": actor.user, "org_id": actor.tenant}
    found["groups"] = [WRITER_ROLE] if actor.writer else ["reader"]
    for name, claim in (("agent", "custom:agent"), ("session", "sid"), ("project", "custom:project")):
        if getattr(actor, name) is not None:
            found[claim] = getattr(actor, name)
    for name in ("team", "org"):
        if getattr(actor, name) is not None:
            found[f"custom:{name}"] = getattr(actor, name)
    return found


class ThroughEvents:
    """Each call an API Gateway event, its identity from ``context_from_event``; the doors take turns."""

    DOORS = ("rest-delegate", "http-delegate", "http-jwt", "rest-cognito")

    def __init__(self, services: Services) -> None:
        self.services = services
        self.calls = 0
        self.by_door: dict[str, int] = {}

    def event(self, actor: Actor, tool: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.calls += 1
        if actor.user == service_role(actor.tenant):  # a service's role, from a new session each time
            http = self.calls % 2 == 0
            arn = f"arn:aws:sts::{actor.tenant}:assumed-role/{SERVICE_ROLE}/task-{self.calls}"
            return ("http" if http else "rest") + "-role-session", iam_event(arn, http=http, tool=tool, body=body)
        door = self.DOORS[self.calls % len(self.DOORS)]
        if door.endswith("delegate"):
            arn = f"arn:aws:sts::{actor.tenant}:assumed-role/{DELEGATE_NAME}/task-{self.calls}"
            headers = identity_headers(actor)
            return door, iam_event(arn, http=door.startswith("http"), headers=headers, tool=tool, body=body)
        return door, jwt_event(claims(actor), http=door.startswith("http"), tool=tool, body=body)

    def call(self, actor: Actor, tool: str, body: dict[str, Any]) -> Outcome:
        door, event = self.event(actor, tool, body)
        self.by_door[door] = self.by_door.get(door, 0) + 1
        try:
            context = context_from_event(event)
        except MnemoError as error:
            raise AssertionError(f"{door} refused {actor.label}: {error.envelope()}") from None
        # A delegate and a token grant "reader" to non-writers (a role that grants nothing); a service's role none.
        granted = (
            frozenset() if door.endswith("role-session") else frozenset({WRITER_ROLE if actor.writer else "reader"})
        )
        expected = actor.context.model_copy(update={"roles": granted})
        assert context == expected, f"{door} carried {actor.label} as {context}"
        return self.invoke(context, tool, json.loads(event["body"]))

    def invoke(self, context: Any, tool: str, body: dict[str, Any]) -> Outcome:
        try:
            return Outcome(None, CATALOG[tool].invoke(self.services, context, body))
        except MnemoError as error:
            return Outcome(error.code, error.envelope())

    def attempt(self, event: dict[str, Any], tool: str, body: dict[str, Any]) -> Outcome:
        """An event that should be refused; if it is not, the tool runs as whoever it came out as."""
        try:
            context = context_from_event(event)
        except MnemoError as error:
            return Outcome(error.code, error.envelope())
        return self.invoke(context, tool, body)


class EventIsolationMachine(IsolationMachine):
    stats = Stats()
    cast = CAST
    #: Calls per door, and refused attacks per kind, over the whole run, for the report.
    doors: ClassVar[dict[str, int]] = {}
    attacks: ClassVar[dict[str, int]] = {}

    def make_transport(self, services: Services) -> Any:
        return ThroughEvents(services)

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            for door, count in self.transport.by_door.items():
                self.doors[door] = self.doors.get(door, 0) + count

    def _refused(
        self, kind: str, caller: Actor, event: dict[str, Any], header: str, what: str, tool: str, body: dict[str, Any]
    ) -> None:
        self.stats.operations += 1
        self.stats.cross_scope += 1
        self.stats.by_tool[tool] = self.stats.by_tool.get(tool, 0) + 1
        self.attacks[kind] = self.attacks.get(kind, 0) + 1
        outcome = self.transport.attempt(event, tool, body)
        self.check_leaks(caller, f"{tool} ({what})", body, outcome.body)
        self.expect(outcome, "UNAUTHORIZED", what)
        assert outcome.body["details"] == {"field": header}, (what, outcome.body)

    @rule(victim=actors, stranger=st.sampled_from(STRANGERS), http=st.booleans(), data=st.data())
    def a_caller_not_listed_names_someone(
        self, victim: Actor, stranger: tuple[str, str], http: bool, data: st.DataObject
    ) -> None:
        arn, why = stranger
        headers = identity_headers(victim)
        tool, body, after = self._attack_body(data, victim)
        event = iam_event(arn, http=http, headers=headers, tool=tool, body=body)
        as_itself = context_from_event(iam_event(arn, http=http))  # who it is without the headers
        caller = Actor(as_itself.tenant, str(as_itself.user), None, None, None, None, None, False)
        self._refused(
            "a_caller_not_listed_names_someone",
            caller,
            event,
            min(headers, key=str.lower),
            f"{why} ({arn}) naming {victim.label}",
            tool,
            body,
        )
        after()

    @rule(
        actor=actors,
        victim=actors,
        header=st.sampled_from([*IDENTITY_HEADERS, "X-Mnemo-Roles"]),
        http=st.booleans(),
        data=st.data(),
    )
    def a_header_spliced_in_unsigned(
        self, actor: Actor, victim: Actor, header: str, http: bool, data: st.DataObject
    ) -> None:
        """The delegate signs its own headers; another one on the way names the victim's id unsigned.

        A header the delegate signed cannot be changed (API Gateway would refuse the signature), so the
        splice adds a header the delegate did not send, or one it sent but did not sign.
        """
        tool, body, after = self._attack_body(data, victim)
        arn = f"arn:aws:sts::{actor.tenant}:assumed-role/{DELEGATE_NAME}/task-x"
        own = identity_headers(actor)
        if header in own:
            event = iam_event(arn, http=http, headers=own, signed=[h for h in own if h != header], tool=tool, body=body)
            what = f"{header} of {actor.label} left out of SignedHeaders"
        else:
            event = iam_event(arn, http=http, headers=own, tool=tool, body=body)
            set_header(event, header, victim_value(victim, header))
            what = f"{header}: {victim_value(victim, header)} spliced in beside {actor.label}'s signed headers"
        self._refused("a_header_spliced_in_unsigned", actor, event, header, what, tool, body)
        after()

    @rule(actor=actors, victim=actors, header=st.sampled_from(IDENTITY_HEADERS), http=st.booleans())
    def a_delegate_sends_a_forged_id(self, actor: Actor, victim: Actor, header: str, http: bool) -> None:
        """An id that tries to splice another scope key in is refused, never obeyed."""
        headers = identity_headers(actor)
        headers[header] = f"{victim_value(victim, header)}|user|u={victim.user}"
        arn = f"arn:aws:sts::{actor.tenant}:assumed-role/{DELEGATE_NAME}/task-f"
        body = {"query": "note", "threshold": 0.0}
        event = iam_event(arn, http=http, headers=headers, body=body)
        self._refused(
            "a_delegate_sends_a_forged_id",
            actor,
            event,
            header,
            f"forged {header}: {headers[header]}",
            "memory_search",
            body,
        )

    @rule(actor=actors, victim=actors, http=st.booleans(), data=st.data())
    def a_delegate_names_a_tenant(self, actor: Actor, victim: Actor, http: bool, data: st.DataObject) -> None:
        tool, body, after = self._attack_body(data, victim)
        headers = {**identity_headers(victim), "X-Mnemo-Tenant": victim.tenant}
        arn = f"arn:aws:sts::{actor.tenant}:assumed-role/{DELEGATE_NAME}/task-t"
        event = iam_event(arn, http=http, headers=headers, tool=tool, body=body)
        caller = Actor(
            actor.tenant,
            victim.user,
            victim.agent,
            victim.session,
            victim.project,
            victim.team,
            victim.org,
            victim.writer,
        )  # at most, what it could have named without the tenant
        self._refused(
            "a_delegate_names_a_tenant", caller, event, "X-Mnemo-Tenant", f"X-Mnemo-Tenant: {victim.tenant}", tool, body
        )
        after()

    @rule(actor=actors, victim=actors, header=st.sampled_from(ALL_HEADERS), http=st.booleans(), data=st.data())
    def a_token_holder_sends_headers(
        self, actor: Actor, victim: Actor, header: str, http: bool, data: st.DataObject
    ) -> None:
        tool, body, after = self._attack_body(data, victim)
        value = victim_value(victim, header)
        event = jwt_event(claims(actor), http=http, headers={header: value}, tool=tool, body=body)
        self._refused(
            "a_token_holder_sends_headers",
            actor,
            event,
            header,
            f"a token for {actor.label} with {header}: {value}",
            tool,
            body,
        )
        after()

"""A model-based isolation machine: many callers, every tool family, and a model of who owns what.

Every piece of content the machine writes carries a fresh *secret* token
(``sec000123``) bound to the scope key it was written in (``t=acme|project|p=p1``),
and every id the service hands out (memory ids, generated message ids, knowledge
pointer ids) is bound to its scope the same way. After each call the answer is
scanned for those tokens: a token whose scope is not one the caller may read
(``RequestContext.scope_key`` of its readable layers, the rule of context.py) is
a leak, unless the caller itself sent that token in the request.

Callers are drawn from two tenants whose names, users, sessions and projects are
prefixes of one another (``acme``/``acme.eu``, ``alice``/``alice2``, ``s1``/``s10``,
``p1``/``p10``), with and without the writer role. Operations pick their targets
from everything ever written, so most of them reach into another scope: stolen
memory ids, message ids, topic names and knowledge ids, another owner's handles
as queries, idempotency keys, and identity fields in the body. Cross-scope writes
are read back as the owner afterwards, and ``teardown`` reads every owner's data
back once more.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from helpers import http_request, make_services
from mnemo.briefing.models import SECTIONS
from mnemo.context import MEMORY_LAYERS, SHARED_LAYERS, WRITER_ROLE, RequestContext
from mnemo.errors import HTTP_STATUS, MnemoError
from mnemo.runtime import Services, set_services
from mnemo.sync.models import SyncNowInput
from mnemo.sync.service import pointer_id
from mnemo.tools.registry import load_catalog

CATALOG = load_catalog()

# ----------------------------------------------------------------- actors

TENANTS = ("acme", "acme.eu")  # one tenant id is a prefix of the other
#: (user, agent, session, project, team, org, writer); the same ids in both tenants.
PROFILES: tuple[tuple[str, str | None, str | None, str | None, str | None, str | None, bool], ...] = (
    ("alice", "a1", "s1", "p1", "t1", "o1", True),
    ("alice", "a2", "s10", "p1", None, "o1", False),
    ("alice2", "a1", "s1", "p10", "t1", "o2", True),
    ("alice2", None, None, None, None, None, False),
    ("bob", None, None, None, "t10", "o1", False),
    ("bob", "a1", "s1", "p1", None, "o2", True),
)
ID_FIELDS = ("user", "agent", "session", "project", "team", "org")


@dataclass(frozen=True)
class Actor:
    tenant: str
    user: str
    agent: str | None
    session: str | None
    project: str | None
    team: str | None
    org: str | None
    writer: bool

    @property
    def label(self) -> str:
        ids = ",".join(f"{name}={getattr(self, name)}" for name in ID_FIELDS if getattr(self, name) is not None)
        return f"{self.tenant}[{ids}{',writer' if self.writer else ''}]"

    def __repr__(self) -> str:  # what hypothesis prints in a failing step
        return self.label

    @cached_property
    def context(self) -> RequestContext:
        return RequestContext(
            tenant=self.tenant,
            user=self.user,
            agent=self.agent,
            session=self.session,
            project=self.project,
            team=self.team,
            org=self.org,
            roles=frozenset({WRITER_ROLE} if self.writer else set()),
        )

    @cached_property
    def scopes(self) -> frozenset[str]:
        """Every scope key this caller may read: the layer rules of context.py."""
        return frozenset(self.context.scope_key(layer) for layer in self.context.readable_layers())

    @cached_property
    def user_scope(self) -> str:
        return self.context.scope_key("user")

    @cached_property
    def topic_scope(self) -> str:
        return self.context.scope_key("project" if self.project is not None else "user")

    @property
    def topic_writer(self) -> bool:
        return self.project is None or self.writer

    @cached_property
    def headers(self) -> dict[str, str]:
        """The local server's transport identity; a non-writer sends a role that grants nothing."""
        wire = {"X-Mnemo-Tenant": self.tenant}
        for name in ID_FIELDS:
            value = getattr(self, name)
            if value is not None:
                wire[f"X-Mnemo-{name.title()}"] = value
        wire["X-Mnemo-Roles"] = WRITER_ROLE if self.writer else "reader"
        return wire


ACTORS: tuple[Actor, ...] = tuple(Actor(tenant, *profile) for tenant in TENANTS for profile in PROFILES)
#: The callers of the machine running now (``IsolationMachine.cast``); a machine over another transport may
#: cast other tenants (accounts) or callers of the same shape. Rules draw an index into it, so every
#: machine draws the same sequences.
_CAST: list[tuple[Actor, ...]] = [ACTORS]
actors = st.sampled_from(range(len(ACTORS))).map(lambda index: _CAST[0][index])

# ------------------------------------------------------------ statistics


@dataclass
class Stats:
    operations: int = 0
    cross_scope: int = 0
    leaks: int = 0
    examples: int = 0
    by_tool: dict[str, int] = field(default_factory=dict)

    def line(self, level: str) -> str:
        return (
            f"isolation ({level}): {self.operations} operations, {self.cross_scope} cross-scope attempts, "
            f"{self.leaks} leaks ({self.examples} examples, {len(self.by_tool)} tools)"
        )


# ------------------------------------------------------------- transports


@dataclass
class Outcome:
    code: str | None  # None on success, else the envelope's errorCode
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.code is None


class InProcess:
    """Through the tool registry with a RequestContext, as every front door ends up calling it."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def call(self, actor: Actor, tool: str, body: dict[str, Any]) -> Outcome:
        try:
            return Outcome(None, CATALOG[tool].invoke(self.services, actor.context, body))
        except MnemoError as error:
            return Outcome(error.code, error.envelope())


class OverHttp:
    """POST /v1/tools/{tool} on a real local server, identity in X-Mnemo-* headers."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, actor: Actor, tool: str, body: dict[str, Any]) -> Outcome:
        return self.raw(actor.headers, tool, body)

    def raw(self, headers: dict[str, str], tool: str, body: dict[str, Any]) -> Outcome:
        status, payload = http_request(
            self.base, "POST", f"/v1/tools/{tool}", body, {"Content-Type": "application/json", **headers}
        )
        assert isinstance(payload, dict), f"{tool}: HTTP {status} answered {payload!r}"
        if status == 200:
            return Outcome(None, payload)
        code = payload.get("errorCode")
        assert code in HTTP_STATUS, f"{tool}: HTTP {status} with {payload}"
        assert HTTP_STATUS[code] == status, f"{tool}: HTTP {status} with {payload}"
        return Outcome(code, payload)


# ------------------------------------------------------------------ model

MAX_TOPIC_TAGS = 20
NOBODY = "<nobody>"  # the scope of content whose write was refused: no one may ever see it
TOKEN = re.compile(r"sec\d{6}|mem_[0-9a-fk][0-9a-f]{23}|msg_[0-9a-f]{24}|(?:ent|fct)_[0-9a-f]{24}")


@dataclass
class Memory:
    memory_id: str
    scope: str
    layer: str
    secret: str
    handle: str
    owner: Actor
    alive: bool = True
    pointer: bool = False


@dataclass
class Entry:  # a conversation or an execution
    scope: str
    message_id: str
    secret: str
    body: dict[str, Any]
    owner: Actor


@dataclass
class Topic:
    scope: str
    name: str
    secret: str
    tag: str
    owner: Actor
    tags: int = 2


@dataclass
class StoredFile:  # a StoredAsset (store "asset") or a workspace file (store "ws")
    store: str
    scope: str
    name: str
    secrets: list[str]  # in the order the content holds them
    version: int
    owner: Actor  # the last writer: it reads the file back
    alive: bool = True


@dataclass(eq=False)
class GraphEntity:
    entity_id: str
    scope: str
    layer: str
    name: str
    secret: str | None  # the secret its summary holds, once updated
    owner: Actor  # its creator: it reads the entity back
    alive: bool = True


@dataclass(eq=False)
class GraphFact:
    fact_id: str
    scope: str
    layer: str
    secret: str  # in its text
    subject: GraphEntity
    object: GraphEntity
    owner: Actor
    alive: bool = True
    invalid: bool = False


@dataclass(frozen=True)
class Knowledge:
    tenant: str
    layer: str
    scope: str
    item_id: str
    path: str
    secret: str
    dependency: str


KNOWLEDGE_FOLDERS: tuple[tuple[str, str, str | None], ...] = (
    ("company", "company", None),
    ("org", "orgs", "o1"),
    ("org", "orgs", "o2"),
    ("team", "teams", "t1"),
    ("team", "teams", "t10"),
    ("project", "projects", "p1"),
    ("project", "projects", "p10"),
)
#: One id defined in several layers of each tenant: the most specific copy wins.
COMMON_ID = "policy-common"
COMMON_IN = {"company": None, "org": "o1", "project": "p1"}
KNOWLEDGE_PRECEDENCE = ("project", "team", "org", "company")


def knowledge_scope(tenant: str, layer: str, layer_id: str | None) -> str:
    ids = {} if layer == "company" else {layer: layer_id}
    return RequestContext(tenant=tenant, **ids).scope_key(layer)


def knowledge_file(item_id: str, secret: str, dependency: str) -> bytes:
    return (
        f"---\nid: {item_id}\ntype: policy\ntitle: Rule {item_id}\n"
        f"summary: Keeps {secret} out of shared code\nstatus: accepted\ntags: [isolation]\n"
        f"constraints:\n  - operator: must_not_use\n    target: dependency\n    pattern: '{dependency}'\n"
        f"    message: 'Dependency refused by {secret}'\n---\n# {item_id}\n\nBody of {item_id}: {secret}.\n"
    ).encode()


class Ledger:
    """Fresh tokens, and the scope entitled to see each secret and id."""

    def __init__(self, counter: int = 0, tokens: dict[str, str] | None = None) -> None:
        self.counter = counter
        self.tokens: dict[str, str] = dict(tokens or {})

    def copy(self) -> Ledger:
        return Ledger(self.counter, self.tokens)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter:06d}" if prefix == "sec" else f"{prefix}{self.counter:05d}"

    def secret(self, scope: str) -> str:
        token = self.fresh("sec")
        self.tokens[token] = scope
        return token


@dataclass(frozen=True)
class Template:
    """A data directory with both tenants' knowledge pushed and synced, and its part of the model."""

    directory: Path
    ledger: Ledger
    knowledge: tuple[Knowledge, ...]
    broken: tuple[tuple[str, str, str], ...]  # (tenant, scope, path) of files that fail to sync
    pointers: dict[str, Memory]


_TEMPLATE: dict[tuple[str, ...], Template] = {}
#: Many short-lived data directories: in memory where the machine has a tmpfs, else the default temp dir.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def knowledge_template(cast: tuple[Actor, ...] = ACTORS) -> Template:
    """Built once per process and cast (a push and sync take longer than a whole example), copied by each."""
    tenants = tuple(dict.fromkeys(actor.tenant for actor in cast))
    if tenants in _TEMPLATE:
        return _TEMPLATE[tenants]
    directory = Path(tempfile.mkdtemp(prefix="mnemo-isolation-template-", dir=SCRATCH))
    atexit.register(shutil.rmtree, directory, True)
    services = make_services(directory)
    ledger = Ledger()
    knowledge: list[Knowledge] = []
    broken: list[tuple[str, str, str]] = []
    pointers: dict[str, Memory] = {}
    for tenant in tenants:
        for layer, folder, layer_id in KNOWLEDGE_FOLDERS:
            scope = knowledge_scope(tenant, layer, layer_id)
            where = f"{folder}/{layer_id}" if layer_id else folder
            ids = [f"policy-{ledger.fresh('kh')}"]
            if layer in COMMON_IN and COMMON_IN[layer] == layer_id:
                ids.append(COMMON_ID)  # one id in several layers of each tenant: the most specific wins
            for item_id in ids:
                secret, dependency = ledger.secret(scope), f"dep{ledger.fresh('k')}"
                path = f"{where}/{item_id}.md"
                content = knowledge_file(item_id, secret, dependency)
                services.repository.push(tenant, path, content, author="isolation", message=secret)
                knowledge.append(Knowledge(tenant, layer, scope, item_id, path, secret, dependency))
                memory_id = pointer_id(scope, item_id)
                ledger.tokens[memory_id] = scope
                pointers[memory_id] = Memory(memory_id, scope, layer, secret, item_id, cast[0], pointer=True)
            # A file that fails to sync: its path (and so its secret) may show only to its own layer.
            path = f"{where}/broken-{ledger.secret(scope)}.md"
            services.repository.push(tenant, path, b"---\nid: [not, an, id]\n---\n", author="isolation", message="m")
            broken.append((tenant, scope, path))
        result = services.sync.sync(tenant, SyncNowInput(), actor="isolation").result
        assert result.added == sum(k.tenant == tenant for k in knowledge), result
        assert result.failures == sum(b[0] == tenant for b in broken), result
    _TEMPLATE[tenants] = Template(directory, ledger, tuple(knowledge), tuple(broken), pointers)
    return _TEMPLATE[tenants]


# ---------------------------------------------------------------- machine

#: Where a file tool's path points: the caller's own blocks, its user's, its project's, or the workspace.
FILE_TARGETS = ("own", "user", "project", "workspace")
#: Every caller writes the same few names: most paths are someone else's too.
FILE_NAMES = ("a.md", "b.md", "c.md")
FILE_MARKERS = ("block", "workspace", "user", "project")
#: The graph's layers the machine writes, and a few names every caller uses (two spellings of one name).
GRAPH_LAYERS = ("user", "agent", "session", "project", "org")
GRAPH_NAMES = ("Alice", "alice", "Acme", "Zed")
GRAPH_PREDICATES = ("works_at", "knows")
MESSAGE_STEMS = ("deploy the cache", "rotate the keys", "weather in Paris", "release notes")
CLAIM_KEYS: dict[str, str] = {
    "user_id": "user",
    "userId": "user",
    "user": "user",
    "tenant": "tenant",
    "tenantId": "tenant",
    "tenant_id": "tenant",
    "project": "project",
    "projectId": "project",
    "team_id": "team",
    "orgId": "org",
    "agent_id": "agent",
    "sessionId": "session",
    "roles": "roles",
}


class IsolationMachine(RuleBasedStateMachine):
    """Random operations of every family by every actor; each answer is checked against the model."""

    stats = Stats()
    #: Every caller the rules draw from: ``ACTORS`` unless a transport needs callers of its own.
    cast: tuple[Actor, ...] = ACTORS

    def __init__(self) -> None:
        super().__init__()
        assert len(self.cast) == len(ACTORS), "a cast replaces callers one for one"
        _CAST[0] = self.cast
        template = knowledge_template(self.cast)
        self.directory = Path(tempfile.mkdtemp(prefix="mnemo-isolation-", dir=SCRATCH))
        shutil.copytree(template.directory, self.directory, dirs_exist_ok=True)
        self.services = make_services(self.directory)
        set_services(self.services)
        self.transport = self.make_transport(self.services)
        self.ledger = template.ledger.copy()
        self.knowledge = template.knowledge
        self.broken = template.broken
        self.memories: dict[str, Memory] = {key: replace(memory) for key, memory in template.pointers.items()}
        self.idempotency: dict[tuple[str, str], str] = {}  # (scope, key) -> memory id
        self.idempotency_keys: list[str] = []
        self.conversations: dict[tuple[str, str], Entry] = {}
        self.executions: dict[tuple[str, str], Entry] = {}
        self.message_ids: list[str] = []
        self.tool_names: list[str] = []
        self.topics: dict[tuple[str, str], Topic] = {}
        self.topic_names: list[str] = []
        self.general: dict[str, str] = {}  # topic scope -> general section content
        self.cursors: list[tuple[Actor, dict[str, Any], str]] = []  # (who, its memory_search, nextCursor)
        self.memory_list_cursors: list[tuple[Actor, str, str]] = []  # (who, the layer listed, nextCursor)
        #: Scopes that stored an entry of their own under another scope's generated message_id: theirs to see too.
        self.granted: dict[str, set[str]] = {}
        self.files: dict[tuple[str, str, str], StoredFile] = {}  # (store, scope, name)
        self.pins: dict[str, list[tuple[str, str]]] = {}  # pinner scope -> (scope, name) in context order
        self.list_cursors: list[tuple[Actor, str, str]] = []  # (who, the folder listed, nextCursor)
        self.pinners: dict[str, Actor] = {}  # pinner scope -> a caller that pinned as it
        self.entities: dict[tuple[str, str], GraphEntity] = {}  # (scope, folded name) -> the entity it names
        self.graph_entities: list[GraphEntity] = []  # every entity ever made, deleted ones too
        self.graph_facts: dict[str, GraphFact] = {}
        self.open_links: dict[tuple[str, str, str, str], str] = {}  # (scope, subject, predicate, object) -> fact
        self.delete_tokens: list[str] = []
        self.stats.examples += 1

    # --------------------------------------------------------- plumbing
    def make_transport(self, services: Services) -> Any:
        return InProcess(services)

    def teardown(self) -> None:
        try:
            if sys.exc_info()[0] is None:  # a failing step is reported as it is, not masked here
                self._verify_everything()
        finally:
            set_services(None)
            shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def counter(self) -> int:
        return self.ledger.counter

    @property
    def tokens(self) -> dict[str, str]:
        return self.ledger.tokens

    def _fresh(self, prefix: str) -> str:
        return self.ledger.fresh(prefix)

    def secret(self, scope: str) -> str:
        return self.ledger.secret(scope)

    def call(self, actor: Actor, tool: str, body: dict[str, Any], *, cross: bool = False) -> Outcome:
        """One tool call, with the leak check every answer gets."""
        self.stats.operations += 1
        self.stats.by_tool[tool] = self.stats.by_tool.get(tool, 0) + 1
        if cross:
            self.stats.cross_scope += 1
        outcome = self.transport.call(actor, tool, body)
        self.check_leaks(actor, tool, body, outcome.body)
        return outcome

    def check_leaks(self, actor: Actor, tool: str, body: Any, answer: Any) -> None:
        sent = json.dumps(body)
        text = json.dumps(answer)
        for token in set(TOKEN.findall(text)):
            scope = self.tokens.get(token)
            if scope is None or scope in actor.scopes or token in sent or self.granted.get(token, set()) & actor.scopes:
                continue
            self.stats.leaks += 1
            raise AssertionError(
                f"LEAK: {tool} as {actor.label} with {sent} answered {token}, which belongs to scope "
                f"{scope!r} (caller's scopes: {sorted(actor.scopes)}); answer: {text[:2000]}"
            )

    def expect(self, outcome: Outcome, code: str | None, what: str) -> None:
        assert outcome.code == code, f"{what}: expected {code or 'success'}, got {outcome.code}: {outcome.body}"

    @staticmethod
    def normalized(outcome: Outcome, *replace: str) -> str:
        text = json.dumps(outcome.body, sort_keys=True)
        for value in replace:
            text = text.replace(value, "<ID>")
        return text

    def same_as_unknown(self, actor: Actor, tool: str, stolen: Outcome, real: str, fake: str, body: dict) -> None:
        """A foreign id must answer exactly as an id that never existed: no existence oracle."""
        unknown = self.call(actor, tool, body)
        assert self.normalized(stolen, real) == self.normalized(unknown, fake), (
            f"{tool} as {actor.label}: a foreign id answers differently from an unknown one: "
            f"{stolen.body} vs {unknown.body}"
        )

    # -------------------------------------------------------- knowledge
    @staticmethod
    def _visible(actor: Actor, item: Knowledge) -> bool:
        return item.scope in actor.scopes

    def effective_knowledge(self, actor: Actor) -> dict[str, Knowledge]:
        """id -> the copy the caller sees: the most specific visible layer wins."""
        chosen: dict[str, Knowledge] = {}
        for layer in reversed(KNOWLEDGE_PRECEDENCE):
            for item in self.knowledge:
                if item.layer == layer and self._visible(actor, item):
                    chosen[item.item_id] = item
        return chosen

    # ----------------------------------------------------------- memory
    @rule(
        actor=actors,
        layer=st.sampled_from(MEMORY_LAYERS),
        key=st.sampled_from(["none", "fresh", "stolen"]),
        data=st.data(),
    )
    def memory_add(self, actor: Actor, layer: str, key: str, data: st.DataObject) -> None:
        context = actor.context
        allowed = context.can_read(layer) and (layer not in SHARED_LAYERS or actor.writer)
        scope = context.scope_key(layer) if allowed else NOBODY
        secret, handle = self.secret(scope), self._fresh("mh")
        body: dict[str, Any] = {"content": f"{secret} {handle} note", "layer": layer, "tags": [handle]}
        cross = False
        idempotency = None
        if key == "fresh" or (key == "stolen" and not self.idempotency_keys):
            idempotency = f"idem-{handle}"
        elif key == "stolen":
            idempotency = data.draw(st.sampled_from(self.idempotency_keys), label="stolen idempotency key")
            cross = not any(s == scope and k == idempotency for s, k in self.idempotency)
        if idempotency is not None:
            body["idempotencyKey"] = idempotency
        outcome = self.call(actor, "memory_add", body, cross=cross)
        if context.missing_ids(layer):
            self.expect(outcome, "INVALID_INPUT", f"memory_add {layer} without its ids")
            return
        if not allowed:
            self.expect(outcome, "UNAUTHORIZED", f"memory_add {layer} without the writer role")
            return
        if idempotency is not None and (scope, idempotency) in self.idempotency:
            self.expect(outcome, "CONFLICT", "an idempotency key reused in its own scope for another request")
            return
        self.expect(outcome, None, "memory_add")
        memory_id = outcome.body["memoryId"]
        assert not outcome.body["deduplicated"], f"memory_add: unique content deduplicated: {outcome.body}"
        assert memory_id not in self.memories, f"memory_add answered an existing id {memory_id}"
        self.tokens[memory_id] = scope
        self.memories[memory_id] = Memory(memory_id, scope, layer, secret, handle, actor)
        if idempotency is not None:
            self.idempotency[(scope, idempotency)] = memory_id
            self.idempotency_keys.append(idempotency)

    @rule(
        actor=actors,
        data=st.data(),
        layers=st.none() | st.lists(st.sampled_from(MEMORY_LAYERS), min_size=1, max_size=3, unique=True),
        paged=st.booleans(),
        by_tag=st.booleans(),
    )
    def memory_search(
        self, actor: Actor, data: st.DataObject, layers: list[str] | None, paged: bool, by_tag: bool
    ) -> None:
        """Search for someone's memory by its handle (in the text, or as a tag filter)."""
        target = self._pick(data, list(self.memories))
        if target is None:
            query = "note"
            cross = False
        else:
            query = self.memories[target].handle
            cross = self.memories[target].scope not in actor.scopes
        body: dict[str, Any] = {"query": query, "threshold": 0.0, "limit": 1 if paged else 100}
        if not paged:
            body["includeGraph"] = True  # the graph's part of the answer is checked for leaks too
        if layers is not None:
            body["layers"] = layers
        if by_tag and target is not None and not self.memories[target].pointer:
            body["tags"] = [query.upper()]
        outcome = self.call(actor, "memory_search", body, cross=cross)
        self.expect(outcome, None, "memory_search")
        self._check_search(actor, layers, outcome)
        if outcome.body["hasMore"]:
            self.cursors.append((actor, body, outcome.body["nextCursor"]))

    def _check_search(self, actor: Actor, layers: list[str] | None, outcome: Outcome) -> None:
        readable = actor.context.readable_layers(layers)
        assert outcome.body["searchedLayers"] == readable, outcome.body["searchedLayers"]
        scopes = {actor.context.scope_key(layer) for layer in readable}
        for result in outcome.body["results"]:
            memory = self.memories.get(result["memoryId"])
            assert memory is not None, f"memory_search as {actor.label} returned an unknown memory: {result}"
            assert memory.scope in scopes, f"memory_search as {actor.label} returned {memory} outside {scopes}"
            assert memory.alive, f"memory_search as {actor.label} returned a deleted memory: {result}"
            assert memory.secret in result["content"], f"memory_search: content is not the model's: {result}"

    @rule(actor=actors, data=st.data())
    def memory_search_with_a_stolen_cursor(self, actor: Actor, data: st.DataObject) -> None:
        """Another caller's nextCursor, replayed with its query: refused unless the scopes are the same."""
        if not self.cursors:
            return
        owner, body, cursor = data.draw(st.sampled_from(self.cursors), label="stolen cursor")
        layers = body.get("layers")

        def scopes(who: Actor) -> list[str]:
            return sorted(who.context.scope_key(layer) for layer in who.context.readable_layers(layers))

        same = scopes(owner) == scopes(actor)
        outcome = self.call(actor, "memory_search", {**body, "cursor": cursor}, cross=not same)
        if not scopes(actor):  # none of those layers readable: nothing is searched, the cursor is moot
            self.expect(outcome, None, "memory_search of layers the caller cannot read")
            assert outcome.body["results"] == [], outcome.body
        elif not same:
            self.expect(outcome, "INVALID_INPUT", f"memory_search with the cursor of {owner.label}")
            return
        self.expect(outcome, None, "memory_search with a cursor of the same scopes")
        self._check_search(actor, layers, outcome)

    @rule(actor=actors, data=st.data())
    def memory_delete(self, actor: Actor, data: st.DataObject) -> None:
        target = self._pick(data, list(self.memories))
        if target is None:
            return
        memory = self.memories[target]
        entitled = memory.alive and memory.scope in actor.scopes
        cross = memory.scope not in actor.scopes
        outcome = self.call(actor, "memory_delete", {"memoryId": target}, cross=cross)
        if not entitled:
            self.expect(outcome, "NOT_FOUND", f"memory_delete of {memory}")
            fake = f"mem_{'0' * 23}{self.counter % 10}"
            self.same_as_unknown(actor, "memory_delete", outcome, target, fake, {"memoryId": fake})
            if memory.alive:
                self.verify_memory(memory)
            return
        if memory.layer in SHARED_LAYERS and not actor.writer:
            self.expect(outcome, "UNAUTHORIZED", "memory_delete in a shared layer without the writer role")
        elif memory.pointer:
            self.expect(outcome, "INVALID_INPUT", "memory_delete of a knowledge pointer")
        else:
            self.expect(outcome, None, "memory_delete")
            memory.alive = False
            return
        self.verify_memory(memory)

    def verify_memory(self, memory: Memory) -> None:
        """Read a memory back as its owner: still there (or gone) exactly as the model says."""
        owner = next(actor for actor in self.cast if memory.scope in actor.scopes)
        body = {"query": memory.handle, "layers": [memory.layer], "threshold": 0.0, "limit": 100}
        outcome = self.call(owner, "memory_search", body)
        self.expect(outcome, None, "memory_search (owner read-back)")
        found = [r for r in outcome.body["results"] if r["memoryId"] == memory.memory_id]
        if memory.alive:
            assert found, f"{owner.label} no longer finds its memory {memory}: {outcome.body}"
            assert memory.secret in found[0]["content"], (
                f"{owner.label} no longer finds its memory {memory}: {outcome.body}"
            )
        else:
            assert not found, f"deleted memory {memory} is still found by {owner.label}"

    @rule(
        actor=actors,
        layers=st.lists(st.sampled_from(MEMORY_LAYERS), min_size=1, max_size=3),
        keyed=st.booleans(),
    )
    def memory_add_batch(self, actor: Actor, layers: list[str], keyed: bool) -> None:
        """A batch of fresh memories over several layers: each item answers as memory_add would."""
        context = actor.context
        items: list[dict[str, Any]] = []
        plans: list[tuple[str, bool, str, str, str]] = []
        for layer in layers:
            allowed = context.can_read(layer) and (layer not in SHARED_LAYERS or actor.writer)
            scope = context.scope_key(layer) if allowed else NOBODY
            secret, handle = self.secret(scope), self._fresh("mh")
            item: dict[str, Any] = {"content": f"{secret} {handle} note", "layer": layer, "tags": [handle]}
            if keyed:
                item["idempotencyKey"] = f"idem-{handle}"
            items.append(item)
            plans.append((layer, allowed, scope, secret, handle))
        outcome = self.call(actor, "memory_add_batch", {"items": items})
        self.expect(outcome, None, "memory_add_batch")
        results = outcome.body["results"]
        assert [result["index"] for result in results] == list(range(len(items))), results
        for result, (layer, allowed, scope, secret, handle) in zip(results, plans, strict=True):
            if context.missing_ids(layer):
                assert result["errorCode"] == "INVALID_INPUT", f"memory_add_batch {layer} without its ids: {result}"
                continue
            if not allowed:
                assert result["errorCode"] == "UNAUTHORIZED", f"memory_add_batch {layer} without the role: {result}"
                continue
            assert result["success"] and not result["deduplicated"], f"memory_add_batch: {result}"
            memory_id = result["memoryId"]
            assert memory_id not in self.memories, f"memory_add_batch answered an existing id {memory_id}"
            self.tokens[memory_id] = scope
            self.memories[memory_id] = Memory(memory_id, scope, layer, secret, handle, actor)
            if keyed:
                self.idempotency[(scope, f"idem-{handle}")] = memory_id
                self.idempotency_keys.append(f"idem-{handle}")

    @rule(actor=actors, data=st.data())
    def memory_delete_batch(self, actor: Actor, data: st.DataObject) -> None:
        """Someone's memories (an id possibly twice) deleted in one call: each id answers as memory_delete
        would, a foreign one exactly as an unknown one."""
        if not self.memories:
            return
        targets = data.draw(st.lists(st.sampled_from(list(self.memories)), min_size=1, max_size=3), label="targets")
        cross = any(self.memories[target].scope not in actor.scopes for target in targets)
        outcome = self.call(actor, "memory_delete_batch", {"memoryIds": targets}, cross=cross)
        self.expect(outcome, None, "memory_delete_batch")
        for result, target in zip(outcome.body["results"], targets, strict=True):
            memory = self.memories[target]
            assert result["memoryId"] == target, result
            code: str | None = None
            if not (memory.alive and memory.scope in actor.scopes):
                code = "NOT_FOUND"
                unknown = {"field": "memoryId", "memoryId": target}
                assert (result["message"], result["details"]) == (f"Memory '{target}' not found", unknown), result
            elif memory.layer in SHARED_LAYERS and not actor.writer:
                code = "UNAUTHORIZED"
            elif memory.pointer:
                code = "INVALID_INPUT"
            else:
                memory.alive = False
            assert result["errorCode"] == code, f"memory_delete_batch of {memory}: expected {code}, got {result}"
        for target in dict.fromkeys(targets):
            if self.memories[target].alive:
                self.verify_memory(self.memories[target])

    @rule(actor=actors, victim=actors)
    def erase_user(self, actor: Actor, victim: Actor) -> None:
        """No actor holds the admin role: erasing anyone, themselves included, is UNAUTHORIZED and erases nothing
        (the later rules find everyone's data). An admin's erasure and what it keeps of the others:
        test_erasure_isolation.py."""
        outcome = self.call(actor, "erase_user", {"subjectUserId": victim.user}, cross=victim.user != actor.user)
        self.expect(outcome, "UNAUTHORIZED", f"erase_user of {victim.user} as {actor.label}")
        assert outcome.body["details"] == {"field": "subjectUserId", "requiredRole": "admin"}, outcome.body

    @rule(actor=actors, layer=st.sampled_from(MEMORY_LAYERS), paged=st.booleans())
    def memory_list(self, actor: Actor, layer: str, paged: bool) -> None:
        """A layer's listing holds the caller's own live memories of that layer and nobody else's."""
        outcome = self.call(actor, "memory_list", {"layer": layer, "limit": 1 if paged else 100})
        if actor.context.missing_ids(layer):
            self.expect(outcome, "INVALID_INPUT", f"memory_list {layer} without its ids")
            return
        self.expect(outcome, None, "memory_list")
        self._check_listing(actor, layer, outcome)
        if outcome.body["hasMore"]:
            self.memory_list_cursors.append((actor, layer, outcome.body["nextCursor"]))

    def _check_listing(self, actor: Actor, layer: str, outcome: Outcome) -> None:
        scope = actor.context.scope_key(layer)
        listed = {result["memoryId"] for result in outcome.body["memories"]}
        for result in outcome.body["memories"]:
            memory = self.memories.get(result["memoryId"])
            assert memory is not None, f"memory_list as {actor.label} returned an unknown memory: {result}"
            assert memory.scope == scope, f"memory_list as {actor.label} returned {memory} outside {scope}"
            assert memory.alive, f"memory_list as {actor.label} returned a deleted memory: {result}"
            assert memory.secret in result["content"], f"memory_list: content is not the model's: {result}"
        if not outcome.body["hasMore"]:  # the whole layer: every live memory of the model is there
            own = {m.memory_id for m in self.memories.values() if m.scope == scope and m.alive and not m.pointer}
            assert own <= listed, f"memory_list as {actor.label} misses {own - listed}"

    @rule(actor=actors, data=st.data())
    def memory_list_with_a_stolen_cursor(self, actor: Actor, data: st.DataObject) -> None:
        """Another caller's nextCursor of the same layer: refused unless it is the same scope."""
        if not self.memory_list_cursors:
            return
        owner, layer, cursor = data.draw(st.sampled_from(self.memory_list_cursors), label="stolen list cursor")
        outcome = self.call(actor, "memory_list", {"layer": layer, "limit": 1, "cursor": cursor}, cross=True)
        if actor.context.missing_ids(layer):
            self.expect(outcome, "INVALID_INPUT", f"memory_list {layer} without its ids")
        elif actor.context.scope_key(layer) != owner.context.scope_key(layer):
            self.expect(outcome, "INVALID_INPUT", f"memory_list with the cursor of {owner.label}")
        else:
            self.expect(outcome, None, "memory_list with a cursor of the same scope")
            for result in outcome.body["memories"]:
                memory = self.memories.get(result["memoryId"])
                assert memory is not None, result
                assert memory.scope == owner.context.scope_key(layer), result

    @rule(actor=actors, data=st.data())
    def memory_history(self, actor: Actor, data: st.DataObject) -> None:
        """A memory's history is there for callers who may read its layer, deleted or not; NOT_FOUND for others,
        worded as for an id that never existed."""
        target = self._pick(data, list(self.memories))
        if target is None:
            return
        memory = self.memories[target]
        readable = memory.scope in actor.scopes
        outcome = self.call(actor, "memory_history", {"memoryId": target}, cross=not readable)
        if not readable:
            self.expect(outcome, "NOT_FOUND", f"memory_history of {memory}")
            fake = f"mem_{'0' * 23}{self.counter % 10}"
            self.same_as_unknown(actor, "memory_history", outcome, target, fake, {"memoryId": fake})
            return
        self.expect(outcome, None, "memory_history")
        events = [change["event"] for change in outcome.body["changes"]]
        assert outcome.body["memoryId"] == target, outcome.body
        assert outcome.body["layer"] == memory.layer, outcome.body
        assert events, f"memory_history of {memory}: {events}"
        assert events[0] in ("ADD", "SYNC_ADD"), f"memory_history of {memory}: {events}"
        if not memory.alive and not memory.pointer:
            assert "DELETE" in events, f"memory_history of deleted {memory}: {events}"

    # ---------------------------------------------------- conversations
    def _message_id(self, data: st.DataObject, actor: Actor) -> tuple[str, bool]:
        """A fresh message id, or one already used by anyone (most often another scope's)."""
        choice = data.draw(st.sampled_from(["fresh", "stolen", "stolen"]), label="message id")
        if choice == "fresh" or not self.message_ids:
            return f"msg-{self._fresh('h')}", False
        message_id = data.draw(st.sampled_from(self.message_ids), label="stolen message id")
        cross = any(
            key[1] == message_id and key[0] != actor.user_scope for key in (*self.conversations, *self.executions)
        )
        return message_id, cross

    @rule(actor=actors, data=st.data(), repeat=st.booleans())
    def add_conversation(self, actor: Actor, data: st.DataObject, repeat: bool) -> None:
        scope = actor.user_scope
        message_id, cross = self._message_id(data, actor)
        existing = self.conversations.get((scope, message_id))
        repeat = repeat and existing is not None and "messages" not in existing.body  # a message is no pair
        if existing is not None and repeat:
            body = dict(existing.body)
            secret = existing.secret
        else:
            secret = self.secret(scope if existing is None else NOBODY)
            stem = data.draw(st.sampled_from(MESSAGE_STEMS), label="stem")
            body = {
                "message_id": message_id,
                "explanation": "isolation",
                "user_input": f"{stem}? {secret}",
                "agent_response": f"answered {secret}",
                "meta_data": {"stem": stem},
            }
        fresh = message_id not in self.message_ids
        generated = fresh and data.draw(st.booleans(), label="let the service name it")
        if generated:
            del body["message_id"]
        outcome = self.call(actor, "add_conversation", body, cross=cross)
        if existing is not None and not repeat:
            self.expect(outcome, "CONFLICT", "add_conversation: another content under an own message_id")
            return
        self.expect(outcome, None, f"add_conversation (message_id of another scope: {cross})")
        if generated:  # a service-made id is bound to its scope like a memory id
            message_id = body["message_id"] = outcome.body["data"]["message_id"]
            assert (scope, message_id) not in self.conversations, f"a generated message_id was reused: {message_id}"
            self.tokens[message_id] = scope
        assert outcome.body["data"]["message_id"] == message_id
        self._remember_conversation(scope, message_id, secret, body, actor, new=existing is None, cross=cross)

    def _remember_conversation(
        self, scope: str, message_id: str, secret: str, body: dict[str, Any], actor: Actor, *, new: bool, cross: bool
    ) -> None:
        """Record a stored conversation record as this caller's, and check the other scopes' under its id."""
        if new:
            self.conversations[(scope, message_id)] = Entry(scope, message_id, secret, body, actor)
            self.message_ids.append(message_id)
            self.granted.setdefault(message_id, set()).add(scope)
        if cross:
            self._verify_foreign_entries(message_id, actor)

    @rule(actor=actors, data=st.data(), repeat=st.booleans())
    def add_messages(self, actor: Actor, data: st.DataObject, repeat: bool) -> None:
        """A chat turn stored as a conversation record of the caller: the same id in another scope is another
        record; an own id with other content is CONFLICT."""
        scope = actor.user_scope
        message_id, cross = self._message_id(data, actor)
        existing = self.conversations.get((scope, message_id))
        # A message is the same one again only from the same session (its session is part of the record).
        repeat = repeat and existing is not None and "messages" in existing.body
        if existing is not None and repeat:
            body, secret = existing.body, existing.secret
            repeat = existing.owner.session == actor.session
        else:
            secret = self.secret(scope if existing is None else NOBODY)
            stem = data.draw(st.sampled_from(MESSAGE_STEMS), label="stem")
            turn = {"role": "user", "content": f"{stem}? {secret}", "name": "speaker", "id": message_id}
            body = {"messages": [{**turn, "at": "2025-01-01T00:00:00Z"}]}
        outcome = self.call(actor, "add_messages", body, cross=cross)
        if existing is not None and not repeat:
            self.expect(outcome, "CONFLICT", "add_messages: another content under an own message id")
            return
        self.expect(outcome, None, f"add_messages (message id of another scope: {cross})")
        assert outcome.body["extraction"] == "off" and outcome.body["pendingTurns"] == 0
        self._remember_conversation(scope, message_id, secret, body, actor, new=existing is None, cross=cross)

    @rule(actor=actors, runs=st.sampled_from([0, 5]))
    def extraction_status(self, actor: Actor, runs: int) -> None:
        """Extraction is off here (no model): every caller sees nothing waiting and no run, whatever others did."""
        outcome = self.call(actor, "extraction_status", {"runs": runs})
        self.expect(outcome, None, "extraction_status")
        assert (outcome.body["enabled"], outcome.body["pendingTurns"], outcome.body["recentRuns"]) == (False, 0, [])

    @rule(actor=actors, dry=st.booleans())
    def memory_extract(self, actor: Actor, dry: bool) -> None:
        outcome = self.call(actor, "memory_extract", {"dryRun": dry})
        self.expect(outcome, "INVALID_INPUT", "memory_extract with extraction off")

    @rule(actor=actors, data=st.data(), repeat=st.booleans(), success=st.booleans())
    def add_execution(self, actor: Actor, data: st.DataObject, repeat: bool, success: bool) -> None:
        scope = actor.user_scope
        message_id, cross = self._message_id(data, actor)
        existing = self.executions.get((scope, message_id))
        if existing is not None and repeat:
            body = dict(existing.body)
            secret = existing.secret
        else:
            secret = self.secret(scope if existing is None else NOBODY)
            tool_name = f"tool-{self._fresh('th')}"
            body = {
                "message_id": message_id,
                "explanation": "isolation",
                "execution_summary": f"Ran {tool_name} for {secret}",
                "tools_used": [tool_name, "shared_tool"],
                "errors": [{"error_type": f"err-{tool_name}", "error_message": f"failed {secret}"}],
                "observations": f"observed {secret}",
                "success": success,
                "duration_ms": 10,
            }
        outcome = self.call(actor, "add_execution", body, cross=cross)
        if existing is not None and not repeat:
            self.expect(outcome, "CONFLICT", "add_execution: another content under an own message_id")
            return
        self.expect(outcome, None, f"add_execution (message_id of another scope: {cross})")
        if existing is None:
            self.executions[(scope, message_id)] = Entry(scope, message_id, secret, body, actor)
            self.granted.setdefault(message_id, set()).add(scope)
            self.message_ids.append(message_id)
            self.tool_names.append(body["tools_used"][0])
        if cross:
            self._verify_foreign_entries(message_id, actor)

    @rule(
        actor=actors,
        data=st.data(),
        strategy=st.sampled_from(["hybrid", "recent", "keyword"]),
        by_id=st.booleans(),
    )
    def retrieve_conversation(self, actor: Actor, data: st.DataObject, strategy: str, by_id: bool) -> None:
        scope = actor.user_scope
        body: dict[str, Any] = {
            "query": data.draw(st.sampled_from(MESSAGE_STEMS), label="query"),
            "explanation": "isolation",
            "retrieval_strategy": strategy,
            "max_results": 50,
        }
        cross = False
        if by_id and self.message_ids:
            message_id, cross = self._message_id(data, actor)
            body["message_id"] = message_id
        outcome = self.call(actor, "retrieve_conversation", body, cross=cross)
        self.expect(outcome, None, "retrieve_conversation")
        returned = outcome.body["data"]["conversations"]
        for conversation in returned:
            self.check_entry(actor, "conversations", conversation)
        if "message_id" in body:
            expected = [body["message_id"]] if (scope, body["message_id"]) in self.conversations else []
            assert [c["message_id"] for c in returned] == expected, f"lookup by message_id: {returned}"

    @rule(
        actor=actors,
        data=st.data(),
        strategy=st.sampled_from(["hybrid", "recent", "keyword"]),
        how=st.sampled_from(["query", "message_id", "tools", "error_type"]),
    )
    def retrieve_execution(self, actor: Actor, data: st.DataObject, strategy: str, how: str) -> None:
        scope = actor.user_scope
        body: dict[str, Any] = {
            "query": "how was it done",
            "explanation": "isolation",
            "retrieval_strategy": strategy,
            "max_results": 50,
        }
        cross = False
        if how == "message_id" and self.message_ids:
            message_id, cross = self._message_id(data, actor)
            body["message_id"] = message_id
        elif how in ("tools", "error_type") and self.tool_names:
            tool_name = data.draw(st.sampled_from(self.tool_names), label="tool name")
            owners = {e.scope for e in self.executions.values() if e.body["tools_used"][0] == tool_name}
            cross = scope not in owners
            if how == "tools":
                body["tools"] = [tool_name.upper()]
            else:
                body["error_type"] = f"err-{tool_name}"
        outcome = self.call(actor, "retrieve_execution", body, cross=cross)
        self.expect(outcome, None, "retrieve_execution")
        returned = outcome.body["data"]["executions"]
        for execution in returned:
            self.check_entry(actor, "executions", execution)
        if "message_id" in body:
            expected = [body["message_id"]] if (scope, body["message_id"]) in self.executions else []
            assert [e["message_id"] for e in returned] == expected, f"lookup by message_id: {returned}"

    def _verify_foreign_entries(self, message_id: str, writer: Actor) -> None:
        """Every other owner of this message_id still has exactly its own conversation and execution."""
        for store, tool in ((self.conversations, "retrieve_conversation"), (self.executions, "retrieve_execution")):
            for (scope, mid), entry in list(store.items()):
                if mid == message_id and scope != writer.user_scope:
                    self.verify_entry(entry, tool)

    def check_entry(self, actor: Actor, kind: str, found: dict[str, Any]) -> None:
        """A returned conversation or execution is the caller's own, linked only to the caller's own other half."""
        scope, message_id = actor.user_scope, found["message_id"]
        mine, other, flag = (
            (self.conversations, self.executions, "has_execution_memory")
            if kind == "conversations"
            else (self.executions, self.conversations, "has_conversation_memory")
        )
        entry = mine.get((scope, message_id))
        assert entry is not None, f"{kind} as {actor.label}: {found} is not one of the caller's own"
        assert entry.secret in json.dumps(found), f"{kind} as {actor.label}: {found} is not one of the caller's own"
        linked = (scope, message_id) in other
        assert found[flag] == linked, (
            f"{flag} of {message_id} as {actor.label} says {found[flag]}; the caller's own entries say {linked}"
        )

    def verify_entry(self, entry: Entry, tool: str) -> None:
        body = {"query": "read back", "explanation": "owner read-back", "message_id": entry.message_id}
        outcome = self.call(entry.owner, tool, body)
        self.expect(outcome, None, f"{tool} (owner read-back)")
        kind = "conversations" if tool == "retrieve_conversation" else "executions"
        found = outcome.body["data"][kind]
        assert len(found) == 1, f"{entry.owner.label} reads back {found}, not {entry.secret}"
        self.check_entry(entry.owner, kind, found[0])

    # ----------------------------------------------------------- topics
    def _topic_name(self, data: st.DataObject, actor: Actor) -> tuple[str, bool]:
        choice = data.draw(st.sampled_from(["fresh", "stolen", "stolen", "stolen-upper"]), label="topic name")
        if choice == "fresh" or not self.topic_names:
            return f"topic-{self._fresh('h')}", False
        name = data.draw(st.sampled_from(self.topic_names), label="stolen topic")
        cross = any(key[1] == name.lower() and key[0] != actor.topic_scope for key in self.topics)
        return (name.upper() if choice == "stolen-upper" else name), cross

    @rule(actor=actors, data=st.data())
    def memorize_new_topic(self, actor: Actor, data: st.DataObject) -> None:
        name, cross = self._topic_name(data, actor)
        key = (actor.topic_scope, name.lower())
        allowed = actor.topic_writer and key not in self.topics
        secret = self.secret(actor.topic_scope if allowed else NOBODY)
        tag = f"tag-{self._fresh('h')}"
        body = {
            "topic": name,
            "tags": [tag, "shared-tag"],
            "summary": f"Summary {secret}",
            "content": f"# {name}\n\nContent {secret}",
        }
        outcome = self.call(actor, "memorize_new_topic", body, cross=cross)
        if not actor.topic_writer:
            self.expect(outcome, "UNAUTHORIZED", "memorize_new_topic in a project without the writer role")
        elif key in self.topics:
            self.expect(outcome, "CONFLICT", "memorize_new_topic of an own existing topic")
        else:
            self.expect(outcome, None, f"memorize_new_topic (a name of another scope: {cross})")
            self.topics[key] = Topic(actor.topic_scope, name, secret, tag, actor)
            self.topic_names.append(name)
        if cross:
            self._verify_foreign_topics(name, actor)

    @rule(actor=actors, data=st.data())
    def recall_memory(self, actor: Actor, data: st.DataObject) -> None:
        if not self.topic_names:
            return
        name, cross = self._topic_name(data, actor)
        outcome = self.call(actor, "recall_memory", {"topic": name}, cross=cross)
        topic = self.topics.get((actor.topic_scope, name.lower()))
        if topic is None:
            self.expect(outcome, "NOT_FOUND", f"recall_memory of {name!r} outside the caller's scope")
            fake = f"topic-unknown{self.counter}"
            self.same_as_unknown(actor, "recall_memory", outcome, name, fake, {"topic": fake})
            return
        self.expect(outcome, None, "recall_memory")
        assert topic.secret in outcome.body["content"], outcome.body
        assert topic.secret in outcome.body["summary"], outcome.body

    @rule(actor=actors, data=st.data())
    def refine_memory(self, actor: Actor, data: st.DataObject) -> None:
        if not self.topic_names:
            return
        name, cross = self._topic_name(data, actor)
        key = (actor.topic_scope, name.lower())
        topic = self.topics.get(key)
        allowed = actor.topic_writer and topic is not None
        secret = self.secret(actor.topic_scope if allowed else NOBODY)
        body = {
            "topic": name,
            "tagsToAdd": [f"tag-{self._fresh('h')}"],
            "newSummary": f"Refined {secret}",
            "newContent": f"Refined content {secret}",
        }
        outcome = self.call(actor, "refine_memory", body, cross=cross)
        if not actor.topic_writer:
            self.expect(outcome, "UNAUTHORIZED", "refine_memory in a project without the writer role")
        elif topic is None:
            self.expect(outcome, "NOT_FOUND", f"refine_memory of {name!r} outside the caller's scope")
            fake = f"topic-unknown{self.counter}"
            self.same_as_unknown(actor, "refine_memory", outcome, name, fake, {**body, "topic": fake})
        elif topic.tags >= MAX_TOPIC_TAGS:
            self.expect(outcome, "INVALID_INPUT", "refine_memory past the tag limit")
        else:
            self.expect(outcome, None, "refine_memory")
            topic.secret = secret
            topic.tags += 1
        if cross:
            self._verify_foreign_topics(name, actor)

    @rule(actor=actors, data=st.data())
    def forget_memory(self, actor: Actor, data: st.DataObject) -> None:
        if not self.topic_names:
            return
        name, cross = self._topic_name(data, actor)
        key = (actor.topic_scope, name.lower())
        outcome = self.call(actor, "forget_memory", {"topic": name}, cross=cross)
        if not actor.topic_writer:
            self.expect(outcome, "UNAUTHORIZED", "forget_memory in a project without the writer role")
        elif key not in self.topics:
            self.expect(outcome, "NOT_FOUND", f"forget_memory of {name!r} outside the caller's scope")
            fake = f"topic-unknown{self.counter}"
            self.same_as_unknown(actor, "forget_memory", outcome, name, fake, {"topic": fake})
        else:
            self.expect(outcome, None, "forget_memory")
            del self.topics[key]
        if cross:
            self._verify_foreign_topics(name, actor)

    @rule(actor=actors)
    def list_memories(self, actor: Actor) -> None:
        outcome = self.call(actor, "list_memories", {})
        self.expect(outcome, None, "list_memories")
        expected = sorted(t.name.lower() for (scope, _), t in self.topics.items() if scope == actor.topic_scope)
        assert sorted(name.lower() for name in outcome.body["topics"]) == expected, (
            f"list_memories as {actor.label}: {outcome.body['topics']}, the model says {expected}"
        )

    @rule(actor=actors, data=st.data(), how=st.sampled_from(["shared-tag", "stolen-tag", "query"]))
    def search_memories(self, actor: Actor, data: st.DataObject, how: str) -> None:
        own = {name for (scope, name) in self.topics if scope == actor.topic_scope}
        cross = False
        if how == "shared-tag" or not self.topics:
            body: dict[str, Any] = {"tags": ["SHARED-TAG"], "limit": 100}
        else:
            topic = data.draw(st.sampled_from(sorted(self.topics.values(), key=lambda t: t.tag)), label="topic")
            cross = topic.scope != actor.topic_scope
            if how == "stolen-tag":
                body = {"tags": [topic.tag], "limit": 100}
            else:
                body = {"query": f"Content {topic.name}", "limit": 100, "threshold": 0.0}
        outcome = self.call(actor, "search_memories", body, cross=cross)
        self.expect(outcome, None, "search_memories")
        found = {name.lower() for name in outcome.body["topics"]}
        assert found <= own, f"search_memories as {actor.label} found {found - own}, not its own topics"
        if body.get("tags") == ["SHARED-TAG"]:
            assert found == own, f"search_memories by a tag every topic has: {found}, the model says {own}"

    @rule(actor=actors)
    def memorize_general_info(self, actor: Actor) -> None:
        secret = self.secret(actor.topic_scope if actor.topic_writer else NOBODY)
        content = f"General knowledge {secret}"
        outcome = self.call(actor, "memorize_general_info", {"content": content})
        if not actor.topic_writer:
            self.expect(outcome, "UNAUTHORIZED", "memorize_general_info in a project without the writer role")
            self.verify_general(actor.topic_scope)
            return
        self.expect(outcome, None, "memorize_general_info")
        self.general[actor.topic_scope] = content

    @rule(actor=actors)
    def recall_general_memory(self, actor: Actor) -> None:
        outcome = self.call(actor, "recall_general_memory", {})
        self.expect(outcome, None, "recall_general_memory")
        self._check_general(actor, outcome)

    def _check_general(self, actor: Actor, outcome: Outcome) -> None:
        expected = self.general.get(actor.topic_scope, "")
        assert outcome.body["content"] == expected, f"general memory as {actor.label}: {outcome.body['content']!r}"
        for (scope, _), topic in self.topics.items():
            if scope == actor.topic_scope:
                assert topic.name in outcome.body["index"], f"{topic.name} missing from {outcome.body['index']}"

    def verify_general(self, scope: str) -> None:
        owner = next(actor for actor in self.cast if actor.topic_scope == scope)
        outcome = self.call(owner, "recall_general_memory", {})
        self.expect(outcome, None, "recall_general_memory (owner read-back)")
        self._check_general(owner, outcome)

    def _verify_foreign_topics(self, name: str, writer: Actor) -> None:
        for (scope, key), topic in list(self.topics.items()):
            if key == name.lower() and scope != writer.topic_scope:
                self.verify_topic(topic)

    def verify_topic(self, topic: Topic) -> None:
        outcome = self.call(topic.owner, "recall_memory", {"topic": topic.name})
        self.expect(outcome, None, f"recall_memory (owner read-back of {topic.name})")
        assert topic.secret in outcome.body["content"], f"{topic.owner.label} reads back {outcome.body}"

    # -------------------------------------------------------- knowledge
    @rule(
        actor=actors,
        data=st.data(),
        layer=st.none() | st.sampled_from(KNOWLEDGE_PRECEDENCE),
        with_query=st.booleans(),
    )
    def knowledge_query(self, actor: Actor, data: st.DataObject, layer: str | None, with_query: bool) -> None:
        body: dict[str, Any] = {"limit": 100}
        cross = False
        if layer is not None:
            body["layer"] = layer
        if with_query:
            item = data.draw(st.sampled_from(self.knowledge), label="knowledge item")
            body |= {"query": f"Rule {item.item_id}", "threshold": 0.0}
            cross = not self._visible(actor, item)
        outcome = self.call(actor, "knowledge_query", body, cross=cross)
        self.expect(outcome, None, "knowledge_query")
        got = {(entry["id"], entry["layer"]) for entry in outcome.body["items"]}
        if layer is None:  # the most specific copy of an id hides the others
            allowed = {(k.item_id, k.layer) for k in self.effective_knowledge(actor).values()}
        else:  # one layer only: nothing of another layer hides its items
            allowed = {(k.item_id, k.layer) for k in self.knowledge if k.layer == layer and self._visible(actor, k)}
        assert got <= allowed, f"knowledge_query as {actor.label} returned {got - allowed}"
        if not with_query and layer is None:
            assert got == allowed, f"knowledge_query (browse) as {actor.label}: {got}, the model says {allowed}"

    @rule(actor=actors, data=st.data(), history=st.booleans())
    def knowledge_show(self, actor: Actor, data: st.DataObject, history: bool) -> None:
        item = data.draw(st.sampled_from(self.knowledge), label="knowledge item")
        body = {"id": item.item_id, "includeHistory": history}
        outcome = self.call(actor, "knowledge_show", body, cross=not self._visible(actor, item))
        shown = self.effective_knowledge(actor).get(item.item_id)
        if shown is None:
            self.expect(outcome, "NOT_FOUND", f"knowledge_show of {item}")
            fake = "policy-unknown"
            self.same_as_unknown(actor, "knowledge_show", outcome, item.item_id, fake, {**body, "id": fake})
            return
        self.expect(outcome, None, "knowledge_show")
        assert outcome.body["item"]["layer"] == shown.layer, (
            f"knowledge_show as {actor.label} of {item.item_id}: {outcome.body['item']}, the model says {shown}"
        )
        assert shown.secret in outcome.body["item"]["summary"], (
            f"knowledge_show as {actor.label} of {item.item_id}: {outcome.body['item']}, the model says {shown}"
        )
        if history:
            assert [entry["message"] for entry in outcome.body["history"]] == [shown.secret], outcome.body["history"]

    @rule(actor=actors, data=st.data(), by_id=st.booleans())
    def knowledge_check(self, actor: Actor, data: st.DataObject, by_id: bool) -> None:
        items = data.draw(st.lists(st.sampled_from(self.knowledge), min_size=1, max_size=4), label="items")
        body: dict[str, Any] = {"dependencies": [{"name": item.dependency} for item in items]}
        cross = any(not self._visible(actor, item) for item in items)
        effective = self.effective_knowledge(actor)
        if by_id:
            body["knowledgeItemIds"] = sorted({item.item_id for item in items})
        outcome = self.call(actor, "knowledge_check", body, cross=cross)
        if by_id and any(item.item_id not in effective for item in items):
            self.expect(outcome, "NOT_FOUND", "knowledge_check with ids outside the caller's layers")
            return
        self.expect(outcome, None, "knowledge_check")
        wanted = {item.dependency for item in items}
        applied = [effective[i] for i in body["knowledgeItemIds"]] if by_id else list(effective.values())
        expected = sorted((k.item_id, k.dependency) for k in applied if k.dependency in wanted)
        got = sorted((v["knowledgeItemId"], v["constraint"]["pattern"]) for v in outcome.body["violations"])
        assert got == expected, f"knowledge_check as {actor.label} with {body}: {got}, the model says {expected}"

    # ------------------------------------------------------------- sync
    def _check_failures(self, actor: Actor, failures: list[dict[str, Any]]) -> None:
        expected = sorted(path for tenant, scope, path in self.broken if scope in actor.scopes)
        got = sorted(failure["path"] for failure in failures)
        assert got == expected, f"sync failures shown to {actor.label}: {got}, the model says {expected}"

    @rule(actor=actors, force=st.booleans(), layers=st.none() | st.just(["org", "company"]))
    def sync_now(self, actor: Actor, force: bool, layers: list[str] | None) -> None:
        body: dict[str, Any] = {"force": force}
        if layers is not None:
            body["layers"] = layers
        outcome = self.call(actor, "sync_now", body)
        if force and not actor.writer:
            self.expect(outcome, "UNAUTHORIZED", "sync_now force without the writer role")
            return
        self.expect(outcome, None, "sync_now")
        failures = outcome.body["failedItems"]
        if layers is None:
            self._check_failures(actor, failures)
        else:  # a filtered sync reports its own layers' failures only
            shown = {failure["path"] for failure in failures}
            assert shown <= {path for _, scope, path in self.broken if scope in actor.scopes}, failures

    @rule(actor=actors)
    def sync_status(self, actor: Actor) -> None:
        outcome = self.call(actor, "sync_status", {})
        self.expect(outcome, None, "sync_status")
        self._check_failures(actor, outcome.body["failures"])
        assert outcome.body["failedItems"] == sum(b[0] == actor.tenant for b in self.broken), outcome.body

    # ------------------------------------------------------------ files
    def _file_target(self, actor: Actor, target: str) -> tuple[str, str, str | None]:
        """(path prefix, store, scope) of a target as this caller names it; scope None when ids are missing."""
        context = actor.context
        if target == "workspace":
            return "docs/", "ws", context.scope_key("project" if actor.project is not None else "user")
        if target == "own":
            return "mnemo:///blocks/", "asset", context.scope_key("agent" if actor.agent is not None else "user")
        if target == "user":
            return "mnemo://user/blocks/", "asset", context.scope_key("user")
        return "mnemo://project/blocks/", "asset", (context.scope_key("project") if actor.project else None)

    def _file_writable(self, actor: Actor, store: str, scope: str) -> bool:
        """Changing a project's files (its blocks or its workspace) needs the writer role."""
        return actor.writer or "|project|" not in scope

    def _file_cross(self, store: str, scope: str | None, name: str) -> bool:
        return any(key[0] == store and key[2] == name and key[1] != scope for key in self.files)

    def _asset_path(self, actor: Actor, scope: str, name: str) -> str:
        """How the caller is shown a StoredAsset of ``scope`` (display_uri's rule)."""
        context = actor.context
        own = context.scope_key("agent" if actor.agent is not None else "user")
        if scope == own:
            return f"mnemo:///blocks/{name}"
        for layer in ("user", "agent", "project"):
            if context.can_read(layer) and scope == context.scope_key(layer):
                return f"mnemo://{layer}/blocks/{name}"
        raise AssertionError(f"{actor.label} cannot name a file of {scope}")

    def _pinner(self, actor: Actor) -> str:
        return actor.context.scope_key("agent" if actor.agent is not None else "user")

    def _aim(
        self, data: st.DataObject, actor: Actor, where: str, name: str, *, assets: bool = False
    ) -> tuple[Actor, str, str]:
        """Mostly a path someone holds: as its owner names it, called by its owner or by anyone (a stolen path)."""
        live = [f for f in self.files.values() if f.alive and (f.store == "asset" or not assets)]
        how = data.draw(st.sampled_from(["drawn", "stolen", "owner", "owner"]), label="aim")
        if how == "drawn" or not live:
            return actor, where, name
        file = data.draw(st.sampled_from(live), label="file")
        return (file.owner if how == "owner" else actor), self._where_of(file), file.name

    def _holder(self, data: st.DataObject, actor: Actor) -> Actor:
        """Half the time someone who holds files or pins (so that answers have something in them to check)."""
        holders = [f.owner for f in self.files.values() if f.alive] + list(self.pinners.values())
        if not holders:
            return actor
        chosen: Actor = data.draw(st.sampled_from([actor, *holders]), label="holder")
        return chosen

    def _where_of(self, file: StoredFile) -> str:
        if file.store == "ws":
            return "workspace"
        for where in ("own", "user", "project"):
            if self._file_target(file.owner, where)[2] == file.scope:
                return where
        raise AssertionError(f"{file.owner.label} cannot name {file}")

    @rule(actor=actors, where=st.sampled_from(FILE_TARGETS), name=st.sampled_from(FILE_NAMES), data=st.data())
    def file_write(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        self._write_file(*self._aim(data, actor, where, name))

    @initialize(owners=st.lists(actors, min_size=2, max_size=4, unique=True), name=st.sampled_from(FILE_NAMES))
    def some_files(self, owners: list[Actor], name: str) -> None:
        """Every example starts with a few callers' files, a pinned block each, under one shared name."""
        for owner in owners:
            for where in FILE_TARGETS:
                self._write_file(owner, where, name)
            self._pin_block(owner, "own", name)

    def _write_file(self, actor: Actor, where: str, name: str) -> None:
        prefix, store, scope = self._file_target(actor, where)
        allowed = scope is not None and self._file_writable(actor, store, scope)
        secret = self.secret(scope if allowed and scope is not None else NOBODY)
        content = f"# {name}\n{secret}\n[END]\n"
        outcome = self.call(
            actor, "file_write", {"path": prefix + name, "content": content}, cross=self._file_cross(store, scope, name)
        )
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", f"file_write {prefix}{name} without a project id")
            assert outcome.body["details"]["field"] == "project", outcome.body
            return
        if not allowed:
            self.expect(outcome, "UNAUTHORIZED", f"file_write {prefix}{name} without the writer role")
            self._verify_file((store, scope, name))
            return
        self.expect(outcome, None, f"file_write {prefix}{name}")
        known = self.files.get((store, scope, name))
        version = (known.version if known else 0) + 1
        assert outcome.body["version"] == version, f"file_write as {actor.label}: {outcome.body}, model v{version}"
        assert outcome.body["created"] is not (known is not None and known.alive), outcome.body
        if known is None:
            self.files[(store, scope, name)] = StoredFile(store, scope, name, [secret], version, actor)
        else:
            known.secrets, known.version, known.alive, known.owner = [secret], version, True, actor

    @rule(actor=actors, where=st.sampled_from(FILE_TARGETS), name=st.sampled_from(FILE_NAMES), data=st.data())
    def file_edit(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        """Append a secret before the end marker; ``old`` is sometimes a secret of another scope's file."""
        actor, where, name = self._aim(data, actor, where, name)
        prefix, store, scope = self._file_target(actor, where)
        known = self.files.get((store, scope, name)) if scope is not None else None
        live = known is not None and known.alive
        others = [f for f in self.files.values() if f.alive and (f.store, f.scope) != (store, scope)]
        stolen = bool(others) and data.draw(st.sampled_from([False, False, True]), label="stolen old")
        old = data.draw(st.sampled_from(others), label="file").secrets[-1] if stolen else "[END]"
        allowed = live and self._file_writable(actor, store, scope or "") and (not stolen)
        secret = self.secret(scope if allowed and scope is not None else NOBODY)
        body = {"path": prefix + name, "old": old, "new": f"{secret}\n[END]" if not stolen else secret}
        outcome = self.call(actor, "file_edit", body, cross=stolen or self._file_cross(store, scope, name))
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", "file_edit without a project id")
        elif not self._file_writable(actor, store, scope):  # a reader learns it may not write before anything else
            self.expect(outcome, "UNAUTHORIZED", "file_edit without the writer role")
        elif not live:
            self.expect(outcome, "NOT_FOUND", f"file_edit of {prefix}{name}, absent in {scope}")
            assert outcome.body["details"]["field"] == "path", outcome.body
        elif stolen:
            self.expect(outcome, "NOT_FOUND", "file_edit with another scope's text as old")
            assert outcome.body["details"]["field"] == "old", outcome.body
        else:
            self.expect(outcome, None, "file_edit")
            assert known is not None
            known.version += 1
            known.secrets.append(secret)
            assert outcome.body["version"] == known.version, outcome.body
            assert outcome.body["replacements"] == 1, outcome.body
        for file in others if stolen else ():
            self._verify_file((file.store, file.scope, file.name))

    @rule(actor=actors, where=st.sampled_from(FILE_TARGETS), name=st.sampled_from(FILE_NAMES), data=st.data())
    def file_read(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        actor, where, name = self._aim(data, actor, where, name)
        prefix, store, scope = self._file_target(actor, where)
        outcome = self.call(actor, "file_read", {"path": prefix + name}, cross=self._file_cross(store, scope, name))
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", "file_read without a project id")
            return
        known = self.files.get((store, scope, name))
        if known is None or not known.alive:
            self.expect(outcome, "NOT_FOUND", f"file_read of {prefix}{name}, absent in {scope}")
            fake = f"unknown{self.counter}.md"
            self.same_as_unknown(actor, "file_read", outcome, name, fake, {"path": prefix + fake})
            return
        self.expect(outcome, None, "file_read")
        self._check_file(actor, known, outcome.body)

    def _check_file(self, actor: Actor, known: StoredFile, body: dict[str, Any]) -> None:
        assert body["version"] == known.version, f"{actor.label} reads {body}, the model says {known}"
        assert [s for s in TOKEN.findall(body["content"]) if s.startswith("sec")] == known.secrets, (
            f"{actor.label} reads {body['content']!r}, the model says {known}"
        )

    def _verify_file(self, key: tuple[str, str, str]) -> None:
        known = self.files.get(key)
        if known is None:
            return
        store, scope, name = key
        owner = known.owner
        prefix = "docs/" if store == "ws" else self._asset_path(owner, scope, name).removesuffix(name)
        outcome = self.call(owner, "file_read", {"path": prefix + name})
        if not known.alive:
            self.expect(outcome, "NOT_FOUND", f"file_read (owner read-back of deleted {prefix}{name})")
            return
        self.expect(outcome, None, f"file_read (owner read-back of {prefix}{name})")
        self._check_file(owner, known, outcome.body)

    @rule(actor=actors, where=st.sampled_from(FILE_TARGETS), name=st.sampled_from(FILE_NAMES), data=st.data())
    def file_delete(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        actor, where, name = self._aim(data, actor, where, name)
        prefix, store, scope = self._file_target(actor, where)
        outcome = self.call(actor, "file_delete", {"path": prefix + name}, cross=self._file_cross(store, scope, name))
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", "file_delete without a project id")
            return
        known = self.files.get((store, scope, name))
        if not self._file_writable(actor, store, scope):
            self.expect(outcome, "UNAUTHORIZED", "file_delete without the writer role")
        elif known is None or not known.alive:
            self.expect(outcome, "NOT_FOUND", f"file_delete of {prefix}{name}, absent in {scope}")
        else:
            self.expect(outcome, None, "file_delete")
            known.alive = False
            known.version += 1
            holders = [p for p, pins in self.pins.items() if store == "asset" and (scope, name) in pins]
            assert outcome.body["unpinnedFor"] == len(holders), f"{outcome.body}, pinned by {holders}"
            for pinner in holders:
                self.pins[pinner].remove((scope, name))
        for key in [k for k in self.files if k[2] == name and k[1] != scope]:
            self._verify_file(key)

    @rule(
        actor=actors,
        folder=st.sampled_from(["", "docs/", "mnemo:///blocks/", "mnemo:///", "mnemo://user/", "mnemo://project/"]),
        limit=st.sampled_from([1, 2, 100]),
        data=st.data(),
    )
    def file_list(self, actor: Actor, folder: str, limit: int, data: st.DataObject) -> None:
        actor = self._holder(data, actor)
        outcome = self.call(actor, "file_list", {"path": folder, "limit": limit})
        if folder == "mnemo://project/" and actor.project is None:
            self.expect(outcome, "INVALID_INPUT", "file_list of the project's blocks without a project id")
            return
        self.expect(outcome, None, f"file_list {folder!r}")
        expected = self._listing(actor, folder)
        got = [entry["path"] for entry in outcome.body["entries"]]
        assert got == expected[: len(got)], f"file_list {folder!r} as {actor.label}: {got}, the model says {expected}"
        assert len(got) == len(expected) or outcome.body["hasMore"], (
            f"file_list {folder!r} as {actor.label}: {got}, the model says {expected}"
        )
        if outcome.body["hasMore"]:
            self.list_cursors.append((actor, folder, outcome.body["nextCursor"]))

    def _listing(self, actor: Actor, folder: str) -> list[str]:
        if folder in ("", "docs/"):
            _, _, scope = self._file_target(actor, "workspace")
            return sorted(
                f"docs/{f.name}" for f in self.files.values() if f.store == "ws" and f.scope == scope and f.alive
            )
        target = {"mnemo://user/": "user", "mnemo://project/": "project"}.get(folder, "own")
        _, _, scope = self._file_target(actor, target)
        shown = "mnemo:///" if target == "own" else folder
        return sorted(
            f"{shown}blocks/{f.name}"
            for f in self.files.values()
            if f.store == "asset" and f.scope == scope and f.alive
        )

    @rule(actor=actors, data=st.data())
    def file_list_with_a_stolen_cursor(self, actor: Actor, data: st.DataObject) -> None:
        """Another caller's nextCursor: it pages the caller's own listing, never the owner's."""
        if not self.list_cursors:
            return
        owner, folder, cursor = data.draw(st.sampled_from(self.list_cursors), label="stolen cursor")
        outcome = self.call(actor, "file_list", {"path": folder, "cursor": cursor}, cross=owner != actor)
        if folder == "mnemo://project/" and actor.project is None:
            self.expect(outcome, "INVALID_INPUT", "file_list of the project's blocks without a project id")
            return
        self.expect(outcome, None, "file_list with a cursor")
        own = self._listing(actor, folder)
        got = [entry["path"] for entry in outcome.body["entries"]]
        assert set(got) <= set(own), f"file_list with {owner.label}'s cursor as {actor.label}: {got}, own {own}"

    @rule(actor=actors, data=st.data())
    def file_search(self, actor: Actor, data: st.DataObject) -> None:
        actor = self._holder(data, actor)
        live = [f for f in self.files.values() if f.alive and f.store == "asset"]
        target = data.draw(st.sampled_from(live), label="file") if live else None
        query = target.secrets[-1] if target else "note"
        searchable = {
            actor.context.scope_key(layer) for layer in ("agent", "user", "project") if actor.context.can_read(layer)
        }
        cross = target is not None and target.scope not in searchable
        outcome = self.call(actor, "file_search", {"query": query, "threshold": 0.0, "limit": 50}, cross=cross)
        self.expect(outcome, None, "file_search")
        for result in outcome.body["results"]:
            owner = next(
                (
                    f
                    for f in live
                    if f.scope in searchable and self._asset_path(actor, f.scope, f.name) == result["path"]
                ),
                None,
            )
            assert owner is not None, f"file_search as {actor.label} found {result}, not a file it may read"
            assert result["version"] == owner.version, f"{result} vs {owner}"

    @rule(
        actor=actors,
        where=st.sampled_from(["own", "user", "project"]),
        name=st.sampled_from(FILE_NAMES),
        data=st.data(),
    )
    def block_pin(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        self._pin_block(*self._aim(data, actor, where, name, assets=True))

    def _pin_block(self, actor: Actor, where: str, name: str) -> None:
        prefix, _, scope = self._file_target(actor, where)
        outcome = self.call(actor, "block_pin", {"path": prefix + name}, cross=self._file_cross("asset", scope, name))
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", "block_pin without a project id")
            return
        known = self.files.get(("asset", scope, name))
        if known is None or not known.alive:
            self.expect(outcome, "NOT_FOUND", f"block_pin of {prefix}{name}, absent in {scope}")
            fake = f"unknown{self.counter}.md"
            self.same_as_unknown(actor, "block_pin", outcome, name, fake, {"path": prefix + fake})
            return
        self.expect(outcome, None, "block_pin")
        pins = self.pins.setdefault(self._pinner(actor), [])
        assert outcome.body["changed"] is ((scope, name) not in pins), f"{outcome.body}, the model has {pins}"
        if (scope, name) not in pins:
            pins.append((scope, name))
            self.pinners[self._pinner(actor)] = actor

    @rule(
        actor=actors,
        where=st.sampled_from(["own", "user", "project"]),
        name=st.sampled_from(FILE_NAMES),
        data=st.data(),
    )
    def block_unpin(self, actor: Actor, where: str, name: str, data: st.DataObject) -> None:
        actor, where, name = self._aim(data, actor, where, name, assets=True)
        prefix, _, scope = self._file_target(actor, where)
        outcome = self.call(actor, "block_unpin", {"path": prefix + name}, cross=self._file_cross("asset", scope, name))
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", "block_unpin without a project id")
            return
        self.expect(outcome, None, "block_unpin")
        pins = self.pins.setdefault(self._pinner(actor), [])
        assert outcome.body["changed"] is ((scope, name) in pins), f"{outcome.body}, the model has {pins}"
        if (scope, name) in pins:
            pins.remove((scope, name))
        for key in [k for k in self.files if k[2] == name and k[1] != scope]:
            self._verify_file(key)

    @rule(actor=actors, data=st.data())
    def pinned_context(self, actor: Actor, data: st.DataObject) -> None:
        actor = self._holder(data, actor)
        outcome = self.call(actor, "pinned_context", {})
        self.expect(outcome, None, "pinned_context")
        readable = {
            actor.context.scope_key(layer) for layer in ("agent", "user", "project") if actor.context.can_read(layer)
        }
        pins = self.pins.get(self._pinner(actor), [])
        shown = [(scope, name) for scope, name in pins if scope in readable]
        expected = [self._asset_path(actor, scope, name) for scope, name in shown]
        got = [block["path"] for block in outcome.body["blocks"]]
        assert got == expected, f"pinned_context as {actor.label}: {got}, the model says {expected}"
        assert outcome.body["inactive"] == len(pins) - len(shown), outcome.body
        for scope, name in shown:
            for secret in self.files[("asset", scope, name)].secrets:
                assert secret in outcome.body["context"], f"pinned_context lacks {secret}: {outcome.body}"

    @rule(
        actor=actors,
        data=st.data(),
        budget=st.sampled_from([100, 1500, 16000]),
        sections=st.none() | st.lists(st.sampled_from(SECTIONS), min_size=1, max_size=5, unique=True),
    )
    def memory_context(self, actor: Actor, data: st.DataObject, budget: int, sections: list[str] | None) -> None:
        """The context names only what the caller may read: memories of its scopes, its own turns, its own pins;
        no profile or summary (extraction is off here). Asked by someone's memory handle or a turn's stem."""
        actor = self._holder(data, actor)
        target = self._pick(data, list(self.memories))
        query = self.memories[target].handle if target else data.draw(st.sampled_from(MESSAGE_STEMS), label="stem")
        body: dict[str, Any] = {"query": query, "budget": budget}
        if sections is not None:
            body["sections"] = sections
        cross = target is not None and self.memories[target].scope not in actor.scopes
        outcome = self.call(actor, "memory_context", body, cross=cross)
        self.expect(outcome, None, "memory_context")
        answer = outcome.body
        assert answer["tokens"] <= budget, answer
        layers = ("agent", "user", "project")
        readable = {actor.context.scope_key(layer) for layer in layers if actor.context.can_read(layer)}
        shown = [(scope, name) for scope, name in self.pins.get(self._pinner(actor), []) if scope in readable]
        pinned = [self._asset_path(actor, scope, name) for scope, name in shown]
        for source in answer["sources"]:
            kind, ident = source["kind"], source["id"]
            if kind == "memory":
                memory = self.memories.get(ident)
                assert memory is not None and memory.alive and memory.scope in actor.scopes, (actor, source, memory)
                assert memory.secret in answer["context"], f"memory_context: not the model's content: {answer}"
            elif kind == "turn":
                assert (actor.user_scope, ident) in self.conversations, f"{actor.label} shown another's turn {source}"
                assert source["messageIds"] == [ident], source
            else:
                assert kind == "block" and ident in pinned, f"memory_context as {actor.label}: {source}, pins {pinned}"
        if budget == 16000 and (sections is None or "blocks" in sections):  # every pin fits: all of them, in order
            assert [s["id"] for s in answer["sources"] if s["kind"] == "block"] == pinned, (answer, pinned)
            for scope, name in shown:
                for secret in self.files[("asset", scope, name)].secrets:
                    assert secret in answer["context"], f"memory_context lacks {secret}: {answer}"

    @rule(
        actor=actors,
        names=st.lists(st.tuples(st.sampled_from(FILE_MARKERS), st.sampled_from(FILE_NAMES)), min_size=1, max_size=4),
        data=st.data(),
    )
    def expand_prompt(self, actor: Actor, names: list[tuple[str, str]], data: st.DataObject) -> None:
        actor = self._holder(data, actor)
        markers = []
        expected: list[str | None] = []  # each marker's path when the model has it, else None
        for kind, name in names:
            if kind == "project" and actor.project is None:
                continue
            marker, target = {
                "block": (f"@@{name}", "own"),
                "workspace": (f"@docs/{name}", "workspace"),
                "user": (f"@mnemo://user/blocks/{name}", "user"),
                "project": (f"@mnemo://project/blocks/{name}", "project"),
            }[kind]
            prefix, store, scope = self._file_target(actor, target)
            known = self.files.get((store, scope, name)) if scope is not None else None
            markers.append(marker)
            expected.append(prefix + name if known is not None and known.alive else None)
        if not markers:
            return
        cross = any(self._file_cross("asset", None, name) for _, name in names)
        text = "Follow " + " and ".join(markers) + " please."
        outcome = self.call(actor, "expand_prompt", {"text": text, "onMissing": "keep"}, cross=cross)
        self.expect(outcome, None, "expand_prompt")
        got = [expansion["path"] for expansion in outcome.body["expansions"]]
        assert got == [path for path in expected if path is not None], (
            f"expand_prompt as {actor.label} of {markers}: {got}, the model says {expected}"
        )
        assert outcome.body["missing"] == [m for m, path in zip(markers, expected, strict=True) if path is None]

    # ------------------------------------------------------------ graph
    def _graph_entity_at(self, actor: Actor, name: str) -> GraphEntity | None:
        """The entity a name finds for this caller: the most specific readable layer that has it."""
        for layer in actor.context.readable_layers():
            found = self.entities.get((actor.context.scope_key(layer), name.casefold()))
            if found is not None and found.alive:
                return found
        return None

    def _graph_name_cross(self, actor: Actor, name: str) -> bool:
        return any(
            e.alive and key[1] == name.casefold() and e.scope not in actor.scopes for key, e in self.entities.items()
        )

    @rule(
        actor=actors,
        layer=st.sampled_from(GRAPH_LAYERS),
        subject=st.sampled_from(GRAPH_NAMES),
        obj=st.sampled_from(GRAPH_NAMES),
        predicate=st.sampled_from(GRAPH_PREDICATES),
        steal=st.booleans(),
        data=st.data(),
    )
    def add_memory_link(
        self, actor: Actor, layer: str, subject: str, obj: str, predicate: str, steal: bool, data: st.DataObject
    ) -> None:
        """A fact between two shared names; sometimes `invalidates` names another scope's fact."""
        scope = actor.context.scope_key(layer) if actor.context.can_read(layer) else None
        foreign = [f for f in self.graph_facts.values() if f.scope != scope]
        victim = data.draw(st.sampled_from(foreign), label="stolen fact") if steal and foreign else None
        self._add_link(actor, layer, subject, obj, predicate, victim)

    @initialize(owners=st.lists(actors, min_size=2, max_size=4, unique=True), name=st.sampled_from(GRAPH_NAMES))
    def some_links(self, owners: list[Actor], name: str) -> None:
        """Every example starts with a few callers' facts, in their user and project layers, about one name."""
        for owner in owners:
            for layer in ("user", "project"):
                self._add_link(owner, layer, name, "Acme" if name.casefold() != "acme" else "Zed", "works_at")

    def _add_link(
        self, actor: Actor, layer: str, subject: str, obj: str, predicate: str, victim: GraphFact | None = None
    ) -> None:
        context = actor.context
        allowed = context.can_write(layer)
        scope = context.scope_key(layer) if context.can_read(layer) else None
        secret = self.secret(scope if allowed and scope is not None else NOBODY)
        body: dict[str, Any] = {
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "layer": layer,
            "text": f"{subject} {predicate} {obj}: {secret}",
        }
        stolen = victim is not None
        foreign = [victim] if victim is not None else []
        if victim is not None:
            body["invalidates"] = [victim.fact_id]
        cross = stolen or self._graph_name_cross(actor, subject) or self._graph_name_cross(actor, obj)
        outcome = self.call(actor, "add_memory_link", body, cross=cross)
        if scope is None:
            self.expect(outcome, "INVALID_INPUT", f"add_memory_link {layer} without its ids")
            assert outcome.body["details"]["field"] == "layer", outcome.body
            return
        if not allowed:
            self.expect(outcome, "UNAUTHORIZED", f"add_memory_link {layer} without the writer role")
            return
        triple = (scope, subject.casefold(), predicate, obj.casefold())
        existing = self.open_links.get(triple)
        if existing is not None and not stolen:
            self.expect(outcome, None, "add_memory_link of a fact already open")
            assert outcome.body["created"] is False, outcome.body
            assert outcome.body["factId"] == existing, outcome.body
            return
        if stolen:  # a repeat still ends what it names, so another scope's id is not found either way
            self.expect(outcome, "NOT_FOUND", "add_memory_link invalidating another scope's fact")
            assert outcome.body["details"]["field"] == "invalidates", outcome.body
            for fact in foreign:
                if fact.fact_id in body["invalidates"]:
                    self._verify_graph_fact(fact)
            return
        self.expect(outcome, None, "add_memory_link")
        assert outcome.body["created"] is True, outcome.body
        ends: list[GraphEntity] = []
        for name, ref in ((subject, outcome.body["subject"]), (obj, outcome.body["object"])):
            if ends and name.casefold() == subject.casefold():  # a self-loop: one entity
                assert ref["entityId"] == ends[0].entity_id, outcome.body
                ends.append(ends[0])
                continue
            known = self.entities.get((scope, name.casefold()))
            if known is not None and known.alive:
                assert ref["entityId"] == known.entity_id, (outcome.body, known)
                assert not ref["created"], (outcome.body, known)
            else:
                assert ref["created"], (outcome.body, known)
                assert ref["entityId"] not in self.tokens, (outcome.body, known)
                known = GraphEntity(ref["entityId"], scope, layer, name, None, actor)
                self.entities[(scope, name.casefold())] = known
                self.graph_entities.append(known)
                self.tokens[known.entity_id] = scope
            ends.append(known)
        fact_id = outcome.body["factId"]
        assert fact_id not in self.graph_facts, outcome.body
        self.tokens[fact_id] = scope
        self.graph_facts[fact_id] = GraphFact(fact_id, scope, layer, secret, ends[0], ends[1], actor)
        self.open_links[triple] = fact_id

    def _graph_target(self, data: st.DataObject, actor: Actor) -> tuple[dict[str, Any], GraphEntity | None, bool]:
        """A selector for an entity someone made (by id, or by name), what the caller should find, and whether
        it reaches into another scope."""
        known = self.graph_entities
        if not known:
            name = data.draw(st.sampled_from(GRAPH_NAMES), label="name")
            return {"name": name}, self._graph_entity_at(actor, name), False
        entity = data.draw(st.sampled_from(known), label="entity")
        if data.draw(st.booleans(), label="by id"):
            visible = entity.alive and entity.scope in actor.scopes
            return {"entityId": entity.entity_id}, entity if visible else None, entity.scope not in actor.scopes
        return (
            {"name": entity.name},
            self._graph_entity_at(actor, entity.name),
            self._graph_name_cross(actor, entity.name),
        )

    @rule(actor=actors, data=st.data(), history=st.booleans(), depth=st.sampled_from([0, 1, 3]))
    def get_memory_object(self, actor: Actor, data: st.DataObject, history: bool, depth: int) -> None:
        selector, expected, cross = self._graph_target(data, actor)
        body = {**selector, "includeHistory": history, "depth": depth, "limit": 200}
        outcome = self.call(actor, "get_memory_object", body, cross=cross)
        if expected is None:
            self.expect(outcome, "NOT_FOUND", f"get_memory_object {selector}")
            self._same_as_unknown_entity(actor, "get_memory_object", outcome, selector, {"depth": depth})
            return
        self.expect(outcome, None, f"get_memory_object {selector}")
        assert outcome.body["entity"]["entityId"] == expected.entity_id, (outcome.body["entity"], expected)
        self._check_graph_entity(actor, expected, outcome.body)

    def _check_graph_entity(self, actor: Actor, expected: GraphEntity, body: dict[str, Any]) -> None:
        entity = body["entity"]
        if expected.secret is not None:
            assert expected.secret in entity["summary"], (entity, expected)
        for fact in body["facts"]:
            known = self.graph_facts.get(fact["factId"])
            assert known is not None, (fact, known)
            assert known.alive, (fact, known)
            assert known.scope == expected.scope, (fact, known)
            assert known.secret in fact["text"], (fact, known)
        for neighbour in body["neighbours"]:
            assert self.tokens.get(neighbour["entityId"]) == expected.scope, (neighbour, expected)

    def _same_as_unknown_entity(
        self, actor: Actor, tool: str, stolen: Outcome, selector: dict[str, Any], extra: dict[str, Any]
    ) -> None:
        if "entityId" in selector:
            fake = f"ent_{'0' * 23}{self.counter % 10}"
            self.same_as_unknown(actor, tool, stolen, selector["entityId"], fake, {"entityId": fake, **extra})
        else:
            fake = f"Nobody{self.counter}"
            self.same_as_unknown(actor, tool, stolen, json.dumps(selector["name"])[1:-1], fake, {"name": fake, **extra})

    @rule(actor=actors, data=st.data())
    def update_memory_object(self, actor: Actor, data: st.DataObject) -> None:
        selector, expected, cross = self._graph_target(data, actor)
        scope = expected.scope if expected is not None else NOBODY
        allowed = expected is not None and actor.context.can_write(expected.layer)
        secret = self.secret(scope if allowed else NOBODY)
        body: dict[str, Any] = {**selector, "summary": f"About {secret}."}
        outcome = self.call(actor, "update_memory_object", body, cross=cross)
        if expected is None:
            self.expect(outcome, "NOT_FOUND", f"update_memory_object {selector}")
            self._same_as_unknown_entity(actor, "update_memory_object", outcome, selector, {"summary": "x"})
        elif not allowed:
            self.expect(outcome, "UNAUTHORIZED", f"update_memory_object {selector} without the writer role")
        else:
            self.expect(outcome, None, f"update_memory_object {selector}")
            assert outcome.body["entity"]["entityId"] == expected.entity_id, outcome.body
            expected.secret = secret
            return
        for entity in self.graph_entities:
            if (
                entity.alive
                and entity.scope not in actor.scopes
                and (selector.get("entityId") == entity.entity_id or selector.get("name") == entity.name)
            ):
                self._verify_graph_entity(entity)

    @rule(actor=actors, data=st.data())
    def invalidate_memory_link(self, actor: Actor, data: st.DataObject) -> None:
        if not self.graph_facts:
            return
        fact = data.draw(st.sampled_from(list(self.graph_facts.values())), label="fact")
        visible = fact.alive and fact.scope in actor.scopes
        secret = self.secret(fact.scope if visible else NOBODY)
        body = {"factId": fact.fact_id, "reason": f"Ended {secret}"}
        outcome = self.call(actor, "invalidate_memory_link", body, cross=fact.scope not in actor.scopes)
        if not visible:
            self.expect(outcome, "NOT_FOUND", f"invalidate_memory_link of {fact.fact_id}")
            fake = f"fct_{'0' * 23}{self.counter % 10}"
            self.same_as_unknown(
                actor, "invalidate_memory_link", outcome, fact.fact_id, fake, {"factId": fake, "reason": body["reason"]}
            )
            self._verify_graph_fact(fact)
            return
        if not actor.context.can_write(fact.layer):
            self.expect(outcome, "UNAUTHORIZED", "invalidate_memory_link without the writer role")
            return
        self.expect(outcome, None, "invalidate_memory_link")
        assert outcome.body["alreadyInvalid"] is fact.invalid, (outcome.body, fact)
        fact.invalid = True
        for triple, fact_id in list(self.open_links.items()):
            if fact_id == fact.fact_id:
                del self.open_links[triple]

    @rule(actor=actors, data=st.data(), of_fact=st.booleans(), token=st.sampled_from(["own", "own", "stolen"]))
    def delete_memory_object(self, actor: Actor, data: st.DataObject, of_fact: bool, token: str) -> None:
        """A preview, then (with its own token or another object's) the deletion."""
        if of_fact and self.graph_facts:
            fact = data.draw(st.sampled_from(list(self.graph_facts.values())), label="fact")
            selector: dict[str, Any] = {"factId": fact.fact_id}
            visible, layer, cross = (
                fact.alive and fact.scope in actor.scopes,
                fact.layer,
                fact.scope not in actor.scopes,
            )
            entity = None
        else:
            selector, entity, cross = self._graph_target(data, actor)
            visible, layer, fact = entity is not None, entity.layer if entity else "user", None
        outcome = self.call(actor, "delete_memory_object", selector, cross=cross)
        if not visible:
            self.expect(outcome, "NOT_FOUND", f"delete_memory_object {selector}")
            if fact is not None:
                fake = f"fct_{'0' * 23}{self.counter % 10}"
                self.same_as_unknown(actor, "delete_memory_object", outcome, fact.fact_id, fake, {"factId": fake})
                self._verify_graph_fact(fact)
            else:
                self._same_as_unknown_entity(actor, "delete_memory_object", outcome, selector, {})
            return
        if not actor.context.can_write(layer):
            self.expect(outcome, "UNAUTHORIZED", f"delete_memory_object {selector} without the writer role")
            return
        self.expect(outcome, None, f"delete_memory_object {selector} (preview)")
        own = outcome.body["confirmationToken"]
        stolen = token == "stolen" and any(t != own for t in self.delete_tokens)
        chosen = (
            data.draw(st.sampled_from([t for t in self.delete_tokens if t != own]), label="token") if stolen else own
        )
        self.delete_tokens.append(own)
        confirmed = self.call(actor, "delete_memory_object", {**selector, "confirmationToken": chosen}, cross=stolen)
        if stolen:
            self.expect(confirmed, "CONFLICT", "delete_memory_object with another object's token")
            return
        self.expect(confirmed, None, f"delete_memory_object {selector}")
        assert confirmed.body["deleted"] is True, confirmed.body
        if fact is not None:
            self._forget_graph_fact(fact)
            return
        assert entity is not None
        entity.alive = False
        for known in list(self.graph_facts.values()):
            if known.alive and (known.subject is entity or known.object is entity):
                self._forget_graph_fact(known)

    def _forget_graph_fact(self, fact: GraphFact) -> None:
        fact.alive = False
        for triple, fact_id in list(self.open_links.items()):
            if fact_id == fact.fact_id:
                del self.open_links[triple]

    @rule(actor=actors, data=st.data(), kind=st.sampled_from(["all", "entities", "facts"]), history=st.booleans())
    def graph_search(self, actor: Actor, data: st.DataObject, kind: str, history: bool) -> None:
        facts = list(self.graph_facts.values())
        target = data.draw(st.sampled_from(facts), label="fact") if facts else None
        query = f"{target.subject.name} {target.secret}" if target else "Acme"
        body = {"query": query, "kind": kind, "includeInvalid": history, "threshold": 0.0, "limit": 50}
        outcome = self.call(actor, "graph_search", body, cross=target is not None and target.scope not in actor.scopes)
        self.expect(outcome, None, "graph_search")
        for hit in outcome.body["entities"]:
            entity = next((e for e in self.graph_entities if e.entity_id == hit["entityId"]), None)
            assert entity is not None, (hit, entity)
            assert entity.alive, (hit, entity)
            assert entity.scope in actor.scopes, (hit, entity)
        for hit in outcome.body["facts"]:
            fact = self.graph_facts.get(hit["factId"])
            assert fact is not None, (hit, fact)
            assert fact.alive, (hit, fact)
            assert fact.scope in actor.scopes, (hit, fact)
            assert fact.secret in hit["text"], (hit, fact)

    @rule(actor=actors, layer=st.sampled_from(GRAPH_LAYERS), dry=st.booleans())
    def build_memory_from_text(self, actor: Actor, layer: str, dry: bool) -> None:
        """No model is configured: refused for the layer's ids or role first, then PROVIDER_ERROR; nothing stored."""
        secret = self.secret(NOBODY)
        body = {"content": f"Alice works at Acme. {secret}", "layer": layer, "dryRun": dry}
        outcome = self.call(actor, "build_memory_from_text", body)
        context = actor.context
        if not dry and not context.can_read(layer):
            self.expect(outcome, "INVALID_INPUT", f"build_memory_from_text {layer} without its ids")
        elif not dry and not context.can_write(layer):
            self.expect(outcome, "UNAUTHORIZED", f"build_memory_from_text {layer} without the writer role")
        else:
            self.expect(outcome, "PROVIDER_ERROR", "build_memory_from_text with no model")

    def _verify_graph_entity(self, entity: GraphEntity) -> None:
        """Read an entity back as its owner, by id: there (with its summary) or gone, as the model says."""
        outcome = self.call(entity.owner, "get_memory_object", {"entityId": entity.entity_id, "includeHistory": True})
        if not entity.alive:
            self.expect(outcome, "NOT_FOUND", f"get_memory_object (owner read-back of deleted {entity})")
            return
        self.expect(outcome, None, f"get_memory_object (owner read-back of {entity})")
        self._check_graph_entity(entity.owner, entity, outcome.body)

    def _verify_graph_fact(self, fact: GraphFact) -> None:
        body = {"entityId": fact.subject.entity_id, "includeHistory": True, "depth": 0, "limit": 200}
        outcome = self.call(fact.owner, "get_memory_object", body)
        if not fact.subject.alive:
            self.expect(outcome, "NOT_FOUND", f"get_memory_object (owner read-back of {fact})")
            return
        self.expect(outcome, None, f"get_memory_object (owner read-back of {fact})")
        found = [f for f in outcome.body["facts"] if f["factId"] == fact.fact_id]
        assert bool(found) is fact.alive, (fact, outcome.body)
        if found:
            assert (found[0]["invalidAt"] is not None) is fact.invalid, (found[0], fact)

    # -------------------------------------------- identity in the body
    @rule(actor=actors, victim=actors, claim=st.sampled_from(sorted(CLAIM_KEYS)), data=st.data())
    def identity_in_body(self, actor: Actor, victim: Actor, claim: str, data: st.DataObject) -> None:
        """A body naming anyone but the caller is UNAUTHORIZED, and nothing happens as that identity."""
        attribute = CLAIM_KEYS[claim]
        value: Any
        if attribute == "roles":
            value = [] if actor.writer else [WRITER_ROLE]
        else:
            value = getattr(victim, attribute)
            if value is None or value == getattr(actor, attribute):
                value = "mallory"
        tool, body, after = self._attack_body(data, victim)
        outcome = self.call(actor, tool, {**body, claim: value}, cross=True)
        self.expect(outcome, "UNAUTHORIZED", f"{tool} as {actor.label} claiming {claim}={value!r} in the body")
        after()

    def _attack_body(self, data: st.DataObject, victim: Actor) -> tuple[str, dict[str, Any], Callable[[], None]]:
        """A valid request of some tool, aimed at the victim's data where it names any."""
        secret = self.secret(NOBODY)
        own_memories = [m for m in self.memories.values() if m.owner == victim and m.alive and not m.pointer]
        own_topics = [t for t in self.topics.values() if t.owner == victim]
        own_entries = [e for e in self.conversations.values() if e.owner == victim]
        # A hand-picked body per tool, not a list of every tool: the rules above call each tool of the catalog
        # (test_isolation checks it), this attack needs only some of them. Once the catalog declares each
        # tool's rights (records read or read-write), the writes here could be drawn from it.
        choices: list[tuple[str, dict[str, Any], Callable[[], None]]] = [
            ("memory_add", {"content": f"{secret} claimed", "layer": "user"}, _noop),
            ("memory_search", {"query": "note", "threshold": 0.0}, _noop),
            ("memory_context", {"query": "note"}, _noop),
            ("memory_list", {"layer": "user"}, _noop),
            ("add_conversation", {"explanation": "x", "user_input": secret, "agent_response": "y"}, _noop),
            ("add_messages", {"messages": [{"role": "user", "content": secret}]}, _noop),
            ("extraction_status", {}, _noop),
            ("memory_extract", {"dryRun": True}, _noop),
            ("retrieve_execution", {"query": "q", "explanation": "x"}, _noop),
            ("memorize_general_info", {"content": f"General {secret}"}, _noop),
            ("memorize_new_topic", {"topic": secret, "tags": ["x"], "summary": secret, "content": secret}, _noop),
            ("list_memories", {}, _noop),
            ("recall_general_memory", {}, _noop),
            ("knowledge_query", {"query": "rule"}, _noop),
            ("sync_status", {}, _noop),
            ("knowledge_check", {"dependencies": [{"name": self.knowledge[0].dependency}]}, _noop),
            ("file_write", {"path": "mnemo:///blocks/a.md", "content": f"{secret} claimed"}, _noop),
            ("file_write", {"path": "docs/a.md", "content": f"{secret} claimed"}, _noop),
            ("file_read", {"path": "mnemo:///blocks/a.md"}, _noop),
            ("file_list", {"path": "mnemo:///"}, _noop),
            ("file_search", {"query": "claimed", "threshold": 0.0}, _noop),
            ("pinned_context", {}, _noop),
            ("expand_prompt", {"text": "@@a.md @docs/a.md", "onMissing": "keep"}, _noop),
        ]
        own_files = [f for f in self.files.values() if f.owner == victim and f.alive]
        if own_files:
            file = own_files[0]
            key = (file.store, file.scope, file.name)
            path = "docs/" + file.name if file.store == "ws" else self._asset_path(victim, file.scope, file.name)
            choices.append(("file_edit", {"path": path, "old": "[END]", "new": secret}, lambda: self._verify_file(key)))
            choices.append(("file_delete", {"path": path}, lambda: self._verify_file(key)))
            if file.store == "asset":
                choices.append(("block_pin", {"path": path}, _noop))
                choices.append(("block_unpin", {"path": path}, _noop))
        if own_memories:
            memory = own_memories[0]
            choices.append(("memory_delete", {"memoryId": memory.memory_id}, lambda: self.verify_memory(memory)))
            choices.append(("memory_history", {"memoryId": memory.memory_id}, _noop))
        if own_topics:
            topic = own_topics[0]
            refine = {"topic": topic.name, "newContent": secret}
            choices.append(("refine_memory", refine, lambda: self.verify_topic(topic)))
            choices.append(("forget_memory", {"topic": topic.name}, lambda: self.verify_topic(topic)))
            choices.append(("recall_memory", {"topic": topic.name}, _noop))
        if own_entries:
            entry = own_entries[0]
            lookup = {"query": "q", "explanation": "x", "message_id": entry.message_id}
            choices.append(("retrieve_conversation", lookup, lambda: self.verify_entry(entry, "retrieve_conversation")))
        choices += [
            ("add_memory_link", {"subject": "Alice", "predicate": "knows", "object": secret}, _noop),
            ("graph_search", {"query": "Alice", "threshold": 0.0}, _noop),
            ("build_memory_from_text", {"content": f"Alice knows {secret}.", "dryRun": True}, _noop),
        ]
        own_entities = [e for e in self.graph_entities if e.owner == victim and e.alive]
        if own_entities:
            entity = own_entities[0]
            selector = {"entityId": entity.entity_id}
            choices.append(("get_memory_object", selector, _noop))
            verify = partial(self._verify_graph_entity, entity)
            choices.append(("update_memory_object", {**selector, "summary": secret}, verify))
            choices.append(("delete_memory_object", selector, verify))
        own_facts = [f for f in self.graph_facts.values() if f.owner == victim and f.alive]
        if own_facts:
            fact = own_facts[0]
            verify = partial(self._verify_graph_fact, fact)
            choices.append(("invalidate_memory_link", {"factId": fact.fact_id}, verify))
        shown = self.knowledge[self.counter % len(self.knowledge)]
        choices.append(("knowledge_show", {"id": shown.item_id}, _noop))
        return data.draw(st.sampled_from(choices), label="attack")

    # ------------------------------------------------------- read-back
    def _verify_everything(self) -> None:
        """Every owner still reads exactly what the model says it owns."""
        for memory in self.memories.values():
            if not memory.pointer:
                self.verify_memory(memory)
        for entry in self.conversations.values():
            self.verify_entry(entry, "retrieve_conversation")
        for entry in self.executions.values():
            self.verify_entry(entry, "retrieve_execution")
        for topic in self.topics.values():
            self.verify_topic(topic)
        for scope in {actor.topic_scope for actor in self.cast}:
            self.verify_general(scope)
        for key in list(self.files):
            self._verify_file(key)
        for entity in self.graph_entities:
            self._verify_graph_entity(entity)
        for fact in self.graph_facts.values():
            self._verify_graph_fact(fact)

    @staticmethod
    def _pick(data: st.DataObject, options: list[str]) -> str | None:
        if not options:
            return None
        return data.draw(st.sampled_from(options), label="target")


def _noop() -> None:
    return None


class HttpIsolationMachine(IsolationMachine):
    """The same machine over real HTTP; the server is started once by the test and reused."""

    stats = Stats()
    base_url = ""

    def make_transport(self, services: Services) -> Any:
        return OverHttp(self.base_url)

    @rule(actor=actors, victim=actors, header=st.sampled_from(["Tenant", *(name.title() for name in ID_FIELDS)]))
    def forged_header(self, actor: Actor, victim: Actor, header: str) -> None:
        """An identity header that tries to splice another scope key in is refused, never obeyed."""
        value = getattr(victim, header.lower()) or "x"
        forged = f"{value}|user|u={victim.user}"
        headers = {**actor.headers, f"X-Mnemo-{header}": forged}
        self.stats.operations += 1
        self.stats.cross_scope += 1
        outcome = self.transport.raw(headers, "memory_search", {"query": "note", "threshold": 0.0})
        self.check_leaks(actor, "memory_search (forged header)", {}, outcome.body)
        self.expect(outcome, "UNAUTHORIZED", f"X-Mnemo-{header}: {forged}")

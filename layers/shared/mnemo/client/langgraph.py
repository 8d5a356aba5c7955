"""LangGraph long-term memory in Mnemo: ``MnemoStore``, a LangGraph ``BaseStore`` whose items are memories.

    from mnemo.client import LocalIdentity, MnemoClient
    from mnemo.client.langgraph import MnemoStore
    store = MnemoStore(MnemoClient(url, auth=LocalIdentity(user="alice")))
    store.put(("memories", "food"), "pizza", {"text": "Alice likes pizza"})
    store.search(("memories",), query="what does Alice eat?")
    graph = builder.compile(store=store)   # nodes reach it by get_store() or their `store` argument

Needs ``langgraph`` (the client's ``langgraph`` extra). docs/langgraph.md says the same for users.

**Identity decides the scope; namespaces only narrow it.** Every call names the client's identity, and every
item lives in one layer of it (``layer``, default ``user``: the user's own memories; ``agent`` is the
user's with one agent, ``session`` one session of theirs (``client.in_session(thread_id)``), and the shared
``project``, ``team``, ``org`` and ``company`` layers are read by everyone in them and written with the
writer role). A namespace is metadata inside that scope: two users with the same namespace never see each
other's items, and no namespace reaches another layer or another user.

**An item is one memory** of that layer, with metadata (top-level keys, so memory filters reach them):

- ``lg.ns``: the namespace's labels joined by ``.`` (LangGraph refuses a label with a period);
- ``lg.prefixes``: each leading part of it (``a``, ``a.b``, ``a.b.c``), so a filter finds a namespace prefix;
- ``lg.key``; ``lg.value``: the value's JSON, read back as it was written (JSON values round-trip exactly);
- ``lg.created``: when the item was first put, kept when a put replaces it (``updated_at`` is the memory's
  ``createdAt``); ``lg.index: false`` for a put with ``index=False``;
- ``lg.v.<field>``: a copy of each top-level scalar field of the value, so that ``filter`` runs in the
  service (``lg.partial: true`` when one could not be copied: such an item is always handed to the client's
  check).

Its content is what search ranks: the text of the value (its JSON, or the ``fields``, or a put's ``index``
paths) followed by its namespace and key; it is never read back. ``index=False`` leaves the text out.

**put** adds the new memory, then deletes the item's earlier memories, so ``get`` and ``search`` never
answer the old value; ``memory_add`` carries an ``idempotencyKey`` (the transport's retries store once), and a
put retried by its caller finds what the first stored and replaces it: one memory per item either way.
Mnemo keeps one copy of near-identical memories in a scope, right for remembered facts; items with equal or
near-equal values are normal in a store (``{"value": "dark"}`` under ``theme`` and under ``font``), so
``memory_add`` is sent ``dedupe: false``: every put stores its memory beside its look-alikes. Items never
expire.

**search** with a query is ``memory_search`` of the store's layer (hybrid ranking, best first, ``score``
set), the namespace prefix and the ``filter`` sent as a memory filter and checked again on every value in
the client (the check is exact: JSON types, a bool is not a number); items put with ``index=False`` follow
the ranked ones without a score. Without a query it is ``memory_list``, newest first. ``list_namespaces``
reads the layer's items the same way and applies prefix, suffix (``*`` wildcards), ``max_depth``, ``limit``
and ``offset`` in the client.

**Errors**: ``InvalidNamespaceError`` for a bad namespace (an empty one, an empty label, a label with a
period, a path over ``MAX_STRING`` characters), ``NotImplementedError`` for a TTL (not supported), and the
service's error envelope as ``mnemo.client.errors`` exceptions (``InvalidInputError``,
``UnauthorizedError``...).

Limits: a value's JSON and its copies fit the service's metadata (8192 bytes; ValueError past it); a key is
at most ``MAX_STRING`` characters; get, search without a query and list_namespaces read at most the 5,000
records a ``memory_list`` reads of a layer; a query ranks the best 100 memories by vector and 100 by keywords.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

from mnemo.client import AsyncMnemoClient, LocalIdentity, MnemoClient
from mnemo.client.errors import InvalidInputError, from_envelope

__all__ = ["MnemoStore"]

LAYERS = ("agent", "user", "session", "project", "team", "org", "company")
NS, PREFIXES, KEY, VALUE, CREATED, INDEXED, PARTIAL = (
    "lg.ns",
    "lg.prefixes",
    "lg.key",
    "lg.value",
    "lg.created",
    "lg.index",
    "lg.partial",
)
#: The metadata key of a copied value field: ``lg.v.<field>``.
FIELD = "lg.v."
#: The longest string a memory filter compares (longer metadata strings never match), so the longest
#: namespace path and key.
MAX_STRING = 1024
#: The longest metadata key a memory filter names.
MAX_KEY = 256
#: The service's bounds: metadata as JSON, content, query; the most memories a page answers.
MAX_METADATA, MAX_CONTENT, MAX_QUERY, PAGE = 8192, 8000, 2000, 100
#: The most conditions of a filter sent to the service (it takes 50; the namespace and index take the rest).
MAX_PUSHED = 40

#: One operation's plan: it yields (tool, body) calls, is sent each answer, and returns the op's result.
#: The sync and async drivers run the same plans, so ``batch`` and ``abatch`` cannot disagree.
type Plan[T] = Generator[tuple[str, dict[str, Any]], dict[str, Any], T]


@dataclass(frozen=True)
class _Stored:
    """An item as one memory holds it."""

    memory_id: str
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    def item(self) -> Item:
        return Item(
            value=self.value,
            key=self.key,
            namespace=self.namespace,
            created_at=self.created_at,
            updated_at=self.updated_at,
        )

    def found(self, score: float | None = None) -> SearchItem:
        return SearchItem(self.namespace, self.key, self.value, self.created_at, self.updated_at, score)


class MnemoStore(BaseStore):
    """A LangGraph store over Mnemo's memory tools (the module docstring is the mapping).

    ``client`` is a ``MnemoClient`` (``batch``, and ``abatch`` in a worker thread) or an ``AsyncMnemoClient``
    (``abatch`` only); give ``async_client`` too for a native ``abatch`` beside a sync ``batch``: both must
    name the same server and identity (ValueError otherwise), so the sync and async calls of one store never
    act for two users. ``layer``: where items live (default ``user``). ``fields``: the value paths whose text
    search ranks (LangGraph's ``IndexConfig["fields"]`` syntax; default ``["$"]``, the whole value).
    """

    supports_ttl = False

    def __init__(
        self,
        client: MnemoClient | AsyncMnemoClient,
        *,
        async_client: AsyncMnemoClient | None = None,
        layer: str = "user",
        fields: Sequence[str] | None = None,
    ) -> None:
        if layer not in LAYERS:
            raise ValueError(f"layer must be one of {', '.join(LAYERS)}, not {layer!r}")
        sync: MnemoClient | None = None
        if isinstance(client, AsyncMnemoClient):
            if async_client is not None:
                raise ValueError("client is already an AsyncMnemoClient: give a MnemoClient with async_client")
            async_client = client
        elif isinstance(client, MnemoClient):
            sync = client
        else:
            raise TypeError(f"client must be a MnemoClient or an AsyncMnemoClient, not {type(client).__name__}")
        if sync is not None and async_client is not None and _identity(sync) != _identity(async_client):
            raise ValueError(
                "client and async_client name different servers or identities: give both the same url and auth "
                "(or on_behalf_of)"
            )
        self.client = sync
        self.async_client = async_client
        self.layer = layer
        self.fields = list(fields) if fields is not None else ["$"]

    # ------------------------------------------------------------ batches
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order over HTTP; one result per op (None for a put)."""
        if self.client is None:
            raise TypeError("this MnemoStore has only an AsyncMnemoClient: use abatch (or give a MnemoClient)")
        client = self.client
        return [_drive(self._plan(op), client.call) for op in _checked(ops)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` for an event loop: with the AsyncMnemoClient, or the sync client in a worker thread."""
        checked = _checked(ops)
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, checked)
        return [await _adrive(self._plan(op), self.async_client.call) for op in checked]

    def _plan(self, op: Op) -> Plan[Any]:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"Unknown operation type: {type(op)}")

    # ---------------------------------------------------------------- ops
    def _get(self, namespace: tuple[str, ...], key: str) -> Plan[Item | None]:
        found = yield from self._find(namespace, key)
        return found[0].item() if found else None

    def _put(self, op: PutOp) -> Plan[None]:
        """Add the item's new memory, then delete its earlier ones (a value of None: delete them only)."""
        if op.ttl is not None:
            raise NotImplementedError("TTL is not supported by MnemoStore: put without ttl")
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        path = _path(op.namespace)
        if len(path) > MAX_STRING:
            raise InvalidNamespaceError(f"Namespace {op.namespace} is longer than {MAX_STRING} characters.")
        if len(op.key) > MAX_STRING:
            raise ValueError(f"key is longer than {MAX_STRING} characters")
        earlier = yield from self._find(op.namespace, op.key)
        if op.value is None:
            yield from self._delete([stored.memory_id for stored in earlier])
            return None
        value = dict(op.value)
        created = _iso(min(stored.created_at for stored in earlier)) if earlier else None
        body = {
            "content": self._content(op.namespace, op.key, value, op.index),
            "layer": self.layer,
            "metadata": _metadata(op.namespace, op.key, value, op.index is False, created),
            # Equal values under other keys (and this item's earlier memory) are other items, not repeats.
            "dedupe": False,
            # One key per put: the transport's retries of it replay its answer and store nothing twice.
            "idempotencyKey": f"langgraph-{uuid.uuid4().hex}",
        }
        answer = yield ("memory_add", body)
        yield from self._delete([stored.memory_id for stored in earlier if stored.memory_id != answer["memoryId"]])
        return None

    def _search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        prefix, wanted = tuple(op.namespace_prefix), op.offset + op.limit
        if op.limit <= 0 or len(_path(prefix)) > MAX_STRING:
            return []
        picked: dict[tuple[tuple[str, ...], str], SearchItem] = {}

        def keep(stored: _Stored, score: float | None) -> None:
            # The client's check is the exact one; an item met twice (a put under way) counts once.
            if stored.namespace[: len(prefix)] == prefix and _matches(stored.value, op.filter):
                picked.setdefault((stored.namespace, stored.key), stored.found(score))

        if op.query:
            cursor: str | None = None
            body = {
                "query": op.query[:MAX_QUERY],
                "layers": [self.layer],
                "threshold": 0.0,
                "filter": _server_filter(prefix, op.filter, indexed=True),
            }
            while len(picked) < wanted:
                page = {"limit": min(PAGE, wanted)} | ({"cursor": cursor} if cursor else {})
                answer = yield ("memory_search", body | page)
                if not answer.get("searchedLayers"):
                    raise InvalidInputError(
                        f"layer: this identity cannot read the {self.layer} layer (it lacks the layer's ids)",
                        details={"field": "layer", "layer": self.layer},
                    )
                for result in answer.get("results", []):
                    if result.get("kind", "memory") == "memory" and (stored := _decode(result)) is not None:
                        keep(stored, result.get("score"))
                cursor = answer.get("nextCursor") if answer.get("hasMore") else None
                if cursor is None:
                    break
        unscored = _server_filter(prefix, op.filter, indexed=False if op.query else None)
        cursor = None
        while len(picked) < wanted:
            stored_page, cursor = yield from self._list_page(unscored, cursor)
            for stored in stored_page:
                keep(stored, None)
            if cursor is None:
                break
        return list(picked.values())[max(op.offset, 0) : wanted]

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = op.match_conditions or ()
        # The longest leading run of labels without a wildcard narrows what the service reads.
        leading: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                run = tuple(itertools.takewhile(lambda label: label != "*", condition.path))
                leading = run if len(run) > len(leading) else leading
        if len(_path(leading)) > MAX_STRING:
            return []  # longer than any stored namespace
        found: set[tuple[str, ...]] = set()
        cursor: str | None = None
        while True:
            stored_page, cursor = yield from self._list_page(_server_filter(leading, None, indexed=None), cursor)
            found.update(stored.namespace for stored in stored_page)
            if cursor is None:
                break
        matched = [namespace for namespace in found if all(_does_match(c, namespace) for c in conditions)]
        if op.max_depth is not None:
            matched = list({namespace[: op.max_depth] for namespace in matched})
        return sorted(matched)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------ helpers
    def _find(self, namespace: tuple[str, ...], key: str) -> Plan[list[_Stored]]:
        """The memories holding this item, newest first (more than one only while a put is under way)."""
        path = _path(namespace)
        if not namespace or len(path) > MAX_STRING or len(key) > MAX_STRING:
            return []
        flt = {f"metadata.{NS}": path, f"metadata.{KEY}": key}
        found: list[_Stored] = []
        cursor: str | None = None
        while True:
            stored_page, cursor = yield from self._list_page(flt, cursor)
            found += [stored for stored in stored_page if stored.namespace == namespace and stored.key == key]
            if cursor is None:
                return found

    def _list_page(self, flt: dict[str, Any], cursor: str | None) -> Plan[tuple[list[_Stored], str | None]]:
        """One ``memory_list`` page of the layer's items passing ``flt``, newest first, and the next cursor."""
        body: dict[str, Any] = {"layer": self.layer, "limit": PAGE, "filter": flt}
        answer = yield ("memory_list", body | ({"cursor": cursor} if cursor else {}))
        stored = [found for memory in answer.get("memories", []) if (found := _decode(memory)) is not None]
        return stored, (answer.get("nextCursor") if answer.get("hasMore") else None)

    def _delete(self, memory_ids: list[str]) -> Plan[None]:
        """Delete memories; one already gone (NOT_FOUND) is what was wanted, any other refusal is raised."""
        for start in range(0, len(memory_ids), PAGE):
            answer = yield ("memory_delete_batch", {"memoryIds": memory_ids[start : start + PAGE]})
            for result in answer.get("results", []):
                if not result.get("success") and result.get("errorCode") != "NOT_FOUND":
                    raise from_envelope(result, None)

    def _content(
        self, namespace: tuple[str, ...], key: str, value: dict[str, Any], index: Literal[False] | list[str] | None
    ) -> str:
        """What search ranks: the value's text (whole, or its ``fields``/``index`` paths), then where it lives.

        The namespace and key make every item's content its own, so search never folds two items into one.
        """
        where = f"({'/'.join(namespace)}: {key})"
        texts: list[str] = []
        for path in [] if index is False else (index if index is not None else self.fields):
            # The whole value as JSON with its own characters (LangGraph's "$" escapes them to \\uXXXX).
            whole = path in ("$", "")
            texts += [json.dumps(value, sort_keys=True, ensure_ascii=False)] if whole else get_text_at_path(value, path)
        text = "\n".join(texts)[: MAX_CONTENT - len(where) - 2]
        return f"{text}\n\n{where}" if text.strip() else where


# ----------------------------------------------------------------- drivers
def _drive[T](plan: Plan[T], call: Callable[[str, dict[str, Any]], dict[str, Any]]) -> T:
    """Run a plan with a sync ``call(tool, body)``."""
    answer: Any = None
    while True:
        try:
            tool, body = plan.send(answer)
        except StopIteration as done:
            return done.value
        answer = call(tool, body)


async def _adrive[T](plan: Plan[T], call: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]) -> T:
    """Run a plan with an async ``call(tool, body)``."""
    answer: Any = None
    while True:
        try:
            tool, body = plan.send(answer)
        except StopIteration as done:
            return done.value
        answer = await call(tool, body)


def _checked(ops: Iterable[Op]) -> list[Op]:
    """The ops, every namespace checked before any runs (ops handed to batch skip BaseStore's checks)."""
    listed = list(ops)
    for op in listed:
        validate_op_namespace(op)
    return listed


def _identity(client: MnemoClient | AsyncMnemoClient) -> tuple[Any, ...]:
    """Whom a client's calls name, and where: its url, delegation, and a LocalIdentity's ids."""
    auth = client.transport.auth
    return (
        client.transport.base_url.rstrip("/"),
        client.delegation,
        auth if isinstance(auth, LocalIdentity) else type(auth),
    )


# ---------------------------------------------------------------- encoding
def _path(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _metadata(
    namespace: tuple[str, ...], key: str, value: dict[str, Any], unindexed: bool, created: str | None
) -> dict[str, Any]:
    """An item's memory metadata (the module docstring); the copies are left out (``lg.partial``) when they
    do not fit the service's 8192 bytes, and a value that does not fit alone is a ValueError."""
    metadata: dict[str, Any] = {
        NS: _path(namespace),
        PREFIXES: [_path(namespace[:depth]) for depth in range(1, len(namespace) + 1)],
        KEY: key,
        VALUE: json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")),
    }
    if created is not None:
        metadata[CREATED] = created
    if unindexed:
        metadata[INDEXED] = False
    copies, partial = _copies(value)
    full = {**metadata, **copies} | ({PARTIAL: True} if partial else {})
    if _size(full) <= MAX_METADATA:
        return full
    if _size(metadata | {PARTIAL: True}) <= MAX_METADATA:
        return metadata | {PARTIAL: True}
    raise ValueError(
        f"the value is too large for a Mnemo memory: {_size(metadata)} bytes of metadata as JSON, at most "
        f"{MAX_METADATA} (keep about 7 KB of JSON per item)"
    )


def _size(metadata: dict[str, Any]) -> int:
    """The metadata's size as the service measures it."""
    return len(json.dumps(metadata, default=str))


def _copies(value: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``lg.v.<field>`` for each top-level scalar field a memory filter can compare, and whether one that a
    pushed condition could reach was left out (a field name too long, a number past float64)."""
    copies: dict[str, Any] = {}
    partial = False
    for field, item in value.items():
        if item is None or isinstance(item, dict | list | tuple) or (isinstance(item, str) and len(item) > MAX_STRING):
            continue  # no pushed condition matches these: equality takes scalars, ranges numbers
        if isinstance(field, str) and len(FIELD + field) <= MAX_KEY and _comparable(item):
            copies[FIELD + field] = item
        else:
            partial = True
    return copies, partial


def _comparable(item: Any) -> bool:
    """A scalar the service compares as the client does (strings, bools, finite numbers within float64)."""
    if isinstance(item, bool | str):
        return True
    if isinstance(item, int):
        return abs(item) < 10**300
    return isinstance(item, float) and math.isfinite(item)


def _decode(memory: Mapping[str, Any]) -> _Stored | None:
    """The item a memory holds, or None for a memory no store wrote."""
    metadata = memory.get("metadata") or {}
    path, key, raw = metadata.get(NS), metadata.get(KEY), metadata.get(VALUE)
    if not (isinstance(path, str) and isinstance(key, str) and isinstance(raw, str)):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    updated = datetime.fromisoformat(memory["createdAt"])
    created = metadata.get(CREATED)
    return _Stored(
        memory_id=memory["memoryId"],
        namespace=tuple(path.split(".")),
        key=key,
        value=value,
        created_at=datetime.fromisoformat(created) if isinstance(created, str) else updated,
        updated_at=updated,
    )


# ----------------------------------------------------------------- filters
def _server_filter(prefix: tuple[str, ...], flt: dict[str, Any] | None, *, indexed: bool | None) -> dict[str, Any]:
    """The memory filter for items under ``prefix`` that may pass ``flt``: a superset of them (the client
    checks each); ``indexed`` True keeps items put with an index, False those put with ``index=False``."""
    parts: list[dict[str, Any]] = [
        {f"metadata.{PREFIXES}": _path(prefix)} if prefix else {f"metadata.{NS}": {"exists": True}}
    ]
    pushed = _pushed(flt or {})
    if pushed:
        parts.append({"or": [{f"metadata.{PARTIAL}": True}, {"and": pushed}]})
    if indexed is True:
        parts.append({f"metadata.{INDEXED}": {"ne": False}})
    elif indexed is False:
        parts.append({f"metadata.{INDEXED}": False})
    return {"and": parts} if len(parts) > 1 else parts[0]


def _pushed(flt: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions of a LangGraph filter the service can run on the copies, each matching at least what
    the client's check keeps: equality on a scalar, and ranges on a number sent inclusive (float64 rounding
    is monotonic, so ``gte`` keeps whatever ``gt`` keeps). ``$ne`` and nested values stay in the client."""
    pushed: list[dict[str, Any]] = []
    for field, condition in flt.items():
        name = f"metadata.{FIELD}{field}"
        if len(FIELD + field) > MAX_KEY:
            continue
        operators = condition if isinstance(condition, dict) and any(k.startswith("$") for k in condition) else None
        if operators is None:
            if _pushable(condition):
                pushed.append({name: {"eq": condition}})
            continue
        for operator, operand in operators.items():
            if operator == "$eq" and _pushable(operand):
                pushed.append({name: {"eq": operand}})
            elif operator in ("$gt", "$gte") and _number(operand):
                pushed.append({name: {"gte": operand}})
            elif operator in ("$lt", "$lte") and _number(operand):
                pushed.append({name: {"lte": operand}})
    return pushed[:MAX_PUSHED]


def _pushable(operand: Any) -> bool:
    return (isinstance(operand, str) and len(operand) <= MAX_STRING) or (
        not isinstance(operand, str) and _comparable(operand)
    )


def _number(operand: Any) -> bool:
    return isinstance(operand, int | float) and not isinstance(operand, bool) and _comparable(operand)


def _matches(value: dict[str, Any], flt: dict[str, Any] | None) -> bool:
    """LangGraph's filter on a value: each top-level field passes its condition."""
    return all(_compare(value.get(field), condition) for field, condition in (flt or {}).items())


def _compare(item: Any, condition: Any) -> bool:
    """A condition on one value, as LangGraph's stores read it (``$`` operators, a nested object matching
    field by field, a list element by element, else equality), on JSON types: a bool is not a number."""
    if isinstance(condition, dict):
        if any(key.startswith("$") for key in condition):
            return all(_operator(item, operator, operand) for operator, operand in condition.items())
        return isinstance(item, dict) and all(_compare(item.get(k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (
            isinstance(item, list | tuple)
            and len(item) == len(condition)
            and all(_compare(a, b) for a, b in zip(item, condition, strict=True))
        )
    return _kind(item) == _kind(condition) and item == condition


def _operator(item: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _compare(item, operand)
    if operator == "$ne":
        return not _compare(item, operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported operator: {operator}")
    if _kind(item) != _kind(operand) or _kind(item) not in ("number", "string"):
        return False  # ranges compare numbers with numbers and strings with strings, nothing else
    if operator == "$gt":
        return bool(item > operand)
    if operator == "$gte":
        return bool(item >= operand)
    if operator == "$lt":
        return bool(item < operand)
    return bool(item <= operand)


def _kind(item: Any) -> str:
    if isinstance(item, bool):
        return "bool"
    if isinstance(item, int | float):
        return "number"
    return type(item).__name__


# -------------------------------------------------------------- namespaces
def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether a namespace matches a prefix or suffix condition (``*`` matches any one label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(wanted in ("*", label) for label, wanted in pairs)

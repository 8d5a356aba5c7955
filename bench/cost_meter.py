"""Counts what a stack sends to AWS, in the units AWS bills: DynamoDB request units, Titan tokens, requests.

Used by bench/deploy_cost.py (and its test). Nothing here changes what is sent,
except that Titan InvokeModel calls are answered locally (no model runs here; or,
with ``answer_titan=False``, by a stand-in server: bench/stand_ins.py) and, when
asked, OpenSearch k-NN searches are answered locally (osmem has no k-NN).

DynamoDB units follow the developer guide, not moto: moto's ConsumedCapacity is
a fixed figure per call (1.0 for a write, 0.5 for a query, one unit per key of a
BatchGetItem, 2.0 per transaction item, whatever the item sizes or read
consistency), so the units are computed here from the items as DynamoDB sizes
them ("DynamoDB item sizes and formats",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html)
and the capacity rules of "DynamoDB read and write operations"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html):

* a read is rounded up to 4 KB: one unit strongly consistent, half eventually
  consistent, two transactional; a read that finds nothing still costs the minimum;
* BatchGetItem rounds each item separately; Query and Scan round the total of the
  items they read;
* a write is rounded up to 1 KB of the larger of the item before and after it
  (a delete: the item removed), one unit per KB, two in a transaction; a write
  whose condition fails still costs its units.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

#: AWS: "The character to token ratio in English is 4.7 characters per token, on average" (Titan
#: Text Embeddings V2, https://docs.aws.amazon.com/bedrock/latest/userguide/titan-embedding-models.html).
#: The stub reports this estimate as inputTextTokenCount; the real model counts its own tokens.
TITAN_CHARS_PER_TOKEN = 4.7

READ_OPERATIONS = {"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"}
WRITE_OPERATIONS = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}


# ------------------------------------------------------------ item sizes ---
def _number_size(text: str) -> int:
    """1 byte per two significant digits, plus 1 (leading and trailing zeros trimmed)."""
    digits = Decimal(text).normalize().as_tuple().digits
    significant = "".join(map(str, digits)).strip("0") or "0"
    return math.ceil(len(significant) / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:
    """Size of one attribute value in DynamoDB's JSON form (``{"S": ...}``, ``{"M": {...}}``...)."""
    (kind, body), *_ = value.items()
    if kind == "S":
        return len(body.encode())
    if kind == "N":
        return _number_size(body)
    if kind == "B":
        return len(body) if isinstance(body, bytes) else len(_b64decode(body))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(item.encode()) for item in body)
    if kind == "NS":
        return sum(_number_size(item) for item in body)
    if kind == "BS":
        return sum(len(item) if isinstance(item, bytes) else len(_b64decode(item)) for item in body)
    if kind == "L":
        return 3 + sum(1 + value_size(item) for item in body)
    if kind == "M":
        return 3 + sum(1 + len(name.encode()) + value_size(item) for name, item in body.items())
    raise ValueError(f"unknown DynamoDB type {kind}")


def _b64decode(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def item_size(item: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Bytes DynamoDB counts for an item: each attribute's name and value (0 for no item)."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    """Read request units for ``size`` bytes read as one rounded unit (at least the minimum)."""
    blocks = max(1, math.ceil(size / 4096))
    if transactional:
        return 2.0 * blocks
    return float(blocks) if consistent else blocks / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    """Write request units for an item of ``size`` bytes (the larger of before and after)."""
    blocks = max(1, math.ceil(size / 1024))
    return 2.0 * blocks if transactional else float(blocks)


# ---------------------------------------------------------------- tallies ---
@dataclass
class Tally:
    """What one phase (a function's calls) sent: requests by name, DynamoDB units, Titan tokens."""

    requests: Counter[str] = field(default_factory=Counter)
    rru: float = 0.0
    #: The part of ``rru`` spent by strongly consistent reads (half of it with eventually consistent ones).
    rru_strong: float = 0.0
    wru: float = 0.0
    titan_calls: int = 0
    titan_tokens: int = 0
    converse_calls: int = 0
    #: Sizes of the items DynamoDB read or wrote, for the report.
    item_bytes: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": dict(sorted(self.requests.items())),
            "rru": self.rru,
            "rruStrong": self.rru_strong,
            "wru": self.wru,
            "titanCalls": self.titan_calls,
            "titanTokens": self.titan_tokens,
            "converseCalls": self.converse_calls,
        }


class Meter:
    """Botocore event hooks (``before-call`` / ``after-call``) that tally every call into the current phase.

    ``peek(table, key)`` reads an item without being counted (a separate client):
    it gives the size of the item a write replaces. ``phase`` names the tally
    calls go to; ``tallies[phase]`` holds it.
    """

    def __init__(
        self,
        peek: Callable[[str, dict[str, Any]], dict[str, Any] | None],
        *,
        answer_titan: bool = True,
        offload: bool = False,
    ) -> None:
        """``answer_titan``: answer InvokeModel here (False: a stand-in server answers it and calls
        ``count_titan``). ``offload``: do the DynamoDB accounting (the request's parsing, the peeks) on a
        thread of its own while the caller waits, so that the caller's CPU time holds none of it."""
        self._peek = peek
        self._answer_titan = answer_titan
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="cost-meter") if offload else None
        self.phase = "unattributed"
        self.tallies: dict[str, Tally] = defaultdict(Tally)
        self._pending: dict[int, list[tuple[str, float]]] = {}
        self._attached: dict[int, Any] = {}

    @property
    def tally(self) -> Tally:
        return self.tallies[self.phase]

    # -- attaching ----------------------------------------------------------
    def attach(self, client: Any) -> Any:
        """Hook ``client`` (once); returns it."""
        if id(client) in self._attached:
            return client
        events = client.meta.events
        events.register_first("before-call", self._before, unique_id=f"cost-meter-before-{id(self)}")
        events.register_last("after-call", self._after, unique_id=f"cost-meter-after-{id(self)}")
        self._attached[id(client)] = client
        return client

    def count_titan(self, tokens: int) -> None:
        """A Titan call a stand-in server answered, with its tokens (the phase's: the caller waits on it)."""
        self.tally.titan_calls += 1
        self.tally.titan_tokens += tokens

    def _off(self, work: Callable[..., Any], *args: Any) -> Any:
        return self._worker.submit(work, *args).result() if self._worker is not None else work(*args)

    def detach(self) -> None:
        if self._worker is not None:
            self._worker.shutdown()
        for client in self._attached.values():
            client.meta.events.unregister("before-call", unique_id=f"cost-meter-before-{id(self)}")
            client.meta.events.unregister("after-call", unique_id=f"cost-meter-after-{id(self)}")
        self._attached.clear()

    @contextmanager
    def attributed(self, phase: str) -> Iterator[Tally]:
        previous, self.phase = self.phase, phase
        try:
            yield self.tallies[phase]
        finally:
            self.phase = previous

    # -- hooks --------------------------------------------------------------
    def _before(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> Any:
        service = model.service_model.service_id.hyphenize()
        name = model.name
        self.tally.requests[f"{service}:{name}"] += 1
        if service == "bedrock-runtime" and name == "InvokeModel" and self._answer_titan:
            return self._titan_answer(params)
        if service == "bedrock-runtime" and name in ("Converse", "ConverseStream"):
            self.tally.converse_calls += 1
        if service == "dynamodb":
            self._off(self._dynamodb_before, name, params, context)
        return None

    def _dynamodb_before(self, name: str, params: dict[str, Any], context: dict[str, Any]) -> None:
        body = json.loads(params["body"] or b"{}")
        context["cost_meter_body"] = body
        if name in WRITE_OPERATIONS:
            context["cost_meter_before"] = self._sizes_before(name, body)

    def _after(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if model.service_model.service_id.hyphenize() == "dynamodb":
            sent = context.get("cost_meter_body") or {}
            self._off(self._count_dynamodb, model.name, sent, parsed, context.get("cost_meter_before") or [])

    def _titan_answer(self, params: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Answer InvokeModel with a deterministic unit vector and the token estimate AWS documents."""
        from botocore.awsrequest import AWSResponse
        from botocore.response import StreamingBody

        request = json.loads(params["body"])
        text = request["inputText"]
        tokens = max(1, math.ceil(len(text) / TITAN_CHARS_PER_TOKEN))
        self.tally.titan_calls += 1
        self.tally.titan_tokens += tokens
        vector = deterministic_vector(text, int(request.get("dimensions", 1024)))
        payload = json.dumps({"embedding": vector, "inputTextTokenCount": tokens}).encode()
        body = StreamingBody(io.BytesIO(payload), len(payload))
        http = AWSResponse("https://bedrock-runtime.invalid", 200, {}, None)
        return http, {"body": body, "contentType": "application/json", "ResponseMetadata": {"HTTPStatusCode": 200}}

    # -- DynamoDB accounting ------------------------------------------------
    def _sizes_before(self, name: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any], int]]:
        """(table, key, size of the item now stored) of every item the write touches."""
        touched: list[tuple[str, dict[str, Any], int]] = []
        for table, key in _written_keys(name, body):
            touched.append((table, key, item_size(self._peek(table, key))))
        return touched

    def _count_dynamodb(
        self, name: str, body: dict[str, Any], parsed: dict[str, Any], before: list[tuple[str, dict[str, Any], int]]
    ) -> None:
        tally = self.tally
        before_rru = tally.rru
        if name == "GetItem":
            size = item_size(parsed.get("Item"))
            tally.rru += read_units(size, consistent=bool(body.get("ConsistentRead")))
            tally.item_bytes.append(size)
        elif name == "BatchGetItem":
            for table, items in (parsed.get("Responses") or {}).items():
                consistent = bool(body.get("RequestItems", {}).get(table, {}).get("ConsistentRead"))
                for item in items:
                    size = item_size(item)
                    tally.rru += read_units(size, consistent=consistent)
                    tally.item_bytes.append(size)
                asked = len(body.get("RequestItems", {}).get(table, {}).get("Keys", []))
                unprocessed = len((parsed.get("UnprocessedKeys") or {}).get(table, {}).get("Keys", []))
                missing = asked - unprocessed - len(items)  # keys that found nothing still cost the minimum
                tally.rru += max(0, missing) * read_units(0, consistent=consistent)
        elif name in ("Query", "Scan"):
            sizes = [item_size(item) for item in parsed.get("Items", [])]
            tally.rru += read_units(sum(sizes), consistent=bool(body.get("ConsistentRead")))
            tally.item_bytes += sizes
        elif name == "TransactGetItems":
            for response in parsed.get("Responses", []):
                tally.rru += read_units(item_size(response.get("Item")), consistent=True, transactional=True)
        elif name in WRITE_OPERATIONS:
            transactional = name == "TransactWriteItems"
            after = {(table, _key_id(key)): size for table, key, size in _written_sizes(name, body, self._peek)}
            for table, key, old in before:
                new = after.get((table, _key_id(key)), 0)
                tally.wru += write_units(max(old, new), transactional=transactional)
                tally.item_bytes.append(max(old, new))
            for table, key in _condition_checks(name, body):
                tally.rru += read_units(item_size(self._peek(table, key)), consistent=True, transactional=True)
        requested = body.get("RequestItems", {}).values() if name == "BatchGetItem" else [body]
        if name in READ_OPERATIONS and any(spec.get("ConsistentRead") for spec in requested):
            tally.rru_strong += tally.rru - before_rru


def _key_id(key: Mapping[str, Any]) -> str:
    return json.dumps(key, sort_keys=True)


def _key_of(item: Mapping[str, Any]) -> dict[str, Any]:
    """The primary key of a Mnemo record (``pk``, ``sk``)."""
    return {name: item[name] for name in ("pk", "sk") if name in item}


def _written_keys(name: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if name == "PutItem":
        return [(body["TableName"], _key_of(body["Item"]))]
    if name in ("UpdateItem", "DeleteItem"):
        return [(body["TableName"], body["Key"])]
    if name == "BatchWriteItem":
        keys = []
        for table, requests in body["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    keys.append((table, _key_of(request["PutRequest"]["Item"])))
                else:
                    keys.append((table, request["DeleteRequest"]["Key"]))
        return keys
    keys = []
    for action in body.get("TransactItems", []):
        (kind, spec), *_ = action.items()
        if kind == "Put":
            keys.append((spec["TableName"], _key_of(spec["Item"])))
        elif kind in ("Update", "Delete"):
            keys.append((spec["TableName"], spec["Key"]))
    return keys


def _written_sizes(
    name: str, body: dict[str, Any], peek: Callable[[str, dict[str, Any]], dict[str, Any] | None]
) -> list[tuple[str, dict[str, Any], int]]:
    """(table, key, size after) for each written item: a put's own item, an update's stored result, 0 for a delete."""
    sizes: list[tuple[str, dict[str, Any], int]] = []
    if name == "PutItem":
        return [(body["TableName"], _key_of(body["Item"]), item_size(body["Item"]))]
    if name == "UpdateItem":
        return [(body["TableName"], body["Key"], item_size(peek(body["TableName"], body["Key"])))]
    if name == "DeleteItem":
        return [(body["TableName"], body["Key"], 0)]
    if name == "BatchWriteItem":
        for table, requests in body["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    item = request["PutRequest"]["Item"]
                    sizes.append((table, _key_of(item), item_size(item)))
        return sizes
    for action in body.get("TransactItems", []):
        (kind, spec), *_ = action.items()
        if kind == "Put":
            sizes.append((spec["TableName"], _key_of(spec["Item"]), item_size(spec["Item"])))
        elif kind == "Update":
            sizes.append((spec["TableName"], spec["Key"], item_size(peek(spec["TableName"], spec["Key"]))))
    return sizes


def _condition_checks(name: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if name != "TransactWriteItems":
        return []
    return [
        (action["ConditionCheck"]["TableName"], action["ConditionCheck"]["Key"])
        for action in body.get("TransactItems", [])
        if "ConditionCheck" in action
    ]


def deterministic_vector(text: str, dimensions: int) -> list[float]:
    """A unit vector that depends on the text's words only (similar texts, similar vectors)."""
    from mnemo.adapters.local.embedders import HashingEmbedder

    return [float(value) for value in HashingEmbedder(dimensions).embed([text])[0]]


# -------------------------------------------------------------- OpenSearch ---
def opensearch_kind(method: str, path: str, body: Any) -> str:
    """A request's kind: bulk, msearch, search (k-NN or other), count, index admin..."""
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    if tail == "_bulk":
        return "bulk"
    if tail == "_msearch":
        return "msearch"
    if tail == "_search":
        return "search k-NN" if is_knn(body) else "search"
    if tail == "_count":
        return "count"
    if "_index_template" in path:
        return f"index template {method}"
    if tail == "_mapping":
        return f"mapping {method}"
    return f"{method} {'/' + tail if tail.startswith('_') else '/<index>'}"


def is_knn(body: Any) -> bool:
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return False
    return isinstance(body, dict) and "knn" in (body.get("query") or {})


def knn_msearch(url: str, body: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (index, body) of each search of an ``_msearch`` made of k-NN searches only (else [])."""
    if not url.rstrip("/").endswith("_msearch") or not isinstance(body, (bytes, str)):
        return []
    text = body.decode() if isinstance(body, bytes) else body
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    pairs = list(zip(lines[::2], lines[1::2], strict=False))
    if not pairs or not all(is_knn(search) for _, search in pairs):
        return []
    default = url.strip("/").split("/", 1)[0] if not url.startswith("/_msearch") else ""
    return [(header.get("index") or default, search) for header, search in pairs]


class OpenSearchMeter:
    """Wraps an opensearch-py client's transport: counts requests by kind into ``meter``'s phase.

    ``knn`` answers k-NN searches (a callable taking the index name and body), for a
    server without k-NN; the answer's own requests are not counted.
    """

    def __init__(self, meter: Meter, knn: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self._meter = meter
        self._knn = knn
        self._wrapped: set[int] = set()

    def attach(self, client: Any) -> Any:
        if id(client) in self._wrapped:
            return client
        perform = client.transport.perform_request

        def record(method: str, url: str, params: Any = None, body: Any = None, **kwargs: Any) -> Any:
            decoded = json.loads(body) if isinstance(body, (bytes, str)) and is_knn(body) else body
            searches = knn_msearch(url, body)
            kind = "msearch k-NN" if searches else opensearch_kind(method, url, decoded)
            self._meter.tally.requests[f"opensearch:{kind}"] += 1
            if self._knn is not None and isinstance(decoded, dict) and is_knn(decoded):
                return self._knn(url.strip("/").split("/", 1)[0], decoded)
            if self._knn is not None and searches:
                return {"took": 1, "responses": [self._knn(index, search) for index, search in searches]}
            return perform(method, url, params=params, body=body, **kwargs)

        client.transport.perform_request = record
        self._wrapped.add(id(client))
        return client

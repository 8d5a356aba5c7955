"""What the fuzz suite shares: a keep-alive HTTP client that counts, and the checks every answer must pass.

Every answer of the local server, whatever it was sent, must be one of:

- a 2xx whose JSON validates against the tool's declared output schema (GET /v1/tools);
- a 4xx whose JSON is exactly the error envelope ``{success: false, errorCode,
  message, details, retryable}``, its status the one its errorCode maps to, and,
  for INVALID_INPUT, ``details.field`` naming a field of the request.

Never a 5xx, never HTML, never a stack trace.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import re
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, FormatChecker

from mnemo.errors import HTTP_STATUS, RETRYABLE, TRANSPORT_STATUS

#: Requests sent, by kind (positive, negative, mutated, hostile, setup); printed at the end of the session.
REQUESTS: Counter[str] = Counter()
#: The kinds that count towards the catalog fuzzing budget.
FUZZ_KINDS = ("positive", "negative", "mutated")
#: The suite's normal run sends at least this many generated requests.
MIN_FUZZ_REQUESTS = 10_000
#: A digest of every generated request sent, in order: two runs that print the same one sent the same requests.
SENT = hashlib.sha256()

ENVELOPE_KEYS = {"success", "errorCode", "message", "details", "retryable"}
_TRACE = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")


@dataclass
class Reply:
    status: int
    content_type: str
    raw: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")

    def json(self) -> Any:
        def _no_constants(token: str) -> Any:
            raise AssertionError(f"the answer holds {token}, which is not JSON")

        return json.loads(self.raw, parse_constant=_no_constants)


class Client:
    """One keep-alive connection to the server; reconnects when the server closes it."""

    def __init__(self, base: str, timeout: float = 60.0) -> None:
        split = urlsplit(base)
        self.host, self.port = split.hostname or "127.0.0.1", split.port or 80
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return self._conn

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str | bytes] | None = None,
        *,
        kind: str,
    ) -> Reply:
        REQUESTS[kind] += 1
        if kind in FUZZ_KINDS:
            SENT.update(repr((method, path, sorted((headers or {}).items()), body)).encode())
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=dict(headers or {}))
                response = conn.getresponse()
                raw = response.read()
            except (http.client.CannotSendRequest, BrokenPipeError, ConnectionResetError):  # RemoteDisconnected too
                # The server closed a kept-alive connection (after an error it may): once more on a new one.
                self.close()
                if attempt == 2:
                    raise
                continue
            if response.will_close:
                self.close()
            return Reply(
                status=response.status,
                content_type=response.getheader("Content-Type", ""),
                raw=raw,
                headers={k.lower(): v for k, v in response.getheaders()},
            )
        raise AssertionError("unreachable")

    def post_tool(
        self, tool: str, body: bytes | None, headers: dict[str, str | bytes] | None = None, *, kind: str
    ) -> Reply:
        sent = {"Content-Type": "application/json", **(headers or {})}
        return self.request("POST", f"/v1/tools/{tool}", body, sent, kind=kind)

    def call(self, tool: str, payload: Any, *, kind: str = "setup", **identity: str) -> tuple[int, Any]:
        """POST a JSON payload with identity headers; the status and the decoded answer."""
        headers: dict[str, str | bytes] = {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
        reply = self.post_tool(tool, json.dumps(payload).encode(), headers, kind=kind)
        return reply.status, reply.json()


def raw_socket_request(base: str, data: bytes, timeout: float = 30.0) -> bytes:
    """Send bytes as they are (for requests http.client refuses to build); the whole answer."""
    REQUESTS["hostile"] += 1
    split = urlsplit(base)
    with socket.create_connection((split.hostname, split.port), timeout=timeout) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def parse_raw_response(raw: bytes) -> Reply:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    length = int(headers.get("content-length", len(body)))
    return Reply(status=status, content_type=headers.get("content-type", ""), raw=body[:length], headers=headers)


# ------------------------------------------------------------------ checks ---
def field_names(schema: dict[str, Any]) -> set[str]:
    """Top-level property names of an input schema, with their snake_case spelling too."""
    names = set(schema.get("properties", {}))
    return names | {re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() for name in names}


def check_envelope(reply: Reply, *, allowed_fields: set[str] | None = None) -> dict[str, Any]:
    """A 4xx answer is exactly the envelope, coherent with its status; INVALID_INPUT names its field."""
    assert 400 <= reply.status < 500, f"expected a 4xx, got {reply.status}: {reply.text[:500]}"
    assert not _TRACE.search(reply.text), f"a stack trace leaked: {reply.text[:2000]}"
    assert reply.content_type.startswith("application/json"), f"not JSON ({reply.content_type}): {reply.text[:500]}"
    body = reply.json()
    assert isinstance(body, dict), f"not the envelope: {body!r:.500}"
    assert set(body) == ENVELOPE_KEYS, f"not the envelope: {body!r:.500}"
    assert body["success"] is False
    code = body["errorCode"]
    assert code in HTTP_STATUS, code
    if code == "INVALID_INPUT" and reply.status in TRANSPORT_STATUS:
        field = body["details"].get("field")
        assert field in TRANSPORT_STATUS[reply.status], f"HTTP {reply.status} for {field!r}: {body!r:.300}"
    else:
        assert HTTP_STATUS[code] == reply.status, f"{code} answered with HTTP {reply.status}"
    if reply.status == 408:  # the body was too slow: sending it again may work
        assert body["retryable"] is True, body
    elif code == "CONFLICT":  # a race may be retried; a stale version, a taken name or an ambiguous edit not
        assert isinstance(body["retryable"], bool), body
    else:
        assert body["retryable"] is (code in RETRYABLE)
    assert isinstance(body["message"], str), body
    assert body["message"], body
    assert isinstance(body["details"], dict), body
    if code == "INVALID_INPUT":
        named = body["details"].get("field")
        assert isinstance(named, str), f"INVALID_INPUT without details.field: {body!r:.500}"
        assert named, f"INVALID_INPUT without details.field: {body!r:.500}"
        assert named in body["message"], f"the message does not name {named!r}: {body['message']!r:.300}"
        if allowed_fields is not None:
            # A path's first step, or a whole key the request sent (a key may itself hold a dot).
            root = named.split(".", 1)[0]
            named_ok = root in allowed_fields or any(named.startswith(key) for key in allowed_fields if "." in key)
            assert named_ok, f"details.field {named!r} names no field of the request: {body!r:.500}"
    return body


def check_answer(
    reply: Reply,
    *,
    output: Draft202012Validator | None = None,
    allowed_fields: set[str] | None = None,
) -> Any:
    """Any answer: a schema-valid 2xx or the envelope as a 4xx; never a 5xx or a trace."""
    assert reply.status < 500, f"HTTP {reply.status}: {reply.text[:2000]}"
    if reply.status >= 400:
        return check_envelope(reply, allowed_fields=allowed_fields)
    assert 200 <= reply.status < 300, f"unexpected status {reply.status}: {reply.text[:500]}"
    assert reply.content_type.startswith("application/json"), reply.content_type
    body = reply.json()
    if output is not None:
        problems = sorted(output.iter_errors(body), key=lambda error: list(error.absolute_path))
        assert not problems, (
            f"2xx does not match the output schema at {list(problems[0].absolute_path)}: "
            f"{problems[0].message[:300]}\n{json.dumps(body)[:1500]}"
        )
    return body


def output_validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=FormatChecker())


def healthy(client: Client) -> None:
    reply = client.request("GET", "/health", kind="hostile")
    assert reply.status == 200, reply.text[:300]
    assert reply.json()["status"] == "ok", reply.text[:300]


# --------------------------------------------------------------- mutation ---
#: Timestamps at and past the edges of what a datetime (and its UTC conversion) can hold.
EDGE_TIMESTAMPS = (
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+00:01",
    "9999-12-31T23:59:59.999999-00:01",
    "0001-01-01T00:59:59+01:00",
    "9999-12-31T23:00:00-01:00",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T00:00:00-23:59",
    "0000-01-01T00:00:00Z",
    "10000-01-01T00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2024-01-01T24:00:01Z",
    "2024-01-01T00:00:00+24:00",
    "1970-01-01T00:00:00Z",
    "2038-01-19T03:14:08+00:00",
    "2024-01-01",
    "now",
    "",
)

#: Raw JSON tokens that stand in for any value.
HOSTILE_TOKENS = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1" + "0" * 5000,
    str(10**18),
    str(-(10**18)),
    str(2**63),
    "-1",
    "0",
    "1.5",
    "-0.0",
    "1e-400",
    "true",
    "null",
    '""',
    '" "',
    '"\\ud800"',
    '"a\\udfffb"',
    '"\\u0000"',
    '"a\\u0000b\\u001f\\u007f"',
    '"\\u202e\\ufeff\\u200b"',
    '{"\\u0000": 1}',
    '{"\\ud800": "x"}',
    '{"a\\u0000b": {"\\u0001": []}}',
    "[]",
    "{}",
    '["a", 1, null, {}]',
    "[" * 60 + "]" * 60,
    '{"a":' * 60 + "1" + "}" * 60,
    "[" * 3000 + "]" * 3000,
    '"' + "x" * 120_000 + '"',
    '"' + "é" * 5000 + '"',
)

IDENTITY_CLAIMS = (
    ("user_id", '"mallory"'),
    ("tenant", '"globex"'),
    ("userId", '"alice"'),
    ("roles", '["admin", "writer"]'),
    ("project", "null"),
    ("org", '{"id": "x"}'),
)


def dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


def with_token(body: dict[str, Any], key: str, token: str) -> bytes:
    """``body`` as JSON with ``key`` set to a raw JSON ``token`` (added last, or replacing its value)."""
    parts = [f"{dumps(k)}: {dumps(v)}" for k, v in body.items() if k != key]
    parts.append(f"{dumps(key)}: {token}")
    return ("{" + ", ".join(parts) + "}").encode()


def at_path(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``body`` with ``value`` at ``path``, creating objects on the way."""
    copy = json.loads(dumps(body)) if body else {}
    node = copy
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value
    return copy


def with_duplicate(body: dict[str, Any], key: str, first: Any) -> bytes:
    """``body`` as JSON with ``key`` written twice, ``first`` then its real value."""
    parts = [f"{dumps(key)}: {dumps(first)}"]
    parts += [f"{dumps(k)}: {dumps(v)}" for k, v in body.items()]
    if key not in body:
        parts.append(f"{dumps(key)}: {dumps(first)}")
    return ("{" + ", ".join(parts) + "}").encode()


def finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def date_time_paths(schema: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every property path of an input schema whose value is (or may be) a date-time string."""
    definitions = schema.get("$defs", {})
    found: list[tuple[str, ...]] = []

    def visit(node: Any, path: tuple[str, ...], depth: int) -> None:
        if not isinstance(node, dict) or depth > 6:
            return
        if "$ref" in node:
            visit(definitions.get(node["$ref"].rsplit("/", 1)[-1]), path, depth + 1)
        if node.get("format") == "date-time" and path not in found:
            found.append(path)
        for option in node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", []):
            visit(option, path, depth + 1)
        for name, child in node.get("properties", {}).items():
            visit(child, (*path, name), depth + 1)

    visit(schema, (), 0)
    return found

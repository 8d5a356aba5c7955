"""API Gateway events for identity tests, built on the documented shapes in tests/fixtures/apigw/.

Each builder copies a fixture and sets only what a test varies: the caller (an ARN, claims, an API
key id, a Lambda authorizer's context), extra headers, which headers the SigV4 signature lists,
the tool and the body. REST events keep header names as given and fill ``multiValueHeaders``;
HTTP API events lowercase them, as API Gateway does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "apigw"
_SIGNED = re.compile(r"SignedHeaders=[^,\s]*")


@cache
def _fixture(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text()


def fixture(name: str) -> dict[str, Any]:
    """A fresh copy of ``tests/fixtures/apigw/<name>.json``."""
    loaded: dict[str, Any] = json.loads(_fixture(name))
    return loaded


def is_http(event: Mapping[str, Any]) -> bool:
    return event.get("version") == "2.0"


def _route(event: dict[str, Any], tool: str, body: Any) -> None:
    text = json.dumps(body if body is not None else {"query": "note"})
    event["body"] = text
    event["pathParameters"] = {"name": tool}
    if is_http(event):
        event["rawPath"] = f"/v1/tools/{tool}"
        event["requestContext"]["http"]["path"] = f"/v1/tools/{tool}"
        event["headers"]["content-length"] = str(len(text.encode()))
    else:
        event["path"] = f"/v1/tools/{tool}"
        event["requestContext"]["path"] = f"/dev/v1/tools/{tool}"


def set_header(event: dict[str, Any], name: str, value: str) -> None:
    if is_http(event):
        event["headers"][name.lower()] = value
    else:
        event["headers"][name] = value
        event["multiValueHeaders"][name] = [value]


def _sign(event: dict[str, Any], names: Iterable[str]) -> None:
    """Add ``names`` to the Authorization header's SignedHeaders (as a SigV4 client that signs them)."""
    key = "authorization" if is_http(event) else "Authorization"
    current = event["headers"][key]
    listed = set(_SIGNED.search(current).group(0).removeprefix("SignedHeaders=").split(";"))  # type: ignore[union-attr]
    listed |= {name.lower() for name in names}
    value = _SIGNED.sub(f"SignedHeaders={';'.join(sorted(listed))}", current)
    set_header(event, key, value)


def iam_event(
    arn: str,
    *,
    http: bool = False,
    headers: Mapping[str, str] | None = None,
    signed: Iterable[str] | None = None,
    tool: str = "memory_search",
    body: Any = None,
) -> dict[str, Any]:
    """A SigV4 caller's event. ``signed``: which of ``headers`` the signature lists (default: all)."""
    event = fixture("http_iam" if http else "rest_iam")
    account = arn.split(":")[4]
    where = event["requestContext"]["authorizer"]["iam"] if http else event["requestContext"]["identity"]
    where.update({"userArn": arn, "accountId": account})
    _route(event, tool, body)
    for name, value in (headers or {}).items():
        set_header(event, name, value)
    _sign(event, (headers or {}) if signed is None else signed)
    return event


def _http_claim(value: Any) -> str:
    """A claim as an HTTP API JWT authorizer passes it: a string, an array as ``[a b]``."""
    if isinstance(value, list):
        return "[" + " ".join(str(item) for item in value) + "]"
    return value if isinstance(value, str) else json.dumps(value)


def jwt_event(
    claims: Mapping[str, Any],
    *,
    http: bool = True,
    headers: Mapping[str, str] | None = None,
    tool: str = "memory_search",
    body: Any = None,
) -> dict[str, Any]:
    """A verified token's event: HTTP API JWT authorizer (claims as strings), or REST Cognito."""
    event = fixture("http_jwt" if http else "rest_cognito")
    if http:
        event["requestContext"]["authorizer"]["jwt"]["claims"] = {k: _http_claim(v) for k, v in claims.items()}
    else:
        event["requestContext"]["authorizer"]["claims"] = dict(claims)
    _route(event, tool, body)
    for name, value in (headers or {}).items():
        set_header(event, name, value)
    return event


def api_key_event(
    key_id: str, *, headers: Mapping[str, str] | None = None, tool: str = "memory_search", body: Any = None
) -> dict[str, Any]:
    event = fixture("rest_api_key")
    event["requestContext"]["identity"]["apiKeyId"] = key_id
    _route(event, tool, body)
    for name, value in (headers or {}).items():
        set_header(event, name, value)
    return event


def lambda_event(
    context: Mapping[str, Any], *, headers: Mapping[str, str] | None = None, tool: str = "memory_search"
) -> dict[str, Any]:
    """An HTTP API event with a Lambda authorizer's context."""
    event = fixture("http_lambda")
    event["requestContext"]["authorizer"] = {"lambda": dict(context)}
    _route(event, tool, None)
    for name, value in (headers or {}).items():
        set_header(event, name, value)
    return event

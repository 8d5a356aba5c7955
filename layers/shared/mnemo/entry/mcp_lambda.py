"""MCP over Streamable HTTP as a stateless Lambda behind API Gateway (POST /mcp).

The API Gateway authorizer supplies identity exactly as for the tool routes,
from a REST API's event (payload format 1.0) or an HTTP API's (2.0, AuthMode
JWT: the method under ``requestContext.http``, header names in lower case);
the SDK's session manager runs in stateless JSON mode on a per-container event
loop (see mcp_server.HttpBridge), so any container can serve any request.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from mnemo import observability
from mnemo.entry import snapstart
from mnemo.entry.identity import context_from_event
from mnemo.errors import MnemoError, ProviderError
from mnemo.observability import logger

# During INIT, as SnapStart needs: the runtime then calls the hook after each restore (a no-op outside Lambda).
snapstart.register()


def _proxy(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    return {"statusCode": status, "headers": headers, "body": body.decode("utf-8"), "isBase64Encoded": False}


def _method(event: dict[str, Any]) -> str:
    """The request's HTTP method, in either payload format."""
    if event.get("version") == "2.0":
        method = ((event.get("requestContext") or {}).get("http") or {}).get("method")
    else:
        method = event.get("httpMethod")
    return method if isinstance(method, str) and method else "POST"


def _correlate(body: bytes) -> None:
    """The JSON-RPC request's id and method in every log line of this invocation."""
    try:
        message = json.loads(body)
    except ValueError:
        return
    if isinstance(message, dict):
        keys = {"mcpRequestId": message.get("id"), "mcpMethod": message.get("method")}
        logger.append_keys(**{key: str(value)[:128] for key, value in keys.items() if value is not None})


@observability.door(observability.API_GATEWAY)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from mnemo.entry.mcp_server import http_bridge

    try:
        caller = context_from_event(event)
    except MnemoError as error:
        return _proxy(error.status, {"Content-Type": "application/json"}, json.dumps(error.envelope()).encode())
    try:
        raw = event.get("body") or ""
        body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
        _correlate(body)
        # Both formats carry a ``headers`` map (2.0 joins repeated values with commas, as HTTP does).
        headers = {key: str(value) for key, value in (event.get("headers") or {}).items()}
        status, response_headers, payload = http_bridge().handle(_method(event), headers, body, caller)
    except Exception:  # the SDK answers protocol errors itself; anything else must not leak
        logger.exception("MCP request failed")
        failure = ProviderError("Internal error; it has been logged")
        return _proxy(failure.status, {"Content-Type": "application/json"}, json.dumps(failure.envelope()).encode())
    return _proxy(status, response_headers, payload)

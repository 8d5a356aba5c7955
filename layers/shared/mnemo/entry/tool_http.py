"""One tool call over HTTP, without a router: the local server's path to the catalog.

It answers what the API Gateway door (``apigw.py``, on Powertools' resolver)
answers for the same body and identity: the tool's JSON on success, otherwise
the error envelope with the status its code maps to, the same validation
messages (both doors validate with ``parse_body``, in the words Powertools'
own validation used when the API Gateway door had it) and the same response budget.
``tests/e2e/test_http_parity.py`` feeds both doors the same requests and
compares the answers.

Why not the resolver: Powertools keeps the request being resolved in class
state (``BaseRouter.current_event``), so one process can resolve one request at
a time. Everything here is per call, so a server's threads run tool calls side
by side.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mnemo import observability
from mnemo.context import RequestContext
from mnemo.errors import MnemoError, ProviderError, from_validation_errors, invalid_field
from mnemo.identity_claims import IDENTITY_CLAIMS, strip_identity_claims
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.registry import Tool, get_tool, parse_json_body

if TYPE_CHECKING:
    from pydantic import BaseModel

#: A Lambda proxy response may carry 6 MB; leave room for the proxy envelope around the body. The local
#: server keeps the same room, so a page is as long locally as deployed.
RESPONSE_BUDGET_BYTES = 5_500_000


def call_tool(name: str, body: str | None, context: RequestContext) -> tuple[int, str]:
    """Run tool ``name`` on a request body (JSON text, or None when there was none) as ``context``.

    Returns the HTTP status and the JSON text to answer with. Never raises: an
    unexpected failure is logged with its stack and answered as PROVIDER_ERROR.
    """
    with observability.tool_call(name):
        try:
            answer = _run(name, body, context)
        except MnemoError as error:
            if isinstance(error, ProviderError):
                logger.warning("provider error", extra={"errorMessage": error.message})
            return _failure(error)
        except Exception as error:
            logger.exception("unexpected error")
            return _failure(ProviderError("Internal error; it has been logged", {"type": type(error).__name__}))
        observability.answered(answer)
        return 200, json.dumps(answer)


def _run(name: str, body: str | None, context: RequestContext) -> dict[str, Any]:
    tool = get_tool(name)
    request = parse_body(tool, body, context)
    budgeted = context.model_copy(update={"response_budget": RESPONSE_BUDGET_BYTES})
    answer: dict[str, Any] = tool.run(get_services(), budgeted, request).model_dump(mode="json", by_alias=True)
    return answer


def parse_body(tool: Tool, body: str | None, context: RequestContext | None) -> BaseModel:
    """The tool's request from a request body (JSON text, or None when there was none): both HTTP doors
    validate with it (the API Gateway door too, rather than Powertools' OpenAPI validation), in the words
    Powertools uses for a body parameter. INVALID_INPUT when it is missing, not JSON, not an object or not the
    tool's arguments. Identity claims are checked against ``context`` and removed; None: the door removed them
    already (apigw's ``_screened_body``)."""
    if body is None or body == "":
        # What Powertools reports for a body parameter that is absent.
        raise from_validation_errors(
            [{"type": "missing", "loc": ("body",), "msg": "Field required"}], drop_prefix="body"
        )
    payload = parse_json_body(body)
    if not isinstance(payload, dict):
        raise invalid_field("body", f"must be a JSON object of the tool's arguments, not {json_kind(payload)}")
    if context is not None and any(key in IDENTITY_CLAIMS for key in payload):
        payload = strip_identity_claims(payload, context)
    return tool.parse(payload, from_attributes=True)


def _failure(error: MnemoError) -> tuple[int, str]:
    observability.failed(error.code)
    return error.status, json.dumps(error.envelope())


def json_kind(value: Any) -> str:
    """How a body that is not an object is named in the error: "an array", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"

"""API Gateway HTTP API events in the shape AWS documents (payload format 2.0), for any route.

Built from Powertools' documented fixtures (tests/fixtures/http_api, with their licence):
``apiGatewayProxyV2Event.json`` carries a JWT authorizer's claims, ``apiGatewayProxyV2IamEvent.json``
an IAM caller. The route is set as the template deploys it: a named stage, so ``rawPath`` begins with
``/<stage>``, and header names in lower case, as an HTTP API sends them.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "http_api"
JWT_FIXTURE = "apiGatewayProxyV2Event.json"
IAM_FIXTURE = "apiGatewayProxyV2IamEvent.json"


@cache
def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return loaded


def http_api_event(
    path: str,
    body: Any,
    *,
    claims: dict[str, Any] | None = None,
    iam: dict[str, Any] | None = None,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    stage: str = "dev",
) -> dict[str, Any]:
    """A 2.0 event for ``method path``. ``claims``: a JWT authorizer's (the JWT fixture); ``iam``: fields
    over the IAM fixture's ``authorizer.iam`` (its caller as documented when empty); neither: no authorizer."""
    event = copy.deepcopy(_fixture(IAM_FIXTURE if iam is not None else JWT_FIXTURE))
    context = event["requestContext"]
    event["routeKey"] = context["routeKey"] = f"{method} {path}"
    event["rawPath"] = context["http"]["path"] = path if stage == "$default" else f"/{stage}{path}"
    event["rawQueryString"] = ""
    event.pop("queryStringParameters", None)
    event.pop("pathParameters", None)
    context["stage"] = stage
    context["http"]["method"] = method
    event["headers"] = {"content-type": "application/json"} if headers is None else dict(headers)
    event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
    event["isBase64Encoded"] = False
    if iam is not None:
        context["authorizer"]["iam"].update(iam)
    elif claims is not None:
        context["authorizer"]["jwt"]["claims"] = dict(claims)
    else:
        del context["authorizer"]
    return event

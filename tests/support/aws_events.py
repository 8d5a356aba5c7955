"""API Gateway REST proxy events in the shape AWS documents (payload format 1.0)."""

from __future__ import annotations

import json
from typing import Any


def rest_event(
    tool: str, body: Any, authorizer: dict[str, Any] | None = None, identity: dict[str, Any] | None = None
) -> dict[str, Any]:
    raw = body if isinstance(body, str) or body is None else json.dumps(body)
    return {
        "resource": f"/v1/tools/{tool}",
        "path": f"/v1/tools/{tool}",
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json", "Host": "abc123.execute-api.eu-west-1.amazonaws.com"},
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "resourceId": "r1",
            "resourcePath": f"/v1/tools/{tool}",
            "httpMethod": "POST",
            "path": f"/dev/v1/tools/{tool}",
            "protocol": "HTTP/1.1",
            "stage": "dev",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "requestTime": "09/Apr/2015:12:34:56 +0000",
            "requestTimeEpoch": 1428582896000,
            "identity": identity or {"sourceIp": "203.0.113.10", "userAgent": "test"},
            "authorizer": authorizer,
        },
        "body": raw,
        "isBase64Encoded": False,
    }


class FakeLambdaContext:
    function_name = "mnemo-dev-memory_add"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:mnemo-dev-memory_add"
    aws_request_id = "52fdfc07-2182-154f-163f-5f0f9a621d72"
    #: As an invocation near its end: handlers that would wait for something give up at once.
    remaining_millis = 3_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_millis


def bedrock_agent_event(
    session_attributes: dict[str, Any] | None, *, group: str = "mnemo-memory", **request: Any
) -> dict[str, Any]:
    """An action group invocation as AWS documents it (the agents-lambda input event). ``request`` holds the
    invocation's own fields: ``function`` and ``parameters`` (function details), or ``apiPath``,
    ``httpMethod``, ``parameters`` and ``requestBody`` (an OpenAPI schema)."""
    return {
        "messageVersion": "1.0",
        "agent": {"name": "support-agent", "id": "AGENT12345", "alias": "TSTALIASID", "version": "DRAFT"},
        "inputText": "Please remember that the staging database is Postgres 16",
        "sessionId": "111122223333-conv-1",
        "actionGroup": group,
        "sessionAttributes": {} if session_attributes is None else session_attributes,
        "promptSessionAttributes": {"today": "2026-01-07"},
        **request,
    }

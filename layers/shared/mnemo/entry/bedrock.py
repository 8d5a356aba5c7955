"""The Bedrock Agents front door: one Lambda per action group (tool family).

Bedrock gives an action group one Lambda function, and the same function
serves both kinds of action group, told apart by the event:

- ``apiPath`` (an OpenAPI-schema action group): routed by Powertools'
  ``BedrockAgentResolver`` to ``POST /<tool name>``; the answer is the documented
  API response (``httpStatusCode`` and ``responseBody["application/json"].body``),
  built by Powertools. Errors are 4xx/5xx responses whose body is the envelope.
- ``function`` (a function-details action group): dispatched by name; the answer
  is the documented function response (``functionResponse.responseBody.TEXT.body``),
  built by Powertools' ``BedrockFunctionsResponseBuilder``. An error carries the
  envelope with ``responseState`` REPROMPT when the model can fix its call
  (INVALID_INPUT, NOT_FOUND, CONFLICT) and FAILURE when it cannot (UNAUTHORIZED,
  RATE_LIMITED, PROVIDER_ERROR, TIMEOUT, a malformed event).

Bedrock sends every value as a string next to its declared type
(``{"name", "type", "value"}``). Values are decoded by that type (arrays and
objects from their JSON text, or the bracketed ``[a, b]`` / ``{k=v}`` forms
models sometimes produce), then validated by the tool's own request model.

Identity comes from ``sessionAttributes`` only (see ``SESSION_ATTRIBUTES``),
which the application calling InvokeAgent sets; neither the end user nor the
model can change them. ``mnemoUser`` is required: a Bedrock session id names a
conversation, not a person, and an agent alias is shared by every user, so
neither can stand in for one.

No answer exceeds ``MAX_RESPONSE_BYTES``: paged tools are given a response budget
and stop short of it (``hasMore``/``nextCursor``); anything still too large is
replaced by an INVALID_INPUT envelope that asks for a smaller ``limit``.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from aws_lambda_powertools.event_handler import BedrockAgentResolver
from aws_lambda_powertools.event_handler.api_gateway import BedrockResponse
from aws_lambda_powertools.event_handler.bedrock_agent_function import (
    BedrockFunctionResponse,
    BedrockFunctionsResponseBuilder,
)
from aws_lambda_powertools.utilities.data_classes import BedrockAgentFunctionEvent

from mnemo import observability
from mnemo.context import RequestContext
from mnemo.entry.identity import context_from_values
from mnemo.errors import InvalidInput, MnemoError, NotFound, ProviderError, Unauthorized, invalid_field
from mnemo.identity_claims import parse_roles
from mnemo.observability import logger
from mnemo.runtime import get_services
from mnemo.tools.bedrock_schema import (
    OPTIONS,
    action_groups,
    api_path,
    field_kinds,
    grouped_fields,
    operation_description,
)
from mnemo.tools.registry import Tool, load_catalog

#: sessionAttributes key -> RequestContext field. Only these carry identity.
SESSION_ATTRIBUTES: dict[str, str] = {
    "mnemoTenant": "tenant",
    "mnemoUser": "user",
    "mnemoAgent": "agent",
    "mnemoSession": "session",
    "mnemoProject": "project",
    "mnemoTeam": "team",
    "mnemoOrg": "org",
    "mnemoRoles": "roles",
}
#: The tenant when sessionAttributes name none (template.yaml sets the AWS account id).
TENANT_VARIABLE = "MNEMO_BEDROCK_TENANT"
#: Bedrock's limit on a Lambda's answer to an action group is documented as 25 KB (Powertools and
#: older user-guide pages); the current page defers to Lambda's synchronous payload quota. The
#: stricter reading holds, counted in UTF-8 bytes of the answer as the python3.12 runtime
#: serialises it (awslambdaric's encoder, ensure_ascii=False).
MAX_RESPONSE_BYTES = 25_000
#: Codes the model can act on by changing its call: the agent is reprompted with the envelope.
REPROMPT_CODES = frozenset({"INVALID_INPUT", "NOT_FOUND", "CONFLICT"})
VALUE_TYPES = ("string", "integer", "number", "boolean", "array", "object")
_INTEGER = re.compile(r"^[+-]?\d+$")
#: Bodies are compact JSON that keeps non-ASCII text as is (no \\u escapes to inflate the size).
_serialize = functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=False)


def wire_size(answer: Any) -> int:
    """Bytes of ``answer`` as the Lambda runtime sends it back to Bedrock."""
    return len(json.dumps(answer, ensure_ascii=False).encode("utf-8"))


# ------------------------------------------------------------------ identity ---
def context_from_bedrock(event: Mapping[str, Any]) -> RequestContext:
    """The caller from ``sessionAttributes``; the agent and session fall back to Bedrock's own ids."""
    attributes = event.get("sessionAttributes")
    attributes = attributes if isinstance(attributes, Mapping) else {}
    values: dict[str, Any] = {}
    for key, field in SESSION_ATTRIBUTES.items():
        value = attributes.get(key)
        if value in (None, ""):
            continue
        values[field] = parse_roles(value) if field == "roles" else str(value)
    if not values.get("user"):
        raise Unauthorized(
            "No caller identity: the application invoking the agent must set sessionAttributes.mnemoUser",
            {"field": "sessionAttributes.mnemoUser", "source": "sessionAttributes"},
        )
    values.setdefault("tenant", os.environ.get(TENANT_VARIABLE) or "default")
    agent = event.get("agent")
    if "agent" not in values and isinstance(agent, Mapping) and isinstance(agent.get("id"), str) and agent["id"]:
        values["agent"] = agent["id"]  # the agent layer: what this Bedrock agent remembers about this user
    session = event.get("sessionId")
    if "session" not in values and isinstance(session, str) and session:
        values["session"] = session  # the session layer: this conversation
    try:
        return context_from_values(values)
    except Unauthorized as error:
        field = str(error.details.get("field", ""))
        attribute = next((key for key, name in SESSION_ATTRIBUTES.items() if name == field), None)
        if attribute is None:
            raise
        raise Unauthorized(
            error.message.replace(f"identity {field}", f"sessionAttributes.{attribute}", 1),
            {"field": f"sessionAttributes.{attribute}", "source": "sessionAttributes"},
        ) from None


# ------------------------------------------------------------------ decoding ---
def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _split(text: str) -> list[str]:
    """Comma-separated items; double-quoted items may contain commas."""
    if not text.strip():
        return []
    (row,) = csv.reader([text], skipinitialspace=True)
    return [_unquote(item) for item in row]


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _array(name: str, text: str) -> list[Any]:
    parsed = _json_or_none(text)
    if isinstance(parsed, list):
        return parsed
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        return _split(stripped[1:-1])  # the "[a, b]" form
    if stripped.startswith(("[", "{")):
        raise invalid_field(name, 'expected an array, e.g. ["a", "b"]', type="array")
    return _split(stripped)  # one bare value, or comma-separated values


def _object(name: str, text: str) -> dict[str, Any]:
    parsed = _json_or_none(text)
    if isinstance(parsed, dict):
        return parsed
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}") and "=" in stripped:
        found: dict[str, Any] = {}
        for item in _split(stripped[1:-1]):  # the "{key=value, other=value}" form
            key, equals, value = item.partition("=")
            if not equals or not key.strip():
                break
            found[_unquote(key)] = _unquote(value)
        else:
            return found
    raise invalid_field(name, 'expected a JSON object, e.g. {"key": "value"}', type="object")


def decode_value(name: str, raw: Any, declared: Any, expected: str | None) -> Any:
    """One ``{name, type, value}`` item as the value the tool's model should see.

    ``declared`` is the type Bedrock sent (from the action group's definition);
    ``expected`` the JSON kind the tool's request model wants, when the field is
    one of its own. Object fields are declared as strings holding JSON.
    """
    if not isinstance(raw, str):
        return raw  # already typed (hand-built test events); the model validates it
    kind = declared if declared in VALUE_TYPES else "string"
    if expected == "string":
        kind = "string"
    elif expected in ("object", "array") and kind == "string":
        kind = expected
    text = raw.strip()
    if kind == "integer":
        if _INTEGER.match(text):
            return int(text)
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number.is_integer():
            return int(number)
        raise invalid_field(name, f"expected an integer, got {raw[:40]!r}", type="integer")
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise invalid_field(name, f"expected a number, got {raw[:40]!r}", type="number")
        return int(number) if _INTEGER.match(text) else number
    if kind == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise invalid_field(name, f"expected true or false, got {raw[:40]!r}", type="boolean")
    if kind == "array":
        return _array(name, text)
    if kind == "object":
        return _object(name, text)
    return raw


def decode_items(items: Any, where: str, kinds: Mapping[str, str]) -> dict[str, Any]:
    """A list of ``{name, type, value}`` as a JSON-like payload for the tool."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise InvalidInput(f"{where}: expected a list of {{name, type, value}}", {"field": where})
    payload: dict[str, Any] = {}
    for position, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{where}.{position}: each item needs a name", {"field": f"{where}.{position}"})
        if "value" not in item:
            raise invalid_field(name, "has no value")
        if name in payload:
            raise invalid_field(name, "given twice")
        payload[name] = decode_value(name, item["value"], item.get("type"), kinds.get(name))
    return payload


def ungroup(tool: Tool, payload: dict[str, Any]) -> dict[str, Any]:
    """The fields a tool with more parameters than Bedrock's quota takes in ``moreArguments``, spread out.

    ``moreArguments`` is one JSON object (see ``bedrock_schema.bedrock_parameters``); its string values
    are decoded by their field's kind, as a parameter of that type would be.
    """
    grouped = grouped_fields(tool)
    if not grouped or OPTIONS not in payload:
        return payload
    options = payload.pop(OPTIONS)
    if not isinstance(options, Mapping):
        raise invalid_field(OPTIONS, "expected a JSON object", type="object")
    for name, value in options.items():
        if name not in grouped:
            raise invalid_field(f"{OPTIONS}.{name}", f"not a key of moreArguments; it takes {', '.join(grouped)}")
        if name in payload:
            raise invalid_field(name, "given both on its own and in moreArguments")
        payload[name] = decode_value(f"{OPTIONS}.{name}", value, grouped[name], grouped[name])
    return payload


# -------------------------------------------------------------- running tools ---
def _text(event: Mapping[str, Any], key: str) -> str:
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _attributes(event: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = event.get(key)
    return dict(value) if isinstance(value, Mapping) else {}


#: What the answer adds around the tool's JSON: messageVersion, actionGroup, apiPath or function...
_FRAMING_BYTES = 1024


def _room(event: Mapping[str, Any]) -> int:
    """Bytes left for the tool's JSON once the echoed attributes and the framing are counted."""
    echoed = wire_size([_attributes(event, "sessionAttributes"), _attributes(event, "promptSessionAttributes")])
    return MAX_RESPONSE_BYTES - echoed - _FRAMING_BYTES


def _budget(event: Mapping[str, Any]) -> int:
    """The response budget handed to paged tools, which count characters of compact JSON.

    The body travels as a JSON string inside JSON (its quotes escaped once more) and
    non-ASCII characters take several bytes, so half the room is asked for; a page
    that still does not fit is asked for again, smaller (``run_tool``).
    """
    return max(1024, _room(event) // 2)


def _too_large(tool: Tool | None, size: int) -> InvalidInput:
    kinds = field_kinds(tool) if tool is not None else {}
    field = "limit" if "limit" in kinds else "body"
    advice = "lower `limit` or narrow the query" if field == "limit" else "ask for less at once"
    return InvalidInput(
        f"The answer is too large for a Bedrock agent ({size} bytes, limit {MAX_RESPONSE_BYTES}): {advice}",
        {"field": field, "bytes": size, "limitBytes": MAX_RESPONSE_BYTES},
    )


def _nothing_fits(tool: Tool, budget: int) -> InvalidInput:
    kinds = field_kinds(tool)
    field = "limit" if "limit" in kinds else "body"
    return InvalidInput(
        f"Not even one item of this answer fits a Bedrock agent's {budget} bytes: ask for less at once",
        {"field": field, "budgetBytes": budget, "limitBytes": MAX_RESPONSE_BYTES},
    )


def _paged(tool: Tool) -> bool:
    """Paged tools take a ``cursor`` or an ``offset``; they are reads, so asking again for a smaller page is safe."""
    kinds = field_kinds(tool)
    return "cursor" in kinds or "offset" in kinds


#: The lists a trimmed answer keeps the head of (memory and conversation results; file entries, topic names;
#: graph entities, facts, neighbours, a deletion's neighbours and an extraction's relationships).
_PAGE_ITEMS = ("results", "entries", "topics", "facts", "entities", "neighbours", "neighboursAffected", "relationships")


def _moves_on(result: Mapping[str, Any], payload: Mapping[str, Any]) -> bool:
    """Whether an answer that says ``hasMore`` lets the caller go on from where it stops.

    It does when it holds some of its items, when its ``nextOffset`` lies past the offset asked
    for (a text or line page: file_read, recall_memory, pinned_context, expand_prompt...), or when
    it hands a ``nextCursor`` and has no item list that could be empty (an outline page).
    """
    if any(result.get(key) for key in _PAGE_ITEMS):
        return True
    following, asked = result.get("nextOffset"), payload.get("offset", 0)
    if isinstance(following, int) and isinstance(asked, int) and following > asked:
        return True
    cursor = result.get("nextCursor")
    lists = any(isinstance(result.get(key), list) for key in _PAGE_ITEMS)
    return isinstance(cursor, str) and bool(cursor) and cursor != payload.get("cursor") and not lists


def _stuck(result: Mapping[str, Any], payload: Mapping[str, Any]) -> bool:
    """An answer that says hasMore with nothing to go on from: asking again would not move."""
    return bool(result.get("hasMore")) and not _moves_on(result, payload)


#: How many times a paged tool is asked again, each time for a smaller page.
_ATTEMPTS = 6


def run_tool(tool: Tool, event: Mapping[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Run one tool for the caller the session attributes name, within Bedrock's size limit.

    A paged tool whose page does not fit is asked again with a smaller budget until one fits;
    a page that would hold nothing (not even one line or item fits), or a too large answer of a
    tool that does not page, is INVALID_INPUT naming the field to change.
    """
    caller = context_from_bedrock(event)
    payload = ungroup(tool, payload)
    room, budget = _room(event), _budget(event)
    size = 0
    for _attempt in range(_ATTEMPTS):
        result = tool.invoke(get_services(), caller.model_copy(update={"response_budget": budget}), payload)
        if _stuck(result, payload):
            raise _nothing_fits(tool, budget)
        size = wire_size(_serialize(result))  # as it will travel: a JSON string inside JSON
        if size <= room:
            observability.answered(result)
            return result
        budget = min(budget * room // size * 9 // 10, budget - 1)
        if not _paged(tool) or budget < 256:
            break
    raise _too_large(tool, size)


def _log(error: MnemoError) -> None:
    if isinstance(error, ProviderError):
        logger.warning("provider error", extra={"errorMessage": error.message})


# ------------------------------------------------------ OpenAPI action groups ---
def _bedrock_response(resolver: BedrockAgentResolver, status: int, body: Any) -> BedrockResponse[Any]:
    event = resolver.current_event.raw_event
    return BedrockResponse(
        status_code=status,
        body=body,
        session_attributes=_attributes(event, "sessionAttributes"),
        prompt_session_attributes=_attributes(event, "promptSessionAttributes"),
    )


def _openapi_payload(event: Mapping[str, Any], kinds: Mapping[str, str]) -> dict[str, Any]:
    """Path/query ``parameters`` and the JSON body's ``properties``, decoded."""
    payload = decode_items(event.get("parameters"), "parameters", kinds)
    body = event.get("requestBody")
    if body is None:
        return payload
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping):
        raise InvalidInput(
            "requestBody: expected {content: {application/json: {properties}}}", {"field": "requestBody"}
        )
    media = content.get("application/json")
    if media is None:
        raise InvalidInput(
            "requestBody: only application/json is accepted",
            {"field": "requestBody.content", "contentTypes": sorted(map(str, content))},
        )
    where = "requestBody.content.application/json.properties"
    properties = media.get("properties") if isinstance(media, Mapping) else None
    for name, value in decode_items(properties, where, kinds).items():
        if name in payload:
            raise invalid_field(name, "given both as a parameter and in the body")
        payload[name] = value
    return payload


def _operation(resolver: BedrockAgentResolver, tool: Tool) -> Callable[[], BedrockResponse[Any]]:
    kinds = field_kinds(tool)

    def call_tool() -> BedrockResponse[Any]:
        event = resolver.current_event.raw_event
        context_from_bedrock(event)  # identity first: without one, the arguments are not even read
        return _bedrock_response(resolver, 200, run_tool(tool, event, _openapi_payload(event, kinds)))

    call_tool.__name__ = tool.name
    return call_tool


def build_openapi_resolver(tools: Iterable[Tool]) -> BedrockAgentResolver:
    """``POST /<tool name>`` for each tool; every failure answers with the envelope."""
    resolver = BedrockAgentResolver(enable_validation=False, serializer=_serialize)  # the tools' models validate
    paths = []
    for tool in tools:
        paths.append(api_path(tool))
        resolver.post(api_path(tool), description=operation_description(tool), operation_id=tool.name)(
            _operation(resolver, tool)
        )

    @resolver.exception_handler(MnemoError)
    def _known(error: MnemoError) -> BedrockResponse[Any]:
        _log(error)
        return _bedrock_response(resolver, error.status, error.envelope())

    @resolver.not_found
    def _unknown(_: Exception) -> BedrockResponse[Any]:
        event = resolver.current_event
        error = NotFound(
            f"No operation {event.http_method} {event.api_path} in this action group",
            {"field": "apiPath", "apiPath": event.api_path, "available": [f"POST {path}" for path in paths]},
        )
        return _bedrock_response(resolver, error.status, error.envelope())

    @resolver.exception_handler(Exception)
    def _unexpected(error: Exception) -> BedrockResponse[Any]:
        logger.exception("unexpected error")
        failure = ProviderError("Internal error; it has been logged", {"type": type(error).__name__})
        return _bedrock_response(resolver, failure.status, failure.envelope())

    return resolver


def _openapi_error(event: Mapping[str, Any], error: MnemoError) -> dict[str, Any]:
    """The documented API response carrying an envelope, for events the resolver cannot take."""
    return {
        "messageVersion": "1.0",
        "response": {
            "actionGroup": _text(event, "actionGroup"),
            "apiPath": _text(event, "apiPath"),
            "httpMethod": _text(event, "httpMethod"),
            "httpStatusCode": error.status,
            "responseBody": {"application/json": {"body": _serialize(error.envelope())}},
        },
        "sessionAttributes": _attributes(event, "sessionAttributes"),
        "promptSessionAttributes": _attributes(event, "promptSessionAttributes"),
    }


def resolve_openapi(resolver: BedrockAgentResolver, event: dict[str, Any], context: Any) -> dict[str, Any]:
    method = event.get("httpMethod")
    normalised = {**event, "httpMethod": method if isinstance(method, str) and method else "POST"}
    try:
        answer = resolver.resolve(normalised, context)
    except Exception:  # the resolver itself failed on the event (it handles what routes raise)
        logger.exception("unreadable OpenAPI action group event")
        return _openapi_error(event, InvalidInput("The action group event could not be read", {"field": "event"}))
    # The documented shape carries both attribute maps; Powertools leaves out empty ones.
    answer.setdefault("sessionAttributes", _attributes(event, "sessionAttributes"))
    answer.setdefault("promptSessionAttributes", _attributes(event, "promptSessionAttributes"))
    return answer


# ---------------------------------------------- function-details action groups ---
def _function_answer(
    event: Mapping[str, Any], body: Any, state: Literal["FAILURE", "REPROMPT"] | None
) -> dict[str, Any]:
    frame = BedrockAgentFunctionEvent(
        {
            "actionGroup": _text(event, "actionGroup"),
            "function": _text(event, "function"),
            "sessionAttributes": _attributes(event, "sessionAttributes"),
            "promptSessionAttributes": _attributes(event, "promptSessionAttributes"),
        }
    )
    result = BedrockFunctionResponse(
        body=body,
        session_attributes=_attributes(event, "sessionAttributes"),
        prompt_session_attributes=_attributes(event, "promptSessionAttributes"),
        response_state=state,
    )
    answer: dict[str, Any] = BedrockFunctionsResponseBuilder(result).build(frame, serializer=_serialize)
    return answer


def _function_error(event: Mapping[str, Any], error: MnemoError, *, fixable: bool = True) -> dict[str, Any]:
    fixed = fixable and error.code in REPROMPT_CODES
    return _function_answer(event, error.envelope(), "REPROMPT" if fixed else "FAILURE")


def resolve_function(tools: Mapping[str, Tool], event: Mapping[str, Any]) -> dict[str, Any]:
    name = event.get("function")
    try:
        tool = tools.get(str(name))
        if tool is None:
            raise NotFound(
                f"No function {name!r} in this action group",
                {"field": "function", "function": name, "available": sorted(tools)},
            )
        context_from_bedrock(event)  # identity first: without one, the arguments are not even read
        payload = decode_items(event.get("parameters"), "parameters", field_kinds(tool))
        return _function_answer(event, run_tool(tool, event, payload), None)
    except MnemoError as error:
        _log(error)
        return _function_error(event, error)
    except Exception as error:
        logger.exception("unexpected error")
        failure = ProviderError("Internal error; it has been logged", {"type": type(error).__name__})
        return _function_error(event, failure)


# ------------------------------------------------------------------- handler ---
def error_code(answer: Mapping[str, Any]) -> str | None:
    """The errorCode of the envelope an action group answer carries, None for a successful one."""
    response = answer.get("response")
    response = response if isinstance(response, Mapping) else {}
    function = response.get("functionResponse")
    if isinstance(function, Mapping):
        failed = function.get("responseState") is not None
        body = (function.get("responseBody") or {}).get("TEXT", {}).get("body")
    else:
        status = response.get("httpStatusCode")
        failed = isinstance(status, int) and status >= 400
        body = (response.get("responseBody") or {}).get("application/json", {}).get("body")
    if not failed:
        return None
    envelope = _json_or_none(body) if isinstance(body, str) else None
    code = envelope.get("errorCode") if isinstance(envelope, dict) else None
    return code if isinstance(code, str) else "PROVIDER_ERROR"


def _fit(answer: dict[str, Any], tool: Tool | None) -> dict[str, Any]:
    """Never hand Bedrock more than it takes: an oversized answer becomes an INVALID_INPUT envelope."""
    size = wire_size(answer)
    if size <= MAX_RESPONSE_BYTES:
        return answer
    error = _too_large(tool, size)
    response = answer.get("response", {})
    if "functionResponse" in response:
        response["functionResponse"] = {
            "responseState": "REPROMPT",
            "responseBody": {"TEXT": {"body": _serialize(error.envelope())}},
        }
    else:
        response["httpStatusCode"] = error.status
        response["responseBody"] = {"application/json": {"body": _serialize(error.envelope())}}
    if wire_size(answer) > MAX_RESPONSE_BYTES:  # the echoed attributes alone are too large
        answer.pop("promptSessionAttributes", None)
        answer.pop("sessionAttributes", None)
    return answer


def action_group_handler(*families: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for these families' action groups, OpenAPI and function details alike."""
    tools = {
        tool.name: tool
        for group, members in action_groups(load_catalog().values()).items()
        for tool in members
        if any(group == family or group.startswith(f"{family}-") for family in families)
    }
    missing = [f for f in families if not any(t.family == f for t in tools.values())]
    if not families or missing:
        raise ValueError(f"no tool family {missing or families!r} in the catalog")
    resolver = build_openapi_resolver(tools.values())
    by_path = {api_path(tool): tool for tool in tools.values()}

    def answer(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if isinstance(event.get("apiPath"), str):
            return _fit(resolve_openapi(resolver, event, context), by_path.get(event["apiPath"]))
        if isinstance(event.get("function"), str):
            return _fit(resolve_function(tools, event), tools.get(event["function"]))
        error = InvalidInput(
            "Not a Bedrock action group event: it has neither apiPath nor function",
            {"field": "apiPath", "expected": ["apiPath", "function"]},
        )
        return _function_error(event, error, fixable=False)

    @observability.door(observability.BEDROCK_AGENT)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not isinstance(event, dict):
            event = {}
        tool = by_path.get(_text(event, "apiPath")) or tools.get(_text(event, "function"))
        logger.append_keys(actionGroup=_text(event, "actionGroup"))
        with observability.tool_call(tool.name if tool is not None else None) as call:
            result = answer(event, context)
            code = error_code(result)
            if code is not None:
                call.failed(code)
            return result

    return handler

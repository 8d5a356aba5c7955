"""MCP prompts: ``recall(query, budget?)``, what Mnemo remembers about a query as one user message.

``prompts/get`` of ``recall`` calls the ``memory_context`` tool for the caller (the same identity a
tools/call gets; ``query`` and ``budget`` are the only arguments, so nothing names another user or
session) and answers its ``context`` text as the single ``user`` message, ready to go before the user's
own turn. ``_meta.mnemo`` carries the rest of memory_context's answer: ``tokens``, ``truncated`` and the
``sources`` the text was built from.

Prompt arguments are strings: ``budget`` is a whole number of tokens written in digits (memory_context
takes 100 to 16000, default 1500). A missing ``query``, an argument the prompt does not take, a budget
that is not digits or out of range, or an unknown prompt name is JSON-RPC ``-32602`` (invalid params),
with the Mnemo envelope in ``data.error`` when memory_context refused it, as resources/read answers
(``mcp_resources``). ``recall`` is listed only while the catalog has memory_context.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp import MCPError

from mnemo import observability
from mnemo.context import RequestContext
from mnemo.entry.mcp_resources import guarded, run_tool
from mnemo.errors import invalid_field
from mnemo.tools.registry import load_catalog

RECALL_TOOL = "memory_context"
RECALL = types.Prompt(
    name="recall",
    title="Recall from memory",
    description=(
        "What Mnemo remembers that bears on a query - your profile, the session so far, relevant memories, "
        "recent turns and pinned blocks - as one user message within a token budget (memory_context)."
    ),
    arguments=[
        types.PromptArgument(name="query", description="What to recall about, in natural language.", required=True),
        types.PromptArgument(
            name="budget",
            description="Most tokens the recalled context may take, 100-16000 (default 1500).",
            required=False,
        ),
    ],
)


def prompts() -> list[types.Prompt]:
    """The prompts this server can answer: recall, once memory_context is in the catalog."""
    return [RECALL] if RECALL_TOOL in load_catalog() else []


def _unknown(name: str) -> MCPError:
    available = [prompt.name for prompt in prompts()]
    return MCPError(
        code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"prompt": name, "available": available}
    )


def _recall_input(arguments: dict[str, str]) -> dict[str, Any]:
    """memory_context's input from the prompt's string arguments; INVALID_INPUT naming the argument."""
    extra = sorted(set(arguments) - {"query", "budget"})
    if extra:
        raise invalid_field(extra[0], "recall takes query and budget only")
    query = arguments.get("query")
    if not query or not query.strip():
        raise invalid_field("query", "recall needs a query")
    payload: dict[str, Any] = {"query": query}
    budget = arguments.get("budget")
    if budget is not None:
        if not budget.strip().isdecimal() or not budget.strip().isascii():
            raise invalid_field("budget", "a whole number of tokens, in digits (100-16000)")
        payload["budget"] = int(budget.strip())
    return payload


def _recall(context: RequestContext, arguments: dict[str, str]) -> types.GetPromptResult:
    payload = _recall_input(arguments)
    with observability.tool_call(RECALL_TOOL) as call:
        answer = run_tool(context, RECALL_TOOL, payload)
        call.answered(answer)
    meta = {key: answer[key] for key in ("tokens", "truncated", "sources")}
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=answer["context"]))
    return types.GetPromptResult(
        description=f"What Mnemo recalls for: {payload['query']}", messages=[message], meta={"mnemo": meta}
    )


def get(context: RequestContext, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """prompts/get, synchronously (the handler runs it in a worker thread)."""
    if name not in {prompt.name for prompt in prompts()}:
        raise _unknown(name)
    return guarded(lambda: _recall(context, arguments or {}), f"prompt {name}", prompt=name)

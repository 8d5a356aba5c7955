"""Strands Agents tools for Mnemo: one ``PythonAgentTool`` per tool of the catalog, calling a Mnemo client.

    from strands import Agent
    from mnemo.client import MnemoClient, LocalIdentity
    from mnemo.client.strands import mnemo_tools
    agent = Agent(tools=mnemo_tools(MnemoClient(url, auth=LocalIdentity(user="alice"))))
    agent.tool.memory_add(content="The staging DB is Postgres 16")   # or let the model call it

Names, descriptions and JSON Schemas come from mnemo/client/catalog.json (the service's own). A tool's
result is the tool's JSON (``{"json": ...}`` content); an error envelope is an ``error`` result carrying
the envelope, which Strands hands back to the model. Needs ``strands-agents`` (the client's ``strands``
extra; Strands pins an older MCP SDK than the service, so it is installed beside the client, not the service).

A hosted agent acting for its users builds an agent's tools from a client that acts for one:
``mnemo_tools(client.on_behalf_of(user=user_id, session=session_id))``; every call names that user.

Memory across sessions (docs/strands.md): ``MnemoSessionManager(session_id, client)`` keeps the agent's
messages and state in Mnemo and its user and assistant text as conversation turns
(mnemo/client/strands_session.py), and ``MnemoContextHook(client)`` puts ``memory_context`` into the
system prompt before each invocation (the session manager registers one itself unless ``context=False``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mnemo.client.errors import MnemoClientError
from mnemo.client.listing import envelope, selected

if TYPE_CHECKING:
    from mnemo.client import MnemoClient
    from mnemo.client.strands_session import MnemoSessionManager

__all__ = ["MnemoContextHook", "MnemoSessionManager", "mnemo_tools"]

logger = logging.getLogger(__name__)

#: How the context block opens and closes in the system prompt; the opening tag is how the hook finds its own.
CONTEXT_OPEN = "<memory_context>"
CONTEXT_CLOSE = "</memory_context>"
#: memory_context's longest query; a longer message is cut to its end, where the question usually is.
MAX_QUERY_CHARS = 4000


def _result(tool_use: dict[str, Any], status: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"toolUseId": tool_use.get("toolUseId", ""), "status": status, "content": [{"json": payload}]}


def mnemo_tools(client: MnemoClient, names: Iterable[str] | None = None) -> list[Any]:
    """Strands tools for ``names`` (every tool by default) calling ``client``."""
    from strands.tools.tools import PythonAgentTool

    built = []
    for entry in selected(names):
        name = entry["name"]

        def run(tool_use: dict[str, Any], _name: str = name, **_state: Any) -> dict[str, Any]:
            try:
                return _result(tool_use, "success", client.call(_name, dict(tool_use.get("input") or {})))
            except MnemoClientError as error:
                return _result(tool_use, "error", envelope(error))

        spec = {"name": name, "description": entry["description"], "inputSchema": {"json": entry["inputSchema"]}}
        built.append(PythonAgentTool(name, spec, run))
    return built


def message_text(message: dict[str, Any]) -> str:
    """What a Strands message says in words: its text blocks, one per line (tool uses, tool results, images
    and reasoning say nothing here)."""
    parts = [block["text"] for block in message.get("content") or [] if isinstance(block.get("text"), str)]
    return "\n".join(part for part in parts if part.strip())


def _latest_user_text(messages: Sequence[dict[str, Any]] | None) -> str:
    for message in reversed(messages or []):
        if message.get("role") == "user" and (text := message_text(message)):
            return text
    return ""


def _ours(block: dict[str, Any]) -> bool:
    text = block.get("text")
    return isinstance(text, str) and text.startswith(CONTEXT_OPEN)


class MnemoContextHook:
    """A Strands hook provider: before each invocation, ``memory_context`` for the latest user message, put
    into the system prompt as one text block between ``<memory_context>`` tags; after it, that block is taken
    out again, so the agent's own prompt is what it was and no copy builds up over invocations.

    The query is the text of the invocation's newest user message (else the newest in the agent's history);
    no text (a tool result, an image), or an empty context, adds nothing. The session and user are the
    client's identity: give it ``client.in_session(session_id)`` for the ``summary`` of that session.
    ``budget`` (tokens, 100..16000) and ``sections`` go to memory_context as they are. A failed call (the
    service unreachable, an older server without the tool) is logged and the model is called without
    memory, as AgentCore's session manager does with its retrieval: memory adds to an answer, it does not
    stop one. The client must be a ``MnemoClient`` (Strands calls hooks synchronously).

        agent = Agent(model=model, hooks=[MnemoContextHook(client.in_session("chat-42"))])
    """

    def __init__(self, client: MnemoClient, *, budget: int = 1500, sections: Sequence[str] | None = None) -> None:
        self.client = client
        self.budget = budget
        self.sections = list(sections) if sections is not None else None

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        from strands.hooks import AfterInvocationEvent, BeforeInvocationEvent

        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)

    def context_for(self, query: str) -> str:
        """memory_context's text for ``query`` (cut to its last 4000 characters); raises the client's errors."""
        body: dict[str, Any] = {"query": query[-MAX_QUERY_CHARS:], "budget": self.budget}
        if self.sections is not None:
            body["sections"] = self.sections
        context = self.client.call("memory_context", body).get("context")
        return context.strip() if isinstance(context, str) else ""

    def before_invocation(self, event: Any) -> None:
        agent = event.agent
        strip_context(agent)  # a block left by an invocation that never reached its end
        query = _latest_user_text(event.messages) or _latest_user_text(agent.messages)
        if not query:
            return
        try:
            context = self.context_for(query)
        except MnemoClientError as error:
            logger.warning("memory_context failed, the model is called without memory: %s", error)
            return
        if context:
            block = {"text": f"{CONTEXT_OPEN}\n{context}\n{CONTEXT_CLOSE}"}
            agent.system_prompt = [*(agent.system_prompt_content or []), block]

    def after_invocation(self, event: Any) -> None:
        strip_context(event.agent)


def strip_context(agent: Any) -> None:
    """Take the hook's context block out of ``agent``'s system prompt (None again if nothing else is left)."""
    content = agent.system_prompt_content
    if content is None:
        return
    kept = [block for block in content if not _ours(block)]
    if len(kept) != len(content):
        agent.system_prompt = kept or None


def __getattr__(name: str) -> Any:
    # The session manager subclasses Strands' own classes, so it is imported (with Strands) when first named.
    if name == "MnemoSessionManager":
        from mnemo.client.strands_session import MnemoSessionManager

        return MnemoSessionManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

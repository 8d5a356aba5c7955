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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mnemo.client.errors import MnemoClientError
from mnemo.client.listing import envelope, selected

if TYPE_CHECKING:
    from mnemo.client import MnemoClient


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

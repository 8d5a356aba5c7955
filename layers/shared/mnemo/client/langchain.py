"""LangChain tools for Mnemo: one ``StructuredTool`` per tool of the catalog, calling a Mnemo client.

    from mnemo.client import MnemoClient, LocalIdentity
    from mnemo.client.langchain import mnemo_tools
    tools = mnemo_tools(MnemoClient(url, auth=LocalIdentity(user="alice")), names=["memory_add", "memory_search"])
    agent = create_agent(model, tools)            # any LangChain / LangGraph agent

Names, descriptions and JSON Schemas come from mnemo/client/catalog.json (generated from the catalog, so
they are the service's own). A tool answers the tool's JSON as text; an error envelope becomes a
``ToolException`` whose message is the envelope, which LangChain hands back to the model to correct.
Needs ``langchain-core`` (the ``langchain`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from typing import TYPE_CHECKING, Any

from mnemo.client.errors import MnemoClientError

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from mnemo.client import AsyncMnemoClient, MnemoClient


def catalog() -> list[dict[str, Any]]:
    """Each tool's name, family, description and input JSON Schema."""
    loaded: list[dict[str, Any]] = json.loads(resources.files("mnemo.client").joinpath("catalog.json").read_text())
    return loaded


def _envelope(error: MnemoClientError) -> str:
    return json.dumps({"success": False, "errorCode": error.code, "message": error.message, "details": error.details})


def mnemo_tools(
    client: MnemoClient,
    names: Iterable[str] | None = None,
    async_client: AsyncMnemoClient | None = None,
) -> list[StructuredTool]:
    """LangChain tools for ``names`` (every tool by default) calling ``client`` (and ``async_client`` for
    ``ainvoke``)."""
    from langchain_core.tools import StructuredTool, ToolException

    wanted = set(names) if names is not None else None
    built = []
    for entry in catalog():
        if wanted is not None and entry["name"] not in wanted:
            continue
        name = entry["name"]

        def run(_name: str = name, **arguments: Any) -> str:
            try:
                return json.dumps(client.call(_name, arguments))
            except MnemoClientError as error:
                raise ToolException(_envelope(error)) from error

        async def arun(_name: str = name, **arguments: Any) -> str:
            if async_client is None:
                return run(_name, **arguments)
            try:
                return json.dumps(await async_client.call(_name, arguments))
            except MnemoClientError as error:
                raise ToolException(_envelope(error)) from error

        schema = {key: value for key, value in entry["inputSchema"].items() if key != "$schema"}
        built.append(
            StructuredTool.from_function(
                func=run,
                coroutine=arun,
                name=name,
                description=entry["description"],
                args_schema=schema,
                handle_tool_error=True,
            )
        )
    return built

"""LangChain tools for Mnemo: one ``StructuredTool`` per tool of the catalog, calling a Mnemo client.

    from mnemo.client import MnemoClient, LocalIdentity
    from mnemo.client.langchain import mnemo_tools
    tools = mnemo_tools(MnemoClient(url, auth=LocalIdentity(user="alice")), names=["memory_add", "memory_search"])
    agent = create_agent(model, tools)            # any LangChain / LangGraph agent

Names, descriptions and JSON Schemas come from mnemo/client/catalog.json (generated from the catalog, so
they are the service's own). A tool answers the tool's JSON as text; an error envelope becomes a
``ToolException`` whose message is the envelope, which LangChain hands back to the model to correct.
Needs ``langchain-core`` (the ``langchain`` extra).

A hosted agent acting for its users builds the tools from a client that acts for one:
``mnemo_tools(client.on_behalf_of(user=user_id, session=thread_id))`` (one set of tools per user, cheap
to build), or from ``MnemoClient(..., on_behalf_of=Delegation(...))``; every call names that user.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mnemo.client.errors import MnemoClientError
from mnemo.client.listing import envelope, selected

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

    from mnemo.client import AsyncMnemoClient, MnemoClient


def mnemo_tools(
    client: MnemoClient,
    names: Iterable[str] | None = None,
    async_client: AsyncMnemoClient | None = None,
) -> list[StructuredTool]:
    """LangChain tools for ``names`` (every tool by default) calling ``client`` (and ``async_client`` for
    ``ainvoke``). Both clients must act for the same user (``on_behalf_of``): a ValueError otherwise, so
    ``invoke`` and ``ainvoke`` of one tool never name two users."""
    from langchain_core.tools import StructuredTool, ToolException

    if async_client is not None and async_client.delegation != client.delegation:
        raise ValueError(
            f"client acts for {client.delegation!r} but async_client for {async_client.delegation!r}: "
            "give both the same on_behalf_of"
        )

    built = []
    for entry in selected(names):
        name = entry["name"]

        def run(_name: str = name, **arguments: Any) -> str:
            try:
                return json.dumps(client.call(_name, arguments))
            except MnemoClientError as error:
                raise ToolException(json.dumps(envelope(error))) from error

        async def arun(_name: str = name, **arguments: Any) -> str:
            if async_client is None:  # the sync client in a worker thread: the event loop keeps running
                return await asyncio.to_thread(run, _name, **arguments)
            try:
                return json.dumps(await async_client.call(_name, arguments))
            except MnemoClientError as error:
                raise ToolException(json.dumps(envelope(error))) from error

        built.append(
            StructuredTool.from_function(
                func=run,
                coroutine=arun,
                name=name,
                description=entry["description"],
                args_schema=entry["inputSchema"],
                handle_tool_error=True,
            )
        )
    return built

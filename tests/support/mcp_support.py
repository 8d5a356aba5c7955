"""What the MCP end-to-end tests share: sessions over stdio and Streamable HTTP with the official SDK client,
`mnemo serve` on a moto server with the environment that points `mnemo mcp` at the same stores, and a caller
that checks every answer against the tool's listed output schema (a failure: an ``isError`` result with the
envelope in its text and no ``structuredContent``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from aws_fixtures import SerialMotoServer
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from helpers import serve_process

ENVELOPE = {"success", "errorCode", "message", "details", "retryable"}
REGION = "eu-west-1"


@asynccontextmanager
async def stdio_session(
    env: Mapping[str, str], identity: dict[str, str], args: Sequence[str] = ()
) -> AsyncIterator[ClientSession]:
    """`mnemo mcp [args]` as a subprocess (hashing embedder unless ``env`` says otherwise), the caller in its
    environment."""
    wire = {f"MNEMO_{key.upper()}": value for key, value in identity.items()}
    full = {**os.environ, "MNEMO_EMBEDDER": "hashing", **env, **wire}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo.cli", "mcp", *args], env=full)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, identity: dict[str, str]) -> AsyncIterator[ClientSession]:
    """`mnemo serve`'s /mcp, the caller in the X-Mnemo-* headers."""
    headers = {f"X-Mnemo-{key.title()}": value for key, value in identity.items()}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def moto_stack(
    data_dir: Path, table: str, bucket: str, env: Mapping[str, str] = {}
) -> Iterator[tuple[str, dict[str, str], SerialMotoServer]]:
    """`mnemo serve --aws-endpoint` on a moto server (which creates the table and bucket): its URL, and the
    environment that points `mnemo mcp` at the same DynamoDB table and S3 bucket."""
    moto = SerialMotoServer()
    aws = {"MNEMO_RECORDS_TABLE": table, "MNEMO_BLOB_BUCKET": bucket, "AWS_REGION": REGION}
    process, url = serve_process(data_dir, {"MNEMO_EMBEDDER": "hashing", **env, **aws}, ["--aws-endpoint", moto.url])
    stdio_env = {
        **env,
        **aws,
        "MNEMO_RECORDS": "dynamodb",
        "MNEMO_BLOBS": "s3",
        "MNEMO_EVENTS": "eventbridge",
        "MNEMO_AWS_ENDPOINT": moto.url,
        "MNEMO_AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "MNEMO_DATA_DIR": str(data_dir / "stdio"),
    }
    try:
        yield url, stdio_env, moto
    finally:
        process.terminate()
        process.wait(timeout=10)
        moto.close()


def payload(result: Any) -> dict[str, Any]:
    """The answer or the envelope from the text block; an answer's ``structuredContent`` must equal it, and an
    error carries none (the envelope would not match the tool's output schema)."""
    found = json.loads(result.content[0].text)
    if result.is_error:
        assert result.structured_content is None, "an error result carries structured content"
    else:
        assert result.structured_content == found, "the text and the structured content differ"
    return dict(found)


class Caller:
    """Calls through one MCP session, checking each answer against the tool's listed output schema."""

    def __init__(self, session: ClientSession, listed: Any) -> None:
        self.session = session
        self.schemas = {tool.name: tool.output_schema for tool in listed.tools}
        self.inputs = {tool.name: tool.input_schema for tool in listed.tools}

    async def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        answer = payload(result)
        assert not result.is_error, f"{tool} {arguments}: {answer}"
        Draft202012Validator(self.schemas[tool]).validate(answer)
        return answer

    async def error(self, tool: str, arguments: dict[str, Any], code: str) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        answer = payload(result)
        assert result.is_error, f"{tool} {arguments} succeeded: {answer}"
        assert set(answer) == ENVELOPE, answer
        assert answer["success"] is False, answer
        assert answer["errorCode"] == code, answer
        return answer


async def caller(session: ClientSession) -> Caller:
    return Caller(session, await session.list_tools())

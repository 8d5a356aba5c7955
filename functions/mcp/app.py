"""Lambda entry for MCP (Streamable HTTP, stateless) behind API Gateway at /mcp."""

from mnemo.entry.mcp_lambda import handler

__all__ = ["handler"]

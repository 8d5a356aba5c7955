"""Lambda entry for the memory_delete tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("memory_delete", family="memory")

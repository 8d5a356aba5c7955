"""Lambda entry for the list_memories tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("list_memories", family="topics")

"""Lambda entry for the search_memories tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("search_memories", family="topics")

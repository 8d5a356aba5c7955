"""Lambda entry for the refine_memory tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("refine_memory", family="topics")

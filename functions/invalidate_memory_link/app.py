"""Lambda entry for the invalidate_memory_link tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("invalidate_memory_link", family="graph")

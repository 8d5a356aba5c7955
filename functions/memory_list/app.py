"""Lambda entry for the memory_list tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("memory_list", family="memory")

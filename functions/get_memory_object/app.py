"""Lambda entry for the get_memory_object tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("get_memory_object", family="graph")

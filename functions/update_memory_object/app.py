"""Lambda entry for the update_memory_object tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("update_memory_object", family="graph")

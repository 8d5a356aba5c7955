"""Lambda entry for the build_memory_from_text tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("build_memory_from_text", family="graph")

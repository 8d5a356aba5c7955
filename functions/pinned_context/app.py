"""Lambda entry for the pinned_context tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("pinned_context", family="files")

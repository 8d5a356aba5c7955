"""Lambda entry for the retrieve_execution tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("retrieve_execution", family="conversations")

"""Lambda entry for the forget_memory tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("forget_memory", family="topics")

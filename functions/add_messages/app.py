"""Lambda entry for the add_messages tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("add_messages", family="learning")

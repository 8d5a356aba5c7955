"""Lambda entry for the erase_user tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("erase_user", family="lifecycle")

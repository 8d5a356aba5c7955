"""Lambda entry for the memorize_general_info tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("memorize_general_info", family="topics")

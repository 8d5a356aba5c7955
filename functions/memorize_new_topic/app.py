"""Lambda entry for the memorize_new_topic tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("memorize_new_topic", family="topics")

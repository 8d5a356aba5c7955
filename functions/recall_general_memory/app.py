"""Lambda entry for the recall_general_memory tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("recall_general_memory", family="topics")

"""Lambda entry for the knowledge_check tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("knowledge_check", family="knowledge")

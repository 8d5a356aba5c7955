"""Lambda entry for the extraction_status tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("extraction_status", family="learning")

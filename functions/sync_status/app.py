"""Lambda entry for the sync_status tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("sync_status", family="sync")

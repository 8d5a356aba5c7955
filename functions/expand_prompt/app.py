"""Lambda entry for the expand_prompt tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("expand_prompt", family="files")

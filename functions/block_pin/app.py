"""Lambda entry for the block_pin tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("block_pin", family="files")

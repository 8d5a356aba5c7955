"""Lambda entry for the block_unpin tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("block_unpin", family="files")

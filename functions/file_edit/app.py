"""Lambda entry for the file_edit tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("file_edit", family="files")

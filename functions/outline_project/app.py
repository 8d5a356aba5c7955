"""Lambda entry for the outline_project tool (experimental): API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("outline_project", family="outline")

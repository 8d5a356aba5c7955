"""Lambda entry for the graph_search tool: API Gateway proxy event in, proxy response out."""

from mnemo.entry.apigw import tool_handler

handler = tool_handler("graph_search", family="graph")

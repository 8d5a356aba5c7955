"""Lambda entry for the outline action group of a Bedrock agent (experimental; OpenAPI or function details)."""

from mnemo.entry.bedrock import action_group_handler

handler = action_group_handler("outline")

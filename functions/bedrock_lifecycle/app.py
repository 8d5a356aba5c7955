"""Lambda entry for the lifecycle action group of a Bedrock agent (OpenAPI or function details)."""

from mnemo.entry.bedrock import action_group_handler

handler = action_group_handler("lifecycle")

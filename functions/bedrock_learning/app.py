"""Lambda entry for the learning action group of a Bedrock agent (OpenAPI or function details)."""

from mnemo.entry.bedrock import action_group_handler

handler = action_group_handler("learning")

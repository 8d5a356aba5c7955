"""memory_context: what an agent should know before it answers, packed into a token budget (no model)."""

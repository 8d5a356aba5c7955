"""Conversation and execution memory (seed 003; the MemoryOS schemas vendored in contracts/)."""

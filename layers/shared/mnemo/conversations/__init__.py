"""Conversation and execution memory (seed 003, ../shared/contracts/memoryos/)."""

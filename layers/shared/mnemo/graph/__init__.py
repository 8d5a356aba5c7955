"""The memory graph: entities and bi-temporal facts (seed 001)."""

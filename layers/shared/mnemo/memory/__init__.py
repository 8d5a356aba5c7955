"""Memories: what agents remember, by layer and scope (seed 000); the tools call ``service.MemoryService``."""

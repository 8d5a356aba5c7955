"""Mnemo: long-term memory and organisational knowledge for AI agents, as tools."""

__version__ = "0.1.0"

"""Hybrid retrieval shared by every searchable family (see mnemo.retrieval.ranker)."""

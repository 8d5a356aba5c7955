"""Request and response models of memory_context.

Each model is described by a comment, not a docstring: pydantic publishes a model's docstring as the
description of its JSON Schema, so a docstring would change the generated catalog the client ships.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator

from mnemo.context import Layer
from mnemo.models import Integer, ToolRequest, ToolResponse, UtcDateTime, WireModel

#: The sections a context can hold, in the order they are written.
Section = Literal["profile", "summary", "memories", "turns", "blocks"]
SECTIONS: tuple[Section, ...] = ("profile", "summary", "memories", "turns", "blocks")
DEFAULT_BUDGET = 1500
MIN_BUDGET = 100
MAX_BUDGET = 16_000


# memory_context's request: a query, a token budget, the sections wanted and an optional time.
class MemoryContextInput(ToolRequest):
    query: str = Field(
        min_length=1, max_length=4000, description="The user's latest message, or the task the agent is about to do."
    )
    budget: Integer = Field(
        DEFAULT_BUDGET,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        description="The most tokens the context may take (pinned_context's estimate).",
    )
    sections: list[Section] | None = Field(
        None,
        min_length=1,
        description="Only these sections (default: all of profile, summary, memories, turns, blocks).",
    )
    as_of: UtcDateTime | None = Field(
        None,
        description="The context as it stood at this time: nothing said or stored later, memories current then.",
    )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be blank")
        return value

    @field_validator("sections")
    @classmethod
    def _distinct(cls, value: list[Section] | None) -> list[Section] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError("names a section twice")
        return value


# One item the context holds, and why: its kind, its id, where it lives, when, how relevant, which turns.
class ContextSource(WireModel):
    kind: Literal["profile", "summary", "memory", "turn", "block"]
    id: str = Field(description="A memory's id, a turn's message id, or a block's path.")
    section: Section
    layer: Layer | None = None
    occurred_at: datetime | None = Field(None, description="When it was said or happened (a memory: stated).")
    score: float | None = Field(None, description="Relevance to the query, 0.0 - 1.0 (memories and turns).")
    message_ids: list[str] = Field(
        default_factory=list, description="The turns it came from; for a turn, its own message id."
    )
    tokens: int = Field(description="The tokens its line takes in the context.")
    excerpt: bool = Field(
        False, description="A turn shown as its sentences nearest the query, the rest left out for the budget."
    )


# memory_context's answer: the text, its tokens, every item in it, and whether some had no room.
class MemoryContextOutput(ToolResponse):
    context: str = Field(description="Prompt-ready text in sections; empty when nothing is known.")
    tokens: int = Field(description="The context's estimated tokens, never above the budget.")
    budget: int
    sections: dict[str, int] = Field(description="The tokens of each section written.")
    sources: list[ContextSource]
    truncated: bool = Field(description="Whether relevant items were left out for lack of budget.")

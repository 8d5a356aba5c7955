"""Request and response models of the topic tools (seed 002, camelCase on the wire)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from mnemo.models import Integer, Number, OptionalInteger, ToolRequest, ToolResponse, WireModel
from mnemo.topics.names import MAX_NAME_CHARS, MAX_TAG_CHARS, MAX_TAGS, check_tag, check_topic_name, unique_tags

MAX_SUMMARY_CHARS = 500
#: Topics one scope may hold (the index document lists them all).
MAX_TOPICS = 1000
#: Topic content and the general section; a DynamoDB item holds at most 400 KB.
MAX_CONTENT_CHARS = 100_000
#: The same content as JSON (non-ASCII escaped, as stores write it) may take at most this many bytes.
MAX_CONTENT_JSON_BYTES = 350_000

Tag = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TAG_CHARS), AfterValidator(check_tag)
]
TopicName = Annotated[str, AfterValidator(check_topic_name)]
#: Where the topics live: the caller's project, or the caller's own (user) layer without a project.
TopicLayer = Literal["project", "user"]

_TOPIC = Field(
    min_length=1,
    max_length=MAX_NAME_CHARS,
    description="Topic name: no '/' or '\\', not '.' or '..', no control characters; case-insensitive.",
)


def _not_blank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be blank")
    return value


def _fits(value: str) -> str:
    size = len(json.dumps(value))
    if size > MAX_CONTENT_JSON_BYTES:
        raise ValueError(
            f"content takes {size} bytes as stored (non-ASCII characters take up to 12), "
            f"the limit is {MAX_CONTENT_JSON_BYTES}; split it into several topics"
        )
    return value


# ------------------------------------------------------------------ inputs ---
class RecallGeneralMemoryInput(ToolRequest):
    pass


class ListMemoriesInput(ToolRequest):
    offset: Integer = Field(
        0, ge=0, le=MAX_TOPICS, description="Where the list starts: 0, or the nextOffset of an answer with hasMore."
    )


class RecallMemoryInput(ToolRequest):
    topic: TopicName = _TOPIC
    offset: Integer = Field(
        0,
        ge=0,
        le=MAX_CONTENT_CHARS,
        description="Where the content starts, in characters: 0, or the nextOffset of an answer with hasMore.",
    )


class SearchMemoriesInput(ToolRequest):
    tags: list[Tag] | None = Field(
        None, max_length=MAX_TAGS, description="Tags to match (case-insensitive); a topic with any of them matches."
    )
    query: str | None = Field(
        None,
        min_length=1,
        max_length=2000,
        description="Search the topics' content (hybrid BM25 and vector similarity) for this text.",
    )
    limit: Integer = Field(20, ge=1, le=100, description="Maximum number of topics returned.")
    threshold: Number = Field(
        0.3, ge=0.0, le=1.0, description="Minimum relevance score (0.0 - 1.0) of a content match; tags-only ignores it."
    )


class MemorizeNewTopicInput(ToolRequest):
    topic: TopicName = _TOPIC
    tags: list[Tag] = Field(max_length=MAX_TAGS, description="Tags to associate with the topic.")
    summary: str = Field(
        min_length=1, max_length=MAX_SUMMARY_CHARS, description="1-2 sentence summary used in the index."
    )
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="Full Markdown content for the topic.")

    @field_validator("tags")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return unique_tags(value)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        return _not_blank(value, "summary")

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return _fits(_not_blank(value, "content"))


class RefineMemoryInput(ToolRequest):
    topic: TopicName = _TOPIC
    tags_to_add: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS, description="Tags to add.")
    tags_to_remove: list[Tag] = Field(
        default_factory=list, max_length=MAX_TAGS * 5, description="Tags to remove (case-insensitive)."
    )
    new_summary: str | None = Field(
        None, min_length=1, max_length=MAX_SUMMARY_CHARS, description="Replacement summary for the index."
    )
    new_content: str | None = Field(
        None, min_length=1, max_length=MAX_CONTENT_CHARS, description="Replacement Markdown content."
    )
    expected_version: OptionalInteger = Field(
        None, ge=1, description="The version last read (recall_memory); a topic changed since is a CONFLICT."
    )

    @field_validator("new_summary", "new_content")
    @classmethod
    def _filled(cls, value: str | None) -> str | None:
        return None if value is None else _fits(_not_blank(value, "the replacement"))


class MemorizeGeneralInfoInput(ToolRequest):
    content: str = Field(
        max_length=MAX_CONTENT_CHARS,
        description="Markdown content for the general section (replaces it; empty clears it). "
        "It must not hold a 'Specialized Knowledge' heading.",
    )
    expected_version: OptionalInteger = Field(
        None, ge=0, description="The version last read (recall_general_memory; 0 = never written); else CONFLICT."
    )

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        return _fits(value)


class ForgetMemoryInput(ToolRequest):
    topic: TopicName = _TOPIC


# ----------------------------------------------------------------- outputs ---
class RecallGeneralMemoryOutput(ToolResponse):
    content: str = Field(description="The General Project Knowledge section ('' when never written).")
    index: str = Field(description="The whole index document as markdown: the general section and every topic.")
    layer: TopicLayer
    version: int = Field(description="Version of the general section (0 = never written).")
    last_updated: datetime | None = None


class ListMemoriesOutput(ToolResponse):
    topics: list[str] = Field(description="Every topic name, sorted case-insensitively.")
    text: str = Field(description="The names as one comma-separated list ('No topics found' when none).")
    count: int = Field(description="How many topics the scope holds.")
    layer: TopicLayer
    has_more: bool = Field(
        False, description="More names follow (the list did not fit the transport): ask with nextOffset."
    )
    next_offset: int | None = Field(None, description="The offset to ask for the rest of the list with.")


class RecallMemoryOutput(ToolResponse):
    title: str = Field(description="The topic name.")
    tags: list[str]
    summary: str
    content: str
    last_updated: datetime
    created_at: datetime
    version: int = Field(description="Pass as expectedVersion to refine_memory to refuse a concurrent change.")
    markdown: str = Field(description="Title, tags, last updated date and content as one markdown document.")
    total_chars: int = Field(description="Length of the whole content, in characters.")
    has_more: bool = Field(
        False, description="The content goes on past this answer (too long for the transport): ask with nextOffset."
    )
    next_offset: int | None = Field(None, description="The offset to ask for the rest of the content with.")


class TopicMatch(WireModel):
    topic: str
    summary: str
    tags: list[str]
    last_updated: datetime
    score: float | None = Field(None, description="Relevance 0.0 - 1.0 of a content match; null for tags only.")


class SearchMemoriesOutput(ToolResponse):
    topics: list[str] = Field(description="Matching topic names, best first.")
    results: list[TopicMatch]
    message: str = Field(description="The names, or 'No topics found'.")
    total_count: int = Field(description="Matches before the limit.")
    retrieval: Literal["tags", "hybrid", "lexical"] = Field(
        description="'tags' for a tags-only search; 'lexical' when embeddings were unavailable."
    )


class TopicWriteOutput(ToolResponse):
    message: str
    topic: str
    version: int
    last_updated: datetime
    tags: list[str]
    summary: str


class MemorizeGeneralInfoOutput(ToolResponse):
    message: str
    version: int
    last_updated: datetime


class ForgetMemoryOutput(ToolResponse):
    message: str
    topic: str

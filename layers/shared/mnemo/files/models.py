"""Request and response models of the file tools (seed 004, camelCase on the wire)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mnemo.models import Boolean, Integer, Number, OptionalInteger, ToolRequest, ToolResponse, WireModel

#: The most characters one file holds (a block, a skill or a workspace file).
MAX_CONTENT_CHARS = 1_000_000
MAX_READ_LINES = 10_000
DEFAULT_READ_LINES = 2_000
MAX_LIST = 1_000
MAX_PROMPT_CHARS = 100_000
#: What expand_prompt's answer may hold at most, whatever maxChars asks.
MAX_EXPANDED_CHARS = 1_000_000
DEFAULT_EXPANDED_CHARS = 200_000

Kind = Literal["block", "skill", "workspace", "knowledge", "topic"]

_PATH = Field(
    min_length=1,
    max_length=1024,
    description="mnemo:///blocks/<name>, mnemo:///skills/<name> (or mnemo://user/..., mnemo://project/...), "
    "a relative workspace path such as src/auth.py, knowledge://<id> or topic://<name>.",
)
_EXPECTED = Field(
    None,
    ge=0,
    le=2**31,
    description="The version the write expects the file to be at (0: the file must not exist); "
    "CONFLICT if it has moved on.",
)


# ------------------------------------------------------------------ inputs ---
class FileReadInput(ToolRequest):
    path: str = _PATH
    offset: Integer = Field(0, ge=0, le=10_000_000, description="Lines to skip: 0, or the nextOffset of an answer.")
    limit: Integer = Field(DEFAULT_READ_LINES, ge=1, le=MAX_READ_LINES, description="Most lines to return.")
    version: OptionalInteger = Field(
        None, ge=1, le=2**31, description="An earlier version to read (blocks, skills and workspace files keep them)."
    )


class FileWriteInput(ToolRequest):
    path: str = _PATH
    content: str = Field(max_length=MAX_CONTENT_CHARS, description="The whole new content (replaces the file).")
    expected_version: OptionalInteger = _EXPECTED


class FileEditInput(ToolRequest):
    path: str = _PATH
    old: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="Text to replace: it must occur once.")
    new: str = Field(max_length=MAX_CONTENT_CHARS, description="Text to put in its place.")
    replace_all: Boolean = Field(False, description="Replace every occurrence of `old` instead of exactly one.")
    expected_version: OptionalInteger = _EXPECTED


class FileDeleteInput(ToolRequest):
    path: str = _PATH
    expected_version: OptionalInteger = _EXPECTED


class FileListInput(ToolRequest):
    path: str = Field(
        "",
        max_length=1024,
        description="What to list: a folder of the workspace ('' for all of it, 'src/'), mnemo:///, "
        "mnemo:///blocks/, mnemo://project/, topic:// or knowledge://.",
    )
    limit: Integer = Field(200, ge=1, le=MAX_LIST, description="Most entries to return.")
    cursor: str | None = Field(None, max_length=2048, description="nextCursor of the previous page.")


class FileSearchInput(ToolRequest):
    query: str = Field(min_length=1, max_length=2000, description="What to look for in blocks' and skills' content.")
    limit: Integer = Field(10, ge=1, le=50, description="Most results to return.")
    threshold: Number = Field(0.3, ge=0.0, le=1.0, description="Minimum relevance score (0.0 - 1.0).")


class BlockPinInput(ToolRequest):
    path: str = _PATH
    position: OptionalInteger = Field(
        None, ge=0, le=10_000, description="Where the block goes in pinned_context (0: first); default last."
    )


class BlockUnpinInput(ToolRequest):
    path: str = _PATH


class PinnedContextInput(ToolRequest):
    offset: Integer = Field(
        0, ge=0, le=100_000_000, description="Where the context starts, in characters: 0, or an answer's nextOffset."
    )


class ExpandPromptInput(ToolRequest):
    text: str = Field(
        min_length=1,
        max_length=MAX_PROMPT_CHARS,
        description="Text with @path (a workspace file or any file path) and @@name (your block) markers.",
    )
    max_chars: Integer = Field(
        DEFAULT_EXPANDED_CHARS,
        ge=1,
        le=MAX_EXPANDED_CHARS,
        description="The most characters the expanded text may take; beyond it the answer is INVALID_INPUT.",
    )
    offset: Integer = Field(
        0, ge=0, le=MAX_EXPANDED_CHARS, description="Where the answer's text starts: 0, or an answer's nextOffset."
    )
    on_missing: Literal["error", "keep"] = Field(
        "error",
        description="A marker naming nothing you can read: 'error' (NOT_FOUND) or 'keep' it as written "
        "and list it in `missing`.",
    )


# ----------------------------------------------------------------- outputs ---
class Reference(WireModel):
    """A path another file mentions, and whether it names something the caller can read."""

    path: str
    kind: Kind
    exists: bool


class FileReadOutput(ToolResponse):
    path: str
    kind: Kind
    content: str
    version: int | None = Field(description="The file's version (none for a knowledge item: see knowledge_show).")
    total_lines: int
    offset: int
    returned_lines: int
    has_more: bool = False
    next_offset: int | None = None
    tokens: int = Field(description="The whole file's estimated tokens (docs/blocks.md says how they are counted).")
    last_updated: str | None = None
    pinned: bool | None = Field(None, description="For a block or skill: whether you have it pinned.")
    references: list[Reference] = Field(default_factory=list)


class FileWriteOutput(ToolResponse):
    message: str
    path: str
    kind: Kind
    version: int
    created: bool = False
    tokens: int
    bytes: int
    replacements: int | None = None
    pinned: bool | None = None
    pinned_tokens: int | None = Field(None, description="Your pinned total after this write.")
    budget_tokens: int | None = None


class FileDeleteOutput(ToolResponse):
    message: str
    path: str
    kind: Kind
    version: int
    unpinned_for: int = Field(0, description="How many pinned contexts the file was taken out of.")


class FileEntry(WireModel):
    path: str
    kind: Kind
    version: int | None = None
    tokens: int | None = None
    bytes: int | None = None
    last_updated: str | None = None
    pinned: bool | None = None
    sha256: str | None = Field(None, description="The content's SHA-256, to tell whether a copy is current.")


class FileListOutput(ToolResponse):
    path: str
    entries: list[FileEntry]
    count: int
    has_more: bool = False
    next_cursor: str | None = None


class FileMatch(WireModel):
    path: str
    kind: Kind
    score: float
    snippet: str
    version: int
    tokens: int
    pinned: bool


class FileSearchOutput(ToolResponse):
    results: list[FileMatch]
    total_count: int
    retrieval: Literal["hybrid", "lexical"]
    message: str


class PinnedBlock(WireModel):
    path: str
    kind: Kind
    position: int
    tokens: int
    version: int


class BlockPinOutput(ToolResponse):
    message: str
    path: str
    pinned: bool
    changed: bool = Field(description="False when the block already was in the state asked for.")
    position: int | None = None
    tokens: int
    pinned_tokens: int
    budget_tokens: int
    pinned_count: int


class PinnedContextOutput(ToolResponse):
    context: str
    blocks: list[PinnedBlock]
    count: int
    total_tokens: int
    budget_tokens: int
    inactive: int = Field(
        0,
        description="Pinned files of a project this request is not in: not shown, still counted in your budget.",
    )
    total_chars: int
    has_more: bool = False
    next_offset: int | None = None


class Expansion(WireModel):
    marker: str
    path: str
    kind: Kind
    version: int
    tokens: int
    chars: int


class ExpandPromptOutput(ToolResponse):
    text: str
    expansions: list[Expansion]
    missing: list[str] = Field(default_factory=list, description="Markers kept as written (onMissing 'keep').")
    tokens: int
    total_chars: int
    has_more: bool = False
    next_offset: int | None = None

"""Knowledge items, their constraints, and the knowledge tools' requests and answers (seed 000)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from mnemo.models import Boolean, Integer, Number, ToolRequest, ToolResponse, WireModel

KnowledgeType = Literal["adr", "policy", "pattern", "spec"]
KnowledgeLayer = Literal["company", "org", "team", "project"]
KnowledgeStatus = Literal["draft", "proposed", "accepted", "deprecated", "superseded"]
Severity = Literal["info", "warn", "block"]
Operator = Literal["must_use", "must_not_use", "must_match", "must_not_match", "must_exist", "must_not_exist"]
Target = Literal["file", "code", "dependency", "import", "config"]

#: Knowledge precedence: the most specific layer first.
KNOWLEDGE_LAYERS: tuple[KnowledgeLayer, ...] = ("project", "team", "org", "company")
DEFAULT_STATUS: tuple[KnowledgeStatus, ...] = ("accepted",)
SEVERITY_RANK: dict[str, int] = {"info": 0, "warn": 1, "block": 2}

ItemIdText = Annotated[str, StringConstraints(min_length=1, max_length=128)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]

MAX_FILES = 2000
MAX_FILE_CHARS = 1_000_000
MAX_DEPENDENCIES = 5000


class Constraint(WireModel):
    """A machine-checkable rule of a knowledge item.

    ``pattern`` is an RE2 regular expression (linear time; no backreferences or
    lookaround). Dependency and import names must match it whole (case-insensitive);
    file paths and file contents need only contain a match.
    """

    operator: Operator
    target: Target
    pattern: str = Field(min_length=1, max_length=1000)
    applies_to: list[str] = Field(default_factory=list, description="Glob patterns of the files this rule covers.")
    severity: Severity = "warn"
    message: str = ""


class ConstraintRef(WireModel):
    """The part of a constraint a violation names (seed 000's output shape)."""

    operator: str
    target: str
    pattern: str


class KnowledgeItem(WireModel):
    """One parsed knowledge file: its front matter, its markdown body, and where it lives."""

    id: str
    type: KnowledgeType
    layer: KnowledgeLayer
    #: The org, team or project id of the layer (None for company).
    layer_id: str | None = None
    title: str
    summary: str
    content: str
    status: KnowledgeStatus = "accepted"
    severity: Severity = "warn"
    tags: list[str] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    supersedes: str | None = None
    superseded_by: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None
    #: The blob key (relative to the tenant's knowledge root) and the blob version read.
    path: str = ""
    version: str = ""
    content_hash: str = ""


# ------------------------------------------------------------------ query ---
class KnowledgeQueryInput(ToolRequest):
    query: str | None = Field(None, min_length=1, max_length=2000, description="Search query in natural language.")
    type: KnowledgeType | None = Field(None, description="Filter by knowledge type: adr, policy, pattern or spec.")
    layer: KnowledgeLayer | None = Field(None, description="Filter by layer: company, org, team or project.")
    tags: list[Tag] | None = Field(None, description="Only items carrying at least one of these tags.")
    status: list[KnowledgeStatus] = Field(
        default_factory=lambda: list(DEFAULT_STATUS), min_length=1, description="Filter by status (default: accepted)."
    )
    limit: Integer = Field(10, ge=1, le=100, description="Maximum results.")
    threshold: Number = Field(
        0.3, ge=0.0, le=1.0, description="With a query: minimum relevance (0.0 - 1.0) an item needs to be returned."
    )


class KnowledgeSummary(WireModel):
    id: str
    type: KnowledgeType
    layer: KnowledgeLayer
    title: str
    summary: str
    status: KnowledgeStatus
    tags: list[str]
    has_constraints: bool
    score: float | None = Field(None, description="Relevance 0.0 - 1.0 when a query was given.")


class KnowledgeQueryOutput(ToolResponse):
    items: list[KnowledgeSummary]
    total_count: int
    searched_layers: list[KnowledgeLayer] = Field(default_factory=list)


# ------------------------------------------------------------------- show ---
class KnowledgeShowInput(ToolRequest):
    id: str = Field(min_length=1, max_length=128, description="Knowledge item ID.")
    include_constraints: Boolean = Field(True, description="Include constraint definitions.")
    include_history: Boolean = Field(False, description="Include version history.")


class KnowledgeDetail(WireModel):
    id: str
    type: KnowledgeType
    layer: KnowledgeLayer
    title: str
    summary: str
    content: str
    status: KnowledgeStatus
    severity: Severity
    tags: list[str]
    constraints: list[Constraint] | None = None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    supersedes: str | None = None
    superseded_by: list[str] = Field(default_factory=list)


class HistoryEntry(WireModel):
    version: str
    timestamp: str
    author: str
    message: str


class KnowledgeShowOutput(ToolResponse):
    item: KnowledgeDetail | None
    history: list[HistoryEntry] | None = None


# ------------------------------------------------------------------ check ---
class FileToCheck(WireModel):
    path: str = Field(min_length=1, max_length=1024)
    content: str = Field(max_length=MAX_FILE_CHARS)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("path must not contain NUL")
        return value


class Dependency(WireModel):
    name: str = Field(min_length=1, max_length=256)
    version: str | None = Field(None, max_length=256)


class KnowledgeCheckInput(ToolRequest):
    files: list[FileToCheck] = Field(default_factory=list, max_length=MAX_FILES, description="Files to check.")
    dependencies: list[Dependency] = Field(
        default_factory=list, max_length=MAX_DEPENDENCIES, description="Dependencies to check."
    )
    min_severity: Severity = Field("warn", description="Minimum severity to report.")
    knowledge_item_ids: list[ItemIdText] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Specific knowledge items to check against (default: every applicable constraint).",
    )


class Location(WireModel):
    file: str
    line: int | None = None


class Violation(WireModel):
    knowledge_item_id: str
    knowledge_item_title: str
    constraint: ConstraintRef
    severity: Severity
    message: str
    location: Location | None = None


class SeveritySummary(WireModel):
    info: int = 0
    warn: int = 0
    block: int = 0


class KnowledgeCheckOutput(ToolResponse):
    passed: bool = Field(description="False exactly when a block-severity constraint is violated.")
    violations: list[Violation]
    summary: SeveritySummary
    checked_items: list[str] = Field(default_factory=list, description="Ids of the knowledge items applied.")

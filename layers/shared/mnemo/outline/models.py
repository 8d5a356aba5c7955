"""Request and response models of the outline tools (seed 002, experimental). The seed's field names
are kept as it writes them (``omit_native``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mnemo.models import Boolean, Integer, ToolRequest, ToolResponse, WireModel

Language = Literal["python", "go", "java", "typescript", "javascript"]
Relation = Literal["contains", "calls", "called_by", "imports", "extends", "implements", "references", "type_of"]
MAX_DEPTH = 6

_LANGUAGE = Field(description="Target language: python, go, java, typescript or javascript.")
_DEPTH = Field(2, ge=1, le=MAX_DEPTH, description="Levels of relations to traverse.")
_RELATIONS = Field(
    None,
    max_length=8,
    description="Relation kinds to show (contains, calls, called_by, imports, extends, implements, references, "
    "type_of); all when omitted.",
)
_OMIT_NATIVE = Field(False, alias="omit_native", description="When true, omit standard-library and built-in symbols.")
_FORMAT: Any = Field("text", description="text: a readable tree; json: the tree as structured nodes.")
_FILE = Field(
    min_length=1, max_length=1024, description="Relative path to the source file in the workspace, e.g. src/app.py."
)


class OutlineSymbolInput(ToolRequest):
    symbol: str = Field(
        min_length=1,
        max_length=512,
        description="Symbol name to look up: qualified (shop.orders.Order.add, "
        "outline.(*OutlineManager).RegisterExtractor) or its last part (RegisterExtractor).",
    )
    language: Language = _LANGUAGE
    file: str | None = Field(
        None, min_length=1, max_length=1024, description="Restrict the search to a single file (relative path)."
    )
    depth: Integer = _DEPTH
    relations: list[Relation] | None = _RELATIONS
    omit_native: Boolean = _OMIT_NATIVE
    format: Literal["text", "json"] = _FORMAT
    limit: Integer = Field(100, ge=1, le=5000, description="Most matching symbols (tree roots) in one answer.")
    cursor: str | None = Field(None, max_length=2048, description="nextCursor of the previous answer.")


class OutlineFileInput(ToolRequest):
    file: str = _FILE
    language: Language = _LANGUAGE
    depth: Integer = _DEPTH
    relations: list[Relation] | None = _RELATIONS
    omit_native: Boolean = _OMIT_NATIVE
    format: Literal["text", "json"] = _FORMAT
    limit: Integer = Field(500, ge=1, le=5000, description="Most symbols (tree roots) in one answer.")
    cursor: str | None = Field(None, max_length=2048, description="nextCursor of the previous answer.")


class OutlineProjectInput(ToolRequest):
    language: Language = _LANGUAGE
    depth: Integer = _DEPTH
    relations: list[Relation] | None = _RELATIONS
    omit_native: Boolean = _OMIT_NATIVE
    format: Literal["text", "json"] = _FORMAT
    limit: Integer = Field(200, ge=1, le=5000, description="Most symbols (tree roots) in one answer.")
    cursor: str | None = Field(None, max_length=2048, description="nextCursor of the previous answer.")


class OutlineNode(WireModel):
    """A symbol in a relation tree, and the symbols it relates to."""

    name: str = Field(description="Qualified name (for native and external symbols, as imported).")
    kind: str = Field(
        description="module, package, class, interface, struct, type, enum, record, annotation, function, method, "
        "constructor, field, variable or constant; native or external outside the project."
    )
    origin: Literal["project", "native", "external"]
    path: str | None = Field(None, description="The file declaring it (project symbols).")
    line: int | None = None
    end_line: int | None = None
    relation: Relation | None = Field(None, description="How the parent relates to this symbol; null at a root.")
    at_line: int | None = Field(None, description="The line of the parent's file where the relation is written.")
    cycle: bool = Field(False, description="Already on the path from the root: shown, not expanded again.")
    children: list[OutlineNode] = Field(default_factory=list)


class SkippedFile(WireModel):
    path: str
    reason: str


class OutlineOutput(ToolResponse):
    language: Language
    format: Literal["text", "json"]
    text: str | None = Field(None, description="The trees as indented text (format text).")
    symbols: list[OutlineNode] | None = Field(None, description="The trees (format json).")
    roots: int = Field(description="How many symbols the answer's trees start from.")
    nodes: int = Field(description="How many nodes the trees hold in all.")
    files: int = Field(description="Files of the language in the outline index.")
    parsed: int = Field(description="Files this call parsed because they changed since the index was built.")
    skipped: list[SkippedFile] = Field(default_factory=list, description="Files not outlined, with the reason.")
    has_more: bool = False
    next_cursor: str | None = None

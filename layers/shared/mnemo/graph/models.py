"""Request and response models of the memory graph tools (seed 001); the views memory_search shares are in
mnemo.graph.context_models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, ValidationInfo, field_validator, model_validator

from mnemo.context import Layer
from mnemo.graph.context_models import FactSource, FactView
from mnemo.graph.context_models import FactStatus as FactStatus
from mnemo.graph.context_models import GraphContext as GraphContext
from mnemo.models import Boolean, Integer, Number, OptionalInteger, ToolRequest, ToolResponse, UtcDateTime, WireModel
from mnemo.visible import hidden_character

MAX_NAME_CHARS = 200
MAX_SUMMARY_CHARS = 2000
MAX_FACT_CHARS = 2000
MAX_ALIASES = 20
#: Facts one add_memory_link may invalidate (each is four writes of one transaction).
MAX_INVALIDATES = 20
MAX_BUILD_CHARS = 48_000


def visible_name(value: str) -> str:
    """Refuse a name holding a control or a character that shows nothing (zero-width, bidi controls):
    ``Al\u200bice`` would look like Alice and be another entity."""
    bad = hidden_character(value)
    if bad is not None:
        raise ValueError(f"a name must not contain control or invisible characters (found U+{ord(bad):04X})")
    return value


#: An entity name or alias: trimmed, 1 to MAX_NAME_CHARS characters, all of them visible.
Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS),
    AfterValidator(visible_name),
]
EntityType = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
Predicate = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
ObjectId = Annotated[str, StringConstraints(pattern=r"^(ent|fct)_[0-9a-f]{24}$")]
EntityId = Annotated[str, StringConstraints(pattern=r"^ent_[0-9a-f]{24}$")]
FactId = Annotated[str, StringConstraints(pattern=r"^fct_[0-9a-f]{24}$")]


# ------------------------------------------------------------------ shared parts
class EntityView(WireModel):
    entity_id: str
    name: str
    type: str
    summary: str = ""
    aliases: list[str] = Field(default_factory=list)
    layer: Layer
    version: int
    created_at: datetime
    updated_at: datetime


class EntityRef(WireModel):
    entity_id: str
    name: str
    type: str
    created: bool = Field(description="True when this call created the entity.")


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value


# ---------------------------------------------------------------- add_memory_link
class AddMemoryLinkInput(ToolRequest):
    subject: Name = Field(description="The entity the fact is about, by name or alias; created if missing.")
    predicate: Predicate = Field(
        description="The relation, e.g. works_at, uses, depends_on (normalised to snake_case)."
    )
    object: Name = Field(description="The other entity, by name or alias; created if missing.")
    text: str | None = Field(
        None, max_length=MAX_FACT_CHARS, description="The fact as a sentence; default: 'subject predicate object'."
    )
    subject_type: EntityType | None = Field(
        None, description="Type of the subject when it is created (default entity)."
    )
    object_type: EntityType | None = Field(None, description="Type of the object when it is created (default entity).")
    layer: Layer = Field("user", description="Memory scope. agent, user, session, project, team, org or company.")
    valid_at: UtcDateTime | None = Field(None, description="When the fact became true (default: now).")
    invalid_at: UtcDateTime | None = Field(None, description="When it stopped being true, if already known.")
    exclusive: Boolean = Field(
        False,
        description="The subject holds this predicate for one object at a time: a current fact with the same "
        "subject and predicate and another object is invalidated as of validAt.",
    )
    invalidates: list[FactId] = Field(
        default_factory=list, max_length=MAX_INVALIDATES, description="Facts this one contradicts, by id."
    )
    source: FactSource | None = Field(None, description="Where the fact came from: a memory, a message, a document.")

    _text = field_validator("text")(_not_blank)

    @field_validator("invalid_at")
    @classmethod
    def _after_valid_at(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        valid_at = info.data.get("valid_at")
        if value is not None and valid_at is not None and value <= valid_at:
            raise ValueError("must be after validAt")
        return value


class AddMemoryLinkOutput(ToolResponse):
    message: str
    fact_id: str
    created: bool = Field(description="False when the same current fact already existed (nothing written).")
    subject: EntityRef
    object: EntityRef
    fact: FactView
    invalidated: list[str] = Field(default_factory=list, description="Facts this one invalidated.")


# -------------------------------------------------------------- get_memory_object
class ObjectSelector(ToolRequest):
    entity_id: EntityId | None = Field(None, description="The entity's id.")
    name: Name | None = Field(None, description="The entity's name or one of its aliases.")
    layer: Layer | None = Field(
        None, description="Where to look; default: every readable layer, the most specific first."
    )

    @model_validator(mode="after")
    def _one_selector(self) -> ObjectSelector:
        if (self.entity_id is None) == (self.name is None):
            raise ValueError("give exactly one of entityId and name")
        return self


class GetMemoryObjectInput(ObjectSelector):
    depth: Integer = Field(1, ge=0, le=3, description="How many hops of neighbours to return (0: none).")
    include_history: Boolean = Field(False, description="Also return facts that are no longer (or not yet) valid.")
    as_of: UtcDateTime | None = Field(None, description="Answer as things stood at this time (default: now).")
    limit: Integer = Field(50, ge=1, le=200, description="The most facts to return.")


class Neighbour(WireModel):
    entity_id: str
    name: str
    type: str
    summary: str = ""
    depth: int
    via: list[str] = Field(description="The facts that connect it to the entity one hop closer.")


class GetMemoryObjectOutput(ToolResponse):
    entity: EntityView
    facts: list[FactView]
    neighbours: list[Neighbour]
    as_of: datetime
    has_more: bool = Field(False, description="True when facts or neighbours were left out (limit or size).")


# ----------------------------------------------------------- update_memory_object
class UpdateMemoryObjectInput(ObjectSelector):
    expected_version: OptionalInteger = Field(None, ge=1, description="Refuse the update if the entity moved past it.")
    new_name: Name | None = Field(
        None, description="Rename the entity (the old name stays as an alias unless dropped)."
    )
    type: EntityType | None = Field(None, description="A new type: person, organization, technology, ...")
    summary: str | None = Field(
        None, max_length=MAX_SUMMARY_CHARS, description="What the entity is, in a sentence or two."
    )
    aliases: list[Name] | None = Field(None, max_length=MAX_ALIASES, description="Replace the aliases.")

    @model_validator(mode="after")
    def _something(self) -> UpdateMemoryObjectInput:
        if self.new_name is None and self.type is None and self.summary is None and self.aliases is None:
            raise ValueError("give at least one of newName, type, summary and aliases")
        return self


class UpdateMemoryObjectOutput(ToolResponse):
    message: str
    entity: EntityView


# --------------------------------------------------------- invalidate_memory_link
class InvalidateMemoryLinkInput(ToolRequest):
    fact_id: FactId = Field(description="The fact that no longer holds.")
    invalid_at: UtcDateTime | None = Field(None, description="When it stopped being true (default: now).")
    reason: str | None = Field(None, max_length=500, description="Why, for the history.")

    _reason = field_validator("reason")(_not_blank)


class InvalidateMemoryLinkOutput(ToolResponse):
    message: str
    fact: FactView
    already_invalid: bool = Field(False, description="True when the fact was already invalid (nothing changed).")


# ----------------------------------------------------------- delete_memory_object
class DeleteMemoryObjectInput(ToolRequest):
    entity_id: EntityId | None = Field(None, description="The entity to erase, by id.")
    name: Name | None = Field(None, description="The entity to erase, by name or alias.")
    fact_id: FactId | None = Field(None, description="Erase one fact instead of an entity.")
    layer: Layer | None = Field(
        None, description="Where to look; default: every readable layer, the most specific first."
    )
    confirmation_token: str | None = Field(
        None,
        max_length=64,
        description="The token a preview answered with: the deletion happens only with it, and only if nothing "
        "changed since the preview.",
    )

    @model_validator(mode="after")
    def _one_selector(self) -> DeleteMemoryObjectInput:
        if sum(value is not None for value in (self.entity_id, self.name, self.fact_id)) != 1:
            raise ValueError("give exactly one of entityId, name and factId")
        return self


class DeleteMemoryObjectOutput(ToolResponse):
    message: str
    deleted: bool = Field(description="False for a preview: call again with confirmationToken to delete.")
    entity: EntityView | None = None
    fact: FactView | None = None
    facts_affected: int = Field(description="Facts deleted (or that would be), current and past.")
    neighbours_affected: list[str] = Field(default_factory=list, description="Entities that lose a link.")
    confirmation_token: str | None = None
    has_more: bool = Field(False, description="True when neighboursAffected was cut to fit the response size limit.")


# ------------------------------------------------------------------ graph_search
class GraphSearchInput(ToolRequest):
    query: str = Field(min_length=1, max_length=2000, description="What to look for, in natural language.")
    layers: list[Layer] | None = Field(None, min_length=1, description="Layers to search (default: all readable).")
    kind: Literal["all", "entities", "facts"] = Field("all", description="What to return: all, entities or facts.")
    types: list[EntityType] | None = Field(None, max_length=20, description="Only entities of these types.")
    as_of: UtcDateTime | None = Field(None, description="Facts valid at this time (default: now).")
    known_at: UtcDateTime | None = Field(
        None, description="As Mnemo knew things at this time: facts learned by then and not yet expired."
    )
    include_invalid: Boolean = Field(False, description="Also return facts not valid at asOf (history).")
    limit: Integer = Field(10, ge=1, le=50, description="Most entities and most facts to return.")
    threshold: Number = Field(0.5, ge=0.0, le=1.0, description="Minimum relevance score (0.0 - 1.0).")

    _query = field_validator("query")(_not_blank)


class EntityHit(EntityView):
    score: float


class FactHit(FactView):
    score: float


class GraphSearchOutput(ToolResponse):
    entities: list[EntityHit]
    facts: list[FactHit]
    as_of: datetime
    searched_layers: list[Layer]
    retrieval: Literal["hybrid", "lexical"] = "hybrid"
    has_more: bool = Field(False, description="True when results were left out to fit the response size limit.")


# -------------------------------------------------------- build_memory_from_text
class BuildMemoryFromTextInput(ToolRequest):
    content: str = Field(min_length=1, max_length=MAX_BUILD_CHARS, description="The text to extract from.")
    previous_messages: str | None = Field(
        None, max_length=8000, description="Conversation context that helps resolve names and pronouns."
    )
    layer: Layer = Field("user", description="Memory scope the graph is written to (default user).")
    reference_time: UtcDateTime | None = Field(
        None, description="When the text was written, for relative dates ('last week'); default: now."
    )
    source: FactSource | None = Field(None, description="Where the text came from; default kind extraction.")
    dry_run: Boolean = Field(False, description="Extract and answer without saving anything.")

    _content = field_validator("content")(_not_blank)


class Relationship(WireModel):
    from_: str = Field(alias="from")
    to: str
    relation: str
    fact_id: str | None = None
    created: bool = False


class BuildMemoryFromTextOutput(ToolResponse):
    summary: str
    entities: list[str]
    relationships: list[Relationship]
    invalidated: list[str] = Field(default_factory=list)
    model_calls: int
    dry_run: bool = False
    has_more: bool = Field(
        False, description="True when entities or relationships were left out of the answer to fit its size limit."
    )

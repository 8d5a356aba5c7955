"""The graph models another family answers with: memory_search's ``graph`` (includeGraph).

Apart from mnemo.graph.models (which re-exports them), so that a memory function loads these few models and
not every graph tool's request and response at its cold start.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mnemo.context import Layer
from mnemo.models import WireModel

FactStatus = Literal["valid", "invalid", "future"]


class FactSource(WireModel):
    """Where a fact came from, so an agent can go back to it."""

    kind: Literal["manual", "conversation", "memory", "document", "extraction", "import"] = "manual"
    memory_id: str | None = Field(None, max_length=128, description="The memory the fact was taken from.")
    message_id: str | None = Field(None, max_length=256, description="The conversation message it was said in.")
    ref: str | None = Field(None, max_length=1024, description="Any other reference: a URI, a document id.")

    model_config = WireModel.model_config | {"extra": "forbid"}


class FactView(WireModel):
    fact_id: str
    subject: str = Field(description="The subject entity's name (as it is now).")
    subject_id: str
    predicate: str
    object: str = Field(description="The object entity's name (as it is now).")
    object_id: str
    text: str
    valid_at: datetime = Field(description="When the fact became true in the world.")
    invalid_at: datetime | None = Field(None, description="When it stopped being true; null while it holds.")
    created_at: datetime = Field(description="When Mnemo learned it.")
    expired_at: datetime | None = Field(None, description="When Mnemo learned it no longer holds.")
    status: FactStatus = Field(description="At the time asked about (now, or asOf): valid, invalid or future.")
    invalidated_by: str | None = Field(None, description="The fact that contradicted it, when one did.")
    reason: str | None = None
    source: FactSource | None = None
    layer: Layer


class GraphContext(WireModel):
    """What memory_search adds with includeGraph: the entities the query found and their current facts."""

    entities: list[str]
    facts: list[FactView]

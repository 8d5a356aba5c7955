"""Shared pydantic bases: camelCase on the wire, strict about unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
    )


class ToolRequest(WireModel):
    """A tool's input: unknown fields are an error, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid")


class ToolResponse(WireModel):
    success: bool = True

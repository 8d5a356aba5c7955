"""Shared pydantic bases: camelCase on the wire, strict about unknown fields; the one UTC date-time type."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

#: What a datetime can hold, so what a date field accepts once converted to UTC.
DATETIME_RANGE = f"{datetime.min.isoformat()}Z to {datetime.max.isoformat()}Z"


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC (a time without an offset is taken as UTC).

    "0001-01-01T00:00:00+01:00" is a valid ISO 8601 time, but in UTC it falls in
    year 0, which no datetime holds: converting it overflows. That is the
    caller's input out of range, so it is a ValueError (INVALID_INPUT naming the
    field), not an OverflowError escaping as an internal error.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"must fall within {DATETIME_RANGE} once converted to UTC") from None


def iso_text(value: Any) -> Any:
    """Refuse what pydantic would read as Unix seconds: a number, or text of digits only ("2024" is not 1970)."""
    if isinstance(value, int | float) or (isinstance(value, str) and _DIGITS.fullmatch(value)):
        raise ValueError("must be an ISO 8601 date-time such as 2024-03-01T00:00:00Z, not a number")
    return value


_DIGITS = re.compile(r"\s*[+-]?\d+(?:\.\d*)?\s*")

#: Every date-time a tool accepts: ISO 8601 text, kept in UTC, out-of-range offsets refused as invalid input.
UtcDateTime = Annotated[datetime, BeforeValidator(iso_text), AfterValidator(as_utc)]


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

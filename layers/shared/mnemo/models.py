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


def _kind(value: Any) -> str:
    return "true or false" if isinstance(value, bool) else f"a {type(value).__name__}"


def json_number(value: Any) -> Any:
    """Refuse what JSON does not call a number: ``true`` (an int to Python, so pydantic reads it as 1) and text
    ("5"). A door whose transport carries only text (Bedrock) converts by the declared type before this."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, not {_kind(value)}")
    return value


def json_boolean(value: Any) -> Any:
    """Refuse what JSON does not call a boolean: ``0``/``1`` and "yes"/"false", which pydantic would read as one."""
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {_kind(value)}")
    return value


#: A request's whole-number field: JSON numbers only (no booleans, no text); 2.0 is 2, 2.5 is refused.
Integer = Annotated[int, BeforeValidator(json_number)]
#: An Integer that may be null; the None is inside so that Field(ge=...) constrains the number.
OptionalInteger = Annotated[int | None, BeforeValidator(lambda value: value if value is None else json_number(value))]
#: A request's number field: JSON numbers only (no booleans, no text).
Number = Annotated[float, BeforeValidator(json_number)]
#: A request's boolean field: true or false only (no 0/1, no text).
Boolean = Annotated[bool, BeforeValidator(json_boolean)]


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        # A model's validator and serializer are built on its first use, not when its module is imported: a
        # Lambda function imports its family's every model and uses one or two (30-60 ms of a cold start).
        defer_build=True,
    )


class ToolRequest(WireModel):
    """A tool's input: unknown fields are an error, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid")


class ToolResponse(WireModel):
    success: bool = True

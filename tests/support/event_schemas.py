"""Change events' JSON Schemas (docs/events/<kind>.schema.json, draft 2020-12) and checks on delivered events."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "events"


@cache
def validator(kind: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=FormatChecker())


def validate(envelope: dict[str, Any]) -> None:
    """Raise unless ``envelope`` is valid against its kind's schema."""
    validator(envelope["kind"]).validate(envelope)


def subject(envelope: dict[str, Any]) -> tuple[str, str]:
    """(kind, what it is about): the memory, fact, path or run id, or the tenant for a sync."""
    ids = envelope["ids"]
    for key in ("memoryId", "factId", "path", "runId", "erasureId"):
        if key in ids:
            return envelope["kind"], ids[key]
    return envelope["kind"], envelope["user"] or envelope["tenant"]

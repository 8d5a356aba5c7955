"""The vendored MemoryOS draft-07 schemas (see README.md here): the conversation tools' peer contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DIRECTORY = Path(__file__).resolve().parent


def schema(name: str) -> dict[str, Any]:
    """One schema by file stem, e.g. ``schema("add_conversation_input")``."""
    loaded: dict[str, Any] = json.loads((DIRECTORY / f"{name}.json").read_text())
    return loaded

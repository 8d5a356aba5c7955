"""Shared by the tests that hold two doors to the same answers (the local server and API Gateway's REST
door, REST and HTTP API events): the bodies each tool is sent, and answers with generated ids blanked."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from mnemo.tools.registry import Tool
from mnemo.tools.schema import input_schema

GENERATED_ID = re.compile(r"\b[a-z]{2,5}_[0-9a-f]{24}\b")


def tool_bodies(tool: Tool, hostile: Sequence[str | None], wrong_values: Sequence[Any]) -> list[str | None]:
    """``hostile`` bodies, the tool's spec usage examples, and the first example with each field set to each
    of ``wrong_values``."""
    bodies: list[str | None] = list(hostile)
    examples = [payload for label, payload in tool.examples() if isinstance(payload, dict) and "Usage" in label]
    bodies += [json.dumps(example) for example in examples]
    base = examples[0] if examples else {}
    for field in input_schema(tool).get("properties", {}):
        bodies += [json.dumps({**base, field: value}) for value in wrong_values]
    return bodies


def without_ids(answer: Any) -> Any:
    """The answer with generated ids (``fct_...``, ``ent_...``) blanked: each store makes its own."""
    return json.loads(GENERATED_ID.sub("<id>", json.dumps(answer)))

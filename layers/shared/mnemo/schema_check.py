"""JSON Schema checks of what arrives untrusted: knowledge files' front matter and a model's answers.

Checked with fastjsonschema, which compiles a schema into a Python function once per process: its import
costs a cold start about 25 ms, where jsonschema's (with referencing, attrs and its format checkers) costs about
80 (docs/benchmarks.md, "Every tool function"). The schemas here use draft 2020-12's vocabulary that draft 7
shares (``$defs`` are reached by ``$ref`` as JSON pointers), which is how fastjsonschema reads them.

``first_problem`` names the first place the instance breaks the schema (``Problem``): its path from the root, the
keyword that failed and, for ``required`` and ``additionalProperties``, the property it is about.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_COMPILED: dict[str, Callable[[Any], Any]] = {}


@dataclass(frozen=True)
class Problem:
    """Where and how an instance breaks its schema."""

    #: The path from the root (property names and item indexes); empty for the root itself.
    path: tuple[str | int, ...]
    #: The keyword that failed ("required", "type", "enum", "maxLength"...).
    rule: str
    message: str
    #: The property a ``required`` (missing) or ``additionalProperties`` (unexpected) problem is about.
    subject: str | None = None

    @property
    def where(self) -> str:
        """The path as ``a/0/b``, or ``(root)``."""
        return "/".join(str(part) for part in self.path) or "(root)"


def first_problem(schema: dict[str, Any], instance: Any) -> Problem | None:
    """The first place ``instance`` breaks ``schema`` (None: it conforms)."""
    from fastjsonschema import JsonSchemaValueException

    check = _compiled(schema)
    try:
        check(instance)
    except JsonSchemaValueException as error:
        return _problem(error)
    return None


def _compiled(schema: dict[str, Any]) -> Callable[[Any], Any]:
    key = json.dumps(schema, sort_keys=True)
    found = _COMPILED.get(key)
    if found is None:
        import fastjsonschema

        # use_default=False: checking only; the instance is never filled in with the schema's defaults.
        found = _COMPILED[key] = fastjsonschema.compile(schema, use_default=False)
    return found


def _problem(error: Any) -> Problem:
    path = tuple(error.path[1:])  # error.path starts with "data", fastjsonschema's name for the root
    rule = str(error.rule or "")
    value, definition = error.value, error.rule_definition
    name: str | None = None
    message = str(error.message)
    if rule == "required" and isinstance(value, dict):
        name = next((str(key) for key in definition or () if key not in value), None)
        message = f"'{name}' is a required property"
    elif rule == "additionalProperties" and isinstance(value, dict):
        known = set((error.definition or {}).get("properties") or {})
        name = next((str(key) for key in value if key not in known), None)
        message = f"Additional properties are not allowed ('{name}' was unexpected)"
    elif message.startswith(error.name):  # "data.facts[0] must be string": the value said instead of its path
        message = f"{_shown(value)} {message[len(error.name) :].strip()}"
    return Problem(path, rule, message, name)


def _shown(value: Any, limit: int = 60) -> str:
    """The offending value as a message shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."

"""Names and shapes shared by the generated blocks of template.yaml (mnemo_codegen.template_gen)."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable

from mnemo.tools.registry import EXPERIMENTAL_FAMILIES, Tool

#: Condition of everything the experimental tools deploy (the ExperimentalTools parameter).
EXPERIMENTAL_CONDITION = "ServeExperimental"


def camel(name: str) -> str:
    """memory_add -> MemoryAdd."""
    return "".join(part.capitalize() for part in re.split(r"[_-]", name))


def function_id(tool: Tool) -> str:
    """The logical id of the function that serves ``tool``'s route."""
    return f"{camel(tool.name)}Function"


def bedrock_function_id(family: str) -> str:
    """The logical id of the function that serves ``family``'s Bedrock action groups."""
    return f"Bedrock{camel(family)}Function"


def family_summary(family: str) -> str:
    """The family module's SUMMARY: what its tools are for."""
    return str(importlib.import_module(f"mnemo.tools.{family}").SUMMARY)


def condition_of(family: str) -> str | None:
    """The condition a family's resources carry: ServeExperimental for an experimental family, else none."""
    return EXPERIMENTAL_CONDITION if family in EXPERIMENTAL_FAMILIES else None


def clip(text: str, limit: int) -> str:
    """``text`` cut at a word to at most ``limit`` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def quoted(text: str) -> str:
    """A YAML double-quoted scalar."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def resource(logical_id: str, kind: str, condition: str | None) -> list[str]:
    """A resource's first lines: its logical id, type and, when it has one, its condition."""
    return [f"{logical_id}:", f"  Type: {kind}", *([f"  Condition: {condition}"] if condition else [])]


def families(tools: Iterable[Tool]) -> dict[str, list[Tool]]:
    """Family -> its tools, in catalog order."""
    found: dict[str, list[Tool]] = {}
    for tool in tools:
        found.setdefault(tool.family, []).append(tool)
    return found

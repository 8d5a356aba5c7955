"""The catalog machinery: a tool is a typed function with a docstring spec.

A family module decorates its functions with ``@tool("family")``; the request
and response models come from the function's annotations and the description
from its docstring. Everything else (JSON Schema, OpenAPI, docs, front doors,
template.yaml's function list) is generated from this registry.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from pydantic import BaseModel, ValidationError

from mnemo.context import RequestContext
from mnemo.errors import NotFound, from_validation_errors

if TYPE_CHECKING:
    from mnemo.runtime import Services

RequestT = TypeVar("RequestT", bound=BaseModel)
ResponseT = TypeVar("ResponseT", bound=BaseModel)
ToolFunction = Callable[["Services", RequestContext, Any], BaseModel]

_JSON_BLOCK = re.compile(r"\*\*(?P<label>[A-Za-z ]+):\*\*\s*```json\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Tool:
    name: str
    family: str
    request: type[BaseModel]
    response: type[BaseModel]
    function: ToolFunction
    spec: str

    @property
    def description(self) -> str:
        """The spec's prose before its first **section**, without markers: what an agent reads."""
        paragraphs = []
        for paragraph in inspect.cleandoc(self.spec).split("\n\n"):
            if paragraph.startswith("**") or paragraph.startswith("@see"):
                break
            if not paragraph.startswith("Tool exposure:"):
                paragraphs.append(" ".join(paragraph.replace("[SPECIFICATION]", "").split()))
        return " ".join(paragraphs)

    @property
    def summary(self) -> str:
        """The spec's first sentence."""
        return self.description.split(". ")[0].rstrip(".")

    def examples(self) -> list[tuple[str, Any]]:
        """Each ```json block in the spec with the label before it (Usage, Returns, ...)."""
        return [(m["label"].strip(), json.loads(m["body"])) for m in _JSON_BLOCK.finditer(self.spec)]

    def parse(self, payload: Any) -> BaseModel:
        try:
            return self.request.model_validate(payload)
        except ValidationError as error:
            raise from_validation_errors(error.errors(include_url=False)) from None

    def run(self, services: Services, context: RequestContext, request: BaseModel) -> BaseModel:
        return self.function(services, context, request)

    def invoke(self, services: Services, context: RequestContext, payload: Any) -> dict[str, Any]:
        """Validate a JSON-like payload, run the tool, and return the JSON-able response."""
        from mnemo.entry.identity import strip_identity_claims

        response = self.run(services, context, self.parse(strip_identity_claims(payload, context)))
        return response.model_dump(mode="json", by_alias=True)


CATALOG: dict[str, Tool] = {}
#: The family modules, in the order the catalog (and everything generated from it) lists them.
FAMILIES = ("memory", "knowledge", "sync", "conversations", "topics")


def tool(family: str) -> Callable[[ToolFunction], ToolFunction]:
    def register(function: ToolFunction) -> ToolFunction:
        hints = get_type_hints(function, localns={"Services": object})
        name = function.__name__
        if name in CATALOG:
            raise ValueError(f"tool {name} registered twice")
        CATALOG[name] = Tool(
            name=name,
            family=family,
            request=hints["request"],
            response=hints["return"],
            function=function,
            spec=function.__doc__ or "",
        )
        return function

    return register


def load_catalog() -> Mapping[str, Tool]:
    """Import every family module, so that each has registered its tools."""
    import importlib

    for family in FAMILIES:
        importlib.import_module(f"mnemo.tools.{family}")
    return CATALOG


def get_tool(name: str) -> Tool:
    catalog = load_catalog()
    found = catalog.get(name)
    if found is None:
        raise NotFound(f"Unknown tool '{name}'", {"field": "name", "tool": name, "available": sorted(catalog)})
    return found

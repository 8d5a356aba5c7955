"""The catalog machinery: a tool is a typed function with a docstring spec.

A family module decorates its functions with ``@tool("family")``; the request
and response models come from the function's annotations and the description
from its docstring; the decorator declares what the tool may touch on AWS (``Rights``) and
what its function needs (``Runtime``). Everything else (JSON Schema, OpenAPI, docs, the
client, front doors, and template.yaml's functions, routes, policies, logs and alarms) is
generated from this registry by ``mnemo generate`` (``make docs``).
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from pydantic import BaseModel, ValidationError

from mnemo.context import RequestContext
from mnemo.errors import InvalidInput, NotFound, from_validation_errors, invalid_field
from mnemo.tools.rights import Rights, Runtime

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
    rights: Rights
    runtime: Runtime
    #: Whether a client may send the call again when it cannot know whether the first ran (mnemo.client.repeat).
    repeatable: bool

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

    def parse(self, payload: Any, *, from_attributes: bool = False) -> BaseModel:
        """The tool's request; ``from_attributes`` validates as Powertools validates a body parameter (it
        changes some of pydantic's messages), for the HTTP doors to word an error alike."""
        check_json(payload)
        try:
            return self.request.model_validate(payload, from_attributes=from_attributes)
        except ValidationError as error:
            raise from_validation_errors(error.errors(include_url=False)) from None

    def run(self, services: Services, context: RequestContext, request: BaseModel) -> BaseModel:
        return self.function(services, context, request)

    def invoke(self, services: Services, context: RequestContext, payload: Any) -> dict[str, Any]:
        """Validate a JSON-like payload, run the tool, and return the JSON-able response."""
        from mnemo.identity_claims import strip_identity_claims

        response = self.run(services, context, self.parse(strip_identity_claims(payload, context)))
        return response.model_dump(mode="json", by_alias=True)


# --------------------------------------------------- what JSON may carry ---
#: How deeply a tool's input may nest objects and arrays. Every parser and validator after this one
#: recurses, and a body nested thousands deep would exhaust the stack of one of them.
MAX_JSON_DEPTH = 64
_SURROGATE = re.compile("[\ud800-\udfff]")


class _DuplicateKeys(dict[str, Any]):
    """A JSON object that named some key more than once (the parser keeps the last value)."""

    duplicates: list[str]


class _TooLongInteger:
    """An integer literal longer than Python converts (sys.get_int_max_str_digits)."""


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    marked = _DuplicateKeys(pairs)
    seen: set[str] = set()
    marked.duplicates = []
    for key, _ in pairs:
        if key in seen:
            marked.duplicates.append(key)
        seen.add(key)
    return marked


def _json_integer(literal: str) -> int | _TooLongInteger:
    limit = sys.get_int_max_str_digits()
    return _TooLongInteger() if limit and len(literal.lstrip("-")) > limit else int(literal)


def parse_json_body(raw: str) -> Any:
    """A request body parsed as JSON, refusing what a lenient parser lets through (see ``check_json``).

    Python's parser accepts NaN and Infinity, keeps the last of duplicate keys,
    overflows ``1e999`` to infinity and raises other errors than ValueError on
    deep nesting or huge integers; each of these is INVALID_INPUT here.
    """
    try:
        payload = json.loads(raw, object_pairs_hook=_json_object, parse_int=_json_integer, parse_constant=float)
    except RecursionError:
        raise invalid_field("body", f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError:
        raise from_validation_errors([{"type": "json_invalid", "loc": ("body",)}]) from None
    check_json(payload)
    return payload


def check_json(payload: Any) -> None:
    """Refuse what no tool takes though a JSON parser may produce it; INVALID_INPUT names the field.

    Nesting deeper than MAX_JSON_DEPTH, a key given twice, a number that is not
    finite (NaN, Infinity, 1e999), an integer too long to convert, and strings
    or keys holding an unpaired UTF-16 surrogate ("\\ud800"), which no store
    can encode as UTF-8.
    """
    stack: list[tuple[Any, tuple[str, ...], int]] = [(payload, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_JSON_DEPTH:
                field = path[0] if path and isinstance(payload, dict) else "body"
                raise invalid_field(field, f"nested more than {MAX_JSON_DEPTH} levels deep")
            if isinstance(value, list):
                stack.extend((item, (*path, str(index)), depth + 1) for index, item in enumerate(value))
                continue
            if isinstance(value, _DuplicateKeys):
                raise invalid_field(_dotted((*path, value.duplicates[0])), "given more than once in the same object")
            for key, item in value.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    raise _unpaired(path, "a key")
                stack.append((item, (*path, str(key)), depth + 1))
        elif isinstance(value, str):
            if _SURROGATE.search(value):
                raise _unpaired(path, "the text")
        elif isinstance(value, float) and not math.isfinite(value):
            raise invalid_field(_dotted(path), "must be a finite number (JSON has no NaN or Infinity)")
        elif isinstance(value, _TooLongInteger):
            raise invalid_field(_dotted(path), f"an integer of more than {sys.get_int_max_str_digits()} digits")


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path) or "body"


def _unpaired(path: tuple[str, ...], where: str) -> InvalidInput:
    return invalid_field(
        _dotted(path), f"{where} holds an unpaired UTF-16 surrogate (\\ud800-\\udfff), which is not Unicode text"
    )


CATALOG: dict[str, Tool] = {}
#: The family modules, in the order the catalog (and everything generated from it) lists them.
FAMILIES = ("memory", "knowledge", "sync", "conversations", "learning", "topics", "files", "graph", "lifecycle")
#: Families served only when the experimental setting is on; listed after the others.
EXPERIMENTAL_FAMILIES = ("outline",)
_TRUE = ("1", "true", "yes", "on")


def experimental_enabled() -> bool:
    """Whether experimental tools are served: ``MNEMO_EXPERIMENTAL`` (``mnemo serve --experimental`` sets it;
    the template passes its ``ExperimentalTools`` parameter)."""
    return os.environ.get("MNEMO_EXPERIMENTAL", "").strip().lower() in _TRUE


def tool(
    family: str, *, rights: Rights, runtime: Runtime | None = None, repeatable: bool | None = None
) -> Callable[[ToolFunction], ToolFunction]:
    """Register the decorated function as a tool of ``family``.

    ``rights`` is everything the tool may do on AWS (its function's policies are generated from it);
    ``runtime`` what its function needs beyond the defaults; ``repeatable`` whether a client may send it
    again after an unknown outcome, by default when it only reads the records.
    """

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
            rights=rights,
            runtime=runtime or Runtime(),
            repeatable=not rights.writes_records if repeatable is None else repeatable,
        )
        return function

    return register


def load_catalog(experimental: bool | None = None) -> Mapping[str, Tool]:
    """The tools served: every family's, and the experimental families' when ``experimental`` (by default
    the setting) is on. Off, they are absent, whoever else imported their modules."""
    import importlib

    served = experimental_enabled() if experimental is None else experimental
    families = FAMILIES + EXPERIMENTAL_FAMILIES if served else FAMILIES
    for family in families:
        importlib.import_module(f"mnemo.tools.{family}")
    return {name: found for name, found in CATALOG.items() if served or found.family not in EXPERIMENTAL_FAMILIES}


def get_tool(name: str, family: str | None = None) -> Tool:
    """The served tool ``name``. ``family``, when the caller knows it (a tool's generated Lambda entry names
    it), is imported first, so a function loads its own family's models and domain alone. Otherwise the
    families are imported one at a time, in catalog order, until one registers it (a memory tool's, first
    in the order, alone). An unknown name loads the whole catalog, for the error's list of the available
    tools."""
    import importlib

    served = experimental_enabled()
    order: tuple[str, ...] = FAMILIES + EXPERIMENTAL_FAMILIES if served else FAMILIES
    if family is not None and family in order:  # a known family only: the name never becomes an arbitrary import
        order = (family, *(other for other in order if other != family))
    for candidate in order:
        found = CATALOG.get(name)
        if found is not None and (served or found.family not in EXPERIMENTAL_FAMILIES):
            return found
        importlib.import_module(f"mnemo.tools.{candidate}")
    catalog = load_catalog()
    found = catalog.get(name)
    if found is None:
        raise NotFound(f"Unknown tool '{name}'", {"field": "name", "tool": name, "available": sorted(catalog)})
    return found

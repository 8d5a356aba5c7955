"""Operator filters of memory_search and memory_list: their grammar, their meaning, and their index form.

docs/filters.md is the reference; in short, a filter is a JSON object:

* ``{"and": [f, ...]}``, ``{"or": [f, ...]}``, ``{"not": f}`` combine filters (non-empty lists);
* any other key names a field, and its value is a condition on it: a bare value (``eq``), a bare list
  (``in``; an empty one adds no condition, as ``tags: []`` always has), or an object of operators
  ``{"gte": 3, "lt": 9}``, ANDed;
* several keys in one object are ANDed; ``{}`` matches every memory.

Fields: ``metadata.<key>`` (a top-level key, verbatim, dots included), ``tags``, ``source`` (the same as
``metadata.source``), ``createdAt``, ``occurredAt``, ``expiresAt``. ``{"metadata": {key: condition}}`` is
the same as ``{"metadata.<key>": condition}`` (the filter shape from before operators).

Operators: ``eq``, ``ne``, ``in``, ``nin``, ``gt``, ``gte``, ``lt``, ``lte``, ``contains``, ``exists``,
and ``all`` (tags). Values are typed: a number (a bool is not one; numbers compare as float64), a bool, a
string, or a time: a string holding an ISO 8601 date and time with a zone (``Z`` or ``+hh:mm``), which
compares as the instant it names, whether it is an operand or a metadata value. A metadata value that is
a list matches when any element does; ``ne``/``nin`` are ``not eq``/``not in``, so a memory without the
field matches them. ``contains`` is a case-sensitive substring test on string values (case-insensitive on
tags, which compare lower-cased). ``exists`` tests the key's presence (``metadata.k: null`` is present).

Limits: objects nest at most ``MAX_DEPTH`` deep, a filter holds at most ``MAX_CONDITIONS`` operator
conditions, a list at most ``MAX_VALUES`` values, a string operand at most ``MAX_STRING`` characters and
a metadata key at most ``MAX_KEY``. Metadata strings longer than ``MAX_STRING`` never match ``eq``,
``in`` or ``contains`` (the index does not hold them). Every refusal is INVALID_INPUT whose
``details.field`` is the path of the offending part, e.g. ``filter.and[1].createdAt.gt``.

The index side: each memory's index document carries the keyword ``attrs`` (``attr_terms``): typed terms
``<field>|s|<string>``, ``<field>|n|<16 hex digits>`` (the float64, order-preserving), ``<field>|t|<UTC
instant as YYYY-MM-DDTHH:MM:SS.ffffffZ>``, ``<field>|b|true`` and ``<field>|e`` (present), ``|`` and
``\\`` escaped in the field. ``to_match`` compiles a filter into the ports' term-match algebra over
``attrs`` and ``tags`` (tags use the ``tags`` keyword every document already has), and ``matches``
evaluates it on a record: the records are the truth, so search checks every hit again with it.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemo.errors import InvalidInput
from mnemo.ports import AllOf, AnyOf, AnyTerm, Match, NoneOf, TermContains, TermRange

#: How deeply filter objects nest (the top one is 1; each and/or/not opens one more).
MAX_DEPTH = 5
#: The most operator conditions in one filter (a bare value or list counts one).
MAX_CONDITIONS = 50
#: The most values of one in/nin/all list.
MAX_VALUES = 100
#: The longest string operand, and the longest metadata string the index holds (longer ones never match).
MAX_STRING = 1024
#: The longest metadata key a filter may name (longer keys are not indexed).
MAX_KEY = 256
#: The index keyword holding the typed terms.
ATTRS = "attrs"
#: The record fields holding times.
TIME_FIELDS = ("createdAt", "occurredAt", "expiresAt")
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "exists", "all")
_RANGES = ("gt", "gte", "lt", "lte")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})")

#: A typed value: ("s", str), ("n", float), ("t", datetime in UTC) or ("b", bool).
Value = tuple[str, Any]


# ------------------------------------------------------------------ nodes ---
@dataclass(frozen=True)
class Condition:
    """One operator on one field. ``ne``/``nin`` are parsed as ``Not`` of ``eq``/``in``.

    ``values``: the typed operands (eq/in/all: each; a range: one; contains: one string; exists: none).
    ``raw``: eq/in operands as given (metadata equality also looks them up in the pre-operator keywords).
    """

    field: str
    op: str
    values: tuple[Value, ...] = ()
    present: bool = True
    raw: tuple[Any, ...] = ()


@dataclass(frozen=True)
class And:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    part: Node


Node = Condition | And | Or | Not
#: The filter that matches every memory.
EVERYTHING: Node = And(())


# ---------------------------------------------------------------- parsing ---
def request_filter(
    raw: dict[str, Any] | None, tags: list[str] | None = None, metadata: dict[str, Any] | None = None
) -> Node:
    """The filter of a request: ``filter`` ANDed with the top-level ``tags`` (any of) and ``metadata``.

    As before operators, top-level ``tags`` join a bare ``filter.tags`` list (one any-of) and top-level
    ``metadata`` is overridden key by key by a ``filter.metadata`` object.
    """
    merged = dict(raw or {})
    if tags and isinstance(merged.get("tags"), list):
        merged["tags"], tags = [*merged["tags"], *tags], None
    if metadata and isinstance(merged.get("metadata"), dict):
        merged["metadata"], metadata = {**metadata, **merged["metadata"]}, None
    parts = [parse_filter(merged)]
    budget = _Budget(limit=None)
    if tags:
        parts.append(_field("tags", list(tags), "tags", budget))
    for key, value in (metadata or {}).items():
        parts.append(_field(f"metadata.{key}", value, f"metadata.{key}", budget))
    return _and(parts)


def parse_filter(raw: Any, path: str = "filter") -> Node:
    """A filter's JSON parsed; INVALID_INPUT naming the path of what is wrong (see the module docstring)."""
    if raw is None:
        return EVERYTHING
    return _object(raw, path, 1, _Budget(limit=MAX_CONDITIONS))


@dataclass
class _Budget:
    limit: int | None
    used: int = 0

    def take(self, path: str) -> None:
        self.used += 1
        if self.limit is not None and self.used > self.limit:
            raise _invalid(path, f"a filter holds at most {self.limit} conditions")


def _invalid(path: str, message: str) -> InvalidInput:
    return InvalidInput(f"{path}: {message}", {"field": path})


def _and(parts: list[Node]) -> Node:
    parts = [part for part in parts if part != EVERYTHING]
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _object(raw: Any, path: str, depth: int, budget: _Budget) -> Node:
    if not isinstance(raw, dict):
        raise _invalid(path, "a filter is a JSON object")
    if depth > MAX_DEPTH:
        raise _invalid(path, f"filters nest at most {MAX_DEPTH} deep")
    parts: list[Node] = []
    for key, value in raw.items():
        here = f"{path}.{key}"
        if key in ("and", "or"):
            if not isinstance(value, list) or not value:
                raise _invalid(here, f"{key} takes a non-empty list of filters")
            children = tuple(_object(child, f"{here}[{i}]", depth + 1, budget) for i, child in enumerate(value))
            parts.append(And(children) if key == "and" else Or(children))
        elif key == "not":
            parts.append(Not(_object(value, here, depth + 1, budget)))
        elif key == "metadata" and (value is None or isinstance(value, dict)):
            for name, condition in (value or {}).items():
                parts.append(_field(f"metadata.{name}", condition, f"{here}.{name}", budget))
        elif key == "tags" and value is None:
            continue  # the pre-operator shape allowed a null
        else:
            parts.append(_field(key, value, here, budget))
    return _and(parts)


def _field(name: str, value: Any, path: str, budget: _Budget) -> Node:
    field = _resolve(name, path)
    if isinstance(value, dict):
        if not value:
            raise _invalid(path, "an operator object needs at least one operator")
        return _and([_operator(field, op, operand, f"{path}.{op}", budget) for op, operand in value.items()])
    if isinstance(value, list):
        return _operator(field, "in", value, path, budget) if value else EVERYTHING
    return _operator(field, "eq", value, path, budget)


def _resolve(name: str, path: str) -> str:
    if name == "source":
        return "metadata.source"
    if name == "tags" or name in TIME_FIELDS:
        return name
    if name.startswith("metadata."):
        key = name.removeprefix("metadata.")
        if not key:
            raise _invalid(path, "metadata. needs a key after the dot")
        if len(key) > MAX_KEY:
            raise _invalid(path, f"a metadata key has at most {MAX_KEY} characters")
        return name
    raise _invalid(path, "unknown field; use metadata.<key>, tags, source, createdAt, occurredAt or expiresAt")


def _operator(field: str, op: str, operand: Any, path: str, budget: _Budget) -> Node:
    if op not in OPERATORS:
        raise _invalid(path, f"unknown operator; use one of {', '.join(OPERATORS)}")
    budget.take(path)
    if op == "exists":
        if not isinstance(operand, bool):
            raise _invalid(path, "exists takes true or false")
        condition = Condition(field, "exists")
        return condition if operand else Not(condition)
    if op == "contains":
        if field in TIME_FIELDS:
            raise _invalid(path, f"{field} takes no contains (it is a time)")
        text = _string(operand, path)
        return Condition(field, "contains", (("s", text.lower() if field == "tags" else text),))
    if op in _RANGES:
        if field == "tags":
            raise _invalid(path, f"tags take no {op} (they are strings)")
        return Condition(field, op, (_ordered(field, operand, path),))
    if op in ("in", "nin", "all"):
        if op == "all" and field != "tags":
            raise _invalid(path, "all applies to tags only")
        if not isinstance(operand, list):
            raise _invalid(path, f"{op} takes a list")
        if len(operand) > MAX_VALUES:
            raise _invalid(path, f"a list holds at most {MAX_VALUES} values")
        values = tuple(_equatable(field, item, f"{path}[{i}]") for i, item in enumerate(operand))
        condition = Condition(field, "all" if op == "all" else "in", values, raw=tuple(operand))
        return Not(condition) if op == "nin" else condition
    condition = Condition(field, "in", (_equatable(field, operand, path),), raw=(operand,))
    return Not(condition) if op == "ne" else condition


def _string(operand: Any, path: str) -> str:
    if not isinstance(operand, str):
        raise _invalid(path, "takes a string")
    if len(operand) > MAX_STRING:
        raise _invalid(path, f"a string operand has at most {MAX_STRING} characters")
    return operand


def _equatable(field: str, operand: Any, path: str) -> Value:
    """An eq/in/all operand, typed for the field."""
    if field == "tags":
        tag = _string(operand, path).strip().lower()
        if not tag:
            raise _invalid(path, "a tag is not blank")
        return ("s", tag)
    if field in TIME_FIELDS:
        return ("t", _time_operand(field, operand, path))
    if isinstance(operand, bool):
        return ("b", operand)
    if isinstance(operand, int | float):
        return ("n", _number(operand, path))
    if isinstance(operand, str):
        moment = parse_time(_string(operand, path))
        return ("t", moment) if moment is not None else ("s", operand)
    raise _invalid(path, "takes a string, a number or a bool")


def _ordered(field: str, operand: Any, path: str) -> Value:
    """A gt/gte/lt/lte operand: a number or a time (only a time on the time fields)."""
    if field in TIME_FIELDS:
        return ("t", _time_operand(field, operand, path))
    if isinstance(operand, int | float) and not isinstance(operand, bool):
        return ("n", _number(operand, path))
    if isinstance(operand, str):
        moment = parse_time(operand)
        if moment is not None:
            return ("t", moment)
    raise _invalid(path, "takes a number or an ISO 8601 time with a zone")


def _number(operand: int | float, path: str) -> float:
    try:
        number = float(operand)
    except OverflowError:
        raise _invalid(path, "the number is too large") from None
    if not math.isfinite(number):
        raise _invalid(path, "takes a finite number")
    return number


def _time_operand(field: str, operand: Any, path: str) -> datetime:
    moment = parse_time(operand) if isinstance(operand, str) else None
    if moment is None:
        raise _invalid(path, f"{field} compares with an ISO 8601 time with a zone, like 2026-01-01T00:00:00Z")
    return moment


def parse_time(text: str) -> datetime | None:
    """The UTC instant an ISO 8601 date and time with a zone names, or None (for any other string)."""
    if len(text) > 40 or not _TIME.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


# ----------------------------------------------------------------- values ---
def _scalar(value: Any) -> list[Value]:
    """The typed values of one metadata scalar (a time string is also a string)."""
    if isinstance(value, bool):
        return [("b", value)]
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            return []
        return [("n", number)] if math.isfinite(number) else []
    if isinstance(value, str):
        found: list[Value] = [("s", value)] if len(value) <= MAX_STRING else []
        moment = parse_time(value)
        return [*found, ("t", moment)] if moment is not None else found
    return []


def field_values(field: str, data: dict[str, Any]) -> tuple[bool, list[Value]]:
    """Whether a record has the field, and its typed values (a list's elements each)."""
    if field == "tags":
        tags = [("s", str(tag).lower()) for tag in data.get("tags") or []]
        return bool(tags), tags
    if field in TIME_FIELDS:
        raw = data.get(field)
        moment = parse_time(raw) if isinstance(raw, str) else None
        return raw is not None, [("t", moment)] if moment is not None else []
    metadata = data.get("metadata") or {}
    key = field.removeprefix("metadata.")
    if key not in metadata:
        return False, []
    value = metadata[key]
    items = value if isinstance(value, list) else [value]
    return True, [typed for item in items for typed in _scalar(item)]


# -------------------------------------------------------------- evaluator ---
def matches(node: Node, data: dict[str, Any]) -> bool:
    """Whether a memory record (its body) passes the filter."""
    if isinstance(node, And):
        return all(matches(part, data) for part in node.parts)
    if isinstance(node, Or):
        return any(matches(part, data) for part in node.parts)
    if isinstance(node, Not):
        return not matches(node.part, data)
    present, values = field_values(node.field, data)
    if node.op == "exists":
        return present
    if node.op == "in":
        return any(value in node.values for value in values)
    if node.op == "all":
        return all(value in values for value in node.values)
    if node.op == "contains":
        infix = node.values[0][1]
        return any(kind == "s" and infix in text for kind, text in values)
    kind, bound = node.values[0]
    return any(have == kind and _compare(node.op, value, bound) for have, value in values)


def _compare(op: str, value: Any, bound: Any) -> bool:
    if op == "gt":
        return bool(value > bound)
    if op == "gte":
        return bool(value >= bound)
    if op == "lt":
        return bool(value < bound)
    return bool(value <= bound)


# ------------------------------------------------------------- index form ---
def _escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace("|", "\\|")


def _encode(value: Value) -> str:
    """A typed value as the tail of its term: order-preserving for numbers and times."""
    kind, raw = value
    if kind == "n":
        bits = struct.unpack(">Q", struct.pack(">d", raw + 0.0))[0]  # + 0.0: -0.0 is 0.0
        bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
        return f"{bits:016x}"
    if kind == "t":
        return str(raw.replace(tzinfo=None).isoformat(timespec="microseconds")) + "Z"
    if kind == "b":
        return "true" if raw else "false"
    return str(raw)


def _term(field: str, value: Value) -> str:
    return f"{_escape(field)}|{value[0]}|{_encode(value)}"


def attr_terms(data: dict[str, Any]) -> list[str]:
    """A memory record's ``attrs`` keyword: the typed terms of its metadata and times, sorted, each once."""
    terms: set[str] = set()
    fields = [*TIME_FIELDS, *(f"metadata.{key}" for key in (data.get("metadata") or {}) if len(key) <= MAX_KEY)]
    for field in fields:
        present, values = field_values(field, data)
        if present:
            terms.add(f"{_escape(field)}|e")
        terms.update(_term(field, value) for value in values)
    return sorted(terms)


def to_match(node: Node) -> Match | None:
    """The filter in the index's term-match algebra (``mnemo.ports.Match``); None when it matches everything."""
    if node == EVERYTHING:
        return None
    return _match(node)


def _match(node: Node) -> Match:
    if isinstance(node, And):
        return AllOf(tuple(_match(part) for part in node.parts))
    if isinstance(node, Or):
        return AnyOf(tuple(_match(part) for part in node.parts))
    if isinstance(node, Not):
        return NoneOf((_match(node.part),))
    field = node.field
    if field == "tags":
        if node.op == "exists":
            return TermRange("tags", "")
        if node.op == "contains":
            return TermContains("tags", "", node.values[0][1])
        if node.op == "all":
            return AllOf(tuple(AnyTerm("tags", (value[1],)) for value in node.values))
        return AnyTerm("tags", tuple(value[1] for value in node.values))
    if node.op == "exists":
        return AnyTerm(ATTRS, (f"{_escape(field)}|e",))
    if node.op == "contains":
        return TermContains(ATTRS, f"{_escape(field)}|s|", node.values[0][1])
    if node.op == "in":
        typed = AnyTerm(ATTRS, tuple(_term(field, value) for value in node.values))
        if not field.startswith("metadata."):
            return typed
        # Documents indexed before operators hold a scalar's JSON under ``meta.<key>``
        # (mnemo.memory.indexing.meta_keywords): equality finds them too, before a reindex.
        legacy = tuple(json.dumps(raw) for raw in node.raw if isinstance(raw, str | int | float | bool))
        return AnyOf((typed, AnyTerm(f"meta.{field.removeprefix('metadata.')}", legacy))) if legacy else typed
    kind = node.values[0][0]
    bound = _encode(node.values[0])
    prefix = f"{_escape(field)}|{kind}|"
    if node.op in ("gt", "gte"):
        return TermRange(ATTRS, prefix, low=bound, include_low=node.op == "gte")
    return TermRange(ATTRS, prefix, high=bound, include_high=node.op == "lte")

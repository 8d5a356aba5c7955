"""Strict input over real HTTP: a number field takes no boolean (or text), a boolean field no number, and an
entity name no character that shows nothing. Every refusal is INVALID_INPUT naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from helpers import http_request, local_server
from mnemo.runtime import Services
from mnemo.tools.registry import load_catalog
from mnemo.tools.schema import input_schema

CATALOG = load_catalog(experimental=True)


def _kinds(prop: dict[str, Any]) -> set[str]:
    options = prop.get("anyOf", [prop])
    return {str(option.get("type")) for option in options}


def _fields(kind: str) -> list[tuple[str, str]]:
    return [
        (tool.name, field)
        for tool in CATALOG.values()
        for field, prop in input_schema(tool).get("properties", {}).items()
        if kind in _kinds(prop)
    ]


NUMBER_FIELDS = _fields("integer") + _fields("number")
BOOLEAN_FIELDS = _fields("boolean")
#: Zero-width, joiners, word joiner, BOM, soft hyphen, bidi marks, embeddings, overrides and isolates,
#: a Hangul filler and a line separator: each makes a name that looks like another.
HIDDEN = [
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u200f", "\u061c",
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
    "\u3164", "\u2028", "\u0007",
]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from helpers import make_services
    from mnemo.runtime import set_services

    services: Services = make_services(tmp_path_factory.mktemp("strict"))
    set_services(services)
    with pytest.MonkeyPatch.context() as patch, local_server(services) as url:
        patch.setenv("MNEMO_EXPERIMENTAL", "1")  # the outline tools too
        yield url


def call(server: str, tool: str, body: dict[str, Any]) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", "X-Mnemo-Roles": "writer", "X-Mnemo-Project": "p1"}
    return http_request(server, "POST", f"/v1/tools/{tool}", body, headers)


def _usage(tool: str) -> dict[str, Any]:
    return dict(dict(CATALOG[tool].examples())["Usage"])


def test_the_catalog_has_number_and_boolean_fields() -> None:
    assert len(NUMBER_FIELDS) > 30
    assert len(BOOLEAN_FIELDS) > 10
    assert ("file_read", "limit") in NUMBER_FIELDS
    assert ("memory_search", "threshold") in NUMBER_FIELDS
    assert ("add_execution", "success") in BOOLEAN_FIELDS


@pytest.mark.parametrize(("tool", "field"), NUMBER_FIELDS, ids=lambda value: str(value))
@pytest.mark.parametrize("value", [True, False, "5"], ids=["true", "false", "text"])
def test_a_number_field_refuses_booleans_and_text(server: str, tool: str, field: str, value: Any) -> None:
    status, answer = call(server, tool, {**_usage(tool), field: value})
    assert status == 400, answer
    assert answer["errorCode"] == "INVALID_INPUT", answer
    assert answer["details"]["field"] == field, answer


@pytest.mark.parametrize(("tool", "field"), BOOLEAN_FIELDS, ids=lambda value: str(value))
@pytest.mark.parametrize("value", [0, 1, "true"], ids=["0", "1", "text"])
def test_a_boolean_field_refuses_numbers_and_text(server: str, tool: str, field: str, value: Any) -> None:
    status, answer = call(server, tool, {**_usage(tool), field: value})
    assert status == 400, answer
    assert answer["errorCode"] == "INVALID_INPUT", answer
    assert answer["details"]["field"] == field, answer


def test_numbers_and_booleans_still_pass(server: str) -> None:
    status, answer = call(server, "memory_search", {"query": "x", "limit": 3, "threshold": 1, "includeGraph": False})
    assert status == 200, answer
    status, answer = call(server, "memory_search", {"query": "x", "limit": 3.0, "threshold": 0.25})
    assert status == 200, answer


LINK = {"predicate": "works_at", "layer": "project"}


@pytest.mark.parametrize("char", HIDDEN, ids=lambda char: f"U+{ord(char):04X}")
def test_graph_names_refuse_invisible_characters(server: str, char: str) -> None:
    for field, body in (
        ("subject", {**LINK, "subject": f"Al{char}ice", "object": "Acme"}),
        ("object", {**LINK, "subject": "Alice", "object": f"Ac{char}me"}),
    ):
        status, answer = call(server, "add_memory_link", body)
        assert status == 400, answer
        assert answer["details"]["field"] == field, answer
    status, answer = call(server, "get_memory_object", {"name": f"Ali{char}ce", "layer": "project"})
    assert status == 400, answer
    assert answer["details"]["field"] == "name", answer
    status, answer = call(
        server, "update_memory_object", {"name": "Alice", "aliases": [f"A{char}b"], "layer": "project"}
    )
    assert status == 400, answer
    assert answer["details"]["field"].startswith("aliases"), answer


def test_look_alike_names_are_no_longer_other_entities(server: str) -> None:
    status, first = call(server, "add_memory_link", {**LINK, "subject": "Alice", "object": "Acme", "exclusive": True})
    assert status == 200, first
    status, _ = call(server, "add_memory_link", {**LINK, "subject": "Al\u200bice", "object": "Initech"})
    assert status == 400
    status, found = call(server, "get_memory_object", {"name": "Alice", "layer": "project"})
    assert status == 200, found
    assert [fact["object"] for fact in found["facts"]] == ["Acme"], found

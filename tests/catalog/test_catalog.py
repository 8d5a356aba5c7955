"""The catalog and what is generated from it: schemas, OpenAPI, docs, docstring examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi

from helpers import ctx
from knowledge_helpers import push_tree
from mnemo.errors import MnemoError
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import CATALOG, EXPERIMENTAL_FAMILIES, FAMILIES, load_catalog
from mnemo.tools.schema import ERROR_ENVELOPE_SCHEMA, input_schema, openapi_document, output_schema, tool_listing
from mnemo_codegen.docs import render_tools_markdown

ROOT = Path(__file__).resolve().parents[2]
TOOLS = list(load_catalog().values())
#: The experimental tools too: their schemas and specs meet the same bar (their examples run in tests/outline).
EVERY_TOOL = list(load_catalog(experimental=True).values())


def test_every_family_serves_tools_and_every_tool_belongs_to_a_family() -> None:
    """Each declared family registers at least one tool, each tool is registered under its own name in a
    declared family, and the experimental families' tools are served only with the setting on."""
    assert {tool.family for tool in EVERY_TOOL} == set(FAMILIES + EXPERIMENTAL_FAMILIES)
    assert {tool.family for tool in load_catalog(experimental=False).values()} == set(FAMILIES)
    assert all(CATALOG[tool.name] is tool for tool in EVERY_TOOL)


@pytest.mark.parametrize("tool", EVERY_TOOL, ids=lambda t: t.name)
def test_schemas_are_valid_2020_12(tool: Any) -> None:
    for schema in (input_schema(tool), output_schema(tool)):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)
    Draft202012Validator.check_schema(ERROR_ENVELOPE_SCHEMA)


@pytest.mark.parametrize("tool", EVERY_TOOL, ids=lambda t: t.name)
def test_spec_has_every_required_section(tool: Any) -> None:
    assert tool.spec.lstrip().startswith("[SPECIFICATION]")
    for section in (f"Tool exposure: `{tool.name}`", "**Usage:**", "**Returns:**", "**Errors:**", "@see "):
        assert section in tool.spec, f"{tool.name} lacks {section}"
    assert tool.description
    assert "[SPECIFICATION]" not in tool.description


@pytest.mark.parametrize("tool", EVERY_TOOL, ids=lambda t: t.name)
def test_docstring_examples_match_the_schemas(tool: Any) -> None:
    examples = dict(tool.examples())
    assert {"Usage", "Returns"} <= set(examples)
    Draft202012Validator(input_schema(tool)).validate(examples["Usage"])
    Draft202012Validator(output_schema(tool)).validate(examples["Returns"])
    tool.request.model_validate(examples["Usage"])
    tool.response.model_validate(examples["Returns"])


def test_docstring_usage_examples_run_for_real(services: Services) -> None:
    """Each Usage example is called in catalog order on one stack (the example knowledge pushed, not yet
    synced, so that sync_now has work); ids flow from add to delete."""
    context = ctx(project="p1", org="engineering", roles=("writer",))
    push_tree(services, context.tenant)
    services.sync.sync(context.tenant, SyncNowInput(layers=["org"]))
    last_memory_id: str | None = None
    last_fact_id: str | None = None
    for tool in TOOLS:
        payload = dict(tool.examples())["Usage"]
        returns = dict(tool.examples())["Returns"]
        if "memoryId" in payload and last_memory_id:
            payload = {**payload, "memoryId": last_memory_id}
        if "factId" in payload and last_fact_id:
            payload = {**payload, "factId": last_fact_id}
        try:
            result = tool.invoke(services, context, payload)
        except MnemoError as error:  # only an error the spec documents is acceptable
            assert error.code in tool.spec.split("**Errors:**", 1)[1], (tool.name, error.code)
            continue
        Draft202012Validator(output_schema(tool)).validate(result)
        assert set(returns) <= set(result), f"{tool.name} answers without {set(returns) - set(result)}"
        last_memory_id = result.get("memoryId", last_memory_id)
        last_fact_id = result.get("factId", last_fact_id)
        if tool.name == "memory_search":
            assert result["results"], "the search example should find the memory the add example stored"
        if tool.name == "memory_delete":
            assert result["memoryId"] == last_memory_id
        if tool.name == "knowledge_query":
            assert result["items"][0]["id"] == returns["items"][0]["id"]
        if tool.name == "knowledge_check":
            assert result["violations"] == returns["violations"]
            assert result["passed"] is False
        if tool.name == "knowledge_show":
            assert result["item"]["title"] == returns["item"]["title"]
            assert result["history"]
        if tool.name == "sync_now":
            assert result["result"]["added"] > 0
            assert result["result"]["failures"] == 0
        if tool.name == "graph_search":
            assert result["facts"][0]["object"] == "Acme", "asOf 2025 should find the fact the link example added"
        if tool.name == "invalidate_memory_link":
            assert result["fact"]["status"] == "invalid"
            assert result["alreadyInvalid"] is False
        if tool.name == "delete_memory_object":
            assert result["deleted"] is False, "the example is a preview"
            assert result["confirmationToken"], "the example is a preview"
        if tool.name == "sync_status":
            assert result["healthy"] is True
            assert result["stats"]["totalSyncs"] == 2


def test_openapi_document_is_valid_openapi_30() -> None:
    document = openapi_document(load_catalog(), server_url="http://127.0.0.1:8765")
    assert document["openapi"].startswith("3.0.")
    validate_openapi(document)
    for tool in TOOLS:
        operation = document["paths"][f"/v1/tools/{tool.name}"]["post"]
        assert operation["operationId"] == tool.name
        assert {"200", "400", "404"} <= set(operation["responses"])


def test_openapi_has_no_2020_12_only_constructs() -> None:
    text = str(openapi_document(load_catalog()))
    for construct in ("'$defs'", "'const'", "{'type': 'null'}", "'$schema'"):
        assert construct not in text


def test_tool_listing_carries_name_description_and_schemas() -> None:
    listing = tool_listing(load_catalog())
    assert [entry["name"] for entry in listing] == [tool.name for tool in TOOLS]
    for entry in listing:
        assert entry["description"]
        assert entry["inputSchema"]["type"] == "object"
        assert entry["outputSchema"]["type"] == "object"


def test_docs_tools_md_is_generated_and_current() -> None:
    committed = (ROOT / "docs" / "tools.md").read_text()
    assert committed == render_tools_markdown(load_catalog(experimental=True)), (
        "run `make docs` to regenerate docs/tools.md"
    )

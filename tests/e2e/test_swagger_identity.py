"""/docs can set the X-Mnemo-* identity headers: the local server's OpenAPI declares them, the deployed one does not.

Swagger UI sends an apiKey-in-header security scheme's value under the scheme's ``name`` on every operation
whose requirements list it; the requests here are built the same way, from the served document alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate as validate_openapi

from helpers import http_request, local_server
from mnemo.identity_claims import IDENTITY_KEYS
from mnemo.runtime import Services

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with local_server(services) as url:
        yield url


def served(base_url: str) -> dict[str, Any]:
    status, document = http_request(base_url, "GET", "/v1/openapi.json")
    assert status == 200
    return document


def swagger_headers(document: dict[str, Any], operation: dict[str, Any], authorized: dict[str, str]) -> dict[str, str]:
    """The headers Swagger UI adds for the schemes authorised in its dialog (swagger-client's applySecurities)."""
    schemes = document["components"]["securitySchemes"]
    headers: dict[str, str] = {}
    for requirement in operation.get("security", document.get("security", [])):
        for scheme in requirement:
            definition = schemes[scheme]
            if scheme in authorized and definition["type"] == "apiKey" and definition["in"] == "header":
                headers[definition["name"]] = authorized[scheme]
    return headers


def test_the_served_openapi_validates_and_declares_every_identity_header(base_url: str) -> None:
    document = served(base_url)
    validate_openapi(document)
    schemes = document["components"]["securitySchemes"]
    declared = {s["name"] for s in schemes.values() if s["type"] == "apiKey" and s["in"] == "header"}
    assert declared == {f"X-Mnemo-{key.title()}" for key in (*IDENTITY_KEYS, "roles")}
    assert {} in document["security"], "every header has a default, so none is required"
    assert any(set(requirement) == set(schemes) for requirement in document["security"])


def test_requests_built_from_the_served_document_carry_the_identity(base_url: str) -> None:
    document = served(base_url)
    by_header = {scheme["name"]: name for name, scheme in document["components"]["securitySchemes"].items()}
    add = document["paths"]["/v1/tools/memory_add"]["post"]
    search = document["paths"]["/v1/tools/memory_search"]["post"]
    alice = {by_header["X-Mnemo-Tenant"]: "acme", by_header["X-Mnemo-User"]: "alice"}
    bob = {by_header["X-Mnemo-Tenant"]: "acme", by_header["X-Mnemo-User"]: "bob"}

    headers = swagger_headers(document, add, alice)
    assert headers == {"X-Mnemo-Tenant": "acme", "X-Mnemo-User": "alice"}
    json_headers = {"Content-Type": "application/json"}
    memory = {"content": "Alice likes tea", "layer": "user"}
    status, added = http_request(base_url, "POST", "/v1/tools/memory_add", memory, json_headers | headers)
    assert status == 200, added
    query = {"query": "tea", "layers": ["user"]}
    status, found = http_request(
        base_url, "POST", "/v1/tools/memory_search", query, json_headers | swagger_headers(document, search, alice)
    )
    assert status == 200
    assert [hit["memoryId"] for hit in found["results"]] == [added["memoryId"]]
    status, other = http_request(
        base_url, "POST", "/v1/tools/memory_search", query, json_headers | swagger_headers(document, search, bob)
    )
    assert status == 200, "the header set in the dialog is the identity the server used"
    assert other["results"] == [], "the header set in the dialog is the identity the server used"


def test_docs_embeds_the_document_with_the_schemes_and_keeps_the_authorisation(base_url: str) -> None:
    status, page = http_request(base_url, "GET", "/docs")
    assert status == 200
    match = re.search(r"^\s*spec: (\{.*\}),$", page, re.MULTILINE)
    assert match, "the page embeds the OpenAPI document"
    embedded = json.loads(match.group(1))
    assert embedded["components"]["securitySchemes"] == served(base_url)["components"]["securitySchemes"]
    assert re.search(r"persistAuthorization:\s*true", page)


def test_the_api_gateway_openapi_does_not_advertise_the_headers(tmp_path: Path) -> None:
    output = tmp_path / "openapi.json"
    subprocess.run(
        [sys.executable, "-m", "mnemo.cli", "openapi", "--output", str(output)], check=True, cwd=ROOT, timeout=120
    )
    text = output.read_text()
    validate_openapi(json.loads(text))
    assert "x-mnemo" not in text.lower()
    assert "securitySchemes" not in text
    template = (ROOT / "template.yaml").read_text()
    body = template.split("DefinitionBody:", 1)[1].split("\n  # ---", 1)[0]
    assert "x-mnemo" not in body.lower(), "the deployed API keeps its own auth"

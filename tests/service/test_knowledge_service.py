"""knowledge_query, knowledge_show and knowledge_check over the synced example repository."""

from __future__ import annotations

import json
from typing import Any

import pytest

from helpers import ctx
from knowledge_helpers import doc, push_tree
from mnemo.errors import InvalidInput, NotFound
from mnemo.knowledge.models import (
    KnowledgeCheckInput,
    KnowledgeQueryInput,
    KnowledgeShowInput,
)
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput

TENANT = "acme"
ENGINEER = ctx(tenant=TENANT, org="engineering", team="payments", project="checkout-api")
ADR_042 = "adr-042-database-selection"
MYSQL_RULE = {"operator": "must_not_use", "target": "dependency", "pattern": "mysql|mysql2|mariadb"}
MYSQL_MESSAGE = "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead."


@pytest.fixture
def synced(services: Services) -> Services:
    push_tree(services, TENANT)
    assert services.sync.sync(TENANT, SyncNowInput()).result.failures == 0
    return services


def check(services: Services, context: Any = ENGINEER, **payload: Any) -> dict[str, Any]:
    request = KnowledgeCheckInput.model_validate(payload)
    return services.knowledge.check(context, request).model_dump(mode="json", by_alias=True)


# -------------------------------------------------------------------- query ---
def test_query_finds_adr_042_for_database_selection(synced: Services) -> None:
    found = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(query="database selection", type="adr"))
    assert found.items
    assert found.items[0].id == ADR_042
    top = found.items[0]
    assert (top.type, top.layer, top.status, top.has_constraints) == ("adr", "org", "accepted", True)
    assert top.title == "Database Selection for New Services"
    assert top.summary == "Use PostgreSQL for all new services requiring relational data"
    assert all(item.type == "adr" and item.status == "accepted" for item in found.items)


def test_query_filters_by_type_layer_tags_and_status(synced: Services) -> None:
    everything = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(limit=100))
    assert everything.searched_layers == ["project", "team", "org", "company"]
    assert {item.status for item in everything.items} == {"accepted"}
    policies = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(type="policy", limit=100))
    assert policies.items
    assert {item.type for item in policies.items} == {"policy"}
    company = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(layer="company", limit=100))
    assert company.searched_layers == ["company"]
    assert {item.layer for item in company.items} == {"company"}
    tagged = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(tags=["DATABASE"], limit=100))
    assert ADR_042 in [item.id for item in tagged.items]
    assert all("database" in [t.lower() for t in item.tags] for item in tagged.items)
    drafts = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(status=["draft"]))
    assert [item.id for item in drafts.items] == ["pattern-payment-retries"]
    superseded = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(status=["superseded"], query="message queue"))
    assert [item.id for item in superseded.items] == ["adr-017-message-queue"]


def test_limit_and_total_count(synced: Services) -> None:
    page = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(limit=2))
    assert len(page.items) == 2
    assert page.total_count > 2


def test_a_caller_sees_only_the_layers_its_identity_names(synced: Services) -> None:
    outsider = ctx(tenant=TENANT, org="marketing")
    seen = synced.knowledge.query(outsider, KnowledgeQueryInput(limit=100))
    assert seen.searched_layers == ["org", "company"]
    assert {item.layer for item in seen.items} == {"company"}
    assert synced.knowledge.query(outsider, KnowledgeQueryInput(query="database selection")).items == []
    with pytest.raises(NotFound) as raised:
        synced.knowledge.show(outsider, KnowledgeShowInput(id=ADR_042))
    assert raised.value.details["searchedLayers"] == ["org", "company"]
    assert raised.value.details["requestedId"] == ADR_042
    # The org's constraints do not apply to someone outside it.
    assert check(synced, outsider, dependencies=[{"name": "mysql2"}])["passed"] is True


def test_the_most_specific_layer_wins_for_one_id(synced: Services) -> None:
    override = doc(
        ADR_042,
        kind="adr",
        title="Checkout keeps MySQL",
        summary="The checkout API may use MySQL until its migration",
        extra="tags: [database]\n",
    )
    synced.repository.push(TENANT, f"projects/checkout-api/{ADR_042}.md", override, author="a", message="m")
    assert synced.sync.sync(TENANT, SyncNowInput()).result.added == 1
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042))
    assert shown.item is not None
    assert shown.item.layer == "project"
    assert shown.item.title == "Checkout keeps MySQL"
    listed = [i for i in synced.knowledge.query(ENGINEER, KnowledgeQueryInput(limit=100)).items if i.id == ADR_042]
    assert [(i.layer, i.title) for i in listed] == [("project", "Checkout keeps MySQL")]
    # The project's item overrides the org's, constraints included.
    assert check(synced, dependencies=[{"name": "mysql2"}])["passed"] is True
    # Someone outside the project still gets the org's ADR.
    org_only = ctx(tenant=TENANT, org="engineering")
    assert check(synced, org_only, dependencies=[{"name": "mysql2"}])["passed"] is False


# --------------------------------------------------------------------- show ---
def test_show_returns_content_constraints_metadata_and_history(synced: Services) -> None:
    path = f"orgs/engineering/{ADR_042}.md"
    blob = synced.repository.read(TENANT, path)
    assert blob is not None
    synced.repository.push(TENANT, path, blob.content + b"\nAddendum.\n", author="dana", message="Add an addendum")
    synced.sync.sync(TENANT, SyncNowInput())
    shown = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042, include_history=True))
    item = shown.item
    assert item is not None
    assert item.content.startswith("# ADR-042")
    assert item.content.endswith("Addendum.")
    assert item.severity == "block"
    assert item.metadata["number"] == 42
    assert item.created_at == "2023-03-14"
    assert item.updated_at
    assert item.constraints is not None
    assert [c.model_dump(include={"operator", "target", "pattern"}) for c in item.constraints] == [MYSQL_RULE]
    assert shown.history is not None
    assert [(h.author, h.message) for h in shown.history] == [("dana", "Add an addendum"), ("tester", "initial import")]
    assert shown.history[0].version != shown.history[1].version

    bare = synced.knowledge.show(ENGINEER, KnowledgeShowInput(id=ADR_042, include_constraints=False))
    assert bare.item is not None
    assert bare.item.constraints is None
    assert bare.history is None


def test_show_unknown_id_names_the_searched_layers(synced: Services) -> None:
    with pytest.raises(NotFound) as raised:
        synced.knowledge.show(ENGINEER, KnowledgeShowInput(id="adr-999"))
    envelope = raised.value.envelope()
    assert envelope["details"] == {
        "field": "id",
        "requestedId": "adr-999",
        "searchedLayers": ["project", "team", "org", "company"],
    }
    assert envelope["message"] == "Knowledge item 'adr-999' not found"


# -------------------------------------------------------------------- check ---
def test_check_the_specification_example(synced: Services) -> None:
    result = check(synced, dependencies=[{"name": "mysql2", "version": "3.0.0"}])
    assert result["passed"] is False
    assert result["summary"] == {"info": 0, "warn": 0, "block": 1}
    (violation,) = result["violations"]
    assert violation["knowledgeItemId"] == ADR_042
    assert violation["knowledgeItemTitle"] == "Database Selection for New Services"
    assert violation["constraint"] == MYSQL_RULE
    assert violation["severity"] == "block"
    assert violation["message"] == MYSQL_MESSAGE
    assert violation.get("location") is None


def test_check_finds_mysql2_inside_a_package_json(synced: Services) -> None:
    manifest = json.dumps({"name": "svc", "dependencies": {"express": "^4.19.0", "mysql2": "^3.0.0"}}, indent=2)
    result = check(synced, files=[{"path": "package.json", "content": manifest}])
    blocks = [v for v in result["violations"] if v["severity"] == "block"]
    assert result["passed"] is False
    assert len(blocks) == 1
    assert blocks[0]["knowledgeItemId"] == ADR_042
    assert blocks[0]["constraint"] == MYSQL_RULE
    line = manifest.splitlines().index('    "mysql2": "^3.0.0"') + 1
    assert blocks[0]["location"] == {"file": "package.json", "line": line}


def test_a_clean_change_passes(synced: Services) -> None:
    result = check(synced, dependencies=[{"name": "psycopg", "version": "3.2.0"}])
    assert result["passed"] is True
    assert result["violations"] == []
    assert result["summary"]["block"] == 0
    assert ADR_042 in result["checkedItems"]


def test_min_severity_filters_what_is_reported(synced: Services) -> None:
    files = [{"path": "src/app.py", "content": "import pickle\n"}]
    warned = check(synced, files=files)
    assert {v["severity"] for v in warned["violations"]} == {"warn"}
    assert warned["passed"] is True
    everything = check(synced, files=files, minSeverity="info")
    assert {v["severity"] for v in everything["violations"]} == {"info", "warn"}
    assert everything["summary"]["info"] >= 1
    assert everything["summary"]["warn"] == warned["summary"]["warn"]
    blocks_only = check(synced, files=files, minSeverity="block")
    assert blocks_only["violations"] == []
    assert blocks_only["summary"] == {"info": 0, "warn": 0, "block": 0}


def test_only_named_items_apply_when_asked(synced: Services) -> None:
    files = [{"path": "src/app.py", "content": "import pickle\n"}]
    named = check(synced, files=files, dependencies=[{"name": "mysql2"}], knowledgeItemIds=[ADR_042])
    assert named["checkedItems"] == [ADR_042]
    assert [v["knowledgeItemId"] for v in named["violations"]] == [ADR_042]
    with pytest.raises(NotFound) as raised:
        check(synced, dependencies=[{"name": "x"}], knowledgeItemIds=[ADR_042, "adr-999"])
    assert raised.value.details["field"] == "knowledgeItemIds.1"


def test_draft_and_superseded_items_do_not_constrain(synced: Services) -> None:
    # adr-017 (superseded by adr-051) forbade Kafka clients; the draft retries pattern wants jitter.
    result = check(
        synced,
        dependencies=[{"name": "confluent-kafka"}],
        files=[{"path": "src/payments/clients/psp.py", "content": "def call():\n    return 1\n"}],
        minSeverity="info",
    )
    ids = {v["knowledgeItemId"] for v in result["violations"]}
    assert "adr-017-message-queue" not in ids
    assert "pattern-payment-retries" not in ids
    assert "adr-017-message-queue" not in result["checkedItems"]


def test_check_needs_something_to_check(synced: Services) -> None:
    with pytest.raises(InvalidInput) as raised:
        check(synced)
    assert raised.value.details["field"] == "files"


def test_a_specific_copy_hides_the_wider_one_in_query_as_in_check(synced: Services) -> None:
    """The project deprecates its copy of the secrets policy: query and check both stop seeing the company's."""
    deprecated = doc("policy-secrets-handling", title="Secrets (project copy)", extra="status: deprecated\n")
    synced.repository.push(
        TENANT, "projects/checkout-api/policy-secrets-handling.md", deprecated, author="a", message="m"
    )
    synced.sync.sync(TENANT, SyncNowInput())
    listed = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(limit=100))
    assert "policy-secrets-handling" not in [item.id for item in listed.items]
    searched = synced.knowledge.query(ENGINEER, KnowledgeQueryInput(query="secrets handling credentials"))
    assert "policy-secrets-handling" not in [item.id for item in searched.items]
    leaked_key = "AKIA" + "ABCDEFGHIJKLMNOP"
    assert "policy-secrets-handling" not in [
        v["knowledgeItemId"]
        for v in check(synced, files=[{"path": "a.py", "content": f"k = '{leaked_key}'\n"}])["violations"]
    ]
    # Outside the project the company's policy still stands, in query and check.
    org_only = ctx(tenant=TENANT, org="engineering")
    assert "policy-secrets-handling" in [
        i.id for i in synced.knowledge.query(org_only, KnowledgeQueryInput(limit=100)).items
    ]

"""A tenant with data in every family, written through the tools, for export and import tests."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from helpers import ctx
from knowledge_helpers import push_tree
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.runtime import Services
from mnemo.sync.models import SyncNowInput
from mnemo.tools.registry import load_catalog
from outline_support import push_shop

ALICE = ctx(
    tenant="acme",
    agent="a1",
    session="s1",
    project="p1",
    team="payments",
    org="engineering",
    roles=("writer",),
)
BOB = ctx(user="bob", tenant="acme", project="p1")
STRANGER = ctx(user="eve", tenant="globex", project="p1", roles=("writer",))


def call(services: Services, context: RequestContext, tool: str, body: dict[str, Any]) -> dict[str, Any]:
    return load_catalog()[tool].invoke(services, context, body)


def every_tool_example(services: Services, context: RequestContext) -> list[str]:
    """Each tool's documented example, in catalog order (ids carried over); the tools that answered."""
    answered, last = [], {}
    for tool in load_catalog().values():
        payload = dict(dict(tool.examples())["Usage"])
        payload.update({key: last[key] for key in ("memoryId", "factId") if key in payload and key in last})
        try:
            result = tool.invoke(services, context, payload)
        except MnemoError:  # build_memory_from_text has no model here
            continue
        last.update({key: result[key] for key in ("memoryId", "factId") if result.get(key)})
        answered.append(tool.name)
    return answered


def populate(services: Services) -> None:
    """Every family for tenant acme (alice in every layer, bob in his own), and a stranger tenant."""
    push_tree(services, "acme")
    services.sync.sync("acme", SyncNowInput())
    push_shop(services, ALICE)
    every_tool_example(services, ALICE)
    # a memory with a history of edits, and one per layer
    first = call(services, ALICE, "memory_add", {"content": "Alice prefers dark roast coffee", "layer": "user"})
    call(services, ALICE, "memory_delete", {"memoryId": first["memoryId"]})
    for layer in ("agent", "session", "project", "team", "org", "company"):
        call(services, ALICE, "memory_add", {"content": f"A fact kept in the {layer} layer", "layer": layer})
    # a workspace file with three versions, then deleted; a topic kept
    for text in ("v1", "v2", "v3"):
        call(services, ALICE, "file_write", {"path": "notes/plan.md", "content": f"# Plan {text}\n"})
    call(services, ALICE, "file_write", {"path": "notes/gone.md", "content": "temporary\n"})
    call(services, ALICE, "file_delete", {"path": "notes/gone.md"})
    call(
        services,
        ALICE,
        "memorize_new_topic",
        {"topic": "deploys", "tags": ["ops"], "summary": "How we deploy.", "content": "Blue-green on Fridays."},
    )
    call(services, ALICE, "file_write", {"path": "mnemo:///blocks/style.md", "content": "Answer briefly.\n"})
    call(services, ALICE, "block_pin", {"path": "mnemo:///blocks/style.md"})
    # bob: his own memories, conversation and graph, in the same tenant and project
    call(services, BOB, "memory_add", {"content": "Bob works from Lisbon"})
    call(
        services,
        BOB,
        "add_conversation",
        {
            "user_input": "Where?",
            "agent_response": "Lisbon.",
            "message_id": "msg_bob_1",
            "explanation": "where bob works",
        },
    )
    call(
        services,
        BOB,
        "add_memory_link",
        {"subject": "Bob", "predicate": "lives_in", "object": "Lisbon", "text": "Bob lives in Lisbon."},
    )
    # another tenant that no export of acme may carry
    call(services, STRANGER, "memory_add", {"content": "Globex secret plan"})
    call(services, STRANGER, "file_write", {"path": "secret.md", "content": "globex only\n"})


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]


def record_counts(path: Path) -> Counter[str]:
    return Counter(line["family"] for line in lines(path) if line["type"] == "record")


def blob_counts(path: Path) -> Counter[str]:
    return Counter(line["family"] for line in lines(path) if line["type"] == "blob")


def records_by_key(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(line["pk"], line["sk"]): line for line in lines(path) if line["type"] == "record"}


def export_to(services: Services, path: Path, tenant: str = "acme", **narrowing: Any) -> Path:
    from mnemo.portability.exporter import export
    from mnemo.portability.selection import Selection

    with path.open("w", encoding="utf-8") as out:
        export(services, Selection(tenant, **narrowing), out)
    return path


def import_from(services: Services, path: Path) -> dict[str, Any]:
    from mnemo.portability.importer import Importer, check

    with path.open(encoding="utf-8") as handle:
        plan = check(handle, services.families)
    return Importer(services, plan).run(path).as_json()


def outcome(summary: dict[str, Any], outcome_name: str) -> dict[str, int]:
    """family -> how many records (and blobs, as ``blob:family``) had that outcome."""
    found = {family: row[outcome_name] for family, row in summary["records"].items() if row[outcome_name]}
    found |= {f"blob:{family}": row[outcome_name] for family, row in summary["blobs"].items() if row.get(outcome_name)}
    return found


def file_counts(path: Path) -> dict[str, int]:
    return dict(record_counts(path)) | {f"blob:{family}": count for family, count in blob_counts(path).items()}


def answers(services: Services) -> dict[str, Any]:
    """What the search and read tools answer over the populated tenant: the same before and after a move
    (orders that rest on the embedder's scores are sorted: the target embeds with another model)."""
    conversation = {"query": "where", "retrieval_strategy": "hybrid", "explanation": "check the move"}
    memories = call(services, BOB, "memory_search", {"query": "Lisbon"})
    topics = call(services, ALICE, "search_memories", {"query": "blue-green deploy"})
    blocks = call(services, ALICE, "file_search", {"query": "Answer briefly"})
    return {
        "memory_search": ([hit["content"] for hit in memories["results"]], memories["retrieval"]),
        "retrieve_conversation": [
            c["message_id"] for c in call(services, BOB, "retrieve_conversation", conversation)["data"]["conversations"]
        ],
        "graph_search": sorted(f["text"] for f in call(services, BOB, "graph_search", {"query": "Lisbon"})["facts"]),
        "search_memories": (topics["topics"], topics["retrieval"]),
        "file_search": ([hit["path"] for hit in blocks["results"]], blocks["retrieval"]),
        "knowledge_query": sorted(
            item["id"] for item in call(services, ALICE, "knowledge_query", {"query": "database"})["items"]
        ),
        "file_read v1": call(services, ALICE, "file_read", {"path": "notes/plan.md", "version": 1})["content"],
        "file_read": call(services, ALICE, "file_read", {"path": "notes/plan.md"})["content"],
        "pinned_context": call(services, ALICE, "pinned_context", {})["totalTokens"],
        "recall_memory": call(services, ALICE, "recall_memory", {"topic": "deploys"})["content"],
    }

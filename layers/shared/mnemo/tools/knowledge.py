"""Knowledge tools: query, show and check organisational knowledge (seed 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.knowledge.models import (
    KnowledgeCheckInput,
    KnowledgeCheckOutput,
    KnowledgeQueryInput,
    KnowledgeQueryOutput,
    KnowledgeShowInput,
    KnowledgeShowOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import KNOWLEDGE_HISTORY, Rights

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = (
    "Organisational knowledge - decisions, policies, patterns and specifications - and checks against its constraints"
)


@tool(
    "knowledge",
    rights=Rights(records="read", embeds=True, index="read"),
)
def knowledge_query(services: Services, context: RequestContext, request: KnowledgeQueryInput) -> KnowledgeQueryOutput:
    """[SPECIFICATION] Search organizational knowledge for relevant decisions, policies, patterns, or specifications.

    Tool exposure: `knowledge_query`

    Use this to find guidance on architectural decisions, coding standards, or established
    patterns before making changes. Ranking is hybrid (BM25 with vector similarity); without
    a query, the matching items are listed. Only the company layer and the org, team and
    project the caller belongs to are searched; when one id exists in several of them the
    most specific wins (project > team > org > company). Status defaults to accepted.

    **When to use:** before a design choice, a new dependency or a new service, to learn
    what the organisation has already decided.

    **Usage:**
    ```json
    {"query": "database selection", "type": "adr", "status": ["accepted"]}
    ```

    **Returns:**
    ```json
    {"success": true, "items": [{"id": "adr-042-database-selection", "type": "adr", "layer": "org", "title": "Database Selection for New Services", "summary": "Use PostgreSQL for all new services requiring relational data", "status": "accepted", "tags": ["database", "infrastructure"], "hasConstraints": true, "score": 0.83}], "totalCount": 1, "searchedLayers": ["org", "company"]}
    ```

    **Errors:**
    - INVALID_INPUT: an unknown type, layer or status; limit outside 1-100; threshold
      outside 0-1.

    @see mnemo.knowledge.service.KnowledgeService.query
    """
    return services.knowledge.query(context, request)


# Reads the synced catalog only: no embedding, no index, no bucket.
@tool(
    "knowledge",
    rights=Rights(records="read"),
)
def knowledge_check(services: Services, context: RequestContext, request: KnowledgeCheckInput) -> KnowledgeCheckOutput:
    """[SPECIFICATION] Check if planned changes comply with organizational constraints and policies.

    Tool exposure: `knowledge_check`

    Use this before adding dependencies, creating files, or making architectural changes to
    ensure compliance with established standards. Dependencies are taken from the request
    and from manifests among the files (package.json, requirements*.txt, pyproject.toml,
    go.mod, pom.xml); imports are read from source files. Every accepted constraint the
    caller's layers hold applies, or only those of `knowledgeItemIds`. `passed` is false
    exactly when a block-severity constraint is violated; `minSeverity` filters what is
    reported. Patterns run on RE2, in time linear in the input.

    **When to use:** before committing to a dependency, a file layout or a code change.

    **Usage:**
    ```json
    {"dependencies": [{"name": "mysql2", "version": "3.0.0"}]}
    ```

    **Returns:**
    ```json
    {"success": true, "passed": false, "violations": [{"knowledgeItemId": "adr-042-database-selection", "knowledgeItemTitle": "Database Selection for New Services", "constraint": {"operator": "must_not_use", "target": "dependency", "pattern": "mysql|mysql2|mariadb"}, "severity": "block", "message": "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead.", "location": null}], "summary": {"info": 0, "warn": 0, "block": 1}, "checkedItems": ["adr-042-database-selection"]}
    ```

    **Errors:**
    - INVALID_INPUT: neither files nor dependencies; a file without path or content; an
      unknown minSeverity.
    - NOT_FOUND: an id in knowledgeItemIds is not in the caller's layers.

    @see mnemo.knowledge.service.KnowledgeService.check
    """
    return services.knowledge.check(context, request)


# The item comes from the catalog; its history is the file's object versions (ListObjectVersions,
# then HeadObject of each version for its author and message).
@tool(
    "knowledge",
    rights=Rights(records="read", bucket=KNOWLEDGE_HISTORY),
)
def knowledge_show(services: Services, context: RequestContext, request: KnowledgeShowInput) -> KnowledgeShowOutput:
    """[SPECIFICATION] Retrieve the complete content of a knowledge item including full text, constraints, and metadata.

    Tool exposure: `knowledge_show`

    Use this when you need detailed information about a specific decision, policy, or
    pattern. The item is looked up in the caller's layers, most specific first. History
    (every stored version with its author and message) comes with `includeHistory`.

    **When to use:** after knowledge_query or knowledge_check named an item you need to read.

    **Usage:**
    ```json
    {"id": "adr-042-database-selection", "includeHistory": true}
    ```

    **Returns:**
    ```json
    {"success": true, "item": {"id": "adr-042-database-selection", "type": "adr", "layer": "org", "title": "Database Selection for New Services", "summary": "Use PostgreSQL for all new services requiring relational data", "content": "# ADR-042: Database Selection for New Services\\n...", "status": "accepted", "severity": "block", "tags": ["database", "infrastructure"], "constraints": [{"operator": "must_not_use", "target": "dependency", "pattern": "mysql|mysql2|mariadb", "appliesTo": [], "severity": "block", "message": "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead."}], "metadata": {}, "createdAt": "2025-01-07", "updatedAt": "2026-11-22T04:00:00Z", "supersedes": null, "supersededBy": []}, "history": [{"version": "1", "timestamp": "2026-11-22T04:00:00Z", "author": "platform-team", "message": "Accept ADR-042"}]}
    ```

    **Errors:**
    - NOT_FOUND: no item with this id in the caller's layers (details list the layers
      searched).
    - INVALID_INPUT: id missing or over 128 characters.

    @see mnemo.knowledge.service.KnowledgeService.show
    """
    return services.knowledge.show(context, request)

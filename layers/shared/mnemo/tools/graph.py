"""Memory graph tools: entities and the facts between them, with time (seed 001).

Entities and facts live in memory layers (agent, user, session, project, team,
org, company) and are scoped like memories. A fact is invalidated, not
forgotten: its validAt/invalidAt say when it held, so graph_search with asOf
answers what was true at any time. Tools are listed in an order whose examples
chain: a link, reading and enriching its entity, searching, invalidating,
deleting, then extraction from text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.graph.models import (
    AddMemoryLinkInput,
    AddMemoryLinkOutput,
    BuildMemoryFromTextInput,
    BuildMemoryFromTextOutput,
    DeleteMemoryObjectInput,
    DeleteMemoryObjectOutput,
    GetMemoryObjectInput,
    GetMemoryObjectOutput,
    GraphSearchInput,
    GraphSearchOutput,
    InvalidateMemoryLinkInput,
    InvalidateMemoryLinkOutput,
    UpdateMemoryObjectInput,
    UpdateMemoryObjectOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Entities and the facts between them, with when each held"


@tool(
    "graph",
    rights=Rights(records="read-write", embeds=True, index="write"),
)
def add_memory_link(services: Services, context: RequestContext, request: AddMemoryLinkInput) -> AddMemoryLinkOutput:
    """[SPECIFICATION] Add a fact between two entities to the memory graph, directly (no model involved).

    Tool exposure: `add_memory_link`

    Stores `subject —predicate→ object` with a sentence, creating either entity
    when no entity of that name or alias exists in the layer (names compare
    without case). The predicate is normalised to snake_case. The fact is valid
    from `validAt` (default: now) until `invalidAt` (default: open). Adding the
    same open fact again stores nothing and answers `created: false`, so retries
    are safe. A fact that contradicts older ones ends them instead of deleting
    them: name them in `invalidates`, or set `exclusive` when the subject holds
    the predicate with one object at a time (works_at, lives_in, uses_database).
    Facts whose time overlaps this one's are touched: one that began earlier
    gets `invalidAt` = this fact's `validAt`; if one began later, this fact is
    stored as history that ended then. Sent again with `exclusive` or
    `invalidates`, the same fact still ends what it contradicts. Shared layers
    need the writer role.

    **When to use:** a simple fact an agent learned: "X uses Y", "Alice works at
    Acme". Prefer it to build_memory_from_text, which costs model calls.

    **Usage:**
    ```json
    {"subject": "Alice", "predicate": "works_at", "object": "Acme", "subjectType": "person", "objectType": "organization", "text": "Alice works at Acme as a data engineer.", "validAt": "2024-03-01T00:00:00Z", "exclusive": true}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Fact stored", "factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "created": true, "subject": {"entityId": "ent_0a1b2c3d4e5f60718293a4b5", "name": "Alice", "type": "person", "created": true}, "object": {"entityId": "ent_9f8e7d6c5b4a39281706f5e4", "name": "Acme", "type": "organization", "created": true}, "fact": {"factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "subject": "Alice", "subjectId": "ent_0a1b2c3d4e5f60718293a4b5", "predicate": "works_at", "object": "Acme", "objectId": "ent_9f8e7d6c5b4a39281706f5e4", "text": "Alice works at Acme as a data engineer.", "validAt": "2024-03-01T00:00:00Z", "invalidAt": null, "createdAt": "2026-01-07T10:00:00Z", "expiredAt": null, "status": "valid", "layer": "user"}, "invalidated": []}
    ```

    **Errors:**
    - INVALID_INPUT: a missing or over-long subject, predicate or object (details name
      the field); invalidAt not after validAt; a date that is not ISO 8601 text; the
      layer's ids are not in the context; a contradicted fact began at the same time
      (`validAt`); the fact would end more than 20 facts at once, or it has an end and
      an earlier fact outlives it (details name `exclusive` or `invalidates`).
    - NOT_FOUND: a fact in `invalidates` is not in this layer.
    - UNAUTHORIZED: writing a shared layer without the writer role.
    - CONFLICT: the graph kept changing under concurrent writes (retryable).

    @see mnemo.graph.service.GraphService.add_link
    """
    return services.graph.add_link(context, request)


@tool(
    "graph",
    rights=Rights(records="read"),
)
def get_memory_object(
    services: Services, context: RequestContext, request: GetMemoryObjectInput
) -> GetMemoryObjectOutput:
    """[SPECIFICATION] Read an entity with its facts and its neighbours in the memory graph.

    Tool exposure: `get_memory_object`

    Finds the entity by `entityId` or by `name` (or alias), in `layer` or else in
    the most specific readable layer that has it. Returns its facts valid at
    `asOf` (default: now), newest first; with `includeHistory`, also those that
    ended or have not begun (each says its `status`). `depth` (0-3, default 1)
    adds the entities reachable over those facts, nearest first, each with the
    facts (`via`) that reach it; facts used past the first hop are in `facts`
    too. At most `limit` facts and 100 neighbours; `hasMore` says when some were
    left out.

    **When to use:** everything known about one person, system or concept, or
    what surrounds it, before acting on it.

    **Usage:**
    ```json
    {"name": "Alice", "depth": 1, "includeHistory": true}
    ```

    **Returns:**
    ```json
    {"success": true, "entity": {"entityId": "ent_0a1b2c3d4e5f60718293a4b5", "name": "Alice", "type": "person", "summary": "", "aliases": [], "layer": "user", "version": 1, "createdAt": "2026-01-07T10:00:00Z", "updatedAt": "2026-01-07T10:00:00Z"}, "facts": [{"factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "subject": "Alice", "subjectId": "ent_0a1b2c3d4e5f60718293a4b5", "predicate": "works_at", "object": "Acme", "objectId": "ent_9f8e7d6c5b4a39281706f5e4", "text": "Alice works at Acme as a data engineer.", "validAt": "2024-03-01T00:00:00Z", "invalidAt": null, "createdAt": "2026-01-07T10:00:00Z", "expiredAt": null, "status": "valid", "layer": "user"}], "neighbours": [{"entityId": "ent_9f8e7d6c5b4a39281706f5e4", "name": "Acme", "type": "organization", "summary": "", "depth": 1, "via": ["fct_5b1e0c9a7d3f4e2a8c6b0d1e"]}], "asOf": "2026-01-07T10:00:00Z", "hasMore": false}
    ```

    **Errors:**
    - INVALID_INPUT: neither or both of entityId and name; depth outside 0-3; a
      layer whose ids are not in the context.
    - NOT_FOUND: no such entity in the layers the caller can read.

    @see mnemo.graph.service.GraphService.get_object
    """
    return services.graph.get_object(context, request)


@tool(
    "graph",
    rights=Rights(records="read-write", embeds=True, index="write"),
)
def update_memory_object(
    services: Services, context: RequestContext, request: UpdateMemoryObjectInput
) -> UpdateMemoryObjectOutput:
    """[SPECIFICATION] Change an entity's name, type, summary or aliases.

    Tool exposure: `update_memory_object`

    The entity is found as get_memory_object finds it. A rename keeps the old
    name as an alias (unless `aliases` is given, which replaces the list), so
    facts and searches that used it still find the entity. Names and aliases are
    unique within a layer. Pass `expectedVersion` (from get_memory_object) to
    refuse overwriting a change made meanwhile. Facts are not edited: invalidate
    one and add the new one, so the history stays.

    **When to use:** to record what an entity is (a summary), merge a spelling
    into it (an alias), or correct its name or type.

    **Usage:**
    ```json
    {"name": "Alice", "summary": "Data engineer on the payments team.", "aliases": ["Alice Smith"], "expectedVersion": 1}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Entity 'Alice' updated", "entity": {"entityId": "ent_0a1b2c3d4e5f60718293a4b5", "name": "Alice", "type": "person", "summary": "Data engineer on the payments team.", "aliases": ["Alice Smith"], "layer": "user", "version": 2, "createdAt": "2026-01-07T10:00:00Z", "updatedAt": "2026-01-07T10:05:00Z"}}
    ```

    **Errors:**
    - INVALID_INPUT: neither or both of entityId and name; nothing to change; more
      than 20 aliases (details name the field).
    - NOT_FOUND: no such entity in the layers the caller can read.
    - UNAUTHORIZED: changing a shared layer's entity without the writer role.
    - CONFLICT: `expectedVersion` is stale, or the new name or an alias belongs to
      another entity (details name `newName` or `aliases` and that entity's id);
      neither is retryable. A concurrent update won (retryable).

    @see mnemo.graph.service.GraphService.update_object
    """
    return services.graph.update_object(context, request)


@tool(
    "graph",
    rights=Rights(records="read", embeds=True, index="read"),
)
def graph_search(services: Services, context: RequestContext, request: GraphSearchInput) -> GraphSearchOutput:
    """[SPECIFICATION] Search the memory graph's entities and facts, as things stand now or stood at a time.

    Tool exposure: `graph_search`

    Hybrid text search (embeddings and BM25, scored as memory_search scores,
    0-1) over entities (name, type, aliases, summary) and facts (their
    sentence), in every readable layer or `layers`. Facts are those valid at
    `asOf` (default: now), so asking at an earlier time gives what was true then;
    `includeInvalid` returns the others too, each with its `status`. `knownAt`
    answers as Mnemo knew things at that time (facts learned by then; ends
    recorded later are not seen). `kind` limits the answer to entities or facts,
    `types` the entities' types.

    **When to use:** a question about people, systems or relations ("where does
    Alice work?", "what uses PostgreSQL?"), or how that changed over time.

    **Usage:**
    ```json
    {"query": "Where does Alice work?", "asOf": "2025-01-01T00:00:00Z"}
    ```

    **Returns:**
    ```json
    {"success": true, "entities": [{"entityId": "ent_0a1b2c3d4e5f60718293a4b5", "name": "Alice", "type": "person", "summary": "Data engineer on the payments team.", "aliases": ["Alice Smith"], "layer": "user", "version": 2, "createdAt": "2026-01-07T10:00:00Z", "updatedAt": "2026-01-07T10:05:00Z", "score": 0.91}], "facts": [{"factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "subject": "Alice", "subjectId": "ent_0a1b2c3d4e5f60718293a4b5", "predicate": "works_at", "object": "Acme", "objectId": "ent_9f8e7d6c5b4a39281706f5e4", "text": "Alice works at Acme as a data engineer.", "validAt": "2024-03-01T00:00:00Z", "invalidAt": null, "createdAt": "2026-01-07T10:00:00Z", "expiredAt": null, "status": "valid", "layer": "user", "score": 0.88}], "asOf": "2025-01-01T00:00:00Z", "searchedLayers": ["agent", "user", "session", "project", "team", "org", "company"], "retrieval": "hybrid", "hasMore": false}
    ```

    **Errors:**
    - INVALID_INPUT: a blank or over-long query, an unknown layer or kind, a limit
      outside 1-50 (details name the field).

    @see mnemo.graph.service.GraphService.search
    """
    return services.graph.search(context, request)


# Changes a fact's times only: its indexed text stays, so it never reaches the index.
@tool(
    "graph",
    rights=Rights(records="read-write"),
)
def invalidate_memory_link(
    services: Services, context: RequestContext, request: InvalidateMemoryLinkInput
) -> InvalidateMemoryLinkOutput:
    """[SPECIFICATION] Mark a fact as no longer true, keeping it in the history.

    Tool exposure: `invalidate_memory_link`

    Sets the fact's `invalidAt` (default: now) and records when Mnemo learned it
    (`expiredAt`) and why (`reason`). The fact stays: get_memory_object with
    `includeHistory` and graph_search with an earlier `asOf` still show it. A fact
    already invalid by then is left as it is (`alreadyInvalid: true`), so a retry
    is harmless. To replace a fact with a new one in one step, use add_memory_link
    with `invalidates` or `exclusive`.

    **When to use:** the user says something stopped being true ("Alice left
    Acme"), with no new fact to take its place.

    **Usage:**
    ```json
    {"factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "invalidAt": "2025-06-30T00:00:00Z", "reason": "Alice left Acme in June 2025."}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Fact invalidated; it stays in the history", "fact": {"factId": "fct_5b1e0c9a7d3f4e2a8c6b0d1e", "subject": "Alice", "subjectId": "ent_0a1b2c3d4e5f60718293a4b5", "predicate": "works_at", "object": "Acme", "objectId": "ent_9f8e7d6c5b4a39281706f5e4", "text": "Alice works at Acme as a data engineer.", "validAt": "2024-03-01T00:00:00Z", "invalidAt": "2025-06-30T00:00:00Z", "createdAt": "2026-01-07T10:00:00Z", "expiredAt": "2026-01-07T10:10:00Z", "status": "invalid", "reason": "Alice left Acme in June 2025.", "layer": "user"}, "alreadyInvalid": false}
    ```

    **Errors:**
    - INVALID_INPUT: a malformed factId; invalidAt not after the fact's validAt.
    - NOT_FOUND: no such fact in the layers the caller can read.
    - UNAUTHORIZED: changing a shared layer's fact without the writer role.
    - CONFLICT: the fact changed while it was being invalidated (retryable).

    @see mnemo.graph.service.GraphService.invalidate
    """
    return services.graph.invalidate(context, request)


# Nothing is embedded: a record that is gone is only deleted from the index.
@tool(
    "graph",
    rights=Rights(records="read-write", index="delete"),
)
def delete_memory_object(
    services: Services, context: RequestContext, request: DeleteMemoryObjectInput
) -> DeleteMemoryObjectOutput:
    """[SPECIFICATION] Erase an entity with all its facts, or one fact, after a confirmed preview.

    Tool exposure: `delete_memory_object`

    ⚠️ **DESTRUCTIVE:** deletion erases history; invalidate_memory_link keeps it
    and is the right tool when something stopped being true. Deleting is for
    mistakes and for data that must go.

    Two calls. The first (no `confirmationToken`) deletes nothing: it answers
    what would go (the entity, how many facts, which neighbours lose a link) and
    a `confirmationToken`. Ask the user; then call again with the token. The
    deletion happens only if nothing changed since the preview (else CONFLICT:
    preview again). An entity's facts go in batches, at most 1,000 a call: a
    larger entity answers `hasMore: true`, and calling again with its `entityId`
    goes on (as it finishes a call that stopped midway); the entity is gone from
    reads from the first call.

    **When to use:** an entity or fact that was wrong from the start, or that
    the user wants erased.

    **Usage:**
    ```json
    {"name": "Alice"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Deleting 'Alice' erases it and its 1 facts for good (invalidate_memory_link keeps history instead). Ask the user, then call again with confirmationToken", "deleted": false, "entity": {"entityId": "ent_0a1b2c3d4e5f60718293a4b5", "name": "Alice", "type": "person", "summary": "Data engineer on the payments team.", "aliases": ["Alice Smith"], "layer": "user", "version": 2, "createdAt": "2026-01-07T10:00:00Z", "updatedAt": "2026-01-07T10:05:00Z"}, "factsAffected": 1, "neighboursAffected": ["Acme"], "confirmationToken": "del_3c9d2b8e1f0a4c6d8e2b7a9f1c3d5e7a"}
    ```

    **Errors:**
    - INVALID_INPUT: not exactly one of entityId, name and factId.
    - NOT_FOUND: no such entity or fact in the layers the caller can read.
    - UNAUTHORIZED: deleting from a shared layer without the writer role.
    - CONFLICT: the token does not match: the object changed since the preview
      (not retryable: preview again); or the facts kept changing (retryable).

    @see mnemo.graph.service.GraphService.delete_object
    """
    return services.graph.delete_object(context, request)


# Behind API Gateway's 29 s: the tool refuses, before any model call, a text whose calls cannot end
# within 26 s (docs/deploy.md).
@tool(
    "graph",
    rights=Rights(records="read-write", embeds=True, extracts=True, index="write"),
    # 512 MB: model calls over a whole text, and the entities and facts they return (the Globals' 256 MB
    # suit the tools that only make a few network calls).
    runtime=Runtime(timeout=29, deadline=26, memory=512),
)
def build_memory_from_text(
    services: Services, context: RequestContext, request: BuildMemoryFromTextInput
) -> BuildMemoryFromTextOutput:
    """[SPECIFICATION] Extract entities and relationships from text with a language model, into the memory graph.

    Tool exposure: `build_memory_from_text`

    ⚠️ **EXPENSIVE OPERATION - Use Sparingly:**
    - Makes model calls: one per 12,000 characters of text, at most 4 (both are
      settings); a longer text is refused before any call.
    - Use ONLY for large, complex texts with many entities.
    - For simple facts, use add_memory_link instead (direct, no model).
    - ALWAYS ask the user's permission before using it.

    The model answers through a JSON-schema'd tool call; each fact it finds is
    added as add_memory_link adds it (the same fact twice is stored once; a fact
    the model marks exclusive invalidates the one it replaces), and each entity
    it names is stored with its summary when the entity has none yet. `dryRun` answers
    what would be added and saves nothing. The model is Amazon Bedrock (Converse)
    on AWS, or any OpenAI-compatible server locally (MNEMO_OPENAI_BASE_URL);
    with none configured the answer is PROVIDER_ERROR saying how to set one.

    **When to use:**
    - ✅ Large documents with many interconnected concepts.
    - ✅ Meeting notes or design documents to remember as a graph.
    - ❌ Simple facts like "X uses Y" (use add_memory_link).

    **Usage:**
    ```json
    {"content": "Spring AI is a framework for building AI applications. It integrates with OpenAI and Amazon Bedrock.", "previousMessages": "User asked about AI frameworks.", "layer": "user"}
    ```

    **Returns:**
    ```json
    {"success": true, "summary": "Added 3 entities and 2 relationships to the knowledge graph", "entities": ["Spring AI", "OpenAI", "Amazon Bedrock"], "relationships": [{"from": "Spring AI", "to": "OpenAI", "relation": "integrates_with", "factId": "fct_0c1d2e3f4a5b6c7d8e9f0a1b", "created": true}, {"from": "Spring AI", "to": "Amazon Bedrock", "relation": "integrates_with", "factId": "fct_1d2e3f4a5b6c7d8e9f0a1b2c", "created": true}], "invalidated": [], "modelCalls": 1, "dryRun": false}
    ```

    **Errors:**
    - INVALID_INPUT: blank content, or content needing more model calls than
      allowed (details name `content`); the layer's ids are not in the context.
    - UNAUTHORIZED: writing a shared layer without the writer role.
    - PROVIDER_ERROR: no model configured (the message says how to configure one),
      the model failed, or its answer did not match the schema (retryable).
    - RATE_LIMITED, TIMEOUT: the model throttled or took too long (retryable).

    @see mnemo.graph.extraction.GraphBuilder.build
    @see add_memory_link for direct fact addition (preferred for simple cases)
    """
    return services.graph_builder.build(context, request)

"""Topic memory tools: topic notes and one general project memory (seed 002).

Each project has one topic store; a caller without a project id works in its
own user layer (personal topics). Changing a project's topics needs the
writer role; reading does not. Tools are listed in an order whose examples
chain: general info, a topic, then reading, refining and forgetting it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.tools.registry import tool
from mnemo.tools.rights import Rights
from mnemo.topics.models import (
    ForgetMemoryInput,
    ForgetMemoryOutput,
    ListMemoriesInput,
    ListMemoriesOutput,
    MemorizeGeneralInfoInput,
    MemorizeGeneralInfoOutput,
    MemorizeNewTopicInput,
    RecallGeneralMemoryInput,
    RecallGeneralMemoryOutput,
    RecallMemoryInput,
    RecallMemoryOutput,
    RefineMemoryInput,
    SearchMemoriesInput,
    SearchMemoriesOutput,
    TopicWriteOutput,
)

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Named topic notes and one general section per project or user"


# The general section is never indexed.
@tool(
    "topics",
    rights=Rights(records="read-put"),
)
def memorize_general_info(
    services: Services, context: RequestContext, request: MemorizeGeneralInfoInput
) -> MemorizeGeneralInfoOutput:
    """[SPECIFICATION] Memorizes or updates the general project information.

    Tool exposure: `memorize_general_info`

    Replaces the "General Project Knowledge" section of the index document and
    nothing else; the topics and their summaries stay. The topics belong to the
    caller's project (to the caller's own user layer when there is no project id),
    and changing a project's memory needs the writer role. Content holding a
    "Specialized Knowledge" heading is refused. Pass `expectedVersion` (from
    recall_general_memory) to refuse overwriting a change made meanwhile.

    **When to use:** to record what every task in the project should know: its
    purpose, stack, conventions and key decisions.

    **Usage:**
    ```json
    {"content": "Checkout API: Python 3.12 on AWS Lambda, PostgreSQL 16 for orders. Releases go through the pipeline."}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "General project knowledge updated", "version": 1, "lastUpdated": "2026-01-07T10:00:00Z"}
    ```

    **Errors:**
    - INVALID_INPUT: content over 100,000 characters, or holding a "Specialized
      Knowledge" heading (details name `content`); no project or user id.
    - UNAUTHORIZED: changing a project's memory without the writer role.
    - CONFLICT: `expectedVersion` is stale (not retryable: read again), or a
      concurrent write won (retryable).

    @see mnemo.topics.service.TopicService.memorize_general
    """
    return services.topics.memorize_general(context, request)


@tool(
    "topics",
    rights=Rights(records="read-write", embeds=True, index="write"),
)
def memorize_new_topic(services: Services, context: RequestContext, request: MemorizeNewTopicInput) -> TopicWriteOutput:
    """[SPECIFICATION] Memorizes a new topic and updates the index.

    Tool exposure: `memorize_new_topic`

    Stores a topic (tags, a 1-2 sentence summary and markdown content) in the
    caller's project, or in the caller's own user layer without a project id; its
    summary appears in the index document's "Specialized Knowledge" section. Fails
    if the topic already exists: names compare case-insensitively. A name must not
    contain `/` or `\\`, cannot be `.` or `..`, holds no control characters and has
    at most 128 characters. At most 20 tags of 1-64 characters.

    **When to use:** knowledge about one subject (a process, a component, a decision)
    that deserves more than a line of the general section.

    **Usage:**
    ```json
    {"topic": "deployment-process", "tags": ["deploy", "release", "draft"], "summary": "How a release reaches production.", "content": "# Deployment\\n\\nReleases go out through the pipeline on Tuesdays. To roll back, redeploy the previous tag."}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Topic 'deployment-process' memorized", "topic": "deployment-process", "version": 1, "lastUpdated": "2026-01-07T10:00:00Z", "tags": ["deploy", "release", "draft"], "summary": "How a release reaches production."}
    ```

    **Errors:**
    - INVALID_INPUT: a bad topic name, summary (1-500 characters), content (1-100,000
      characters) or tags; no project or user id; the scope already has 1000 topics.
      Details name the field.
    - UNAUTHORIZED: changing a project's memory without the writer role.
    - CONFLICT: the topic already exists (not retryable).

    @see mnemo.topics.service.TopicService.memorize
    """
    return services.topics.memorize(context, request)


@tool(
    "topics",
    rights=Rights(records="read"),
)
def list_memories(services: Services, context: RequestContext, request: ListMemoriesInput) -> ListMemoriesOutput:
    """[SPECIFICATION] Lists all available memory topics.

    Tool exposure: `list_memories`

    Returns every topic name of the caller's project (of the caller's own user
    layer without a project id), sorted case-insensitively, as a list and as one
    comma-separated text. A list too long for the transport's answer comes in
    parts: `hasMore` is true and `nextOffset` is the `offset` to ask for the rest with.

    **When to use:** to see which topics exist before recalling or creating one.

    **Usage:**
    ```json
    {}
    ```

    **Returns:**
    ```json
    {"success": true, "topics": ["deployment-process"], "text": "deployment-process", "count": 1, "layer": "project", "hasMore": false, "nextOffset": null}
    ```

    **Errors:**
    - INVALID_INPUT: no project or user id in the request context.

    @see mnemo.topics.service.TopicService.list_topics
    """
    return services.topics.list_topics(context, request)


# A topic read by name never reaches the index.
@tool(
    "topics",
    rights=Rights(records="read"),
)
def recall_memory(services: Services, context: RequestContext, request: RecallMemoryInput) -> RecallMemoryOutput:
    """[SPECIFICATION] Recalls detailed memory for a specific topic.

    Tool exposure: `recall_memory`

    Returns the topic's title, tags, summary, last updated date and content, also
    as one markdown document, and its version (pass it to refine_memory as
    `expectedVersion` to refuse a concurrent change). Names compare
    case-insensitively. A topic too long for the transport's answer (Bedrock's
    is about 12 kB) comes in parts: `hasMore` is true and `nextOffset` is the
    `offset` to ask for the rest with.

    **When to use:** when the index or a search points at a topic relevant to the task.

    **Usage:**
    ```json
    {"topic": "deployment-process"}
    ```

    **Returns:**
    ```json
    {"success": true, "title": "deployment-process", "tags": ["deploy", "release", "draft"], "summary": "How a release reaches production.", "content": "# Deployment\\n\\nReleases go out through the pipeline on Tuesdays.", "lastUpdated": "2026-01-07T10:00:00Z", "createdAt": "2026-01-07T10:00:00Z", "version": 1, "markdown": "# deployment-process\\n\\n**Tags:** deploy, release, draft\\n**Last updated:** 2026-01-07T10:00:00Z\\n\\n# Deployment\\n\\nReleases go out through the pipeline on Tuesdays.\\n", "totalChars": 63, "hasMore": false, "nextOffset": null}
    ```

    **Errors:**
    - NOT_FOUND: no such topic.
    - INVALID_INPUT: a bad topic name (details name `topic`); no project or user id.

    @see mnemo.topics.service.TopicService.recall
    """
    return services.topics.recall(context, request)


@tool(
    "topics",
    rights=Rights(records="read", embeds=True, index="read"),
)
def search_memories(services: Services, context: RequestContext, request: SearchMemoriesInput) -> SearchMemoriesOutput:
    """[SPECIFICATION] Searches memories by tags, and by content.

    Tool exposure: `search_memories`

    Matches topics carrying any of `tags` (case-insensitive). With a `query`, topics
    are also searched by content: hybrid BM25 and vector similarity on the same
    calibrated 0-1 score as memory_search, best first, below `threshold` dropped;
    with both, only topics with a given tag are ranked. Give tags, a query or both.
    Answers the matching names, or "No topics found".

    **When to use:** to find the topics about a subject before recalling them.

    **Usage:**
    ```json
    {"tags": ["Deploy"], "query": "how do we roll back a release"}
    ```

    **Returns:**
    ```json
    {"success": true, "topics": ["deployment-process"], "results": [{"topic": "deployment-process", "summary": "How a release reaches production.", "tags": ["deploy", "release", "draft"], "lastUpdated": "2026-01-07T10:00:00Z", "score": 0.74}], "message": "Found 1 topic: deployment-process", "totalCount": 1, "retrieval": "hybrid"}
    ```

    **Errors:**
    - INVALID_INPUT: neither tags nor query (details name `tags`); a tag over 64
      characters; limit outside 1-100; threshold outside 0-1; no project or user id.

    @see mnemo.topics.service.TopicService.search
    """
    return services.topics.search(context, request)


@tool(
    "topics",
    rights=Rights(records="read-write", embeds=True, index="write"),
)
def refine_memory(services: Services, context: RequestContext, request: RefineMemoryInput) -> TopicWriteOutput:
    """[SPECIFICATION] Refines an existing memory and updates the index.

    Tool exposure: `refine_memory`

    Adds `tagsToAdd` and removes `tagsToRemove` (case-insensitive), replaces the
    summary (and so the topic's line in the index) with `newSummary` and the
    content with `newContent`, and bumps the last updated time and the version.
    The write is optimistic: a refine that raced another change gets CONFLICT, and
    `expectedVersion` (from recall_memory) refuses any change since that read.
    Changing a project's memory needs the writer role.

    **When to use:** when what a topic says has changed or grown.

    **Usage:**
    ```json
    {"topic": "deployment-process", "tagsToAdd": ["rollback"], "tagsToRemove": ["draft"], "newSummary": "How a release reaches production on Tuesdays, and how to roll it back."}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Topic 'deployment-process' refined", "topic": "deployment-process", "version": 2, "lastUpdated": "2026-01-08T09:30:00Z", "tags": ["deploy", "release", "rollback"], "summary": "How a release reaches production on Tuesdays, and how to roll it back."}
    ```

    **Errors:**
    - NOT_FOUND: no such topic.
    - INVALID_INPUT: a bad topic name, summary or content; a tag both added and
      removed, or more than 20 tags (details name `tagsToAdd`); no project or user id.
    - UNAUTHORIZED: changing a project's memory without the writer role.
    - CONFLICT: `expectedVersion` is stale (not retryable: recall the topic and
      refine again), or a concurrent change won (retryable).

    @see mnemo.topics.service.TopicService.refine
    """
    return services.topics.refine(context, request)


@tool(
    "topics",
    rights=Rights(records="read"),
)
def recall_general_memory(
    services: Services, context: RequestContext, request: RecallGeneralMemoryInput
) -> RecallGeneralMemoryOutput:
    """[SPECIFICATION] Recalls the general project memory from the index.

    Tool exposure: `recall_general_memory`

    Returns the "General Project Knowledge" section as `content`, and the whole
    index document as markdown in `index`: the general section and a "Specialized
    Knowledge" section listing each topic with its tags and summary. The memory is
    the caller's project's, or the caller's own without a project id.

    **When to use:** at the start of a task, to load what the project knows and which
    topics exist.

    **Usage:**
    ```json
    {}
    ```

    **Returns:**
    ```json
    {"success": true, "content": "Checkout API: Python 3.12 on AWS Lambda.", "index": "# Project Memory\\n\\n## General Project Knowledge\\n\\nCheckout API: Python 3.12 on AWS Lambda.\\n\\n## Specialized Knowledge\\n\\n- **deployment-process** [deploy, release]: How a release reaches production.\\n", "layer": "project", "version": 1, "lastUpdated": "2026-01-07T10:00:00Z"}
    ```

    **Errors:**
    - INVALID_INPUT: no project or user id in the request context.

    @see mnemo.topics.service.TopicService.recall_general
    """
    return services.topics.recall_general(context)


# Deletes the topic's document; a topic memorized again meanwhile is queued, not embedded.
@tool(
    "topics",
    rights=Rights(records="read-write", index="delete"),
)
def forget_memory(services: Services, context: RequestContext, request: ForgetMemoryInput) -> ForgetMemoryOutput:
    """[SPECIFICATION] Forgets a memory topic and removes it from the index.

    Tool exposure: `forget_memory`

    Deletes the topic; its summary always leaves the index document, and its entry
    leaves the content search. For a topic that does not exist the answer is
    NOT_FOUND, after removing anything of it that remained. Changing a project's
    memory needs the writer role.

    **When to use:** when a topic is obsolete or was stored by mistake.

    **Usage:**
    ```json
    {"topic": "deployment-process"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Topic 'deployment-process' forgotten", "topic": "deployment-process"}
    ```

    **Errors:**
    - NOT_FOUND: no such topic.
    - INVALID_INPUT: a bad topic name (details name `topic`); no project or user id.
    - UNAUTHORIZED: changing a project's memory without the writer role.
    - CONFLICT: the topic changed while it was being forgotten (retryable).

    @see mnemo.topics.service.TopicService.forget
    """
    return services.topics.forget(context, request)

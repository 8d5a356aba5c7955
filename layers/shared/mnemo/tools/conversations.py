"""Conversation and execution memory tools (seed 003; the MemoryOS schemas in mnemo/conversations/contracts/).

The MemoryOS schemas are the contract, so these tools speak snake_case and
answer ``{success, message, data}``. Everything is stored in the caller's own
user layer; the user is the transport's (MEMORY_USER_ID for MCP stdio), and a
body ``user_id`` naming anyone else is UNAUTHORIZED. Tools are listed in an
order whose examples chain: a conversation, its execution, then both retrievals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.context import RequestContext
from mnemo.conversations.models import (
    AddConversationInput,
    AddConversationOutput,
    AddExecutionInput,
    AddExecutionOutput,
    RetrieveConversationInput,
    RetrieveConversationOutput,
    RetrieveExecutionInput,
    RetrieveExecutionOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import Rights

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = "Conversation and execution memory of the user, linked by message id"


# Writes the record with its index outbox marker, indexes it and clears the marker.
@tool(
    "conversations",
    rights=Rights(records="read-write", embeds=True, index="write", extraction_queue=True),
)
def add_conversation(
    services: Services, context: RequestContext, request: AddConversationInput
) -> AddConversationOutput:
    """[SPECIFICATION] Store a conversation pair (the user's input and the agent's response) in conversation memory.

    Tool exposure: `add_conversation`

    The pair is kept in the caller's own user layer with its metadata and timestamp
    (ISO 8601, UTC; now when not given) and indexed for hybrid search. `message_id`
    links it to an execution (add_execution) and is generated (`msg_` + hex) when
    omitted. Storing the same message_id with the same content again changes
    nothing and answers the same; different content for a stored message_id is
    CONFLICT. The answer reports how long storing took, measured.

    **When to use:** after each exchange worth recalling later, to build a persistent
    dialogue history; keep the message_id to store the execution under it.

    **Usage:**
    ```json
    {"message_id": "msg_7f3a9c2e", "explanation": "Remember the user's weather question and the answer", "user_input": "What's the weather in Paris tomorrow?", "agent_response": "Tomorrow in Paris: light rain, 14°C. I used the weather_api forecast.", "timestamp": "2024-12-15T14:30:00Z", "meta_data": {"platform": "slack", "importance": "low"}}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Conversation msg_7f3a9c2e: stored and indexed in 4.2 ms", "data": {"status": "success", "message_id": "msg_7f3a9c2e", "timestamp": "2024-12-15T14:30:00Z", "details": {"has_meta_data": true, "memory_processing": "stored and indexed in 4.2 ms"}}}
    ```

    **Errors:**
    - INVALID_INPUT: a required field is missing or empty; user_input or agent_response
      over 10000 characters; message_id over 100; timestamp not ISO 8601; an unknown
      field; no user id in the request context (details name the field).
    - UNAUTHORIZED: a body user_id that is not the caller.
    - CONFLICT: the message_id is already stored with different content (not
      retryable: use a new message_id).
    - PROVIDER_ERROR: the record store failed (retryable). An index failure does not
      fail the call: the conversation is stored and queued for indexing.

    @see mnemo.conversations.service.ConversationService.add_conversation
    """
    return services.conversations.add_conversation(context, request)


# Writes the record with its index outbox marker, indexes it and clears the marker.
@tool(
    "conversations",
    rights=Rights(records="read-write", embeds=True, index="write", extraction_queue=True),
)
def add_execution(services: Services, context: RequestContext, request: AddExecutionInput) -> AddExecutionOutput:
    """[SPECIFICATION] Store how a task was executed (tools used, errors, observations) in execution memory.

    Tool exposure: `add_execution`

    The execution is linked to its conversation by `message_id` and may be stored
    before or after it. Tools keep their order; errors, observations, success,
    duration_ms (0 when not reported) and metadata are kept, and it is indexed so
    that later retrievals can find it by summary, tool, error or reasoning. The same
    message_id with the same content again answers the same; different content is
    CONFLICT. The answer reports how long storing took, measured.

    **When to use:** at the end of a task, so that similar tasks can learn which tools
    worked, which errors happened and how they were handled.

    **Usage:**
    ```json
    {"message_id": "msg_7f3a9c2e", "explanation": "Record how the weather question was answered", "execution_summary": "Looked up the Paris forecast with the weather API after a geocoding retry", "tools_used": ["geocode_city", "weather_api"], "errors": [{"error_type": "timeout", "error_message": "geocoding took over 5 s", "tool": "geocode_city"}], "observations": "Geocoding timed out once; a retry worked. Cache city coordinates next time.", "success": true, "duration_ms": 1840, "timestamp": "2024-12-15T14:30:02Z"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Execution msg_7f3a9c2e: stored and indexed in 3.9 ms", "data": {"status": "success", "message_id": "msg_7f3a9c2e", "timestamp": "2024-12-15T14:30:02Z", "details": {"execution_summary": "Looked up the Paris forecast with the weather API after a geocoding retry", "tools_count": 2, "errors_count": 1, "duration_ms": 1840, "success": true, "has_meta_data": false, "memory_processing": "stored and indexed in 3.9 ms"}}}
    ```

    **Errors:**
    - INVALID_INPUT: a required field is missing; execution_summary empty or over 2000
      characters; observations over 5000; duration_ms negative; success not a
      boolean; an unknown field; no user id in the request context.
    - UNAUTHORIZED: a body user_id that is not the caller.
    - CONFLICT: the message_id already has an execution with different content
      (not retryable: use a new message_id).
    - PROVIDER_ERROR: the record store failed (retryable).

    @see mnemo.conversations.service.ConversationService.add_execution
    """
    return services.conversations.add_execution(context, request)


# Only reads: the outbox is drained by the indexer's schedule.
@tool(
    "conversations",
    rights=Rights(records="read", embeds=True, index="read"),
)
def retrieve_conversation(
    services: Services, context: RequestContext, request: RetrieveConversationInput
) -> RetrieveConversationOutput:
    """[SPECIFICATION] Retrieve past conversation pairs (user prompt and agent response) relevant to a query.

    Tool exposure: `retrieve_conversation`

    Strategies: `hybrid` (semantic similarity with BM25 on a calibrated 0-1
    relevance_score; near-equal scores go to the newer conversation), `recent` (newest
    first, no relevance_score) and `keyword` (BM25 only). `time_range` keeps
    conversations within it; `message_id` fetches that one conversation (for instance
    the one behind an execution). Each conversation says `has_execution_memory`:
    whether an execution with its message_id is stored, so retrieve_execution can
    show how the task was solved. `total_found` counts every match, before
    `max_results` (1-50, default 10).

    **When to use:** before answering something that may depend on past exchanges
    with this user, or to see what was asked when an execution is looked at.

    **Usage:**
    ```json
    {"query": "weather forecast for Paris", "explanation": "The user asks about the weather again; check what was said before", "max_results": 5, "retrieval_strategy": "hybrid"}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Found 1 conversation, returned 1 (hybrid, 5.1 ms)", "data": {"status": "success", "query": "weather forecast for Paris", "explanation": "The user asks about the weather again; check what was said before", "query_type": "general", "retrieval_timestamp": "2024-12-16T09:00:00.123000Z", "conversations": [{"message_id": "msg_7f3a9c2e", "conversation_timestamp": "2024-12-15T14:30:00Z", "user_input": "What's the weather in Paris tomorrow?", "agent_response": "Tomorrow in Paris: light rain, 14°C. I used the weather_api forecast.", "meta_data": {"platform": "slack", "importance": "low"}, "has_execution_memory": true, "relevance_score": 0.81}], "total_found": 1, "returned_count": 1, "max_results_applied": false}}
    ```

    **Errors:**
    - INVALID_INPUT: query or explanation missing; query over 4000 characters;
      max_results outside 1-50; an unknown retrieval_strategy; a time_range bound
      that is not ISO 8601 (details name e.g. `time_range.start`); no user id in the
      request context.
    - UNAUTHORIZED: a body user_id that is not the caller.

    @see mnemo.conversations.service.ConversationService.retrieve_conversation
    """
    return services.conversations.retrieve_conversation(context, request)


# Only reads: the outbox is drained by the indexer's schedule.
@tool(
    "conversations",
    rights=Rights(records="read", embeds=True, index="read"),
)
def retrieve_execution(
    services: Services, context: RequestContext, request: RetrieveExecutionInput
) -> RetrieveExecutionOutput:
    """[SPECIFICATION] Retrieve past executions to learn how similar tasks were solved: tools, errors, reasoning.

    Tool exposure: `retrieve_execution`

    Strategies: `hybrid` (semantic similarity with BM25, calibrated 0-1
    relevance_score, ties to the newer), `recent` (newest first) and `keyword` (BM25
    only). `message_id` fetches the execution of that conversation. Filters (an
    extension of the MemoryOS schema): `tools` (used any of them, case-insensitive),
    `success`, `error_type` and `time_range`; with any of them the query_type is
    `pattern_search`. Each execution says `has_conversation_memory`, and its
    message_id fetches the conversation with retrieve_conversation. The MemoryOS
    `user_id` field may be sent and must be the caller's own user id.

    **When to use:** before a task like one done before, to reuse the tools that
    worked and avoid the errors that happened.

    **Usage:**
    ```json
    {"message_id": "msg_7f3a9c2e", "query": "how was the weather question answered", "explanation": "See which tools answered the earlier weather question", "max_results": 3}
    ```

    **Returns:**
    ```json
    {"success": true, "message": "Found 1 execution, returned 1 (lookup, 1.2 ms)", "data": {"status": "success", "query": "how was the weather question answered", "explanation": "See which tools answered the earlier weather question", "query_type": "specific_message", "requested_message_id": "msg_7f3a9c2e", "retrieval_timestamp": "2024-12-16T09:00:01.456000Z", "executions": [{"message_id": "msg_7f3a9c2e", "execution_timestamp": "2024-12-15T14:30:02Z", "execution_details": {"execution_summary": "Looked up the Paris forecast with the weather API after a geocoding retry", "tools_used": ["geocode_city", "weather_api"], "errors": [{"error_type": "timeout", "error_message": "geocoding took over 5 s", "tool": "geocode_city"}], "observations": "Geocoding timed out once; a retry worked. Cache city coordinates next time."}, "success": true, "duration_ms": 1840, "relevance_score": 1.0, "has_conversation_memory": true, "meta_data": {}}], "total_found": 1, "returned_count": 1, "max_results_applied": false}}
    ```

    **Errors:**
    - INVALID_INPUT: query or explanation missing; query over 4000 characters;
      max_results outside 1-50; an unknown retrieval_strategy; an empty tools list;
      success not a boolean; no user id in the request context.
    - UNAUTHORIZED: a body user_id that is not the caller.

    @see mnemo.conversations.service.ConversationService.retrieve_execution
    """
    return services.conversations.retrieve_execution(context, request)

"""Request and response models of the conversation tools: the MemoryOS contract, snake_case.

The eight draft-07 schemas vendored in mnemo/conversations/contracts/ are the contract:
every request valid under an input schema is accepted, and every answer
validates against its output schema. So, unlike the camelCase families:

- fields are snake_case, with no alias generator;
- requests refuse unknown top-level fields (the schemas say
  ``additionalProperties: false``), while nested objects the schemas leave open
  (an error item, ``time_range``) accept extra keys;
- answers are ``{success, message, data}`` and leave out absent optional fields
  instead of sending ``null``, which the schemas' types would refuse.

Extensions, all optional so that valid MemoryOS requests stay valid: add_conversation
generates a ``message_id`` when none is given; retrieve_execution takes the
filters ``time_range``, ``tools``, ``success`` and ``error_type``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    model_serializer,
    model_validator,
)

from mnemo.models import UtcDateTime

#: A stored record (one DynamoDB item holds at most 400 KB; its time entry and index doc come on top).
MAX_RECORD_BYTES = 300_000
MAX_MESSAGE_ID_CHARS = 100
Strategy = Literal["hybrid", "recent", "keyword"]


def _string_only(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string")
    return value


def _integer_only(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    return value


#: ISO 8601; a time without an offset is taken as UTC; kept in UTC.
Timestamp = Annotated[UtcDateTime, BeforeValidator(_string_only)]
Integer = Annotated[int, BeforeValidator(_integer_only)]
Duration = Annotated[int, Field(ge=0), BeforeValidator(_integer_only)]
MessageId = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_ID_CHARS)]


class ContractRequest(BaseModel):
    """A snake_case request: unknown top-level fields are an error (additionalProperties: false)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _storable(self) -> ContractRequest:
        sizes = {name: len(json.dumps(value, default=str)) for name, value in self.model_dump().items()}
        if sum(sizes.values()) > MAX_RECORD_BYTES:
            largest = max(sizes, key=lambda name: sizes[name])
            raise ValueError(
                f"the request takes {sum(sizes.values())} bytes as JSON, more than the {MAX_RECORD_BYTES} "
                f"a record holds; {largest} is the largest field"
            )
        return self


class ContractModel(BaseModel):
    """A snake_case answer part; optional fields that are unset are left out, never null."""

    @model_serializer(mode="wrap")
    def _without_nulls(
        self, handler: SerializerFunctionWrapHandler
    ):  # no return annotation: it would replace the schema
        dumped = handler(self)
        return {key: value for key, value in dumped.items() if value is not None}


class TimeRange(BaseModel):
    model_config = ConfigDict(extra="ignore")

    start: Timestamp | None = Field(None, description="Only entries at or after this time (ISO 8601).")
    end: Timestamp | None = Field(None, description="Only entries at or before this time (ISO 8601).")


class ExecutionError(BaseModel):
    """One error of an execution; keys beyond the three named are kept and returned."""

    model_config = ConfigDict(extra="allow")

    error_type: str = Field(description="Kind of error, e.g. 'timeout' or 'ValidationError'.")
    error_message: str = Field(description="What the error said.")
    tool: str | None = Field(None, description="The tool that raised it, if any.")

    @model_serializer(mode="wrap")
    def _without_nulls(
        self, handler: SerializerFunctionWrapHandler
    ):  # no return annotation: it would replace the schema
        dumped = handler(self)
        return {key: value for key, value in dumped.items() if value is not None}


_META = Field(None, description="Optional metadata about the context (platform, importance, etc.); any JSON object.")


# ------------------------------------------------------------------ inputs ---
class AddConversationInput(ContractRequest):
    message_id: MessageId | None = Field(
        None,
        description="Unique identifier of this conversation pair, used to link with execution memory. "
        "Generated (msg_ + hex) when omitted.",
    )
    explanation: str = Field(description="One sentence explanation of why this memory is being stored.")
    user_input: str = Field(min_length=1, max_length=10000, description="The user's input, question or message.")
    agent_response: str = Field(min_length=1, max_length=10000, description="The agent's response to the user input.")
    timestamp: Timestamp | None = Field(None, description="When it happened, ISO 8601 (now when not provided).")
    meta_data: dict[str, Any] | None = _META


class AddExecutionInput(ContractRequest):
    message_id: MessageId = Field(description="Unique identifier linking this execution to its conversation pair.")
    explanation: str = Field(description="One sentence explanation of why this execution memory is being stored.")
    execution_summary: str = Field(
        min_length=1, max_length=2000, description="High-level summary of what was executed and accomplished."
    )
    tools_used: list[str] = Field(description="Tools that were executed, in chronological order.")
    errors: list[ExecutionError] = Field(description="Errors that occurred during execution.")
    observations: str = Field(
        max_length=5000, description="Reasoning approach, problem-solving strategy and key insights."
    )
    success: StrictBool = Field(description="Whether the overall execution was successful.")
    duration_ms: Duration | None = Field(None, description="How long the execution took, in milliseconds.")
    timestamp: Timestamp | None = Field(None, description="When the execution happened, ISO 8601 (now when omitted).")
    meta_data: dict[str, Any] | None = _META


class RetrieveConversationInput(ContractRequest):
    message_id: MessageId | None = Field(
        None, description="Fetch the conversation of this message_id (e.g. the one behind an execution)."
    )
    time_range: TimeRange | None = Field(None, description="Only conversations within this time range.")
    explanation: str = Field(description="One sentence explanation of why this retrieval is being performed.")
    query: str = Field(min_length=1, max_length=4000, description="The search query.")
    max_results: Integer = Field(10, ge=1, le=50, description="Maximum number of conversations returned.")
    retrieval_strategy: Strategy = Field(
        "hybrid",
        description="hybrid (semantic with lexical, ties to the newest), recent (newest first) or keyword (lexical).",
    )


class RetrieveExecutionInput(ContractRequest):
    message_id: MessageId | None = Field(
        None, description="Fetch the execution of this message_id (e.g. the one of a conversation)."
    )
    explanation: str = Field(description="One sentence explanation of why this retrieval is being performed.")
    query: str = Field(min_length=1, max_length=4000, description="Search query for execution patterns.")
    max_results: Integer = Field(10, ge=1, le=50, description="Maximum number of executions returned.")
    retrieval_strategy: Strategy = Field(
        "hybrid",
        description="hybrid (semantic with lexical, ties to the newest), recent (newest first) or keyword (lexical).",
    )
    time_range: TimeRange | None = Field(None, description="Extension: only executions within this time range.")
    tools: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None, min_length=1, max_length=20, description="Extension: only executions that used any of these tools."
    )
    success: StrictBool | None = Field(None, description="Extension: only successful (true) or failed (false) ones.")
    error_type: str | None = Field(
        None, min_length=1, max_length=200, description="Extension: only executions with an error of this type."
    )

    def has_pattern_filters(self) -> bool:
        return any(value is not None for value in (self.time_range, self.tools, self.success, self.error_type))


# ----------------------------------------------------------------- outputs ---
class AddConversationDetails(ContractModel):
    has_meta_data: bool
    memory_processing: str = Field(description="What storing did and how long it took (measured).")


class AddConversationData(ContractModel):
    status: Literal["success", "error"] = "success"
    message_id: str
    timestamp: datetime = Field(description="When the conversation happened (ISO 8601, UTC).")
    details: AddConversationDetails


class AddConversationOutput(ContractModel):
    success: bool = True
    message: str
    data: AddConversationData


class AddExecutionDetails(ContractModel):
    execution_summary: str
    tools_count: int
    errors_count: int
    duration_ms: int
    success: bool
    has_meta_data: bool
    memory_processing: str = Field(description="What storing did and how long it took (measured).")


class AddExecutionData(ContractModel):
    status: Literal["success", "error"] = "success"
    message_id: str
    timestamp: datetime = Field(description="When the execution happened (ISO 8601, UTC).")
    details: AddExecutionDetails


class AddExecutionOutput(ContractModel):
    success: bool = True
    message: str
    data: AddExecutionData


class ConversationResult(ContractModel):
    message_id: str
    conversation_timestamp: datetime
    user_input: str
    agent_response: str
    meta_data: dict[str, Any]
    has_execution_memory: bool = Field(description="True when an execution with this message_id is stored.")
    relevance_score: float | None = Field(
        None, ge=0.0, le=1.0, description="Relevance to the query, 0-1 (absent for the recent strategy)."
    )


class TimeRangeEcho(ContractModel):
    start: datetime | None = None
    end: datetime | None = None


class RetrieveConversationData(ContractModel):
    status: Literal["success", "error"] = "success"
    query: str
    explanation: str
    query_type: Literal["general", "specific_message", "time_filtered"]
    requested_message_id: str | None = None
    retrieval_timestamp: datetime
    time_range: TimeRangeEcho | None = None
    conversations: list[ConversationResult]
    total_found: int = Field(description="Conversations matching the criteria (before max_results).")
    returned_count: int
    max_results_applied: bool


class RetrieveConversationOutput(ContractModel):
    success: bool = True
    message: str
    data: RetrieveConversationData


class ExecutionDetails(ContractModel):
    execution_summary: str
    tools_used: list[str]
    errors: list[ExecutionError]
    observations: str


class ExecutionResult(ContractModel):
    message_id: str
    execution_timestamp: datetime
    execution_details: ExecutionDetails
    success: bool
    duration_ms: int = Field(description="How long the execution took (0 when it was not reported).")
    relevance_score: float | None = Field(
        None, ge=0.0, le=1.0, description="Relevance to the query, 0-1 (absent for the recent strategy)."
    )
    has_conversation_memory: bool = Field(
        description="Extension: true when a conversation with this message_id is stored."
    )
    meta_data: dict[str, Any] = Field(default_factory=dict, description="Extension: the metadata stored with it.")


class RetrieveExecutionData(ContractModel):
    status: Literal["success", "error"] = "success"
    query: str
    explanation: str
    query_type: Literal["general", "specific_message", "pattern_search"]
    requested_message_id: str | None = None
    retrieval_timestamp: datetime
    executions: list[ExecutionResult]
    total_found: int = Field(description="Executions matching the criteria (before max_results).")
    returned_count: int
    max_results_applied: bool


class RetrieveExecutionOutput(ContractModel):
    success: bool = True
    message: str
    data: RetrieveExecutionData

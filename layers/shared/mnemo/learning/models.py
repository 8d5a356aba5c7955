"""Request and response models of the learning tools: add_messages, memory_extract, extraction_status.

Each model is described by a comment, not a docstring: pydantic publishes a model's docstring as the
description of its JSON Schema, so a docstring would change the generated catalog the client ships.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from mnemo.learning.strategies import StrategyName
from mnemo.memory.models import ExpiresAt
from mnemo.models import Boolean, Integer, ToolRequest, ToolResponse, UtcDateTime, WireModel

#: The most messages one add_messages call stores.
MAX_MESSAGES = 100
MAX_MESSAGE_CHARS = 10_000
#: A message id: shown to the model between square brackets, so none of ``[]`` or whitespace.
MessageId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._:@#/+=,\-]{1,100}$")]
Role = Literal["user", "assistant", "system", "tool"]
Decision = Literal["added", "kept", "superseded", "merged", "outdated", "refused"]


# One chat turn, in the shape chat clients hold (Mem0's add(messages), AgentCore's CreateEvent payload).
class Message(WireModel):
    role: Role = Field(description="Who spoke: user, assistant, system or tool.")
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="What was said.")
    name: str | None = Field(
        None, min_length=1, max_length=100, description="The speaker's name, when there are several users."
    )
    id: MessageId | None = Field(
        None,
        description="The message's id: storing it again is a no-op. Derived from the session, role, name, "
        "content, time and place in the call when omitted: a resent batch with its `at` times is stored once "
        "(without `at`, the time is the server's, so send an id or `at` to make a resend safe).",
    )
    at: UtcDateTime | None = Field(None, description="When it was said, ISO 8601 (now when omitted).")

    model_config = WireModel.model_config | {"extra": "forbid"}


# add_messages's request: the turns, oldest first.
class AddMessagesInput(ToolRequest):
    messages: list[Message] = Field(
        min_length=1, max_length=MAX_MESSAGES, description="The turns to store, oldest first (at most 100)."
    )
    expires_at: ExpiresAt | None = Field(
        None,
        description="When the turns this call stores expire (ISO 8601, in the future, at most 10 years ahead): "
        "from then on no search or retrieval finds them and storage deletes them. A message stored already keeps "
        "its expiry. Never expires when omitted.",
    )


# What add_messages did with one message.
class StoredMessage(WireModel):
    id: str = Field(description="The message id it is stored under.")
    outcome: Literal["stored", "repeat"] = Field(description="stored, or repeat when it was already stored as sent.")


# add_messages's answer.
class AddMessagesOutput(ToolResponse):
    message: str
    messages: list[StoredMessage]
    stored: int = Field(description="Messages stored by this call.")
    repeated: int = Field(description="Messages that were already stored (idempotent repeats).")
    pending_turns: int = Field(description="Turns of this session waiting for extraction (0 when it is off).")
    extraction: Literal["queued", "off"] = Field(
        description="queued: the strategies will run in the background; off: no strategy is on (see extraction_status)."
    )


# memory_extract's request.
class MemoryExtractInput(ToolRequest):
    dry_run: Boolean = Field(
        False, description="Show the candidates and the decisions without writing anything or using up the turns."
    )
    strategies: list[StrategyName] | None = Field(
        None, min_length=1, description="Only these strategies (default: every one the deployment turns on)."
    )


# One memory a strategy proposed, and what consolidation decided.
class CandidateView(WireModel):
    text: str
    subject: str | None = None
    source_ids: list[str] = Field(description="The message ids it came from.")
    occurred_at: datetime | None = None
    decision: Decision = Field(
        description="added (new), kept (the same fact was stored: its provenance is extended), superseded (it "
        "replaces every current memory about the same subject), merged (another candidate of the batch about the "
        "same subject stands for it, citing its turns too), outdated (older than the subject's current memory: "
        "written as its history, already superseded), refused (not valid: see reason)."
    )
    memory_id: str | None = Field(None, description="The memory written or kept (a dry run names the one it would).")
    supersedes: str | None = Field(None, description="The memory it replaces, when superseded.")
    reason: str | None = None


# A failure of one strategy on one batch.
class StrategyFailure(WireModel):
    message: str
    raw: str | None = Field(None, description="The model's raw answer, when it gave one.")
    attempts: int = 1


# One strategy's part of a run.
class StrategyRun(WireModel):
    strategy: StrategyName
    model: str
    candidates: list[CandidateView] = Field(default_factory=list)
    failure: StrategyFailure | None = None
    input_tokens: int = 0
    output_tokens: int = 0


# One extraction run over a batch of turns.
class RunView(WireModel):
    run_id: str
    at: datetime
    trigger: Literal["turns", "idle", "demand", "backfill"]
    dry_run: bool = False
    session: str | None = None
    turns: list[str] = Field(description="The message ids of the turns it read.")
    strategies: list[StrategyRun]
    deferred: list[StrategyName] = Field(
        default_factory=list,
        description="Strategies left for the background run because the request's deadline was near (their "
        "turns still wait).",
    )
    truncated: int = Field(0, description="Candidates left out of this record to keep it under the store's item size.")


# memory_extract's answer.
class MemoryExtractOutput(ToolResponse):
    message: str
    run: RunView | None = Field(None, description="The run; null when no turn was waiting.")
    pending_turns: int = Field(description="Turns still waiting after this run.")


# extraction_status's request.
class ExtractionStatusInput(ToolRequest):
    runs: Integer = Field(5, ge=0, le=50, description="How many recent runs to show, newest first.")


# One strategy's standing.
class StrategyStatus(WireModel):
    strategy: StrategyName
    enabled: bool
    model: str | None = None
    pending_turns: int = 0
    runs: int = 0
    failures: int = 0
    added: int = 0
    kept: int = 0
    superseded: int = 0
    merged: int = Field(0, description="Candidates merged into another of their batch about the same subject.")
    outdated: int = Field(0, description="Candidates older than their subject's current memory, kept as history.")
    input_tokens: int = 0
    output_tokens: int = 0
    last_run_at: datetime | None = None
    last_failure: StrategyFailure | None = None


# The caller's running profile (the profile strategy), as extraction_status shows it.
class ProfileView(WireModel):
    text: str
    memory_id: str
    built_at: datetime = Field(description="When this version was written.")
    tokens: int = Field(description="Its size, estimated as pinned_context estimates (at most maxTokens).")
    memory_ids: list[str] = Field(description="The memories this version was built from.")
    pending: int = Field(0, description="Changed memories a failed profile call left for the next rewrite.")


# extraction_status's answer, for the caller's session.
class ExtractionStatusOutput(ToolResponse):
    enabled: bool = Field(description="Whether any strategy is on.")
    how_to_enable: str | None = Field(None, description="When off: the settings that turn extraction on.")
    session: str | None = None
    pending_turns: int
    last_turn_at: datetime | None = None
    last_run_at: datetime | None = None
    trigger: dict[str, Any] = Field(
        default_factory=dict, description="When a run starts: everyTurns, idleMinutes, judge (consolidation model)."
    )
    strategies: list[StrategyStatus]
    profile: ProfileView | None = Field(
        None, description="The caller's running profile, when the profile strategy is on and has written one."
    )
    recent_runs: list[RunView] = Field(default_factory=list, description="The newest runs first.")

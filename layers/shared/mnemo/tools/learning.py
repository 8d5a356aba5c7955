"""Memory that learns: chat turns in, extraction strategies over them, and their status.

Turns are stored as conversation records of the caller (their session in ``meta_data``) and answered at
once; the strategies (facts, preferences, summary, lessons, graph) run in the background when a
deployment turns them on, and write only into the scopes of the identity that wrote the turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemo.briefing.models import MemoryContextInput, MemoryContextOutput
from mnemo.context import RequestContext
from mnemo.learning.models import (
    AddMessagesInput,
    AddMessagesOutput,
    ExtractionStatusInput,
    ExtractionStatusOutput,
    MemoryExtractInput,
    MemoryExtractOutput,
)
from mnemo.tools.registry import tool
from mnemo.tools.rights import Rights, Runtime

if TYPE_CHECKING:
    from mnemo.runtime import Services


#: What this family is for, in a sentence: its Bedrock action group and function descriptions.
SUMMARY = (
    "Chat turns stored and learned from (facts, preferences, summaries and lessons extracted in the background), "
    "and the context an agent is given before it answers"
)


# Stores every message with its waiting-turn marker in one write each; a notice goes to the queue. A resend
# is a repeat only when every message names its id and time (mnemo.client.repeat.KEYED_BATCHES): without
# them the service derives or stamps new ones.
@tool("learning", rights=Rights(records="read-write", embeds=True, index="write", extraction_queue=True))
def add_messages(services: Services, context: RequestContext, request: AddMessagesInput) -> AddMessagesOutput:
    """[SPECIFICATION] Store chat turns as the caller's conversation, for the extraction strategies to learn from.

    Tool exposure: `add_messages`

    Takes at most 100 messages `{role, content, name?, id?, at?}`, oldest first, in the
    shape chat clients hold them (Mem0's `add(messages)`, AgentCore's `CreateEvent`).
    Each is stored as a conversation record of the caller (retrieve_conversation finds
    it; its role and name in `meta_data.mnemo_message`, the session in
    `meta_data.session`) and indexed. Idempotent by message id: a message sent again
    with the same id and content is a repeat and changes nothing, so a resent batch is
    safe; without an id one is derived from the session, role, name, content and time.
    The answer never waits for a model: when a deployment turns extraction on, the
    session's turns are extracted in the background (every 6 turns, after 10 minutes
    idle, or at once with memory_extract) into memories whose `metadata.provenance`
    names the strategy, the model and the message ids they came from. `expiresAt` gives
    every turn the call stores an end (at most 10 years ahead): from then on no search
    or retrieval finds them and storage deletes them (docs/lifecycle.md).

    **When to use:** after each exchange (or at the end of a session), to let Mnemo
    learn facts, preferences and a summary from the conversation itself instead of
    deciding what to store with memory_add.

    **Usage:**
    ```json
    {"messages": [{"role": "user", "content": "I moved to Lisbon last month, and I prefer window seats.", "name": "alice", "id": "m-101", "at": "2025-03-03T09:00:00Z"}, {"role": "assistant", "content": "Noted: Lisbon, window seats.", "id": "m-102", "at": "2025-03-03T09:00:05Z"}]}
    ```

    **Returns:**
    ```json
    {"message": "Stored 2 message(s), 0 already stored; extraction runs in the background", "messages": [{"id": "m-101", "outcome": "stored"}, {"id": "m-102", "outcome": "stored"}], "stored": 2, "repeated": 0, "pendingTurns": 2, "extraction": "queued"}
    ```

    **Errors:**
    - INVALID_INPUT: no messages or more than 100; a role other than user, assistant,
      system or tool; empty content or over 10000 characters; an id with spaces or
      brackets, or the same id twice in one call; an unknown field; no user id in the
      request context; `expiresAt` in the past or more than 10 years ahead (details
      name the field).
    - CONFLICT: an id already stored with different content, or from another session
      (nothing of the call is written; use a new id).
    - PROVIDER_ERROR: the record store failed (retryable: the call is idempotent).

    @see mnemo.learning.service.LearningService.add_messages
    """
    return services.learning.add_messages(context, request)


# Runs the strategies in the request (bounded by the batch size); dryRun writes nothing.
@tool(
    "learning",
    rights=Rights(records="read-write", embeds=True, extracts=True, index="write"),
    # 512 MB, as ExtractionFunction, which runs the same strategies over a session's turns.
    runtime=Runtime(timeout=120, deadline=25, memory=512),
)
def memory_extract(services: Services, context: RequestContext, request: MemoryExtractInput) -> MemoryExtractOutput:
    """[SPECIFICATION] Run the extraction strategies now over the caller's waiting turns, or preview them.

    Tool exposure: `memory_extract`

    Takes the oldest waiting turns of the caller's session (at most 50) through each
    strategy the deployment turns on (or those named in `strategies`): one model call
    each, the answer checked against the strategy's schema, then consolidation against
    the scope's memories, which keeps one current memory per subject. Each candidate's
    decision is answered: `added`, `kept` (the same fact was stored: its provenance is
    extended), `superseded` (it replaces every current memory about the same subject,
    which stay, marked, in memory_history), `merged` (another candidate of the batch
    about the same subject stands for it), `outdated` (older than the current memory:
    kept as its history) or `refused` (with the reason). `dryRun` answers the candidates and decisions and
    writes nothing: the turns stay waiting. A strategy whose model fails is reported
    under `failure` with the model's raw answer, and its turns stay waiting.

    **When to use:** at the end of a session, to have its memories at once instead of
    waiting for the background run; with dryRun, to see what a prompt change extracts.

    **Usage:**
    ```json
    {"dryRun": true}
    ```

    **Returns:**
    ```json
    {"message": "Would extract from 2 turn(s): 2 added (dry run: nothing written)", "run": {"runId": "run_4f2a9c0d1e2b3a4c", "at": "2025-03-03T09:01:00Z", "trigger": "demand", "dryRun": true, "session": "s1", "turns": ["m-101", "m-102"], "strategies": [{"strategy": "facts", "model": "bedrock:amazon.nova-lite-v1:0", "candidates": [{"text": "Alice moved to Lisbon in February 2025.", "subject": "Alice's home city", "sourceIds": ["m-101"], "occurredAt": "2025-02-01T00:00:00Z", "decision": "added", "memoryId": "mem_9a8b7c6d5e4f3a2b1c0d9e8f"}], "failure": null, "inputTokens": 512, "outputTokens": 64}]}, "pendingTurns": 2}
    ```

    **Errors:**
    - INVALID_INPUT: extraction is off in this deployment (the message says how to
      turn it on); a strategy that is not on; an unknown field; no user id in the
      request context.
    - PROVIDER_ERROR: the record store failed (retryable). A model failure does not
      fail the call: it is reported in the strategy's `failure`.

    @see mnemo.learning.service.LearningService.extract
    """
    return services.learning.extract(context, request)


@tool("learning", rights=Rights(records="read"))
def extraction_status(
    services: Services, context: RequestContext, request: ExtractionStatusInput
) -> ExtractionStatusOutput:
    """[SPECIFICATION] Report extraction for the caller's session: what is on, what waits, what ran, what failed.

    Tool exposure: `extraction_status`

    Per strategy: whether it is on and with which model, the turns waiting for it, its
    runs, its decisions (added, kept, superseded), its failures with the model's raw
    answer, and the tokens it used. Then the session's newest runs (`runs`, default 5)
    with each candidate, its decision and the message ids it came from. With extraction
    off, `howToEnable` names the settings that turn it on; everything else in Mnemo
    works without it.

    **When to use:** to see why a fact was or was not learned, what extraction costs, or
    whether a deployment has it on.

    **Usage:**
    ```json
    {"runs": 2}
    ```

    **Returns:**
    ```json
    {"enabled": false, "howToEnable": "set MNEMO_EXTRACTION_STRATEGIES and a model", "session": "s1", "pendingTurns": 0, "lastTurnAt": null, "lastRunAt": null, "trigger": {"everyTurns": 6, "idleMinutes": 10.0, "judge": true, "maxCandidates": 50}, "strategies": [{"strategy": "facts", "enabled": false, "pendingTurns": 0, "runs": 0, "failures": 0, "added": 0, "kept": 0, "superseded": 0, "inputTokens": 0, "outputTokens": 0}], "recentRuns": []}
    ```

    **Errors:**
    - INVALID_INPUT: runs outside 0-50; an unknown field; no user id in the request
      context.
    - PROVIDER_ERROR: the record store failed (retryable).

    @see mnemo.learning.service.LearningService.status
    """
    return services.learning.status(context, request)


@tool(
    "learning",
    rights=Rights(records="read", embeds=True, index="read"),
    runtime=Runtime(block_budget=True),
)
def memory_context(services: Services, context: RequestContext, request: MemoryContextInput) -> MemoryContextOutput:
    """[SPECIFICATION] What you should know before you answer, as prompt-ready text within a token budget.

    Tool exposure: `memory_context`

    One call instead of memory_search, pinned_context and retrieve_conversation: the
    user's profile (when the profile strategy is on), this session's summary, the
    memories and your own past turns that bear on `query` (ranked as memory_search
    ranks with `includeTurns`: a fact learned from turns stands for them, so the budget
    is not spent twice), and your pinned blocks, in sections, with dates written out
    ("8 May 2023") so that "when" can be answered from the text. Items are taken by value
    per token until `budget` (tokens, pinned_context's estimate, default 1500) is
    spent: `tokens` is never above it and `truncated` says some relevant item had no
    room. `sources` names every item included (kind, id, layer, occurredAt, score,
    the turns it came from as `messageIds`, its tokens) in the order the text shows
    them; `sections` gives each section's tokens. `sections` in the request keeps only
    those sections. Superseded and expired memories never appear; `asOf` answers as
    things stood then (nothing said or stored later; pinned blocks as they are now).
    No model is called. The session and user come from your identity.

    **When to use:** before each answer, to put what Mnemo knows into the prompt.

    **Usage:**
    ```json
    {"query": "Where should we hold the offsite?", "budget": 1000}
    ```

    **Returns:**
    ```json
    {"success": true, "context": "## About the user\\n(as of 3 March 2025) Alice lives in Lisbon and prefers window seats.\\n\\n## From past conversations\\n3 March 2025:\\nalice: I moved to Lisbon last month", "tokens": 31, "budget": 1000, "sections": {"profile": 16, "turns": 15}, "sources": [{"kind": "profile", "id": "mem_0c1d2e3f4a5b6c7d8e9f0a1b", "section": "profile", "layer": "user", "occurredAt": "2025-03-03T09:10:00Z", "score": null, "messageIds": ["m-101"], "tokens": 17}, {"kind": "turn", "id": "m-101", "section": "turns", "layer": "user", "occurredAt": "2025-03-03T09:00:00Z", "score": 0.61, "messageIds": ["m-101"], "tokens": 9}], "truncated": false}
    ```

    **Errors:**
    - INVALID_INPUT: query missing or over 4000 characters; budget outside 100-16000;
      an unknown section or one named twice; a malformed asOf.

    @see mnemo.briefing.service.ContextService.build
    """
    return services.briefing.build(context, request)

"""One extraction run over a stream's waiting turns: read, ask each strategy's model, check, consolidate, record.

A run takes the oldest ``MAX_BATCH_TURNS`` waiting turns of the stream (``mnemo.learning.ledger``) and,
for each strategy that is on and has not yet done them, makes one model call (the graph strategy: as
build_memory_from_text does). The answer is checked against the strategy's schema; an answer that is not
JSON or breaks the schema is asked again once, then recorded as a failure with the model's raw answer,
and the turns stay waiting for that strategy (up to ``MAX_ATTEMPTS`` runs, then the failure stands and the
turns are let go). A throttled call is retried with backoff. More candidates than the cap is a failure,
never a silent cut. A candidate citing no turn of the batch is refused.

Scope never comes from the model: the target of each strategy is the layer it names, keyed by the identity
that wrote the turns (stored with each waiting turn by the transport's request).

Crash safety: the memories a run writes have ids derived from their content and turns
(``consolidation.memory_id_for``) and are written only if absent, and a turn stops waiting only after
every strategy has done it, so a run killed at any point and started again skips no turn and writes no
fact twice.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from mnemo import telemetry
from mnemo.context import RequestContext
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS, EntryStore
from mnemo.errors import MnemoError, ProviderError, RateLimited
from mnemo.files.tokens import count_tokens
from mnemo.learning import ledger
from mnemo.learning.consolidation import Candidate, Consolidator, Target
from mnemo.learning.strategies import (
    PROFILE,
    PROFILE_INPUTS,
    PROFILE_MAX_TOKENS,
    PROFILE_SUBJECT,
    STRATEGIES,
    SUMMARY_SUBJECT,
    Strategy,
)
from mnemo.learning.transcript import Turn, conversation_turns, execution_turn, prompt
from mnemo.memory.extracted import SubjectHead, epoch
from mnemo.memory.records import iso
from mnemo.ports import ConditionFailed, Delete, ExtractionTool, Extractor, Item, Put, RecordStore
from mnemo.schema_check import first_problem
from mnemo.visible import hidden_character

logger = logging.getLogger(__name__)

#: The most waiting turns one run reads.
MAX_BATCH_TURNS = 50
#: Operations per write when settling turns: a batch's markers, under the store's all-or-nothing limit.
SETTLE_WRITE_SIZE = 50
#: Runs a strategy may fail on the same turns before the failure stands and the turns are let go.
MAX_ATTEMPTS = 3
#: Seconds kept, under a deadline, to write what a run found after its last model call.
SAVE_RESERVE_SECONDS = 4.0
#: Tries of a throttled model call, and the first pause between them (doubled each time).
THROTTLE_TRIES = 4
THROTTLE_FIRST_PAUSE = 1.0


@dataclass(frozen=True)
class StrategyConfig:
    """A deployment's settings for one strategy: the model, text appended to its prompt, extra keys."""

    model: str | None = None
    append_to_prompt: str | None = None
    metadata_keys: tuple[str, ...] = ()
    #: Days after which the memories this strategy writes expire (``expiresAfterDays``; None: never).
    expires_after_days: float | None = None
    #: The profile's most tokens (``maxTokens``; None: ``PROFILE_MAX_TOKENS``).
    max_tokens: int | None = None

    def expires_at(self) -> str | None:
        """When a memory this strategy writes now expires (ISO 8601 UTC), or None (docs/lifecycle.md)."""
        if self.expires_after_days is None:
            return None
        return iso((datetime.now(UTC) + timedelta(days=self.expires_after_days)).replace(microsecond=0))


@dataclass(frozen=True)
class LearningConfig:
    """What a deployment turns on (``mnemo.settings`` MNEMO_EXTRACTION_*)."""

    strategies: tuple[str, ...] = ()
    every_turns: int = 6
    idle_minutes: float = 10.0
    judge: bool = True
    max_candidates: int = 50
    per_strategy: dict[str, StrategyConfig] = field(default_factory=dict)

    def of(self, strategy: str) -> StrategyConfig:
        """The settings of one strategy (the defaults when it has none)."""
        return self.per_strategy.get(strategy, StrategyConfig())


@dataclass
class StrategyOutcome:
    """One strategy's part of a run: what it proposed and decided, or how it failed, and what it cost."""

    strategy: str
    model: str
    candidates: list[Candidate] = field(default_factory=list)
    failure: dict[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def view(self) -> dict[str, Any]:
        """The outcome as a run record stores it (the StrategyRun wire shape)."""
        return {
            "strategy": self.strategy,
            "model": self.model,
            "candidates": [
                {
                    "text": c.text,
                    "subject": c.subject,
                    "sourceIds": c.source_ids,
                    "occurredAt": c.occurred_at,
                    "decision": c.decision,
                    "memoryId": c.memory_id,
                    "supersedes": c.supersedes,
                    "reason": c.reason,
                }
                for c in self.candidates
            ],
            "failure": self.failure,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
        }


class Failed(Exception):
    """A strategy's model call failed for good in this run: the message, the raw answer, the attempts, and
    whether it counts toward ``MAX_ATTEMPTS`` (an answer out of shape does; a model that did not answer,
    down or throttled, does not: its turns wait however long the outage lasts)."""

    def __init__(
        self,
        message: str,
        raw: str | None = None,
        attempts: int = 1,
        tokens: tuple[int, int] = (0, 0),
        *,
        counts: bool = True,
    ):
        super().__init__(message)
        self.message, self.raw, self.attempts, self.tokens, self.counts = message, raw, attempts, tokens, counts


def context_of(identity: dict[str, str]) -> RequestContext:
    """The identity that wrote the turns, as a request context (no roles: extraction writes private layers)."""
    return RequestContext(
        tenant=identity.get("tenant") or "local",
        user=identity.get("user"),
        agent=identity.get("agent"),
        session=identity.get("session"),
    )


class Pipeline:
    """Runs the strategies over a stream's waiting turns (see the module docstring)."""

    def __init__(
        self,
        records: RecordStore,
        consolidator: Consolidator,
        extractor_for: Callable[[str | None], Extractor],
        graph_run: Callable[[Extractor, RequestContext, list[Turn]], list[Candidate]] | None,
        config: LearningConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._records = records
        self._consolidator = consolidator
        self._extractor_for = extractor_for
        self._graph_run = graph_run
        self._config = config
        self._sleep = sleep
        self._conversations = EntryStore(records, CONVERSATIONS)
        self._executions = EntryStore(records, EXECUTIONS)

    # ------------------------------------------------------------ reading
    def profile(self, scope: str) -> tuple[SubjectHead, dict[str, Any] | None]:
        """The profile's pointer in a user scope, and its current record (None when it has none)."""
        return self._consolidator.running(scope, PROFILE.name, PROFILE_SUBJECT)

    def waiting(self, stream: str, limit: int = MAX_BATCH_TURNS) -> list[Item]:
        """The stream's waiting turns, oldest first."""
        return self._records.query(ledger.partition_of(stream), ledger.TURN, limit=limit)

    def state(self, stream: str) -> Item | None:
        """The stream's state item, if it has one."""
        return self._records.get(ledger.partition_of(stream), ledger.STATE)

    def _turns(self, markers: list[Item]) -> tuple[list[Turn], list[Turn], set[str]]:
        """The conversation and execution turns of the markers (records since deleted are left out)."""
        by_kind: dict[str, dict[str, list[str]]] = {"conversation": {}, "execution": {}}
        for marker in markers:
            by_kind[marker.data["kind"]].setdefault(marker.data["scope"], []).append(marker.data["messageId"])
        conversation: list[Turn] = []
        execution: list[Turn] = []
        for scope, ids in by_kind["conversation"].items():
            found = self._conversations.get_many(scope, ids)
            for message_id in ids:
                if message_id in found:
                    conversation += conversation_turns(found[message_id])
        for scope, ids in by_kind["execution"].items():
            found = self._executions.get_many(scope, ids)
            execution += [execution_turn(found[message_id]) for message_id in ids if message_id in found]
        present = {turn.message_id for turn in (*conversation, *execution)}
        return conversation, execution, present

    # ---------------------------------------------------------------- run
    def run(
        self,
        stream: str,
        trigger: str,
        *,
        dry_run: bool = False,
        only: tuple[str, ...] | None = None,
        deadline_seconds: float | None = None,
    ) -> dict[str, Any] | None:
        """One run over the oldest waiting turns; the run's record (RunView shape), or None when none wait.

        With ``deadline_seconds`` (memory_extract behind API Gateway), a strategy is started only while the
        longest call so far still fits before the deadline, with ``SAVE_RESERVE_SECONDS`` to spare; the
        first always starts. The strategies left out are listed under ``deferred`` and their turns wait for
        the background run, which finishes them."""
        started = time.monotonic()
        longest = 0.0
        markers = self.waiting(stream)
        if not markers:
            return None
        # One identity per run: two agents of one user's session write lessons into their own agent layers.
        identity = markers[0].data.get("identity") or {}
        markers = list(itertools.takewhile(lambda m: (m.data.get("identity") or {}) == identity, markers))
        context = context_of(identity)
        conversation, execution, present = self._turns(markers)
        run_id = f"run_{secrets.token_hex(8)}"
        at = iso(datetime.now(UTC))
        enabled = [name for name in self._config.strategies if only is None or name in only]
        outcomes: list[StrategyOutcome] = []
        done: dict[str, set[str]] = {}  # strategy -> message ids it is finished with
        failed: dict[str, set[str]] = {}
        state = self.state(stream)
        deferred: list[str] = []
        for name in enabled:
            if STRATEGIES.get(name) is PROFILE:  # reads the memories this run writes: after the others
                continue
            late = (
                deadline_seconds is not None
                and time.monotonic() - started + longest + SAVE_RESERVE_SECONDS > deadline_seconds
            )
            if outcomes and late:
                deferred.append(name)
                continue
            source = "execution" if name == "lessons" else "conversation"
            todo = [m for m in markers if m.data["kind"] == source and name not in m.data.get("done", [])]
            if not todo:
                continue
            ids = {m.data["messageId"] for m in todo}
            turns = [t for t in (execution if source == "execution" else conversation) if t.message_id in ids]
            if not turns:  # their records are gone: nothing to read
                done[name] = ids
                continue
            call_started = time.monotonic()
            if not self._applies(name, context):
                done[name] = ids  # no session, no session summary: nothing to do, nothing failed
                continue
            outcome = self._run_strategy(name, context, turns, state, run_id, at, dry_run)
            longest = max(longest, time.monotonic() - call_started)
            outcomes.append(outcome)
            _count(outcome)
            failure = outcome.failure
            if failure is None or failure.get("final"):
                done[name] = ids
            elif failure.get("counts", True):
                failed[name] = ids
            # else: the model did not answer; the turns wait, their attempts unchanged
        if "profile" in enabled and not dry_run:
            profile = self._run_profile(context, outcomes, run_id, at)
            if profile is not None:
                outcomes.append(profile)
                _count(profile)
        view = {
            "runId": run_id,
            "at": at,
            "trigger": trigger,
            "dryRun": dry_run,
            "session": identity.get("session"),
            "turns": [m.data["messageId"] for m in markers if m.data["messageId"] in present],
            "strategies": [outcome.view() for outcome in outcomes],
            "deferred": deferred,
        }
        if not dry_run:
            self._settle(stream, markers, enabled, done, failed)
            stored = [str(m.data.get("storedAt") or m.data["at"]) for m in markers]
            self._record(stream, at, run_id, view, outcomes, min(stored))
        return view

    @staticmethod
    def _applies(name: str, context: RequestContext) -> bool:
        """Whether a strategy has anything to do for this identity: the summary is a session's."""
        return name != "summary" or context.session is not None

    def _run_strategy(
        self,
        name: str,
        context: RequestContext,
        turns: list[Turn],
        state: Item | None,
        run_id: str,
        at: str,
        dry_run: bool,
    ) -> StrategyOutcome:
        settings = self._config.of(name)
        extractor = self._extractor_for(settings.model)
        outcome = StrategyOutcome(name, extractor.name)
        if name == "graph":
            if self._graph_run is None or dry_run:
                return outcome
            try:
                outcome.candidates = self._graph_run(extractor, context, turns)
            except MnemoError as error:
                outcome.failure = {"message": error.message, "raw": (error.details or {}).get("raw"), "attempts": 1}
            return outcome
        strategy = STRATEGIES[name]
        target = self._target(strategy, context, extractor.name, run_id, at)
        if isinstance(target, str):  # the same next time: shown once, and the turns let go for it
            outcome.failure = {"message": target, "raw": None, "attempts": 1, "final": True}
            return outcome
        target = replace(target, expires_at=settings.expires_at())
        previous = (state.data.get("summaryText") if state and name == "summary" else None) or None
        tokens = [0, 0]
        try:
            items = self._gather(strategy, extractor, settings, turns, previous, tokens)
        except Failed as failure:
            outcome.failure = {
                "message": failure.message,
                "raw": failure.raw,
                "attempts": failure.attempts,
                "counts": failure.counts,
            }
            outcome.input_tokens, outcome.output_tokens = tokens[0] + failure.tokens[0], tokens[1] + failure.tokens[1]
            return outcome
        outcome.input_tokens, outcome.output_tokens = tokens
        candidates, refused = self._checked(strategy, items, turns, settings.metadata_keys)
        if name == "summary" and candidates:
            candidates = candidates[:1]
            candidates[0].subject = SUMMARY_SUBJECT
        judge = self._extractor_for(settings.model) if self._config.judge else None
        consolidated = self._consolidator.consolidate(target, candidates, judge, dry_run=dry_run)
        outcome.candidates = consolidated.candidates + refused
        outcome.input_tokens += consolidated.input_tokens
        outcome.output_tokens += consolidated.output_tokens
        return outcome

    def _run_profile(
        self, context: RequestContext, outcomes: list[StrategyOutcome], run_id: str, at: str
    ) -> StrategyOutcome | None:
        """The user's profile rewritten from the last one and the memories this run's facts and preferences added
        or superseded (and those an earlier profile call left pending); None when nothing changed.

        The changed memories are left pending on the profile's pointer before the model is asked, and only the
        write of the new profile takes them off: a call that fails, an answer refused (a profile over
        ``maxTokens`` is refused, never cut), a run that stops, or another run's profile written meanwhile
        leaves them for the next rewrite."""
        settings = self._config.of("profile")
        extractor = self._extractor_for(settings.model)
        target = self._target(PROFILE, context, extractor.name, run_id, at)
        if isinstance(target, str):
            return None
        target = replace(target, expires_at=settings.expires_at())
        changed = [
            candidate.memory_id
            for outcome in outcomes
            if outcome.strategy in PROFILE_INPUTS and not outcome.failure
            for candidate in outcome.candidates
            if candidate.decision in ("added", "superseded") and candidate.memory_id
        ]
        head, current = self._consolidator.running(target.scope, PROFILE.name, PROFILE_SUBJECT)
        if changed and not set(changed) <= set(head.pending):
            head = self._consolidator.leave_pending(target.scope, PROFILE.name, PROFILE_SUBJECT, changed)
        texts = self._consolidator.texts(target.scope, list(head.pending))
        if not texts:
            return None
        outcome = StrategyOutcome(PROFILE.name, extractor.name)
        limit = settings.max_tokens or PROFILE_MAX_TOKENS
        so_far = " ".join(current["content"].split()) if current else "(none yet)"
        lines = "\n".join(f"[{memory_id}] {' '.join(text.split())}" for memory_id, text in texts.items())
        user = f"Profile so far:\n{so_far}\n\nMemories that changed since (oldest first):\n{lines}\n"
        system = PROFILE.system.format(max_tokens=limit, max_words=limit * 3 // 4)
        try:
            answer, used = self._ask(PROFILE, extractor, settings, [], None, user=user, system=system)
        except Failed as failure:
            outcome.failure = {"message": failure.message, "raw": failure.raw, "attempts": failure.attempts}
            outcome.input_tokens, outcome.output_tokens = failure.tokens
            return outcome
        outcome.input_tokens, outcome.output_tokens = used
        items = answer[PROFILE.items_key]
        if not items:
            return outcome
        text = " ".join(str(items[0]["text"]).split())
        cited = [memory_id for memory_id in dict.fromkeys(items[0]["sourceIds"]) if memory_id in texts]
        candidate = Candidate(text=text, subject=PROFILE_SUBJECT, source_ids=[], memory_ids=cited, taken=list(texts))
        tokens = count_tokens(text)
        if not cited:
            candidate.decision, candidate.reason = "refused", "it cites no memory id it was given"
        elif hidden_character(text) is not None:
            candidate.decision, candidate.reason = "refused", "its text holds an invisible character"
        elif tokens > limit:
            candidate.decision = "refused"
            candidate.reason = f"it is {tokens} tokens, over maxTokens {limit}: refused, not cut"
            outcome.failure = {"message": f"the profile {candidate.reason}", "raw": text, "attempts": 1}
        if candidate.decision == "refused":
            outcome.candidates = [candidate]
            return outcome
        outcome.candidates = self._consolidator.consolidate(target, [candidate], None).candidates
        return outcome

    def _gather(
        self,
        strategy: Strategy,
        extractor: Extractor,
        settings: StrategyConfig,
        turns: list[Turn],
        previous: str | None,
        tokens: list[int],
    ) -> list[dict[str, Any]]:
        """The strategy's items for the turns. An answer over the cap is refused whole, never cut: the turns are
        asked again in halves, and only a single turn (or a summary) over the cap is a failure."""
        answer, used = self._ask(strategy, extractor, settings, turns, previous)
        tokens[0], tokens[1] = tokens[0] + used[0], tokens[1] + used[1]
        items: list[dict[str, Any]] = answer[strategy.items_key]
        cap = self._config.max_candidates
        if len(items) <= cap:
            return items
        if len(turns) == 1 or strategy.name == "summary":
            raise Failed(
                f"the model proposed {len(items)} memories for {len(turns)} turn(s); the cap is {cap} per call, so "
                "none were kept (raise MNEMO_EXTRACTION_MAX_CANDIDATES)"
            )
        half = len(turns) // 2
        return self._gather(strategy, extractor, settings, turns[:half], previous, tokens) + self._gather(
            strategy, extractor, settings, turns[half:], previous, tokens
        )

    @staticmethod
    def _target(strategy: Strategy, context: RequestContext, model: str, run_id: str, at: str) -> Target | str:
        """Where the strategy writes for this identity, or why it cannot (a missing id)."""
        missing = context.missing_ids(strategy.layer)
        if missing:
            return f"the {strategy.layer} layer needs a {missing[0]} id, and the turns were written without one"
        return Target(
            scope=context.scope_key(strategy.layer),
            layer=strategy.layer,
            tag=strategy.tag,
            strategy=strategy.name,
            model=model,
            run_id=run_id,
            extracted_at=at,
            actor=context.user,
        )

    def _ask(
        self,
        strategy: Strategy,
        extractor: Extractor,
        settings: StrategyConfig,
        turns: list[Turn],
        previous: str | None,
        *,
        user: str | None = None,
        system: str | None = None,
    ) -> tuple[dict[str, Any], tuple[int, int]]:
        """The model's checked answer and the tokens used: asked again once after an answer out of shape,
        retried with backoff while throttled. ``user`` and ``system``: the prompt, when it is not the turns'."""
        system = (system or strategy.system) + (f"\n\n{settings.append_to_prompt}" if settings.append_to_prompt else "")
        if user is None:
            user = prompt(turns, previous_summary=previous, extra_keys=settings.metadata_keys)
        tool = ExtractionTool(strategy.tool_name, strategy.tool_description, strategy.schema)
        tokens_in = tokens_out = 0
        raw: str | None = None
        message = ""
        for attempt in (1, 2):
            try:
                extraction = self._throttled(extractor, system, user, tool)
            except ProviderError as error:
                details = error.details or {}
                tokens_in += int(details.get("inputTokens") or 0)
                tokens_out += int(details.get("outputTokens") or 0)
                if "raw" not in details:  # the model did not answer (down, refused): not worth asking again now
                    raise Failed(error.message, None, attempt, (tokens_in, tokens_out), counts=False) from None
                raw, message = details["raw"], error.message
                continue
            except MnemoError as error:  # throttled past its retries, timed out
                raise Failed(error.message, None, attempt, (tokens_in, tokens_out), counts=False) from None
            tokens_in += extraction.input_tokens
            tokens_out += extraction.output_tokens
            problem = first_problem(strategy.schema, extraction.answer)
            if problem is None:
                return extraction.answer, (tokens_in, tokens_out)
            raw = extraction.raw
            message = f"the answer does not match the schema at {problem.where}: {problem.message}"
        raise Failed(f"{message} (asked twice)", raw, 2, (tokens_in, tokens_out))

    def _throttled(self, extractor: Extractor, system: str, user: str, tool: ExtractionTool) -> Any:
        pause = THROTTLE_FIRST_PAUSE
        for attempt in range(THROTTLE_TRIES):
            try:
                return extractor.extract_counted(system, user, tool)
            except RateLimited:
                if attempt == THROTTLE_TRIES - 1:
                    raise
                self._sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")

    @staticmethod
    def _checked(
        strategy: Strategy, items: list[dict[str, Any]], turns: list[Turn], keys: tuple[str, ...] = ()
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The candidates that cite the batch and read as text; the others, refused with a reason. Of the
        metadata the model fills, only the keys the deployment asked for (``metadataKeys``) are kept, and
        never one Mnemo owns."""
        at = {turn.message_id: turn.at for turn in turns}
        accepted: list[Candidate] = []
        refused: list[Candidate] = []
        for item in items:
            cited = [source for source in dict.fromkeys(item.get("sourceIds") or []) if source in at]
            candidate = Candidate(
                text=" ".join(str(item["text"]).split()),
                subject=(item.get("subject") or None),
                source_ids=cited,
                occurred_at=_date(item.get("occurredAt")) if strategy.dated else None,
                metadata={k: v for k, v in (item.get("metadata") or {}).items() if k in keys and k not in _RESERVED},
            )
            candidate.said_at = max((at[source] for source in cited), key=lambda t: epoch(t) or 0.0, default=None)
            if strategy.dated and candidate.occurred_at is None and cited:
                candidate.occurred_at = candidate.said_at  # undated by the model: when it was said
            elif candidate.occurred_at is not None:
                candidate.occurred_until = _period_end(item.get("occurredAt"))
            if not cited:
                candidate.decision, candidate.reason = "refused", "it cites no message id of this batch"
            elif not candidate.text or hidden_character(candidate.text) is not None:
                candidate.decision, candidate.reason = "refused", "its text is empty or holds an invisible character"
            else:
                accepted.append(candidate)
                continue
            refused.append(candidate)
        return accepted, refused

    # ------------------------------------------------------------ ledger
    def _settle(
        self,
        stream: str,
        markers: list[Item],
        enabled: list[str],
        done: dict[str, set[str]],
        failed: dict[str, set[str]],
    ) -> None:
        """Each turn: gone once every strategy that reads it is done; else its progress and attempts kept."""
        operations: list[Put | Delete] = []
        for marker in markers:
            data = dict(marker.data)
            message_id, kind = data["messageId"], data["kind"]
            finished = set(data.get("done", []))
            attempts = dict(data.get("attempts", {}))
            for name in enabled:
                if message_id in done.get(name, set()):
                    finished.add(name)
                elif message_id in failed.get(name, set()):
                    attempts[name] = attempts.get(name, 0) + 1
                    if attempts[name] >= MAX_ATTEMPTS:
                        finished.add(name)  # the failure stands in the run's record and the status
            writer = context_of(data.get("identity") or {})
            readers = [
                n
                for n in self._config.strategies
                if n != "profile" and (n == "lessons") == (kind == "execution") and self._applies(n, writer)
            ]
            if all(name in finished for name in readers):
                operations.append(Delete(marker.pk, marker.sk, expect=marker.version))
            elif finished != set(data.get("done", [])) or attempts != data.get("attempts", {}):
                data.update(done=sorted(finished), attempts=attempts)
                operations.append(
                    Put(Item(marker.pk, marker.sk, data, version=marker.version + 1), expect=marker.version)
                )
        for start in range(0, len(operations), SETTLE_WRITE_SIZE):
            try:
                self._records.write(operations[start : start + SETTLE_WRITE_SIZE])
            except ConditionFailed:  # another run settled them first: its view stands
                logger.info("waiting turns of %s were settled by another run", stream)

    def _record(
        self,
        stream: str,
        at: str,
        run_id: str,
        view: dict[str, Any],
        outcomes: list[StrategyOutcome],
        oldest_stored: str,
    ) -> None:
        """The stream's counters (a conditional update, retried on a race), then the run's record, fitted under
        the store's item size. ``liveSince`` keeps the oldest storage time of a turn a run has read: the
        backfill queues only turns stored before it (the others were queued when they were stored)."""
        summary = next((o for o in outcomes if o.strategy == "summary" and not o.failure and o.candidates), None)
        for _ in range(5):
            state = self.state(stream)
            data: dict[str, Any] = dict(state.data) if state else {"stream": stream, "runs": 0, "strategies": {}}
            data["runs"] = int(data.get("runs", 0)) + 1
            data["lastRunAt"] = at
            if oldest_stored < data.get("liveSince", "\uffff"):
                data["liveSince"] = oldest_stored
            counters = {name: dict(values) for name, values in (data.get("strategies") or {}).items()}
            for outcome in outcomes:
                count = counters.setdefault(outcome.strategy, {})
                count["runs"] = count.get("runs", 0) + 1
                count["inputTokens"] = count.get("inputTokens", 0) + outcome.input_tokens
                count["outputTokens"] = count.get("outputTokens", 0) + outcome.output_tokens
                count["lastRunAt"] = at
                if outcome.failure:
                    count["failures"] = count.get("failures", 0) + 1
                    count["lastFailure"] = {**outcome.failure, "at": at}
                for candidate in outcome.candidates:
                    count[candidate.decision] = count.get(candidate.decision, 0) + 1
            data["strategies"] = counters
            if summary is not None:
                written = next((c for c in summary.candidates if c.decision != "refused"), None)
                if written is not None:
                    data["summaryText"], data["summaryMemoryId"] = written.text, written.memory_id
            version = state.version + 1 if state else 1
            expect: int | Literal["absent"] = state.version if state else "absent"
            try:
                self._records.write(
                    [Put(Item(ledger.partition_of(stream), ledger.STATE, data, version=version), expect=expect)]
                )
                break
            except ConditionFailed:
                continue
        else:
            logger.warning("could not update the extraction counters of %s", stream)
        try:
            self._records.write([ledger.run_item(stream, at, run_id, fitted(view))])
        except MnemoError as error:  # the memories and the state stand; only the run's account is lost
            logger.warning("could not store the record of run %s: %s", run_id, error.message)


#: A run's record is kept under DynamoDB's 400 KB item limit, with room for the keys.
MAX_RUN_RECORD_BYTES = 300_000


def fitted(view: dict[str, Any]) -> dict[str, Any]:
    """A run's record under ``MAX_RUN_RECORD_BYTES``: when it is over, each candidate keeps at most 10 source ids
    and 500 characters of text and raw answers, then the candidates past what fits are left out (``truncated``
    says how many)."""
    if len(json.dumps(view)) <= MAX_RUN_RECORD_BYTES:
        return view
    parts = []
    for part in view["strategies"]:
        failure = part.get("failure")
        if failure and failure.get("raw"):
            failure = {**failure, "raw": failure["raw"][:500]}
        candidates = [
            {**c, "text": c["text"][:500], "sourceIds": c["sourceIds"][:10]} for c in part.get("candidates", [])
        ]
        parts.append({**part, "failure": failure, "candidates": candidates})
    slim = {**view, "strategies": parts}
    left_out = 0
    while len(json.dumps(slim)) > MAX_RUN_RECORD_BYTES and any(p["candidates"] for p in parts):
        longest = max(parts, key=lambda p: len(p["candidates"]))
        longest["candidates"] = longest["candidates"][: len(longest["candidates"]) // 2]
        left_out = sum(len(p.get("candidates", [])) for p in view["strategies"]) - sum(
            len(p["candidates"]) for p in parts
        )
    if left_out:
        slim["truncated"] = left_out
    return slim


def _count(outcome: StrategyOutcome) -> None:
    """The strategy's tokens, decisions and failure as metrics (the EMF of the invocation under way), named
    per strategy: ``ExtractionFactsInputTokens``, ``ExtractionFactsAdded``, ``ExtractionFactsFailures``..."""
    prefix = f"Extraction{outcome.strategy.title()}"
    telemetry.count(f"{prefix}InputTokens", outcome.input_tokens)
    telemetry.count(f"{prefix}OutputTokens", outcome.output_tokens)
    telemetry.count(f"{prefix}Failures", 1 if outcome.failure else 0)
    for decision in DECISIONS:
        telemetry.count(f"{prefix}{decision.title()}", sum(1 for c in outcome.candidates if c.decision == decision))


#: What consolidation may decide for a candidate (``mnemo.learning.consolidation``), and a refusal.
DECISIONS = ("added", "kept", "superseded", "merged", "outdated", "refused")

#: Metadata keys Mnemo owns: never taken from a model, even when a deployment asks for one of them (the
#: identity and scope come from the turns' writer only).
_RESERVED = {"source", "strategy", "provenance", "subject", "subjectKey", "statedAt", "knowledgePointer"}
_RESERVED |= {"scope", "layer", "tenant", "user", "agent", "session"}


def _period_end(value: Any) -> str | None:
    """When a date the model gave only to the year, month or day ends (ISO 8601 UTC); None for a full time."""
    text = value.strip() if isinstance(value, str) else ""
    start = _date(text)
    if start is None:
        return None
    moment = datetime.fromisoformat(start.replace("Z", "+00:00"))
    if len(text) == 4:
        return iso(moment.replace(year=moment.year + 1))
    if len(text) == 7:
        return iso(moment.replace(year=moment.year + moment.month // 12, month=moment.month % 12 + 1))
    if len(text) == 10:
        return iso(moment + timedelta(days=1))
    return None


def _date(value: Any) -> str | None:
    """An ISO 8601 date or time from the model as stored (UTC, ``Z``); None when it is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if len(text) == 4 and text.isdigit():
        text += "-01-01"
    elif len(text) == 7 and text[4] == "-":
        text += "-01"
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso(moment)

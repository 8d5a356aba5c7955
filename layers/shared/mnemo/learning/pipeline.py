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

import contextlib
import itertools
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mnemo import telemetry
from mnemo.clock import iso, now, now_iso
from mnemo.context import RequestContext
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS, EntryStore
from mnemo.errors import MnemoError, ProviderError, RateLimited
from mnemo.files.tokens import count_tokens
from mnemo.learning import ledger
from mnemo.learning.consolidation import Candidate, Consolidator, Target
from mnemo.learning.outcomes import Failed, NoTarget, Retry, RunOutcome, StrategyOutcome
from mnemo.learning.strategies import (
    PROFILE,
    PROFILE_INPUTS,
    PROFILE_MAX_TOKENS,
    PROFILE_SUBJECT,
    STRATEGIES,
    Prompted,
    Strategy,
)
from mnemo.learning.transcript import Turn, conversation_turns, execution_turn, prompt
from mnemo.memory.extracted import SubjectHead, epoch
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
#: Tries of the stream's counters when other runs change its state meanwhile.
STATE_TRIES = 5


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
        return iso((now() + timedelta(days=self.expires_after_days)).replace(microsecond=0))


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


def context_of(identity: dict[str, str]) -> RequestContext:
    """The identity that wrote the turns, as a request context (no roles: extraction writes private layers)."""
    return RequestContext(
        tenant=identity.get("tenant") or "local",
        user=identity.get("user"),
        agent=identity.get("agent"),
        session=identity.get("session"),
    )


@dataclass(frozen=True)
class _Batch:
    """What every strategy of one run shares: the writer's context, the turns by kind (conversation,
    execution), the run's id and time, whether it writes, and the stream's running text (``summaryText``)."""

    context: RequestContext
    turns: dict[str, list[Turn]]
    run_id: str
    at: str
    dry_run: bool
    running_text: str | None


@dataclass
class _Progress:
    """Per strategy, the message ids of the batch it is finished with, and those it failed on (one attempt more)."""

    done: dict[str, set[str]] = field(default_factory=dict)
    failed: dict[str, set[str]] = field(default_factory=dict)

    def take(self, outcome: StrategyOutcome, ids: set[str]) -> None:
        """What the outcome of a strategy over the turns ``ids`` means for them (``Retry``)."""
        failure = outcome.failure
        if failure is None or failure.retry is Retry.NEVER:
            self.done[outcome.strategy.name] = ids
        elif failure.retry is Retry.COUNTED:
            self.failed[outcome.strategy.name] = ids
        # else the model did not answer: the turns wait, their attempts unchanged


class _Deadline:
    """memory_extract's deadline: a strategy is started only while the longest call so far still fits before it,
    with ``SAVE_RESERVE_SECONDS`` to spare; without one, always."""

    def __init__(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._started = time.monotonic()
        self._longest = 0.0

    def late(self) -> bool:
        """Whether the next call might not fit."""
        if self._seconds is None:
            return False
        return time.monotonic() - self._started + self._longest + SAVE_RESERVE_SECONDS > self._seconds

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Time one strategy's call."""
        started = time.monotonic()
        yield
        self._longest = max(self._longest, time.monotonic() - started)


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

    def _turns(self, markers: list[Item]) -> tuple[dict[str, list[Turn]], set[str]]:
        """The turns of the markers by kind, conversation and execution (records since deleted are left out), and
        the message ids found."""
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
        return {"conversation": conversation, "execution": execution}, present

    # ---------------------------------------------------------------- run
    def run(
        self,
        stream: str,
        trigger: str,
        *,
        dry_run: bool = False,
        only: tuple[str, ...] | None = None,
        deadline_seconds: float | None = None,
    ) -> RunOutcome | None:
        """One run over the oldest waiting turns (None when none wait): the strategies that read turns, then
        (unless a dry run) those that read the memories they wrote.

        With ``deadline_seconds`` (memory_extract behind API Gateway), a strategy is started only while the
        longest call so far still fits before the deadline, with ``SAVE_RESERVE_SECONDS`` to spare; the
        first always starts. The strategies left out are listed under ``deferred`` and their turns wait for
        the background run, which finishes them."""
        deadline = _Deadline(deadline_seconds)
        markers = self.waiting(stream)
        if not markers:
            return None
        # One identity per run: two agents of one user's session write lessons into their own agent layers.
        identity = markers[0].data.get("identity") or {}
        markers = list(itertools.takewhile(lambda m: (m.data.get("identity") or {}) == identity, markers))
        turns, present = self._turns(markers)
        state = self.state(stream)
        running_text = (state.data.get("summaryText") if state else None) or None
        at = now_iso()
        batch = _Batch(context_of(identity), turns, f"run_{secrets.token_hex(8)}", at, dry_run, running_text)
        read = [m.data["messageId"] for m in markers if m.data["messageId"] in present]
        run = RunOutcome(batch.run_id, at, trigger, dry_run, identity.get("session"), read)
        enabled = [STRATEGIES[name] for name in self._config.strategies if only is None or name in only]
        progress = self._run_turns(run, batch, markers, enabled, deadline)
        if dry_run:
            return run
        # The strategies that read the memories this run wrote (the profile): after the others.
        for strategy in enabled:
            if strategy.source == "memories" and isinstance(strategy, Prompted):
                outcome = self._run_profile(strategy, batch, run.strategies)
                if outcome is not None:
                    run.strategies.append(outcome)
                    _count(outcome)
        self._settle(stream, markers, enabled, progress)
        stored = [str(m.data.get("storedAt") or m.data["at"]) for m in markers]
        self._record(stream, run, min(stored))
        return run

    def _run_turns(
        self, run: RunOutcome, batch: _Batch, markers: list[Item], enabled: list[Strategy], deadline: _Deadline
    ) -> _Progress:
        """Each enabled strategy that reads turns, over the batch's turns it has not done yet; its outcome added
        to the run (or, past the deadline, its name to ``deferred``)."""
        progress = _Progress()
        for strategy in enabled:
            if strategy.source == "memories":
                continue
            if run.strategies and deadline.late():
                run.deferred.append(strategy.name)
                continue
            ids = {
                m.data["messageId"]
                for m in markers
                if strategy.reads(m.data["kind"]) and strategy.name not in m.data.get("done", [])
            }
            if not ids:
                continue
            turns = [t for t in batch.turns.get(strategy.source, []) if t.message_id in ids]
            if not turns or not _applies(strategy, batch.context):
                # Their records are gone, or (no session, no session summary) there is nothing to do: nothing failed.
                progress.done[strategy.name] = ids
                continue
            with deadline.timed():
                outcome = self._run_strategy(strategy, batch, turns)
            run.strategies.append(outcome)
            _count(outcome)
            progress.take(outcome, ids)
        return progress

    def _run_strategy(self, strategy: Strategy, batch: _Batch, turns: list[Turn]) -> StrategyOutcome:
        """One strategy over its turns of the batch: its candidates and what consolidation decided, or how it
        failed, and the tokens either cost."""
        settings = self._config.of(strategy.name)
        extractor = self._extractor_for(settings.model)
        outcome = StrategyOutcome(strategy, extractor.name)
        try:
            if isinstance(strategy, Prompted):
                self._prompted(outcome, strategy, settings, extractor, batch, turns)
            elif self._graph_run is not None and not batch.dry_run:
                outcome.candidates = _graph(self._graph_run, extractor, batch.context, turns)
        except Failed as failure:
            outcome.failure = failure
            outcome.add_tokens(failure.tokens)
        return outcome

    def _prompted(
        self,
        outcome: StrategyOutcome,
        strategy: Prompted,
        settings: StrategyConfig,
        extractor: Extractor,
        batch: _Batch,
        turns: list[Turn],
    ) -> None:
        """A prompted strategy's model call over the turns, checked and consolidated into ``outcome``; raises
        ``Failed``. A running strategy is shown its running text so far, and keeps one candidate, about its
        running subject."""
        target = self._target(strategy, batch, extractor.name, settings.expires_at())
        previous = batch.running_text if _keeps_text(strategy) else None
        items = self._gather(strategy, extractor, settings, turns, previous, outcome)
        candidates, refused = self._checked(strategy, items, turns, settings.metadata_keys)
        if strategy.running_subject is not None and candidates:
            candidates = candidates[:1]
            candidates[0].subject = strategy.running_subject
        judge = self._extractor_for(settings.model) if self._config.judge else None
        consolidated = self._consolidator.consolidate(target, candidates, judge, dry_run=batch.dry_run)
        outcome.candidates = consolidated.candidates + refused
        outcome.add_tokens((consolidated.input_tokens, consolidated.output_tokens))

    def _run_profile(
        self, strategy: Prompted, batch: _Batch, outcomes: list[StrategyOutcome]
    ) -> StrategyOutcome | None:
        """The user's profile rewritten from the last one and the memories this run's facts and preferences added
        or superseded (and those an earlier profile call left pending); None when nothing changed.

        The changed memories are left pending on the profile's pointer before the model is asked, and only the
        write of the new profile takes them off: a call that fails, an answer refused (a profile over
        ``maxTokens`` is refused, never cut), a run that stops, or another run's profile written meanwhile
        leaves them for the next rewrite."""
        settings = self._config.of(strategy.name)
        extractor = self._extractor_for(settings.model)
        try:
            target = self._target(strategy, batch, extractor.name, settings.expires_at())
        except NoTarget:  # turns without a user id: no profile to keep
            return None
        subject = strategy.running_subject
        assert subject is not None, "a strategy that reads memories keeps one running memory"
        changed = [
            candidate.memory_id
            for outcome in outcomes
            if outcome.strategy.name in PROFILE_INPUTS and outcome.failure is None
            for candidate in outcome.candidates
            if candidate.decision in ("added", "superseded") and candidate.memory_id
        ]
        head, current = self._consolidator.running(target.scope, strategy.name, subject)
        if changed and not set(changed) <= set(head.pending):
            head = self._consolidator.leave_pending(target.scope, strategy.name, subject, changed)
        texts = self._consolidator.texts(target.scope, list(head.pending))
        if not texts:
            return None
        outcome = StrategyOutcome(strategy, extractor.name)
        limit = settings.max_tokens or PROFILE_MAX_TOKENS
        so_far = " ".join(current["content"].split()) if current else "(none yet)"
        lines = "\n".join(f"[{memory_id}] {' '.join(text.split())}" for memory_id, text in texts.items())
        user = f"Profile so far:\n{so_far}\n\nMemories that changed since (oldest first):\n{lines}\n"
        system = strategy.system.format(max_tokens=limit, max_words=limit * 3 // 4)
        try:
            answer, used = self._ask(strategy, extractor, settings, [], None, user=user, system=system)
        except Failed as failure:
            outcome.failure = failure
            outcome.add_tokens(failure.tokens)
            return outcome
        outcome.add_tokens(used)
        items = answer[strategy.items_key]
        if items:
            self._profile_written(outcome, target, items[0], texts, limit)
        return outcome

    def _profile_written(
        self, outcome: StrategyOutcome, target: Target, item: dict[str, Any], texts: dict[str, str], limit: int
    ) -> None:
        """The profile the model wrote, checked and consolidated into ``outcome``: refused when it cites no memory
        it was given or holds an invisible character, and a failure too when it is over ``limit`` tokens."""
        text = " ".join(str(item["text"]).split())
        cited = [memory_id for memory_id in dict.fromkeys(item["sourceIds"]) if memory_id in texts]
        subject = outcome.strategy.running_subject
        candidate = Candidate(text=text, subject=subject, source_ids=[], memory_ids=cited, taken=list(texts))
        tokens = count_tokens(text)
        if not cited:
            candidate.decision, candidate.reason = "refused", "it cites no memory id it was given"
        elif hidden_character(text) is not None:
            candidate.decision, candidate.reason = "refused", "its text holds an invisible character"
        elif tokens > limit:
            candidate.decision = "refused"
            candidate.reason = f"it is {tokens} tokens, over maxTokens {limit}: refused, not cut"
            outcome.failure = Failed(f"the profile {candidate.reason}", text)
        if candidate.decision == "refused":
            outcome.candidates = [candidate]
            return
        outcome.candidates = self._consolidator.consolidate(target, [candidate], None).candidates

    def _gather(
        self,
        strategy: Prompted,
        extractor: Extractor,
        settings: StrategyConfig,
        turns: list[Turn],
        previous: str | None,
        outcome: StrategyOutcome,
    ) -> list[dict[str, Any]]:
        """The strategy's items for the turns, each call's tokens counted on ``outcome``. An answer over the cap is
        refused whole, never cut: the turns are asked again in halves, and only a single turn (or a running
        memory, which is one whatever the turns) over the cap is a failure."""
        answer, used = self._ask(strategy, extractor, settings, turns, previous)
        outcome.add_tokens(used)
        items: list[dict[str, Any]] = answer[strategy.items_key]
        cap = self._config.max_candidates
        if len(items) <= cap:
            return items
        if len(turns) == 1 or strategy.running:
            raise Failed(
                f"the model proposed {len(items)} memories for {len(turns)} turn(s); the cap is {cap} per call, so "
                "none were kept (raise MNEMO_EXTRACTION_MAX_CANDIDATES)"
            )
        half = len(turns) // 2
        return self._gather(strategy, extractor, settings, turns[:half], previous, outcome) + self._gather(
            strategy, extractor, settings, turns[half:], previous, outcome
        )

    @staticmethod
    def _target(strategy: Prompted, batch: _Batch, model: str, expires_at: str | None) -> Target:
        """Where the strategy writes for the batch's writer; ``NoTarget`` when the turns lack an id its layer
        needs."""
        context = batch.context
        missing = context.missing_ids(strategy.layer)
        if missing:
            raise NoTarget(strategy.layer, missing[0])
        return Target(
            scope=context.scope_key(strategy.layer),
            layer=strategy.layer,
            tag=strategy.tag,
            strategy=strategy.name,
            model=model,
            run_id=batch.run_id,
            extracted_at=batch.at,
            actor=context.user,
            expires_at=expires_at,
            running=strategy.running,
        )

    def _ask(
        self,
        strategy: Prompted,
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
                    raise Failed(error.message, None, attempt, (tokens_in, tokens_out), retry=Retry.FREE) from None
                raw, message = details["raw"], error.message
                continue
            except MnemoError as error:  # throttled past its retries, timed out
                raise Failed(error.message, None, attempt, (tokens_in, tokens_out), retry=Retry.FREE) from None
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
        strategy: Prompted, items: list[dict[str, Any]], turns: list[Turn], keys: tuple[str, ...] = ()
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
    def _settle(self, stream: str, markers: list[Item], enabled: list[Strategy], progress: _Progress) -> None:
        """Each turn: gone once every strategy that reads it is done; else its progress and attempts kept."""
        operations: list[Put | Delete] = []
        on = [STRATEGIES[name] for name in self._config.strategies]
        for marker in markers:
            data = dict(marker.data)
            message_id = data["messageId"]
            finished = set(data.get("done", []))
            attempts = dict(data.get("attempts", {}))
            for name in (strategy.name for strategy in enabled):
                if message_id in progress.done.get(name, set()):
                    finished.add(name)
                elif message_id in progress.failed.get(name, set()):
                    attempts[name] = attempts.get(name, 0) + 1
                    if attempts[name] >= MAX_ATTEMPTS:
                        finished.add(name)  # the failure stands in the run's record and the status
            writer = context_of(data.get("identity") or {})
            readers = [s.name for s in on if s.reads(data["kind"]) and _applies(s, writer)]
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

    def _record(self, stream: str, run: RunOutcome, oldest_stored: str) -> None:
        """The stream's counters (``ledger.update_state``: retried on a race), then the run's record, fitted under
        the store's item size."""
        if not ledger.update_state(
            self._records, stream, lambda data: _counted(data, run, oldest_stored), tries=STATE_TRIES
        ):
            logger.warning("could not update the extraction counters of %s", stream)
        try:
            self._records.write([ledger.run_item(stream, run.at, run.run_id, fitted(run.view()))])
        except MnemoError as error:  # the memories and the state stand; only the run's account is lost
            logger.warning("could not store the record of run %s: %s", run.run_id, error.message)


def _applies(strategy: Strategy, writer: RequestContext) -> bool:
    """Whether a strategy has anything to do for the turns of this writer: one that writes the session layer (the
    summary) has not for turns written without a session."""
    return not strategy.needs_session or writer.session is not None


def _keeps_text(strategy: Strategy) -> bool:
    """Whether the stream's state keeps the strategy's running text (``summaryText``), to show its next call: a
    running memory rewritten from the stream's own turns (the summary; the profile is the user's, and is read
    from its pointer)."""
    return strategy.running and strategy.source != "memories"


def _graph(
    graph_run: Callable[[Extractor, RequestContext, list[Turn]], list[Candidate]],
    extractor: Extractor,
    context: RequestContext,
    turns: list[Turn],
) -> list[Candidate]:
    """The graph strategy's candidates (build_memory_from_text's); ``Failed`` when it fails."""
    try:
        return graph_run(extractor, context, turns)
    except MnemoError as error:
        raise Failed(error.message, (error.details or {}).get("raw")) from None


def _counted(data: dict[str, Any], run: RunOutcome, oldest_stored: str) -> bool:
    """The stream's state with the run counted in (always written). ``liveSince`` keeps the oldest storage time of
    a turn a run has read: the backfill queues only turns stored before it (the others were queued when they
    were stored). The running text of the stream's turns (``_keeps_text``) is kept as ``summaryText``."""
    data["runs"] = int(data.get("runs", 0)) + 1
    data["lastRunAt"] = run.at
    live_since = data.get("liveSince")
    if live_since is None or oldest_stored < live_since:
        data["liveSince"] = oldest_stored
    counters = {name: dict(values) for name, values in (data.get("strategies") or {}).items()}
    for outcome in run.strategies:
        _count_in(counters.setdefault(outcome.strategy.name, {}), outcome, run.at)
    data["strategies"] = counters
    for outcome in run.strategies:
        if _keeps_text(outcome.strategy) and outcome.failure is None:
            written = next((c for c in outcome.candidates if c.decision != "refused"), None)
            if written is not None:
                data["summaryText"], data["summaryMemoryId"] = written.text, written.memory_id
    return True


def _count_in(count: dict[str, Any], outcome: StrategyOutcome, at: str) -> None:
    """One strategy's counters in the stream's state, with its outcome of the run at ``at`` added."""
    count["runs"] = count.get("runs", 0) + 1
    count["inputTokens"] = count.get("inputTokens", 0) + outcome.input_tokens
    count["outputTokens"] = count.get("outputTokens", 0) + outcome.output_tokens
    count["lastRunAt"] = at
    if outcome.failure is not None:
        count["failures"] = count.get("failures", 0) + 1
        count["lastFailure"] = {**outcome.failure.view(), "at": at}
    for candidate in outcome.candidates:
        count[candidate.decision] = count.get(candidate.decision, 0) + 1


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
    prefix = f"Extraction{outcome.strategy.name.title()}"
    telemetry.count(f"{prefix}InputTokens", outcome.input_tokens)
    telemetry.count(f"{prefix}OutputTokens", outcome.output_tokens)
    telemetry.count(f"{prefix}Failures", 0 if outcome.failure is None else 1)
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

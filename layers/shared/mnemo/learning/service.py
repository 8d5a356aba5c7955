"""Memory that learns: turns stored with their extraction work, strategies run in the background, status.

* ``add_messages`` stores chat turns as conversation records of the caller's session (one record per
  message, idempotent by message id) and answers without waiting for any model.
* Every new conversation or execution record of a caller goes out with a waiting-turn marker and its
  stream's entry in the list of streams with work (``mnemo.learning.ledger``), in the record's own
  all-or-nothing write, when extraction is on; then one notice per call goes to the extraction queue.
* A worker (the extraction Lambda on SQS; the local server's background thread) runs a stream's
  strategies (``mnemo.learning.pipeline``) once ``every_turns`` turns wait, once the stream has been
  quiet ``idle_minutes`` with turns waiting, or on demand (``memory_extract``).
* With no strategy on, or no model, nothing is written or sent beyond the records: extraction_status says
  how to turn it on.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from mnemo.clock import now as clock_now
from mnemo.context import RequestContext, parse_scope
from mnemo.conversations.service import MESSAGE_META, ConversationService
from mnemo.conversations.store import CONVERSATIONS, EXECUTIONS, EntryStore, key_time
from mnemo.errors import ConflictingRequest, InvalidInput, MnemoError
from mnemo.files.tokens import count_tokens
from mnemo.learning import ledger
from mnemo.learning.models import (
    AddMessagesInput,
    AddMessagesOutput,
    ExtractionStatusInput,
    ExtractionStatusOutput,
    MemoryExtractInput,
    MemoryExtractOutput,
    ProfileView,
    RunView,
    StoredMessage,
    StrategyFailure,
    StrategyStatus,
)
from mnemo.learning.outcomes import Left, NoticeOutcome
from mnemo.learning.pipeline import MAX_BATCH_TURNS, LearningConfig, Pipeline
from mnemo.learning.strategies import PROFILE, STRATEGIES, Strategy
from mnemo.ports import ConditionFailed, Delete, ExtractionQueue, Item, Put, RecordStore, StreamNotice

logger = logging.getLogger(__name__)

#: Runs one notice or sweep may make on a stream before it lets others have the worker.
MAX_RUNS_PER_WAKE = 20


def stream_of(context: RequestContext) -> str:
    """The stream a caller's turns belong to: their session, or their user scope without one."""
    return context.scope_key("session") if context.session else context.scope_key("user")


def identity_of(context: RequestContext) -> dict[str, str]:
    """The ids of the identity that wrote a turn: where its extracted memories may go."""
    ids = {"tenant": context.tenant, "user": context.user, "session": context.session, "agent": context.agent}
    return {name: value for name, value in ids.items() if value}


def _seconds(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


class LearningService:
    """The learning tools and workers (see the module docstring)."""

    def __init__(
        self,
        records: RecordStore,
        conversations: ConversationService,
        pipeline: Pipeline,
        queue: Callable[[], ExtractionQueue],
        config: LearningConfig,
        *,
        how_to_enable: str,
        models: Callable[[str | None], str],
        clock: Callable[[], float] = lambda: clock_now().timestamp(),
        deadline_seconds: float | None = None,
    ) -> None:
        #: How long memory_extract may run (the request deadline, below API Gateway's 29 s), if any.
        self._deadline = deadline_seconds
        self._records = records
        self._conversations = conversations
        self._pipeline = pipeline
        self._queue = queue
        self._config = config
        self._how_to_enable = how_to_enable
        self._models = models
        self._clock = clock

    @property
    def how_to_enable(self) -> str:
        """The settings that turn extraction on."""
        return self._how_to_enable

    @staticmethod
    def _writer_of(context: RequestContext, conversation: bool, record: dict[str, Any]) -> RequestContext:
        """The identity a stored record's turn belongs to: the user's, in the session add_messages stored it
        for (``meta_data.session`` of a message; the free-form meta_data of a pair names no session)."""
        meta = record.get("meta_data") or {}
        session = meta.get("session") if conversation and MESSAGE_META in meta else None
        if not isinstance(session, str):
            return context
        try:
            return RequestContext(**{**context.model_dump(), "session": session})
        except ValidationError:
            return context

    def users_with_turns(self) -> list[RequestContext]:
        """Every user with stored conversation or execution records (a scan: maintenance only, never a request)."""
        users: dict[str, RequestContext] = {}
        for kind in (CONVERSATIONS, EXECUTIONS):
            for item in self._records.scan(kind.partition_prefix):
                scope = parse_scope(item.pk.removeprefix(kind.partition_prefix))
                if scope is not None and scope.layer == "user" and item.pk not in users:
                    users[item.pk] = RequestContext(tenant=scope.tenant, user=scope.ids["user"])
        unique = {(c.tenant, c.user): c for c in users.values()}
        return [unique[key] for key in sorted(unique, key=lambda key: (key[0], key[1] or ""))]

    @property
    def enabled(self) -> bool:
        """Whether any strategy is on (and a model is configured)."""
        return bool(self._config.strategies)

    # ------------------------------------------------------- the observer
    def operations(self, context: RequestContext, kind: str, scope: str, data: dict[str, Any]) -> list[Put]:
        """The waiting-turn marker and the stream's queue entry, written with a new record (none when off)."""
        if not self.enabled or context.user is None or not self._queues(kind):
            return []
        stream = stream_of(context)
        at = data["timestamp"]
        return [
            ledger.turn_marker(stream, at, data["stored_at"], kind, data["message_id"], scope, identity_of(context)),
            ledger.queue_entry(stream, identity_of(context), key_time(clock_now())),
        ]

    def _queues(self, kind: str) -> bool:
        """Whether a new record of ``kind`` waits for extraction: an execution record when a strategy that reads
        executions is on; a conversation record when any other is (the profile runs in the runs its turns start)."""
        on = [STRATEGIES[name] for name in self._config.strategies]
        if kind == "execution":
            return any(strategy.source == "execution" for strategy in on)
        return any(strategy.source != "execution" for strategy in on)

    def stored(self, context: RequestContext) -> None:
        """One notice for the call's new turns; a failure is logged: the turns wait, and the next notice or
        the sweep finds them."""
        if not self.enabled or context.user is None:
            return
        notice = StreamNotice(stream_of(context), identity_of(context), "turns", self._token())
        try:
            self._queue().notify(notice)
        except MnemoError as error:
            logger.warning("could not send an extraction notice (the turns wait): %s", error.message)

    def _token(self) -> str:
        return f"{self._clock():.6f}"

    # ------------------------------------------------------- add_messages
    def add_messages(self, context: RequestContext, request: AddMessagesInput) -> AddMessagesOutput:
        """Store the turns as conversation records of the caller's session, oldest first; see the tool."""
        if context.user is None:
            raise InvalidInput(
                "user_id: add_messages needs a user id in the request context",
                {"field": "user_id", "missingIds": ["user"]},
            )
        now = clock_now()
        planned: list[tuple[str, dict[str, Any], datetime]] = []
        for position, message in enumerate(request.messages):
            at = message.at or now
            body = {"role": message.role, "content": message.content, "name": message.name}
            message_id = message.id or self._derived_id(context, body, at, position)
            planned.append((message_id, body, at))
        ids = [message_id for message_id, _, _ in planned]
        duplicates = sorted({message_id for message_id in ids if ids.count(message_id) > 1})
        if duplicates:
            raise InvalidInput(
                f"messages: the id {duplicates[0]!r} is given to more than one message",
                {"field": "messages", "id": duplicates[0]},
            )
        self._refuse_conflicts(context, planned)  # before any write: nothing is half-written
        stored: list[StoredMessage] = []
        for message_id, body, at in planned:
            outcome = self._conversations.add_message(context, message_id, body, at, expires_at=request.expires_at)
            stored.append(StoredMessage(id=message_id, outcome=outcome))
        new = sum(1 for item in stored if item.outcome == "stored")
        if new:
            self._conversations.notify(context)
        pending = len(self._pipeline.waiting(stream_of(context), MAX_BATCH_TURNS)) if self.enabled else 0
        return AddMessagesOutput(
            message=f"Stored {new} message(s), {len(stored) - new} already stored"
            + ("; extraction runs in the background" if self.enabled else "; extraction is off"),
            messages=stored,
            stored=new,
            repeated=len(stored) - new,
            pending_turns=pending,
            extraction="queued" if self.enabled else "off",
        )

    @staticmethod
    def _derived_id(context: RequestContext, body: dict[str, Any], at: datetime, position: int) -> str:
        key = "|".join([stream_of(context), body["role"], body["name"] or "", body["content"], key_time(at)])
        return "msg_" + hashlib.sha256(f"{key}|{position}".encode()).hexdigest()[:24]

    def _refuse_conflicts(self, context: RequestContext, planned: list[tuple[str, dict[str, Any], datetime]]) -> None:
        existing = self._conversations.existing_messages(context, [message_id for message_id, _, _ in planned])
        for message_id, body, _ in planned:
            record = existing.get(message_id)
            if record is None:
                continue
            said = record.get("user_input") or record.get("agent_response")
            meta = (record.get("meta_data") or {}).get("mnemo_message") or {}
            session = (record.get("meta_data") or {}).get("session")
            if (
                said != body["content"]
                or meta.get("role") != body["role"]
                or meta.get("name") != body["name"]
                or session != context.session
            ):
                raise ConflictingRequest(
                    f"messages: a message with id '{message_id}' is already stored with different content (or in "
                    "another session); use a new id",
                    {"field": "messages", "id": message_id},
                )

    # ----------------------------------------------------------- extract
    def extract(self, context: RequestContext, request: MemoryExtractInput) -> MemoryExtractOutput:
        """Run the strategies now over the caller's waiting turns (``dryRun``: decide, write nothing)."""
        if context.user is None:
            raise InvalidInput(
                "user_id: memory_extract needs a user id in the request context",
                {"field": "user_id", "missingIds": ["user"]},
            )
        if not self.enabled:
            raise InvalidInput(
                f"strategies: extraction is off in this deployment; {self._how_to_enable}",
                {"field": "strategies", "enabled": False},
            )
        only = tuple(request.strategies) if request.strategies else None
        if only:
            off = [name for name in only if name not in self._config.strategies]
            if off:
                raise InvalidInput(
                    f"strategies: {off[0]} is not on in this deployment (on: {', '.join(self._config.strategies)})",
                    {"field": "strategies", "strategy": off[0]},
                )
        stream = stream_of(context)
        outcome = self._pipeline.run(
            stream, "demand", dry_run=request.dry_run, only=only, deadline_seconds=self._deadline
        )
        if outcome is not None and not request.dry_run:
            self._forget_if_done(stream)
        pending = len(self._pipeline.waiting(stream, MAX_BATCH_TURNS))
        if outcome is None:
            return MemoryExtractOutput(message="No turn is waiting for extraction", run=None, pending_turns=pending)
        stored = outcome.view()
        run = RunView.model_validate(stored)
        decisions, failed = ledger.decision_counts(stored)
        if failed:
            decisions["failed strategies"] = failed
        said = ", ".join(f"{count} {name}" for name, count in sorted(decisions.items())) or "nothing proposed"
        verb = "Would extract" if request.dry_run else "Extracted"
        return MemoryExtractOutput(
            message=f"{verb} from {len(run.turns)} turn(s): {said}"
            + (" (dry run: nothing written)" if request.dry_run else ""),
            run=run,
            pending_turns=pending,
        )

    # ------------------------------------------------------------ status
    def status(self, context: RequestContext, request: ExtractionStatusInput) -> ExtractionStatusOutput:
        """Per strategy: turns waiting, runs, decisions, failures with the raw answer, tokens; recent runs."""
        if context.user is None:
            raise InvalidInput(
                "user_id: extraction_status needs a user id in the request context",
                {"field": "user_id", "missingIds": ["user"]},
            )
        stream = stream_of(context)
        partition = ledger.partition_of(stream)
        waiting = self._pipeline.waiting(stream, 1000)
        state = self._pipeline.state(stream)
        data = state.data if state else {}
        runs = self._records.query(partition, ledger.RUN, limit=request.runs, descending=True) if request.runs else []
        counters = data.get("strategies") or {}
        strategies = [self._strategy_status(s, counters.get(s.name) or {}, waiting) for s in STRATEGIES.values()]
        last_turn = max((m.data["at"] for m in waiting), default=None)
        return ExtractionStatusOutput(
            enabled=self.enabled,
            how_to_enable=None if self.enabled else self._how_to_enable,
            session=context.session,
            pending_turns=len(waiting),
            last_turn_at=last_turn,
            last_run_at=data.get("lastRunAt"),
            trigger={
                "everyTurns": self._config.every_turns,
                "idleMinutes": self._config.idle_minutes,
                "judge": self._config.judge,
                "maxCandidates": self._config.max_candidates,
            },
            strategies=strategies,
            profile=self._profile(context) if PROFILE.name in self._config.strategies else None,
            recent_runs=[RunView.model_validate(item.data) for item in runs],
        )

    def _strategy_status(self, strategy: Strategy, count: dict[str, Any], waiting: list[Item]) -> StrategyStatus:
        """One strategy's standing: on or off, its model, the waiting turns it reads and has not done, and the
        stream's counters of it (``count``)."""
        name = strategy.name
        on = name in self._config.strategies
        failure = count.get("lastFailure")
        pending = sum(1 for m in waiting if strategy.reads(m.data["kind"]) and name not in m.data.get("done", []))
        return StrategyStatus(
            strategy=name,
            enabled=on,
            model=self._models(self._config.of(name).model) if on else None,
            pending_turns=pending if on else 0,
            runs=count.get("runs", 0),
            failures=count.get("failures", 0),
            added=count.get("added", 0),
            kept=count.get("kept", 0),
            superseded=count.get("superseded", 0),
            merged=count.get("merged", 0),
            outdated=count.get("outdated", 0),
            input_tokens=count.get("inputTokens", 0),
            output_tokens=count.get("outputTokens", 0),
            last_run_at=count.get("lastRunAt"),
            last_failure=StrategyFailure.model_validate(failure) if failure else None,
        )

    def _profile(self, context: RequestContext) -> ProfileView | None:
        """The caller's current profile, when the profile strategy has written one."""
        if context.missing_ids("user"):
            return None
        head, current = self._pipeline.profile(context.scope_key("user"))
        if current is None:
            return None
        provenance = (current.get("metadata") or {}).get("provenance") or {}
        return ProfileView(
            text=current["content"],
            memory_id=current["memoryId"],
            built_at=current["createdAt"],
            tokens=count_tokens(current["content"]),
            memory_ids=list(provenance.get("memoryIds") or []),
            pending=len(head.pending),
        )

    # ----------------------------------------------------------- workers
    def on_notice(self, notice: StreamNotice, *, arm: bool = True) -> NoticeOutcome:
        """What the extraction worker does with a notice: run while ``every_turns`` turns wait (all of them on
        demand or once idle), else arm an idle wake-up (unless ``arm`` is false: a sweep looks again anyway).
        Returns the runs it made and how it left the stream."""
        if not self.enabled:
            return NoticeOutcome(0, Left.OFF)
        stream = notice.stream
        runs = 0
        while runs < MAX_RUNS_PER_WAKE:
            waiting = self._pipeline.waiting(stream, MAX_BATCH_TURNS)
            if not waiting:
                self._forget_if_done(stream)
                return NoticeOutcome(runs, Left.NOTHING)
            quiet = self._clock() - self._last_turn(stream, waiting)
            due = (
                notice.reason == "demand"
                or len(waiting) >= self._config.every_turns
                or quiet >= self._config.idle_minutes * 60
            )
            if not due:
                if arm:
                    self._arm(notice, self._config.idle_minutes * 60 - quiet)
                return NoticeOutcome(runs, Left.NOT_DUE)
            run = self._pipeline.run(stream, notice.reason)
            runs += 1
            if run is not None and run.failed:
                # The turns wait; a wake-up tries again even if the session stays quiet from now on.
                if arm:
                    self._arm(notice, self._config.idle_minutes * 60)
                return NoticeOutcome(runs, Left.FAILED)
        return NoticeOutcome(runs, Left.MORE)

    def _last_turn(self, stream: str, waiting: list[Item]) -> float:
        """When the stream's last turn was stored, by the server's clock (a turn's ``at`` is the client's and
        may lie in the future, which would keep the stream from ever being quiet)."""
        entry = self._records.get(ledger.queue_partition(stream), stream)
        stored = [str(m.data.get("storedAt") or m.data["at"]) for m in waiting]
        if entry and entry.data.get("lastTurnAt"):
            stored.append(entry.data["lastTurnAt"])
        return max(_seconds(at) for at in stored)

    def _arm(self, notice: StreamNotice, delay: float) -> None:
        """Send an idle wake-up, unless one is already on its way (the stream's ``wakeAt`` is still ahead): one
        wake-up per quiet spell, not one per notice. A wake-up that comes while the stream is still busy arms
        the next."""
        now = self._clock()
        due = now + delay

        def set_wake(data: dict[str, Any]) -> bool:
            ahead = data.get("wakeAt")
            if isinstance(ahead, int | float) and ahead > now:
                return False  # one is on its way
            data["wakeAt"] = due
            return True

        # Not written: one is on its way, or another worker changed the stream meanwhile (its notice or run looks
        # again).
        if not ledger.update_state(self._records, notice.stream, set_wake):
            return
        wake = StreamNotice(notice.stream, notice.identity, "idle", f"{due:.0f}")
        try:
            self._queue().wake_later(wake, min(900, max(1, math.ceil(delay))))
        except MnemoError as error:
            logger.warning("could not arm the idle wake-up of a stream: %s", error.message)

    def _forget_if_done(self, stream: str) -> None:
        """Take the stream off the list of streams with work once nothing waits (unless a turn came since)."""
        entry = self._records.get(ledger.queue_partition(stream), stream)
        if entry is None or self._pipeline.waiting(stream, 1):
            return
        # A turn that arrived meanwhile changed the entry's version: the stream stays listed.
        with contextlib.suppress(ConditionFailed):
            self._records.write([Delete(entry.pk, entry.sk, expect=entry.version)])

    def streams(self) -> Iterator[Item]:
        """The entries of every stream with waiting turns (the local worker's and the sweep's list)."""
        for partition in ledger.queue_partitions():
            yield from self._records.query(partition, "", limit=1000)

    def run_due(self) -> int:
        """The local worker's round: every listed stream given a notice as the queue would deliver it; runs made."""
        made = 0
        for entry in list(self.streams()):
            notice = StreamNotice(entry.sk, entry.data.get("identity") or {}, "idle", "")
            made += self.on_notice(notice, arm=False).runs
        return made

    def backfill(self, context: RequestContext, progress: Callable[[int, int], None] = lambda done, total: None) -> int:
        """``mnemo extract``: queue every stored conversation and execution record of the caller that has no
        waiting-turn marker yet (each record's session from its meta_data), then run every stream to the end.
        Every turn stored while extraction was on was queued when it was stored, and a run keeps the oldest
        storage time it has read (``liveSince``), so only turns stored before that are queued here, once.
        Turns stored while extraction was turned off again between two runs are not found (docs/extraction.md).
        Returns the runs made."""
        if not self.enabled:
            raise InvalidInput(
                f"strategies: extraction is off in this deployment; {self._how_to_enable}",
                {"field": "strategies", "enabled": False},
            )
        scope = context.scope_key("user")
        # stream -> its liveSince: turns stored since were queued when stored (None: no run yet, none was).
        streams: dict[str, str | None] = {}
        for kind in (CONVERSATIONS, EXECUTIONS):
            store = EntryStore(self._records, kind)
            for entry in store.recent(scope):
                record = store.get(scope, entry["message_id"])
                if record is None:
                    continue
                turn_context = self._writer_of(context, kind is CONVERSATIONS, record)
                stream = stream_of(turn_context)
                if stream not in streams:
                    state = self._pipeline.state(stream)
                    streams[stream] = (state.data.get("liveSince") if state else None) or None
                stored_at = record.get("stored_at") or record["timestamp"]
                live_since = streams[stream]
                if live_since is not None and stored_at >= live_since:
                    continue  # queued when it was stored, or read by a run already
                writer = identity_of(turn_context)
                marker = ledger.turn_marker(
                    stream, record["timestamp"], stored_at, kind.name, record["message_id"], scope, writer
                )
                try:
                    self._records.write([marker])
                except ConditionFailed:
                    continue  # it is waiting already
                self._records.write([ledger.queue_entry(stream, writer, stored_at)])
        runs = 0
        total = len(streams)
        for done, stream in enumerate(streams):
            while self._pipeline.waiting(stream, 1):
                run = self._pipeline.run(stream, "backfill")
                runs += 1
                if run is None or run.failed:
                    break
            self._forget_if_done(stream)
            progress(done + 1, total)
        return runs

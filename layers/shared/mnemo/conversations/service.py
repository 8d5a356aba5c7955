"""Conversation and execution memory: store once per message_id, link both ways, retrieve three ways.

Everything lives in the caller's user scope (``context.scope_key("user")``,
which carries the tenant): the user is the transport's, never the body's.
Records are the truth (see store.py for the layout); the vector index only
finds message ids, and every hit is read back from the records before it
reaches a caller. An index write that fails (embedder or index down) never
loses a record: the record is written with an index outbox marker, which stays
until the record is indexed (``mnemo.outbox``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from mnemo import clock
from mnemo.budget import fit_head
from mnemo.context import RequestContext
from mnemo.conversations.indexing import EntryFamily, Indexer, execution_keywords
from mnemo.conversations.models import (
    AddConversationData,
    AddConversationDetails,
    AddConversationInput,
    AddConversationOutput,
    AddExecutionData,
    AddExecutionDetails,
    AddExecutionInput,
    AddExecutionOutput,
    ConversationResult,
    ExecutionDetails,
    ExecutionError,
    ExecutionResult,
    RetrieveConversationData,
    RetrieveConversationInput,
    RetrieveConversationOutput,
    RetrieveExecutionData,
    RetrieveExecutionInput,
    RetrieveExecutionOutput,
    TimeRange,
    TimeRangeEcho,
)
from mnemo.conversations.retrieval import Criteria, Finder
from mnemo.conversations.store import (
    CONVERSATIONS,
    EXECUTIONS,
    RECORD,
    EntryStore,
    key_time,
    new_message_id,
    parse_time,
)
from mnemo.errors import Conflict, ConflictingRequest, InvalidInput
from mnemo.outbox import GONE, IndexOutbox
from mnemo.ports import ConditionFailed, Delete, Embedder, Filter, Item, Put, RecordStore, VectorIndex


class TurnObserver(Protocol):
    """Who learns from stored turns (``mnemo.learning``): its work goes out with each new record."""

    def operations(self, context: RequestContext, kind: str, scope: str, data: dict[str, Any]) -> list[Put]:
        """What to write with a new record, in the same all-or-nothing write (nothing when learning is off)."""
        ...

    def stored(self, context: RequestContext) -> None:
        """Called once after a call stored new records (never raises: the records are stored)."""
        ...


#: The meta_data key of a message stored by add_messages: ``{role, name}``.
MESSAGE_META = "mnemo_message"


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _criteria(request: RetrieveConversationInput | RetrieveExecutionInput, flt: Filter) -> Criteria:
    time_range: TimeRange | None = request.time_range
    return Criteria(
        query=request.query,
        strategy=request.retrieval_strategy,
        limit=request.max_results,
        flt=flt,
        message_id=request.message_id,
        low=key_time(time_range.start) if time_range and time_range.start else None,
        high=key_time(time_range.end) if time_range and time_range.end else None,
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


class ConversationService:
    def __init__(
        self,
        records: RecordStore,
        index: VectorIndex,
        embedder: Embedder,
        outbox: IndexOutbox,
        observer: Callable[[], TurnObserver | None] = lambda: None,
    ) -> None:
        self._observer = observer
        self._records = records
        self._indexer = Indexer(index, embedder)
        self._finder = Finder(index, embedder)
        self._outbox = outbox
        self._conversations = EntryStore(records, CONVERSATIONS)
        self._executions = EntryStore(records, EXECUTIONS)
        self._family = {
            store.kind.name: EntryFamily(store, self._indexer) for store in (self._conversations, self._executions)
        }
        #: The outbox families of both kinds.
        self.families = tuple(self._family.values())

    # ------------------------------------------------------------ identity
    @staticmethod
    def _scope(context: RequestContext) -> str:
        if context.user is None:
            raise InvalidInput(
                "user_id: conversation memory needs a user id in the request context (e.g. MEMORY_USER_ID)",
                {"field": "user_id", "missingIds": ["user"]},
            )
        return context.scope_key("user")

    # ---------------------------------------------------------------- add
    def add_conversation(self, context: RequestContext, request: AddConversationInput) -> AddConversationOutput:
        started = time.perf_counter()
        scope = self._scope(context)
        content = request.model_dump(mode="json", include={"user_input", "agent_response"})
        content["meta_data"] = request.meta_data or {}
        data, outcome = self._store(
            context, self._conversations, scope, request.message_id or new_message_id(), content, request, {}
        )
        self._notify(context, outcome)
        processing = self._processing(self._conversations, outcome, _ms(started))
        return AddConversationOutput(
            message=f"Conversation {data['message_id']}: {processing}",
            data=AddConversationData(
                message_id=data["message_id"],
                timestamp=parse_time(data["timestamp"]),
                details=AddConversationDetails(has_meta_data=bool(data["meta_data"]), memory_processing=processing),
            ),
        )

    def add_execution(self, context: RequestContext, request: AddExecutionInput) -> AddExecutionOutput:
        started = time.perf_counter()
        scope = self._scope(context)
        content = request.model_dump(
            mode="json", include={"execution_summary", "tools_used", "errors", "observations", "success"}
        )
        content["duration_ms"] = request.duration_ms if request.duration_ms is not None else 0
        content["meta_data"] = request.meta_data or {}
        data, outcome = self._store(
            context, self._executions, scope, request.message_id, content, request, execution_keywords(content)
        )
        self._notify(context, outcome)
        processing = self._processing(self._executions, outcome, _ms(started))
        return AddExecutionOutput(
            message=f"Execution {data['message_id']}: {processing}",
            data=AddExecutionData(
                message_id=data["message_id"],
                timestamp=parse_time(data["timestamp"]),
                details=AddExecutionDetails(
                    execution_summary=data["execution_summary"],
                    tools_count=len(data["tools_used"]),
                    errors_count=len(data["errors"]),
                    duration_ms=data["duration_ms"],
                    success=data["success"],
                    has_meta_data=bool(data["meta_data"]),
                    memory_processing=processing,
                ),
            ),
        )

    @staticmethod
    def _processing(store: EntryStore, outcome: str, elapsed_ms: float) -> str:
        if outcome == "repeat":
            return (
                f"already stored with this content, nothing changed (idempotent repeat, checked in {elapsed_ms:.1f} ms)"
            )
        if outcome == "queued":
            return (
                f"stored in {elapsed_ms:.1f} ms; the search index was unavailable, "
                f"so the {store.kind.name} is queued for indexing"
            )
        return f"stored and indexed in {elapsed_ms:.1f} ms"

    def add_message(
        self,
        context: RequestContext,
        message_id: str,
        message: dict[str, Any],
        at: datetime | None,
        *,
        expires_at: datetime | None = None,
    ) -> str:
        """Store one chat message (add_messages) as a conversation record: a user's in ``user_input``, any
        other role's in ``agent_response``, the role and name in ``meta_data.mnemo_message`` and the session
        in ``meta_data.session``. "stored", or "repeat" when it is stored with this content already
        (CONFLICT when with other content; a repeat keeps the expiry it was stored with). ``expires_at``: when
        the record and its time entry expire (``expiresAt`` in the record, the items' ``expires_at``; the
        stream indexer or the local sweeper then removes its index document). Call ``notify`` once after a
        batch."""
        scope = self._scope(context)
        role, text = message["role"], message["content"]
        content: dict[str, Any] = {
            "user_input": text if role == "user" else "",
            "agent_response": "" if role == "user" else text,
            "meta_data": {
                MESSAGE_META: {"role": role, "name": message.get("name")},
                **({"session": context.session} if context.session else {}),
            },
        }
        request = AddConversationInput.model_construct(
            user_input=text if role == "user" else "",
            agent_response="" if role == "user" else text,
            timestamp=at,
            explanation="add_messages",
            meta_data=None,
        )
        _, outcome = self._store(
            context, self._conversations, scope, message_id, content, request, {}, expires_at=expires_at
        )
        return "repeat" if outcome == "repeat" else "stored"

    def existing_messages(self, context: RequestContext, message_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The conversation records of the caller stored under these ids, by id."""
        return self._conversations.get_many(self._scope(context), message_ids)

    def notify(self, context: RequestContext) -> None:
        """Tell the learning observer that a call stored new records."""
        self._notify(context, "indexed")

    def _notify(self, context: RequestContext, outcome: str) -> None:
        observer = self._observer()
        if observer is not None and outcome != "repeat":
            observer.stored(context)

    def _store(
        self,
        context: RequestContext,
        store: EntryStore,
        scope: str,
        message_id: str,
        content: dict[str, Any],
        request: AddConversationInput | AddExecutionInput,
        entry_fields: dict[str, Any],
        *,
        expires_at: datetime | None = None,
    ) -> tuple[dict[str, Any], str]:
        """Write a record once per message_id; the same content again is a repeat, another a CONFLICT."""
        existing = store.get(scope, message_id)
        if existing is not None:
            self._same_or_conflict(store, existing, content, request)
            return existing, "repeat"
        data = {
            "message_id": message_id,
            "scope": scope,
            "timestamp": key_time(request.timestamp or clock.now()),
            **content,
            "explanation": request.explanation,
            "stored_at": key_time(clock.now()),
        }
        if expires_at is not None:
            data["expiresAt"] = clock.iso(expires_at)
        family = self._family[store.kind.name]
        marker = self._outbox.marker(family.family, family.reference(scope, message_id))
        observer = self._observer()
        extra = observer.operations(context, store.kind.name, scope, data) if observer is not None else []
        try:
            store.create(
                scope,
                data,
                {"message_id": message_id, "timestamp": data["timestamp"], **entry_fields},
                marker,
                extra,
                expires_at=int(expires_at.timestamp()) if expires_at is not None else None,
            )
        except ConditionFailed:
            existing = store.get(scope, message_id)
            if existing is None:  # the time entry was taken by a concurrent writer whose record is not visible
                raise Conflict(
                    f"message_id: the {store.kind.name} changed while it was being written; retry",
                    {"field": "message_id", "message_id": message_id},
                ) from None
            self._same_or_conflict(store, existing, content, request)
            return existing, "repeat"
        indexed = self._outbox.settle(marker, family, first=lambda: family.first_write(scope, data))
        return data, "indexed" if indexed else "queued"

    @staticmethod
    def _same_or_conflict(
        store: EntryStore,
        existing: dict[str, Any],
        content: dict[str, Any],
        request: AddConversationInput | AddExecutionInput,
    ) -> None:
        differs = [name for name, value in content.items() if existing.get(name) != value]
        if request.timestamp is not None and key_time(request.timestamp) != existing["timestamp"]:
            differs.append("timestamp")
        if differs:
            message_id = existing["message_id"]
            raise ConflictingRequest(
                f"message_id: a {store.kind.name} with message_id '{message_id}' is already stored with a "
                f"different {', '.join(differs)}; use a new message_id",
                {"field": "message_id", "message_id": message_id, "differs": differs},
            )

    # ----------------------------------------------------------- retrieval
    def retrieve_conversation(
        self, context: RequestContext, request: RetrieveConversationInput
    ) -> RetrieveConversationOutput:
        started = time.perf_counter()
        scope = self._scope(context)
        criteria = _criteria(request, {"scope": [scope]})
        rows, total = self._finder.find(self._conversations, scope, criteria, lambda data: {})
        linked = self._executions.get_many(scope, [data["message_id"] for data, _ in rows], consistent=False)
        conversations = [
            ConversationResult(
                message_id=data["message_id"],
                conversation_timestamp=parse_time(data["timestamp"]),
                user_input=data["user_input"],
                agent_response=data["agent_response"],
                meta_data=data["meta_data"],
                has_execution_memory=data["message_id"] in linked,
                relevance_score=score,
            )
            for data, score in rows
        ]
        if request.message_id is not None:
            query_type = "specific_message"
        elif criteria.low or criteria.high:
            query_type = "time_filtered"
        else:
            query_type = "general"
        how = "lookup" if request.message_id is not None else request.retrieval_strategy
        output = RetrieveConversationOutput(
            message=f"Found {_plural(total, 'conversation')}, returned {len(conversations)} "
            f"({how}, {_ms(started):.1f} ms)",
            data=RetrieveConversationData(
                query=request.query,
                explanation=request.explanation,
                query_type=query_type,
                requested_message_id=request.message_id,
                retrieval_timestamp=clock.now(),
                time_range=(
                    TimeRangeEcho(start=request.time_range.start, end=request.time_range.end)
                    if request.time_range
                    else None
                ),
                conversations=conversations,
                total_found=total,
                returned_count=len(conversations),
                max_results_applied=total > len(conversations),
            ),
        )
        output.data.conversations = self._fit(output, output.data.conversations, context)
        return output

    def retrieve_execution(self, context: RequestContext, request: RetrieveExecutionInput) -> RetrieveExecutionOutput:
        started = time.perf_counter()
        scope = self._scope(context)
        flt: Filter = {"scope": [scope]}
        if request.tools:
            flt["tools"] = sorted({tool.lower() for tool in request.tools})
        if request.success is not None:
            flt["success"] = ["true" if request.success else "false"]
        if request.error_type:
            flt["error_type"] = [request.error_type.lower()]
        rows, total = self._finder.find(self._executions, scope, _criteria(request, flt), execution_keywords)
        linked = self._conversations.get_many(scope, [data["message_id"] for data, _ in rows], consistent=False)
        executions = [
            ExecutionResult(
                message_id=data["message_id"],
                execution_timestamp=parse_time(data["timestamp"]),
                execution_details=ExecutionDetails(
                    execution_summary=data["execution_summary"],
                    tools_used=data["tools_used"],
                    errors=[ExecutionError.model_validate(error) for error in data["errors"]],
                    observations=data["observations"],
                ),
                success=data["success"],
                duration_ms=data["duration_ms"],
                relevance_score=score,
                has_conversation_memory=data["message_id"] in linked,
                meta_data=data["meta_data"],
            )
            for data, score in rows
        ]
        if request.message_id is not None:
            query_type = "specific_message"
        elif request.has_pattern_filters():
            query_type = "pattern_search"
        else:
            query_type = "general"
        how = "lookup" if request.message_id is not None else request.retrieval_strategy
        output = RetrieveExecutionOutput(
            message=f"Found {_plural(total, 'execution')}, returned {len(executions)} ({how}, {_ms(started):.1f} ms)",
            data=RetrieveExecutionData(
                query=request.query,
                explanation=request.explanation,
                query_type=query_type,
                requested_message_id=request.message_id,
                retrieval_timestamp=clock.now(),
                executions=executions,
                total_found=total,
                returned_count=len(executions),
                max_results_applied=total > len(executions),
            ),
        )
        output.data.executions = self._fit(output, output.data.executions, context)
        return output

    @staticmethod
    def _fit(
        output: RetrieveConversationOutput | RetrieveExecutionOutput, found: list[Any], context: RequestContext
    ) -> list[Any]:
        """The head of the page that fits the transport's response budget; the counts and message say so."""
        kept = fit_head(output, found, context.response_budget)
        if len(kept) < len(found):
            output.data.returned_count = len(kept)
            output.data.max_results_applied = True
            output.message += f"; {len(found) - len(kept)} left out to fit the response size limit, ask for fewer"
        return kept

    # ------------------------------------------------------------- expiry
    #: The partitions whose expired items ``remove`` takes (``mnemo.expiry.ExpiringFamily``).
    expiring_prefixes: tuple[str, ...] = (CONVERSATIONS.partition_prefix, EXECUTIONS.partition_prefix)

    def _family_of(self, pk: str) -> tuple[EntryFamily, str] | None:
        """The family of a partition of either kind, and the scope it belongs to."""
        for family in self.families:
            prefix = family.store.kind.partition_prefix
            if pk.startswith(prefix):
                return family, pk.removeprefix(prefix)
        return None

    def sync_removed(self, pk: str, sk: str) -> str:
        """The stream indexer's entry for a record storage removed (an expired turn, DynamoDB TTL): its index
        document goes unless the record is there again. "removed", or "skipped" for any other item."""
        found = self._family_of(pk)
        if found is None or not sk.startswith(RECORD):
            return "skipped"
        family, scope = found
        outcome = family.sync_reference(family.reference(scope, sk.removeprefix(RECORD)))
        return "removed" if outcome == GONE else "indexed"

    def remove(self, items: Sequence[Item]) -> int:
        """Remove expired items of conversation and execution partitions (the embedded store's sweep,
        ``mnemo.expiry``): a record goes with an outbox marker whose settling removes its index document, a
        time entry simply goes. The number of records removed."""
        removed = 0
        for item in items:
            found = self._family_of(item.pk)
            removal = Delete(item.pk, item.sk, expect="expired")
            if found is None or not item.sk.startswith(RECORD):
                with contextlib.suppress(ConditionFailed):  # written again, live, since the sweep looked
                    self._records.write([removal])
                continue
            family, scope = found
            marker = self._outbox.marker(family.family, family.reference(scope, item.sk.removeprefix(RECORD)))
            try:
                self._records.write([removal, marker])
            except ConditionFailed:
                continue
            self._outbox.settle(marker, family)
            removed += 1
        return removed

    # ------------------------------------------------------------ reindex
    def reindex(self) -> int:
        """Rebuild both index namespaces from the records (maintenance; no user request scans)."""
        return self._indexer.reindex((self._conversations, self._executions))

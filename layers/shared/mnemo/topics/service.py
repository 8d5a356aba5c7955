"""Topic memory rules: one topic store per project (or per user without a project).

Records (partition ``TOPIC|{scope}``: the general section, each topic's head
and its body; ``mnemo.topics.records``) are the source of truth.

Every topic write carries an index outbox marker (``mnemo.outbox``) in the
same all-or-nothing write; the marker is cleared once the index holds the
topic's version, so a crash or an index outage never leaves a topic unindexed
and concurrent refines never leave an older version in the index.

``key`` is the name case-folded. The index document is rendered from the
general section and the heads, never stored. The vector index (namespace
``topics``) only finds topics for a content query; every hit is read back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal

from mnemo import clock
from mnemo.budget import RESERVE_BYTES, SHORTENED, fit_head, longest_prefix, wire_bytes
from mnemo.context import WRITER_ROLE, RequestContext
from mnemo.errors import Conflict, ConflictingRequest, InvalidInput, NotFound, Unauthorized, invalid_field
from mnemo.outbox import GONE, IndexOutbox, Reference
from mnemo.ports import ConditionFailed, Delete, Embedder, Filter, IndexDoc, Item, Put, RecordStore, VectorIndex
from mnemo.retrieval.ranker import hybrid_rank
from mnemo.topics.models import (
    MAX_TOPICS,
    ForgetMemoryInput,
    ForgetMemoryOutput,
    ListMemoriesInput,
    ListMemoriesOutput,
    MemorizeGeneralInfoInput,
    MemorizeGeneralInfoOutput,
    MemorizeNewTopicInput,
    RecallGeneralMemoryOutput,
    RecallMemoryInput,
    RecallMemoryOutput,
    RefineMemoryInput,
    SearchMemoriesInput,
    SearchMemoriesOutput,
    TopicLayer,
    TopicMatch,
    TopicWriteOutput,
)
from mnemo.topics.names import MAX_TAGS, has_specialized_header, tag_key, topic_key, unique_tags
from mnemo.topics.records import (
    BODY,
    GENERAL,
    HEAD,
    NAMESPACE,
    PARTITION,
    key_of,
    layer_of,
    partition_of,
    scope_key_of,
)
from mnemo.topics.records import doc_id as topic_doc_id
from mnemo.topics.render import index_entry, render_index, render_topic

#: What is embedded of a topic: its start (Titan reads at most 50,000 characters).
EMBED_CHARS = 8000
NO_TOPICS = "No topics found"
Retrieval = Literal["tags", "hybrid", "lexical"]

logger = logging.getLogger(__name__)


def _later_than(previous: str) -> datetime:
    """Now, or just after ``previous`` if the clock has not moved past it: lastUpdated always grows."""
    before = datetime.fromisoformat(previous)
    now = clock.now()
    return now if now > before else before + timedelta(microseconds=1)


@dataclass(frozen=True)
class Scope:
    """Where a caller's topics live: its project, or (without a project) its own user layer."""

    layer: TopicLayer
    key: str

    @property
    def partition(self) -> str:
        """The topics partition of this scope."""
        return partition_of(self.key)


def _topic_missing(name: str) -> NotFound:
    return NotFound(f"Topic '{name}' not found", {"field": "topic", "topic": name})


class TopicService:
    #: The outbox family: topics are indexed in the namespace of the same name.
    family = NAMESPACE

    def __init__(self, records: RecordStore, index: VectorIndex, embedder: Embedder, outbox: IndexOutbox) -> None:
        self._records = records
        self._index = index
        self._embedder = embedder
        self._outbox = outbox

    # ------------------------------------------------------------- scope
    @staticmethod
    def scope(context: RequestContext) -> Scope:
        """The caller's topic scope: its project if it names one, else its user layer; INVALID_INPUT when it has
        neither."""
        if context.project is not None:
            return Scope("project", context.scope_key("project"))
        if context.user is not None:
            return Scope("user", context.scope_key("user"))
        raise InvalidInput(
            "project: topics need a project id (or, for personal topics, a user id) in the request context",
            {"field": "project", "missingIds": ["project", "user"]},
        )

    def _writable(self, context: RequestContext) -> Scope:
        scope = self.scope(context)
        if scope.layer == "project" and WRITER_ROLE not in context.roles:
            raise Unauthorized(
                f"Changing the project's topics needs the '{WRITER_ROLE}' role",
                {"field": "topic", "layer": "project", "requiredRole": WRITER_ROLE},
            )
        return scope

    # ------------------------------------------------------------- reads
    def _heads(self, scope: Scope, *, consistent: bool = True) -> list[Item]:
        """The topic heads; listings pass ``consistent=False``, the topic count before a create does not."""
        return self._records.query(scope.partition, HEAD, limit=MAX_TOPICS + 1, consistent=consistent)

    def _read(self, scope: Scope, key: str) -> tuple[Item, Item] | None:
        """A topic's head and body at the same version, or None if there is no such topic."""
        for _ in range(3):
            found = {
                item.sk: item
                for item in self._records.batch_get([(scope.partition, HEAD + key), (scope.partition, BODY + key)])
            }
            head, body = found.get(HEAD + key), found.get(BODY + key)
            if head is None:
                return None
            if body is not None and body.version == head.version:
                return head, body
        raise Conflict("The topic changed while it was being read; retry", {"field": "topic"})

    def recall_general(self, context: RequestContext) -> RecallGeneralMemoryOutput:
        """recall_general_memory: the general section and the rendered index of every topic, cut to the response
        budget."""
        scope = self.scope(context)
        general = self._records.get(scope.partition, GENERAL)
        heads = [item.data for item in self._heads(scope, consistent=False)]
        output = RecallGeneralMemoryOutput(
            content=general.data["content"] if general else "",
            index=render_index(scope.layer, general.data["content"] if general else "", heads),
            layer=scope.layer,
            version=general.version if general else 0,
            last_updated=general.data["lastUpdated"] if general else None,
        )
        budget = context.response_budget
        if budget is not None and wire_bytes(output) > budget:
            self._fit_general(output, scope, heads, budget)
        return output

    @staticmethod
    def _fit_general(output: RecallGeneralMemoryOutput, scope: Scope, heads: list[dict[str, Any]], budget: int) -> None:
        """Leave topics out of the index from its end, then shorten the general section, until the answer fits."""
        kept = list(heads)
        excess = wire_bytes(output) - budget
        while kept and excess > 0:
            excess -= len(index_entry(kept.pop()).encode()) + 1
        left_out = len(heads) - len(kept)
        output.index = render_index(scope.layer, output.content, kept, left_out=left_out)
        if wire_bytes(output) <= budget:
            return
        general = output.content  # it appears twice: in content and in the index

        def shortened(prefix: str) -> RecallGeneralMemoryOutput:
            content = prefix + SHORTENED
            return output.model_copy(
                update={"content": content, "index": render_index(scope.layer, content, kept, left_out=left_out)}
            )

        chars = longest_prefix(general, lambda prefix: wire_bytes(shortened(prefix)) <= budget)
        final = shortened(general[:chars])
        output.content, output.index = final.content, final.index

    def list_topics(self, context: RequestContext, request: ListMemoriesInput) -> ListMemoriesOutput:
        """list_memories: topic names from ``offset``, as a list and as text; cut to the response budget with
        ``nextOffset``."""
        scope = self.scope(context)
        every = [item.data["name"] for item in self._heads(scope, consistent=False)]
        names = every[request.offset :]
        output = ListMemoriesOutput(
            topics=names, text=", ".join(names) or NO_TOPICS, count=len(every), layer=scope.layer
        )
        # Each name is in the answer twice: in the list and in the text.
        kept = fit_head(output, names, context.response_budget, weight=lambda name: 2 * wire_bytes(name) + 2)
        if len(kept) < len(names):
            following = request.offset + len(kept)
            more = f"… and {len(names) - len(kept)} more (response size limit): ask with offset {following}"
            output.topics, output.text = kept, ", ".join([*kept, more])
            output.has_more, output.next_offset = True, following
        return output

    def recall(self, context: RequestContext, request: RecallMemoryInput) -> RecallMemoryOutput:
        """recall_memory: one topic with its content from ``offset``; content cut to the response budget continues at
        ``nextOffset``. NOT_FOUND for an unknown topic."""
        found = self._read(self.scope(context), topic_key(request.topic))
        if found is None:
            raise _topic_missing(request.topic)
        head, body = found
        content: str = body.data["content"]
        piece = content[request.offset :]
        output = RecallMemoryOutput(
            title=head.data["name"],
            tags=head.data["tags"],
            summary=head.data["summary"],
            content=piece,
            last_updated=head.data["lastUpdated"],
            created_at=head.data["createdAt"],
            version=head.version,
            markdown=render_topic(head.data, piece),
            total_chars=len(content),
        )
        budget = context.response_budget
        if budget is not None and wire_bytes(output) > budget:
            limit = budget - RESERVE_BYTES  # room for hasMore and nextOffset

            def fits(prefix: str) -> bool:
                shorter = output.model_copy(update={"content": prefix, "markdown": render_topic(head.data, prefix)})
                return wire_bytes(shorter) <= limit

            kept = longest_prefix(piece, fits)
            if not kept:  # nothing of the content fits beside the title, tags and summary: no progress to offer
                raise invalid_field("topic", f"this topic's answer cannot fit the transport's {budget} bytes")
            output.content, output.markdown = piece[:kept], render_topic(head.data, piece[:kept])
            output.has_more, output.next_offset = True, request.offset + kept
        return output

    # ------------------------------------------------------------ writes
    def memorize(self, context: RequestContext, request: MemorizeNewTopicInput) -> TopicWriteOutput:
        """memorize_new_topic: store a new topic at version 1 and index it; CONFLICT (not retryable) when the name is
        taken, INVALID_INPUT past ``MAX_TOPICS``."""
        scope = self._writable(context)
        key = topic_key(request.topic)
        if len(self._heads(scope)) >= MAX_TOPICS:
            raise invalid_field("topic", f"this scope already holds {MAX_TOPICS} topics", limit=MAX_TOPICS)
        now = clock.iso(clock.now())
        head = {
            "name": request.topic,
            "tags": request.tags,
            "summary": request.summary,
            "createdAt": now,
            "lastUpdated": now,
            "createdBy": context.user,
            "updatedBy": context.user,
        }
        marker = self._marker(scope, key)
        try:
            self._records.write(
                [
                    Put(Item(scope.partition, HEAD + key, head), expect="absent"),
                    Put(Item(scope.partition, BODY + key, {"content": request.content})),
                    marker,
                ]
            )
        except ConditionFailed:
            raise ConflictingRequest(
                f"Topic '{request.topic}' already exists; use refine_memory to change it",
                {"field": "topic", "topic": request.topic},
            ) from None
        self._outbox.settle(marker, self, first=partial(self._write_document, scope, key, head, request.content, 1))
        return TopicWriteOutput(
            message=f"Topic '{request.topic}' memorized",
            topic=request.topic,
            version=1,
            last_updated=now,
            tags=request.tags,
            summary=request.summary,
        )

    def refine(self, context: RequestContext, request: RefineMemoryInput) -> TopicWriteOutput:
        """refine_memory: change a topic's tags, summary or content under its version (``expectedVersion`` when given);
        lastUpdated always grows."""
        scope = self._writable(context)
        removed = {tag_key(tag) for tag in request.tags_to_remove}
        both = [tag for tag in request.tags_to_add if tag_key(tag) in removed]
        if both:
            raise invalid_field("tagsToAdd", f"tag '{both[0]}' is also in tagsToRemove")
        key = topic_key(request.topic)
        found = self._read(scope, key)
        if found is None:
            raise _topic_missing(request.topic)
        head, body = found
        if request.expected_version is not None and request.expected_version != head.version:
            raise ConflictingRequest(
                f"Topic '{head.data['name']}' is at version {head.version}, not {request.expected_version}; "
                "recall it and refine again",
                {"field": "expectedVersion", "currentVersion": head.version},
            )
        kept = [tag for tag in head.data["tags"] if tag_key(tag) not in removed]
        tags = unique_tags([*kept, *request.tags_to_add])
        if len(tags) > MAX_TAGS:
            raise invalid_field(
                "tagsToAdd", f"a topic holds at most {MAX_TAGS} tags (this would make {len(tags)})", limit=MAX_TAGS
            )
        data = {
            **head.data,
            "tags": tags,
            "summary": request.new_summary if request.new_summary is not None else head.data["summary"],
            "lastUpdated": clock.iso(_later_than(head.data["lastUpdated"])),
            "updatedBy": context.user,
        }
        content = request.new_content if request.new_content is not None else body.data["content"]
        version = head.version + 1
        marker = self._marker(scope, key)
        try:
            self._records.write(
                [
                    Put(Item(scope.partition, HEAD + key, data, version=version), expect=head.version),
                    Put(Item(scope.partition, BODY + key, {"content": content}, version=version), expect=body.version),
                    marker,
                ]
            )
        except ConditionFailed:
            raise Conflict(
                f"Topic '{head.data['name']}' changed or was forgotten while it was being refined; recall it and retry",
                {"field": "topic", "topic": head.data["name"]},
            ) from None
        self._outbox.settle(marker, self, first=partial(self._write_document, scope, key, data, content, version))
        return TopicWriteOutput(
            message=f"Topic '{data['name']}' refined",
            topic=data["name"],
            version=version,
            last_updated=data["lastUpdated"],
            tags=tags,
            summary=data["summary"],
        )

    def memorize_general(self, context: RequestContext, request: MemorizeGeneralInfoInput) -> MemorizeGeneralInfoOutput:
        """memorize_general_info: replace the general section; refused when it holds the 'Specialized Knowledge'
        heading, CONFLICT on a stale ``expectedVersion``."""
        scope = self._writable(context)
        if has_specialized_header(request.content):
            raise invalid_field(
                "content",
                "the general section must not contain a 'Specialized Knowledge' heading; "
                "topics go in with memorize_new_topic",
            )
        existing = self._records.get(scope.partition, GENERAL)
        current = existing.version if existing else 0
        if request.expected_version is not None and request.expected_version != current:
            raise ConflictingRequest(
                f"The general section is at version {current}, not {request.expected_version}; read it and retry",
                {"field": "expectedVersion", "currentVersion": current},
            )
        now = _later_than(existing.data["lastUpdated"]) if existing else clock.now()
        data = {"content": request.content, "lastUpdated": clock.iso(now), "updatedBy": context.user}
        try:
            self._records.write(
                [Put(Item(scope.partition, GENERAL, data, version=current + 1), expect=current or "absent")]
            )
        except ConditionFailed:
            raise Conflict(
                "The general section changed while it was being written; retry", {"field": "content"}
            ) from None
        return MemorizeGeneralInfoOutput(
            message="General project knowledge updated", version=current + 1, last_updated=data["lastUpdated"]
        )

    def forget(self, context: RequestContext, request: ForgetMemoryInput) -> ForgetMemoryOutput:
        """Delete a topic; its index entry goes too, even when the topic is unknown (a stale entry)."""
        scope = self._writable(context)
        key = topic_key(request.topic)
        marker = self._marker(scope, key)
        found = self._read(scope, key)
        if found is None:
            self._records.write([marker])
            self._outbox.settle(marker, self)
            raise _topic_missing(request.topic)
        head, body = found
        try:
            self._records.write(
                [
                    Delete(scope.partition, HEAD + key, expect=head.version),
                    Delete(scope.partition, BODY + key, expect=body.version),
                    marker,
                ]
            )
        except ConditionFailed:
            raise Conflict(
                f"Topic '{head.data['name']}' changed while it was being forgotten; retry", {"field": "topic"}
            ) from None
        self._outbox.settle(marker, self, first=partial(self._delete_document, scope, key))
        return ForgetMemoryOutput(message=f"Topic '{head.data['name']}' forgotten", topic=head.data["name"])

    # ------------------------------------------------------------ search
    def search(self, context: RequestContext, request: SearchMemoriesInput) -> SearchMemoriesOutput:
        """search_memories: topics matching any of ``tags``, or ranked by ``query`` (hybrid score, at least
        ``threshold``; with tags too, only topics with one of them)."""
        query = (request.query or "").strip()
        if not request.tags and not query:
            raise invalid_field("tags", "give tags to match, a query, or both")
        scope = self.scope(context)
        wanted = {tag_key(tag) for tag in request.tags or []}
        if not query:
            listed = self._heads(scope, consistent=False)
            heads = [item.data for item in listed if wanted & {tag_key(t) for t in item.data["tags"]}]
            matches = [self._match(data, None) for data in heads]
            return self._answer(matches, request.limit, "tags", context.response_budget)
        ranked, retrieval = self._rank(scope, query, sorted(wanted))
        keys = [key for key, score in ranked if score >= request.threshold]
        found = {
            key_of(item.sk): item.data
            for item in self._records.batch_get([(scope.partition, HEAD + key) for key in keys], consistent=False)
        }
        score_of = dict(ranked)
        matches = [
            self._match(found[key], score_of[key])
            for key in keys
            if key in found and (not wanted or wanted & {tag_key(t) for t in found[key]["tags"]})
        ]
        return self._answer(matches, request.limit, retrieval, context.response_budget)

    def _rank(self, scope: Scope, query: str, tags: list[str]) -> tuple[list[tuple[str, float]], Retrieval]:
        """Topic keys by calibrated hybrid score (as memory_search scores), best first."""
        flt: Filter = {"scope": [scope.key]}
        if tags:
            flt["tags"] = tags
        ranking = hybrid_rank(self._index, self._embedder, NAMESPACE, query, flt)
        scored = {
            key: found.score
            for found in ranking.candidates
            if found.hit.keywords.get("scope") == [scope.key] and (key := (found.hit.keywords.get("topic") or [""])[0])
        }
        ranked = sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))
        return ranked, "hybrid" if ranking.dense else "lexical"

    @staticmethod
    def _match(data: dict[str, Any], score: float | None) -> TopicMatch:
        return TopicMatch(
            topic=data["name"],
            summary=data["summary"],
            tags=data["tags"],
            last_updated=data["lastUpdated"],
            score=score,
        )

    @classmethod
    def _answer(
        cls, matches: list[TopicMatch], limit: int, retrieval: Retrieval, budget: int | None = None
    ) -> SearchMemoriesOutput:
        page = matches[:limit]
        names = [match.topic for match in page]
        output = SearchMemoriesOutput(
            topics=names,
            results=page,
            message=f"Found {len(matches)} topic{'' if len(matches) == 1 else 's'}: {', '.join(names)}"
            if page
            else NO_TOPICS,
            total_count=len(matches),
            retrieval=retrieval,
        )
        # Each name is in the answer three times: in its result, in topics and in the message.
        kept = fit_head(output, page, budget, weight=lambda match: wire_bytes(match) + 2 * wire_bytes(match.topic) + 2)
        if len(kept) < len(page):
            output = cls._answer(matches, len(kept), retrieval)
            output.message += f"; {len(page) - len(kept)} more left out to fit the response size limit"
        return output

    # ------------------------------------------------------ vector index
    @staticmethod
    def doc_id(scope_key: str, key: str) -> str:
        """The index id of a topic (``mnemo.topics.records.doc_id``)."""
        return topic_doc_id(scope_key, key)

    def _doc(self, scope_key: str, key: str, head: dict[str, Any], content: str, vector: Sequence[float]) -> IndexDoc:
        return IndexDoc(
            id=self.doc_id(scope_key, key),
            vector=vector,
            text=self._text(head, content),
            keywords={"scope": [scope_key], "topic": [key], "tags": sorted({tag_key(t) for t in head["tags"]})},
        )

    @staticmethod
    def _text(head: dict[str, Any], content: str) -> str:
        return "\n".join([head["name"], " ".join(head["tags"]), head["summary"], content])

    # ------------------------------------------------------- index outbox
    def _marker(self, scope: Scope, key: str) -> Put:
        return self._outbox.marker(self.family, {"layer": scope.layer, "scope": scope.key, "key": key})

    def _embed(self, head: dict[str, Any], content: str) -> Sequence[float]:
        return self._embedder.embed([self._text(head, content)[:EMBED_CHARS]])[0]

    def _write_document(self, scope: Scope, key: str, head: dict[str, Any], content: str, version: int) -> str:
        """Index a topic just written at ``version``; its version token."""
        vector = self._embed(head, content)
        self._index.upsert(NAMESPACE, [self._doc(scope.key, key, head, content, vector)])
        return str(version)

    def _delete_document(self, scope: Scope, key: str) -> str:
        """Remove a topic's index document; ``GONE``."""
        self._index.delete(NAMESPACE, [self.doc_id(scope.key, key)])
        return GONE

    def version_token(self, ref: Reference) -> str:
        """A topic's version as a token, ``GONE`` when it does not exist."""
        head = self._records.get(partition_of(ref["scope"]), HEAD + ref["key"])
        return str(head.version) if head is not None else GONE

    def sync_reference(self, ref: Reference) -> str:
        """Make the index agree with one topic's records: upsert it, or remove it if it is gone."""
        scope, key = Scope(ref["layer"], ref["scope"]), ref["key"]  # type: ignore[arg-type]
        found = self._read(scope, key)
        if found is None:
            return self._delete_document(scope, key)
        head, body = found
        return self._write_document(scope, key, head.data, body.data["content"], head.version)

    def reindex(self) -> int:
        """Rebuild the topics' vector index from the records (maintenance: scans the table)."""
        self._index.clear(NAMESPACE)
        total = 0
        for item in self._records.scan(PARTITION):
            if item.sk.startswith(HEAD):
                scope_key = scope_key_of(item.pk)
                layer = layer_of(scope_key)
                self.sync_reference({"layer": layer, "scope": scope_key, "key": key_of(item.sk)})
                total += 1
        return total

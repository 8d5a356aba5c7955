"""Topic memory rules in process (seed 002 and issue 6): each tool called through the catalog."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from helpers import ctx, drained
from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError, NotFound, Unauthorized
from mnemo.ports import Delete, IndexDoc, Item, Put, RecordStore, VectorIndex
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool
from mnemo.topics import service as topic_service
from mnemo.topics.models import (
    ForgetMemoryInput,
    ListMemoriesInput,
    MemorizeNewTopicInput,
    RefineMemoryInput,
    SearchMemoriesInput,
)
from mnemo.topics.service import NAMESPACE, TopicService

WRITER = ctx(project="p1", roles=("writer",))
READER = ctx(user="bob", project="p1")
BAD_NAMES = ["a/b", "a\\b", ".", "..", "a\x00b", "a\x1fb", "a\x7fb", "tab\there", "a\u200bb", "x" * 129, "", "   "]


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def memorize(services: Services, context: RequestContext, topic: str, **fields: Any) -> dict[str, Any]:
    payload = {"topic": topic, "tags": ["deploy"], "summary": f"About {topic}.", "content": f"# {topic}\n\nNotes."}
    return call(services, context, "memorize_new_topic", {**payload, **fields})


def error_of(run: Callable[[], Any]) -> MnemoError:
    with pytest.raises(MnemoError) as raised:
        run()
    return raised.value


# ------------------------------------------------------------ memorize ---
def test_memorize_then_recall_returns_title_tags_date_and_content(services: Services) -> None:
    stored = memorize(services, WRITER, "deployment", tags=["Deploy", "release"], content="Roll back with make undo.")
    assert stored["version"] == 1
    assert stored["topic"] == "deployment"
    recalled = call(services, WRITER, "recall_memory", {"topic": "deployment"})
    assert recalled["title"] == "deployment"
    assert recalled["tags"] == ["Deploy", "release"]
    assert recalled["content"] == "Roll back with make undo."
    assert recalled["lastUpdated"] == stored["lastUpdated"] == recalled["createdAt"]
    assert recalled["version"] == 1
    markdown = recalled["markdown"]
    assert markdown.startswith("# deployment\n")
    assert "**Tags:** Deploy, release" in markdown
    assert f"**Last updated:** {recalled['lastUpdated']}" in markdown
    assert "Roll back with make undo." in markdown


def test_memorizing_an_existing_topic_is_a_conflict_and_changes_nothing(services: Services) -> None:
    memorize(services, WRITER, "deployment", content="first")
    error = error_of(lambda: memorize(services, WRITER, "deployment", content="second"))
    assert isinstance(error, Conflict)
    assert error.details["field"] == "topic"
    # Names compare case-insensitively: "Deployment" is the same topic.
    assert isinstance(error_of(lambda: memorize(services, WRITER, "DEPLOYMENT", content="third")), Conflict)
    assert call(services, WRITER, "recall_memory", {"topic": "Deployment"})["content"] == "first"


def test_an_unknown_topic_is_not_found_for_recall_refine_and_forget(services: Services) -> None:
    for tool, extra in (("recall_memory", {}), ("refine_memory", {"newSummary": "x"}), ("forget_memory", {})):
        error = error_of(lambda tool=tool, extra=extra: call(services, WRITER, tool, {"topic": "nope", **extra}))
        assert isinstance(error, NotFound), tool
        assert error.details["field"] == "topic", tool


# --------------------------------------------------------------- names ---
@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
@pytest.mark.parametrize("tool", ["memorize_new_topic", "recall_memory", "refine_memory", "forget_memory"])
def test_bad_topic_names_are_invalid_input_naming_topic(services: Services, tool: str, name: str) -> None:
    payload: dict[str, Any] = {"topic": name}
    if tool == "memorize_new_topic":
        payload |= {"tags": [], "summary": "s", "content": "c"}
    error = error_of(lambda: call(services, WRITER, tool, payload))
    assert isinstance(error, InvalidInput)
    assert error.details["field"] == "topic"


def test_good_names_at_the_limits_are_accepted(services: Services) -> None:
    for name in ("x" * 128, "a.b", "...", "Déploiement (v2) & rollback", "日本語のトピック", "a b"):
        assert memorize(services, WRITER, name)["topic"] == name
    assert len(call(services, WRITER, "list_memories", {})["topics"]) == 6


# ---------------------------------------------------- limits and tags ---
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"summary": "s" * 501}, "summary"),
        ({"summary": "  "}, "summary"),
        ({"content": "c" * 100_001}, "content"),
        ({"content": "é" * 60_000}, "content"),  # 360,000 bytes once stored as escaped JSON
        ({"content": " \n "}, "content"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags"),
        ({"tags": ["x" * 65]}, "tags.0"),
        ({"tags": [""]}, "tags.0"),
    ],
)
def test_over_long_or_empty_fields_are_invalid_input_naming_them(
    services: Services, fields: dict[str, Any], field: str
) -> None:
    error = error_of(lambda: memorize(services, WRITER, "t", **fields))
    assert isinstance(error, InvalidInput)
    assert error.details["field"] == field


def test_content_at_the_limits_is_stored(services: Services) -> None:
    memorize(services, WRITER, "big", summary="s" * 500, content="c" * 100_000, tags=[f"t{i}" for i in range(20)])
    assert len(call(services, WRITER, "recall_memory", {"topic": "big"})["content"]) == 100_000


def test_tags_are_kept_as_given_once_each_case_insensitively(services: Services) -> None:
    stored = memorize(services, WRITER, "t", tags=["API", "api", "Api", "db"])
    assert stored["tags"] == ["API", "db"]


def test_a_scope_holds_a_bounded_number_of_topics(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topic_service, "MAX_TOPICS", 2)
    memorize(services, WRITER, "one")
    memorize(services, WRITER, "two")
    error = error_of(lambda: memorize(services, WRITER, "three"))
    assert isinstance(error, InvalidInput)
    assert error.details == {"field": "topic", "limit": 2}


# -------------------------------------------------------------- refine ---
def test_refine_applies_tags_summary_and_content_and_bumps_the_date(services: Services) -> None:
    before = memorize(services, WRITER, "deployment", tags=["deploy", "draft"], summary="Old summary.")
    refined = call(
        services,
        WRITER,
        "refine_memory",
        {
            "topic": "deployment",
            "tagsToAdd": ["Rollback", "DEPLOY"],
            "tagsToRemove": ["DRAFT"],
            "newSummary": "New summary.",
            "newContent": "New content.",
        },
    )
    assert refined["tags"] == ["deploy", "Rollback"]
    assert refined["summary"] == "New summary."
    assert refined["version"] == 2
    assert refined["lastUpdated"] > before["lastUpdated"]
    recalled = call(services, WRITER, "recall_memory", {"topic": "deployment"})
    assert recalled["content"] == "New content."
    assert recalled["tags"] == ["deploy", "Rollback"]
    assert recalled["lastUpdated"] == refined["lastUpdated"]
    assert recalled["createdAt"] == before["lastUpdated"]
    index = call(services, WRITER, "recall_general_memory", {})["index"]
    assert "New summary." in index
    assert "Old summary." not in index


def test_refine_with_only_tags_keeps_summary_and_content(services: Services) -> None:
    memorize(services, WRITER, "t", summary="Keep me.", content="Keep this too.")
    call(services, WRITER, "refine_memory", {"topic": "t", "tagsToAdd": ["extra"]})
    recalled = call(services, WRITER, "recall_memory", {"topic": "t"})
    assert (recalled["summary"], recalled["content"], recalled["tags"]) == (
        "Keep me.",
        "Keep this too.",
        ["deploy", "extra"],
    )


def test_refine_rejects_a_tag_both_added_and_removed_and_too_many_tags(services: Services) -> None:
    memorize(services, WRITER, "t", tags=[f"t{i}" for i in range(19)])
    both = error_of(
        lambda: call(services, WRITER, "refine_memory", {"topic": "t", "tagsToAdd": ["x"], "tagsToRemove": ["X"]})
    )
    assert isinstance(both, InvalidInput)
    assert both.details["field"] == "tagsToAdd"
    many = error_of(lambda: call(services, WRITER, "refine_memory", {"topic": "t", "tagsToAdd": ["a", "b"]}))
    assert isinstance(many, InvalidInput)
    assert many.details["field"] == "tagsToAdd"
    assert call(services, WRITER, "refine_memory", {"topic": "t", "tagsToAdd": ["a"]})["version"] == 2


def test_a_stale_expected_version_is_a_conflict(services: Services) -> None:
    memorize(services, WRITER, "t")
    call(services, WRITER, "refine_memory", {"topic": "t", "newContent": "v2", "expectedVersion": 1})
    error = error_of(
        lambda: call(services, WRITER, "refine_memory", {"topic": "t", "newContent": "v3", "expectedVersion": 1})
    )
    assert isinstance(error, Conflict)
    assert error.details == {"field": "expectedVersion", "currentVersion": 2}
    assert call(services, WRITER, "recall_memory", {"topic": "t"})["content"] == "v2"


class InterleavingRecords:
    """The records store, running ``between`` once, right after the topic's first read."""

    def __init__(self, inner: RecordStore, between: Callable[[], None]) -> None:
        self.inner = inner
        self.between: Callable[[], None] | None = between

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Item]:
        found = self.inner.batch_get(keys)
        if self.between is not None:
            between, self.between = self.between, None
            between()
        return found

    def write(self, operations: Sequence[Put | Delete]) -> None:
        self.inner.write(operations)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_refine_that_raced_another_gets_conflict_and_loses_nothing(services: Services) -> None:
    memorize(services, WRITER, "t", tags=["a"])

    def other_refine() -> None:
        services.topics.refine(WRITER, RefineMemoryInput(topic="t", tags_to_add=["from-second"]))

    racing = TopicService(
        InterleavingRecords(services.records, other_refine), services.index, services.embedder, services.outbox
    )
    with pytest.raises(Conflict) as raised:
        racing.refine(WRITER, RefineMemoryInput(topic="t", tags_to_add=["from-first"], new_content="first"))
    assert raised.value.details["field"] == "topic"
    recalled = call(services, WRITER, "recall_memory", {"topic": "t"})
    assert recalled["tags"] == ["a", "from-second"]
    assert recalled["version"] == 2
    assert recalled["content"] != "first"
    # Retried after a fresh read, the first refine goes through on top of the second.
    racing.refine(WRITER, RefineMemoryInput(topic="t", tags_to_add=["from-first"]))
    assert call(services, WRITER, "recall_memory", {"topic": "t"})["tags"] == ["a", "from-second", "from-first"]


def test_a_refine_racing_a_forget_is_a_conflict_and_does_not_resurrect(services: Services) -> None:
    memorize(services, WRITER, "t")
    racing = TopicService(
        InterleavingRecords(services.records, lambda: call(services, WRITER, "forget_memory", {"topic": "t"})),  # type: ignore[arg-type]
        services.index,
        services.embedder,
        services.outbox,
    )
    with pytest.raises(Conflict):
        racing.refine(WRITER, RefineMemoryInput(topic="t", new_content="late"))
    assert call(services, WRITER, "list_memories", {})["topics"] == []


# ------------------------------------------------------------- general ---
def test_general_info_replaces_only_the_general_section(services: Services) -> None:
    empty = call(services, WRITER, "recall_general_memory", {})
    assert empty["content"] == ""
    assert empty["version"] == 0
    assert empty["lastUpdated"] is None
    memorize(services, WRITER, "deployment", summary="How we deploy.", tags=["ops"])
    first = call(services, WRITER, "memorize_general_info", {"content": "We build a checkout API."})
    second = call(services, WRITER, "memorize_general_info", {"content": "We build a payments API."})
    assert (first["version"], second["version"]) == (1, 2)
    assert second["lastUpdated"] > first["lastUpdated"]
    general = call(services, WRITER, "recall_general_memory", {})
    assert general["content"] == "We build a payments API."
    assert general["layer"] == "project"
    index = general["index"]
    assert index.startswith("# Project Memory\n")
    assert (
        index.index("## General Project Knowledge")
        < index.index("payments API")
        < index.index("## Specialized Knowledge")
    )
    assert "checkout API" not in index
    assert "- **deployment** [ops]: How we deploy." in index.split("## Specialized Knowledge")[1]
    assert call(services, WRITER, "recall_memory", {"topic": "deployment"})["summary"] == "How we deploy."


@pytest.mark.parametrize(
    "tag", ["ops\n## Specialized Knowledge", "a\r\n- **fake**: entry", "x\u2028y", "zero\u200bwidth", "nul\x00"]
)
def test_a_tag_cannot_hold_a_line_break_or_invisible_characters(services: Services, tag: str) -> None:
    error = error_of(lambda: memorize(services, WRITER, "t", tags=[tag]))
    assert isinstance(error, InvalidInput), error.details
    assert error.details["field"].startswith("tags"), error.details
    memorize(services, WRITER, "t")
    error = error_of(lambda: call(services, WRITER, "refine_memory", {"topic": "t", "tagsToAdd": [tag]}))
    assert isinstance(error, InvalidInput), error.details
    assert error.details["field"].startswith("tagsToAdd"), error.details


def test_names_tags_and_summaries_cannot_add_markdown_to_the_index(services: Services) -> None:
    memorize(
        services,
        WRITER,
        "**Pwned** [click](evil.example) <script>x",
        tags=["<img src=x onerror=y>", "`code`", "](javascript:alert(1))"],
        summary="## Heading\n\n- [ ] fake entry   ![img](https://evil.example/x.png) _under_ #tag",
    )
    index = call(services, WRITER, "recall_general_memory", {})["index"]
    entries = index.split("## Specialized Knowledge\n")[1].strip().splitlines()
    assert len(entries) == 1, entries  # one topic, one line: nothing broke out of it
    (entry,) = entries
    assert entry.startswith("- **\\*\\*Pwned\\*\\* \\[click\\](evil.example) \\<script\\>")
    for raw in ("<script>", "<img", "[click]", "![img]", "`code`", "_under_", "](javascript"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), entry), raw  # each one escaped
    assert "\\#\\# Heading - \\[ \\] fake entry \\!\\[img\\]" in entry
    markdown = call(services, WRITER, "recall_memory", {"topic": "**Pwned** [click](evil.example) <script>x"})[
        "markdown"
    ]
    assert markdown.startswith("# \\*\\*Pwned\\*\\* \\[click\\]")
    assert "\\<img" in markdown


@pytest.mark.parametrize(
    "content",
    [
        "## Specialized Knowledge\n- x",
        "Intro\n\n# specialized knowledge",
        "Intro\n   ###   SPECIALIZED   KNOWLEDGE  \n",
        "Intro\nSpecialized Knowledge\n---------\n",
        "Intro\nSpecialized knowledge\n===\n",
    ],
)
def test_general_info_with_the_specialized_knowledge_header_is_rejected(services: Services, content: str) -> None:
    call(services, WRITER, "memorize_general_info", {"content": "kept"})
    error = error_of(lambda: call(services, WRITER, "memorize_general_info", {"content": content}))
    assert isinstance(error, InvalidInput)
    assert error.details["field"] == "content"
    assert call(services, WRITER, "recall_general_memory", {})["content"] == "kept"


def test_general_info_may_mention_specialized_knowledge_in_prose(services: Services) -> None:
    text = "Our team has specialized knowledge of payments.\n\n## Specialized Knowledgebase tools\n"
    assert call(services, WRITER, "memorize_general_info", {"content": text})["version"] == 1


def test_general_info_expected_version(services: Services) -> None:
    call(services, WRITER, "memorize_general_info", {"content": "v1", "expectedVersion": 0})
    error = error_of(lambda: call(services, WRITER, "memorize_general_info", {"content": "v2", "expectedVersion": 0}))
    assert isinstance(error, Conflict)
    assert error.details["currentVersion"] == 1
    assert call(services, WRITER, "memorize_general_info", {"content": "v2", "expectedVersion": 1})["version"] == 2


# -------------------------------------------------------------- forget ---
def test_forget_removes_the_topic_from_list_index_and_search(services: Services) -> None:
    memorize(services, WRITER, "deployment", summary="How we deploy.", content="Blue green deployment on Tuesdays.")
    memorize(services, WRITER, "database", summary="Our database.", content="PostgreSQL 16.")
    assert services.index.count(NAMESPACE) == 2
    forgotten = call(services, WRITER, "forget_memory", {"topic": "DEPLOYMENT"})
    assert forgotten["topic"] == "deployment"
    assert call(services, WRITER, "list_memories", {})["topics"] == ["database"]
    assert "How we deploy." not in call(services, WRITER, "recall_general_memory", {})["index"]
    found = call(services, WRITER, "search_memories", {"query": "blue green deployment Tuesdays", "threshold": 0})
    assert "deployment" not in found["topics"]
    assert services.index.count(NAMESPACE) == 1
    assert isinstance(error_of(lambda: call(services, WRITER, "recall_memory", {"topic": "deployment"})), NotFound)
    # Forgotten, the name is free again.
    assert memorize(services, WRITER, "deployment")["version"] == 1


def test_forgetting_an_unknown_topic_is_not_found_and_clears_its_remains(services: Services) -> None:
    scope = TopicService.scope(WRITER)
    services.records.write([services.outbox.marker("topics", {"scope": scope.key, "layer": "project", "key": "ghost"})])
    doc_id = TopicService.doc_id(scope.key, "ghost")
    services.index.upsert(NAMESPACE, [IndexDoc(doc_id, services.embedder.embed(["x"])[0], "x", {"scope": [scope.key]})])
    error = error_of(lambda: call(services, WRITER, "forget_memory", {"topic": "Ghost"}))
    assert isinstance(error, NotFound)
    assert error.details["field"] == "topic"
    assert services.outbox.pending() == []
    assert services.index.count(NAMESPACE) == 0


def test_a_forget_that_read_nothing_does_not_unindex_a_topic_memorized_meanwhile(services: Services) -> None:
    def memorize_meanwhile() -> None:
        memorize(services, WRITER, "t", content="Blue green deployments.")

    racing = TopicService(
        InterleavingRecords(services.records, memorize_meanwhile), services.index, services.embedder, services.outbox
    )  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        racing.forget(WRITER, ForgetMemoryInput(topic="t"))
    assert call(services, WRITER, "recall_memory", {"topic": "t"})["content"] == "Blue green deployments."
    assert call(services, WRITER, "search_memories", {"query": "blue green deployments"})["topics"] == ["t"]


# -------------------------------------------------------------- search ---
def test_search_by_tag_is_case_insensitive_and_matches_any_tag(services: Services) -> None:
    memorize(services, WRITER, "deployment", tags=["Deploy", "ops"])
    memorize(services, WRITER, "database", tags=["DB"])
    memorize(services, WRITER, "style", tags=["code"])
    found = call(services, WRITER, "search_memories", {"tags": ["DEPLOY", "db"]})
    assert found["topics"] == ["database", "deployment"]
    assert found["totalCount"] == 2
    assert found["retrieval"] == "tags"
    assert found["results"][0]["score"] is None
    assert found["message"] == "Found 2 topics: database, deployment"
    none = call(services, WRITER, "search_memories", {"tags": ["nothing"]})
    assert none["topics"] == []
    assert none["message"] == "No topics found"


def test_search_by_content_goes_through_the_vector_index(services: Services) -> None:
    memorize(services, WRITER, "deployment", tags=["ops"], content="Blue green deployments roll out on Tuesdays.")
    memorize(services, WRITER, "database", tags=["db"], content="Orders live in PostgreSQL 16 with nightly backups.")
    found = call(services, WRITER, "search_memories", {"query": "postgresql backups"})
    assert found["topics"][0] == "database"
    assert found["retrieval"] == "hybrid"
    assert 0 < found["results"][0]["score"] <= 1
    # Tags narrow a content search.
    narrowed = call(
        services, WRITER, "search_memories", {"query": "postgresql backups", "tags": ["OPS"], "threshold": 0}
    )
    assert narrowed["topics"] == ["deployment"]
    # Refined content is searched, the old content no longer.
    call(services, WRITER, "refine_memory", {"topic": "database", "newContent": "Orders moved to DynamoDB."})
    assert "database" not in call(services, WRITER, "search_memories", {"query": "postgresql backups"})["topics"]
    assert call(services, WRITER, "search_memories", {"query": "dynamodb orders"})["topics"][0] == "database"


def test_search_needs_tags_or_a_query(services: Services) -> None:
    for payload in ({}, {"tags": []}, {"query": "   "}, {"tags": [], "query": " "}):
        error = error_of(lambda payload=payload: call(services, WRITER, "search_memories", payload))
        assert isinstance(error, InvalidInput), payload
        assert error.details["field"] == "tags", payload


class FailingIndex:
    """The real index, but writes raise while ``down``."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.down = True

    def upsert(self, namespace: str, docs: Sequence[IndexDoc]) -> None:
        if self.down:
            raise ConnectionError("index unavailable")
        self.inner.upsert(namespace, docs)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        if self.down:
            raise ConnectionError("index unavailable")
        self.inner.delete(namespace, ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_index_outage_never_loses_a_write_and_the_drain_heals_it(services: Services) -> None:
    index = FailingIndex(services.index)
    topics = TopicService(services.records, index, services.embedder, services.outbox)  # type: ignore[arg-type]

    for name, content in (("database", "Orders live in PostgreSQL."), ("old", "Obsolete notes on PostgreSQL.")):
        topics.memorize(WRITER, MemorizeNewTopicInput(topic=name, tags=[], summary="s", content=content))
    topics.forget(WRITER, ForgetMemoryInput(topic="old"))
    assert services.index.count(NAMESPACE) == 0
    assert topics.list_topics(WRITER, ListMemoriesInput()).topics == ["database"]  # the records have it
    # Queued: the index of "database", and the removal of "old" from the index.
    assert sorted(m["ref"]["key"] for m in services.outbox.pending()) == ["database", "old"]
    index.down = False
    topics.memorize(WRITER, MemorizeNewTopicInput(topic="style", tags=[], summary="s", content="Use black."))
    # The outbox's drain (scheduled on AWS, in the background locally) indexes what the outage left queued.
    assert drained(services.outbox) == (2, 0)
    found = topics.search(WRITER, SearchMemoriesInput(query="orders postgresql", threshold=0))
    assert found.topics[0] == "database"
    assert services.index.count(NAMESPACE) == 2
    assert services.outbox.pending() == []


def test_the_outbox_drains_every_scope_and_forget_during_an_outage_stays_forgotten(services: Services) -> None:
    index = FailingIndex(services.index)
    topics = TopicService(services.records, index, services.embedder, services.outbox)  # type: ignore[arg-type]
    index.down = False
    topics.memorize(WRITER, MemorizeNewTopicInput(topic="old", tags=[], summary="s", content="Obsolete PostgreSQL."))
    index.down = True
    other = ctx(project="p2", roles=("writer",))
    topics.memorize(other, MemorizeNewTopicInput(topic="database", tags=[], summary="s", content="PostgreSQL."))
    topics.forget(WRITER, ForgetMemoryInput(topic="old"))
    assert services.index.count(NAMESPACE) == 1  # the stale entry of "old" is still there...
    found = topics.search(WRITER, SearchMemoriesInput(query="obsolete postgresql", threshold=0))
    assert found.topics == []  # ...but never shown: every hit is read back from the records
    index.down = False
    assert drained(services.outbox) == (2, 0)
    assert services.index.count(NAMESPACE) == 1
    assert topics.search(other, SearchMemoriesInput(query="postgresql", threshold=0)).topics == ["database"]


# ----------------------------------------------- scope, roles, tenants ---
def test_project_topics_need_the_writer_role_to_change_but_not_to_read(services: Services) -> None:
    memorize(services, WRITER, "t")
    for tool, payload in (
        ("memorize_new_topic", {"topic": "u", "tags": [], "summary": "s", "content": "c"}),
        ("refine_memory", {"topic": "t", "newSummary": "x"}),
        ("memorize_general_info", {"content": "x"}),
        ("forget_memory", {"topic": "t"}),
    ):
        error = error_of(lambda tool=tool, payload=payload: call(services, READER, tool, payload))
        assert isinstance(error, Unauthorized), tool
        assert error.details["requiredRole"] == "writer", tool
    assert call(services, READER, "list_memories", {})["topics"] == ["t"]
    assert call(services, READER, "recall_memory", {"topic": "t"})["title"] == "t"
    assert call(services, READER, "search_memories", {"tags": ["deploy"]})["topics"] == ["t"]
    assert call(services, READER, "recall_general_memory", {})["layer"] == "project"


def test_without_a_project_the_topics_are_the_users_own(services: Services) -> None:
    alice, bob = ctx(), ctx(user="bob")
    memorize(services, alice, "mine")  # no writer role needed in one's own layer
    call(services, alice, "memorize_general_info", {"content": "Alice's notes."})
    listed = call(services, alice, "list_memories", {})
    assert listed["topics"] == ["mine"]
    assert listed["layer"] == "user"
    general = call(services, alice, "recall_general_memory", {})
    assert general["index"].startswith("# Personal Memory")
    assert general["content"] == "Alice's notes."
    assert call(services, bob, "list_memories", {})["topics"] == []
    assert call(services, WRITER, "list_memories", {})["topics"] == []  # alice in project p1 sees p1's topics
    error = error_of(lambda: call(services, ctx(user=None), "list_memories", {}))
    assert isinstance(error, InvalidInput)
    assert error.details["field"] == "project"


def test_tenants_and_projects_are_isolated(services: Services) -> None:
    other_project = ctx(project="p2", roles=("writer",))
    other_tenant = ctx(tenant="globex", project="p1", roles=("writer",))
    for context, content in (
        (WRITER, "acme p1 postgres"),
        (other_project, "acme p2 postgres"),
        (other_tenant, "globex postgres"),
    ):
        memorize(services, context, "shared-name", content=content, tags=["db"])
        call(services, context, "memorize_general_info", {"content": f"general of {content}"})
    for context, content in (
        (WRITER, "acme p1 postgres"),
        (other_project, "acme p2 postgres"),
        (other_tenant, "globex postgres"),
    ):
        assert call(services, context, "recall_memory", {"topic": "shared-name"})["content"] == content
        assert call(services, context, "recall_general_memory", {})["content"] == f"general of {content}"
        found = call(services, context, "search_memories", {"query": "postgres", "threshold": 0})
        assert found["topics"] == ["shared-name"]
        assert found["totalCount"] == 1
    call(services, other_project, "forget_memory", {"topic": "shared-name"})
    assert call(services, WRITER, "list_memories", {})["topics"] == ["shared-name"]
    assert call(services, other_tenant, "list_memories", {})["topics"] == ["shared-name"]


def test_the_scheduled_indexer_run_drains_the_topics_outbox(services: Services) -> None:
    """An index outage during memorize_new_topic is healed by the indexer's schedule, not only by the next write."""
    from aws_events import FakeLambdaContext
    from mnemo.entry import indexer

    class Down:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def upsert(self, namespace: str, docs: Any) -> None:
            raise ConnectionError("index down")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    from mnemo.topics.service import TopicService

    healthy = services.topics
    services.__dict__["topics"] = TopicService(
        services.records, Down(services.index), services.embedder, services.outbox
    )
    writer = ctx(tenant="acme", project="p-drain", roles=("writer",))
    services.topics.memorize(
        writer,
        MemorizeNewTopicInput(
            topic="Deploys", tags=["ops"], summary="How we deploy.", content="Blue/green on Fridays."
        ),
    )
    services.__dict__["topics"] = healthy
    scheduled = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    assert indexer.handler(scheduled, FakeLambdaContext())["indexedByFamily"] == {"topics": 1}
    assert services.index.count(NAMESPACE) >= 1
    found = services.topics.search(writer, SearchMemoriesInput(query="blue green"))
    assert found.topics == ["Deploys"]
    assert found.retrieval == "hybrid"

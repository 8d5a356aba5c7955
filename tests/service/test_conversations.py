"""Conversation and execution memory on the embedded stack: ids, idempotency, links, strategies, filters.

Calls go through the tools (``Tool.invoke``), so identity handling and the
snake_case wire shape are part of what is tested. The hashing embedder serves
everywhere but in the one test marked ``model``, which uses the real bge model.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from helpers import ctx, drained
from mnemo.context import RequestContext
from mnemo.errors import Conflict, InvalidInput, MnemoError, Unauthorized
from mnemo.runtime import Services
from mnemo.tools.registry import get_tool

ALICE = ctx()


def call(services: Services, tool: str, payload: dict[str, Any], context: RequestContext = ALICE) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def add_conversation(services: Services, context: RequestContext = ALICE, **fields: Any) -> dict[str, Any]:
    payload = {"explanation": "keep it", "user_input": "How do I deploy?", "agent_response": "Use the pipeline."}
    return call(services, "add_conversation", payload | fields, context)


def add_execution(
    services: Services, message_id: str, context: RequestContext = ALICE, **fields: Any
) -> dict[str, Any]:
    payload = {
        "message_id": message_id,
        "explanation": "learn from it",
        "execution_summary": "Deployed the service",
        "tools_used": ["git", "deploy_pipeline"],
        "errors": [],
        "observations": "Went smoothly.",
        "success": True,
    }
    return call(services, "add_execution", payload | fields, context)


def conversations(services: Services, query: str = "deploy", context: RequestContext = ALICE, **fields: Any) -> Any:
    return call(services, "retrieve_conversation", {"query": query, "explanation": "why"} | fields, context)["data"]


def executions(services: Services, query: str = "deploy", context: RequestContext = ALICE, **fields: Any) -> Any:
    return call(services, "retrieve_execution", {"query": query, "explanation": "why"} | fields, context)["data"]


def ids(found: dict[str, Any], key: str = "conversations") -> list[str]:
    return [entry["message_id"] for entry in found[key]]


def error_of(run: Any) -> MnemoError:
    with pytest.raises(MnemoError) as raised:
        run()
    return raised.value


def at(day: int, hour: int = 12) -> str:
    return f"2024-12-{day:02d}T{hour:02d}:00:00Z"


# ------------------------------------------------------------------ storing ---
def test_message_id_is_generated_when_omitted_and_kept_when_given(services: Services) -> None:
    first = add_conversation(services)["data"]["message_id"]
    second = add_conversation(services)["data"]["message_id"]
    assert re.fullmatch(r"msg_[0-9a-f]{24}", first)
    assert re.fullmatch(r"msg_[0-9a-f]{24}", second)
    assert first != second
    assert add_conversation(services, message_id="msg_given")["data"]["message_id"] == "msg_given"
    assert ids(conversations(services, message_id=first)) == [first]


def test_timestamp_is_kept_in_utc_or_set_to_now(services: Services) -> None:
    given = add_conversation(services, message_id="m1", timestamp="2024-12-15T15:30:00+01:00")
    assert given["data"]["timestamp"] == "2024-12-15T14:30:00Z"
    before = datetime.now(UTC)
    now = datetime.fromisoformat(add_conversation(services, message_id="m2")["data"]["timestamp"])
    assert before - timedelta(seconds=1) <= now <= datetime.now(UTC) + timedelta(seconds=1)
    found = conversations(services, message_id="m1")["conversations"][0]
    assert found["conversation_timestamp"] == "2024-12-15T14:30:00Z"


def test_add_reports_a_measured_duration(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    import mnemo.conversations.service as module

    clock = iter([100.0, 100.0123])
    monkeypatch.setattr(module.time, "perf_counter", lambda: next(clock))
    stored = add_conversation(services, message_id="timed")
    assert stored["data"]["details"]["memory_processing"] == "stored and indexed in 12.3 ms"
    assert "12.3 ms" in stored["message"]


def test_the_same_add_again_is_idempotent(services: Services) -> None:
    first = add_conversation(services, message_id="m1", meta_data={"platform": "web"})
    again = add_conversation(services, message_id="m1", meta_data={"platform": "web"}, explanation="retry")
    assert again["data"] | {"details": None} == first["data"] | {"details": None}
    assert again["data"]["details"]["has_meta_data"] is True
    assert "already stored" in again["data"]["details"]["memory_processing"]
    assert conversations(services, retrieval_strategy="recent")["total_found"] == 1

    stored = add_execution(services, "m1")
    assert add_execution(services, "m1")["data"]["timestamp"] == stored["data"]["timestamp"]
    assert executions(services, retrieval_strategy="recent")["total_found"] == 1


def test_a_different_content_under_a_stored_message_id_is_conflict(services: Services) -> None:
    add_conversation(services, message_id="m1")
    error = error_of(lambda: add_conversation(services, message_id="m1", agent_response="Deploy by hand."))
    assert isinstance(error, Conflict)
    assert error.details["field"] == "message_id"
    assert error.details["differs"] == ["agent_response"]
    error = error_of(lambda: add_conversation(services, message_id="m1", timestamp=at(1)))
    assert isinstance(error, Conflict)
    assert error.details["differs"] == ["timestamp"]
    assert conversations(services, message_id="m1")["conversations"][0]["agent_response"] == "Use the pipeline."

    add_execution(services, "m1")
    error = error_of(lambda: add_execution(services, "m1", success=False))
    assert isinstance(error, Conflict)
    assert error.details["differs"] == ["success"]


def test_execution_fields_are_kept_in_order(services: Services) -> None:
    errors = [
        {"error_type": "timeout", "error_message": "slow", "tool": "git"},
        {"error_type": "http_500", "error_message": "boom", "retry": 2},
    ]
    stored = add_execution(
        services,
        "m1",
        tools_used=["zeta", "alpha", "git", "alpha"],
        errors=errors,
        observations="Retry after the timeout.",
        success=False,
        duration_ms=1234,
        meta_data={"platform": "cli"},
    )["data"]["details"]
    assert stored["tools_count"] == 4
    assert stored["errors_count"] == 2
    assert stored["duration_ms"] == 1234
    assert stored["success"] is False
    assert stored["has_meta_data"] is True
    found = executions(services, message_id="m1")["executions"][0]
    assert found["execution_details"]["tools_used"] == ["zeta", "alpha", "git", "alpha"]
    assert found["execution_details"]["errors"] == errors
    assert found["execution_details"]["observations"] == "Retry after the timeout."
    assert found["success"] is False
    assert found["duration_ms"] == 1234
    assert found["meta_data"] == {"platform": "cli"}
    assert add_execution(services, "m2")["data"]["details"]["duration_ms"] == 0


# ------------------------------------------------------------------ linking ---
def test_links_both_ways_whichever_arrives_first(services: Services) -> None:
    add_execution(services, "m1")
    assert executions(services, message_id="m1")["executions"][0]["has_conversation_memory"] is False
    add_conversation(services, message_id="m1")
    add_conversation(services, message_id="m2")
    assert conversations(services, message_id="m1")["conversations"][0]["has_execution_memory"] is True
    assert conversations(services, message_id="m2")["conversations"][0]["has_execution_memory"] is False
    assert executions(services, message_id="m1")["executions"][0]["has_conversation_memory"] is True
    flags = {c["message_id"]: c["has_execution_memory"] for c in conversations(services)["conversations"]}
    assert flags == {"m1": True, "m2": False}
    add_execution(services, "m2")
    assert conversations(services, message_id="m2")["conversations"][0]["has_execution_memory"] is True


@pytest.mark.model
def test_a_query_about_the_tool_finds_the_execution_whose_id_leads_to_the_conversation_and_back(
    bge_services: Services,
) -> None:
    context = ctx(tenant="conversations-bge")
    pairs = [
        ("msg_weather", "Will it rain in Lyon tomorrow?", "Yes, showers are expected in Lyon tomorrow afternoon."),
        ("msg_invoice", "Send the March invoice to ACME.", "Done, the invoice was emailed to their billing team."),
        ("msg_rename", "Rename the repository to checkout-api.", "The repository is now called checkout-api."),
    ]
    runs = {
        "msg_weather": ("Fetched the Lyon forecast", ["geocode_city", "weather_forecast_api"]),
        "msg_invoice": ("Generated and emailed the invoice PDF", ["invoice_generator", "send_email"]),
        "msg_rename": ("Renamed the GitHub repository", ["github_api"]),
    }
    for message_id, user_input, agent_response in pairs:
        add_conversation(
            bge_services, context, message_id=message_id, user_input=user_input, agent_response=agent_response
        )
        summary, tools = runs[message_id]
        add_execution(bge_services, message_id, context, execution_summary=summary, tools_used=tools)

    found = executions(bge_services, "which tool gave us the weather forecast", context)
    top = found["executions"][0]
    assert top["message_id"] == "msg_weather"
    assert "weather_forecast_api" in top["execution_details"]["tools_used"]
    assert top["has_conversation_memory"] is True
    assert 0.0 <= top["relevance_score"] <= 1.0
    behind = conversations(bge_services, "the conversation", context, message_id=top["message_id"])
    assert behind["query_type"] == "specific_message"
    conversation = behind["conversations"][0]
    assert conversation["user_input"] == "Will it rain in Lyon tomorrow?"
    assert conversation["has_execution_memory"]
    back = executions(bge_services, "its execution", context, message_id=conversation["message_id"])
    assert back["executions"][0]["execution_details"] == top["execution_details"]
    assert ids(conversations(bge_services, "forecast with the weather tool", context))[0] == "msg_weather"


# --------------------------------------------------------------- strategies ---
def test_recent_is_newest_first_without_relevance(services: Services) -> None:
    for day, message_id in ((3, "mid"), (9, "new"), (1, "old")):
        add_conversation(services, message_id=message_id, timestamp=at(day), user_input=f"unrelated {message_id}")
    found = conversations(services, "anything at all", retrieval_strategy="recent")
    assert ids(found) == ["new", "mid", "old"]
    assert found["total_found"] == 3
    assert all("relevance_score" not in entry for entry in found["conversations"])


def test_keyword_matches_words_only(services: Services) -> None:
    add_conversation(services, message_id="k8s", user_input="How do I scale the kubernetes cluster?")
    add_conversation(services, message_id="lunch", user_input="Where shall we eat?", agent_response="The noodle bar.")
    found = conversations(services, "kubernetes", retrieval_strategy="keyword")
    assert ids(found) == ["k8s"]
    assert found["total_found"] == 1
    assert 0.0 < found["conversations"][0]["relevance_score"] <= 1.0
    none = conversations(services, "zeppelin", retrieval_strategy="keyword")
    assert none["conversations"] == []
    assert none["total_found"] == 0
    assert none["max_results_applied"] is False


def test_hybrid_ranks_by_relevance_and_breaks_ties_by_recency(services: Services) -> None:
    add_conversation(
        services,
        message_id="db",
        user_input="Which database do we use for orders?",
        agent_response="PostgreSQL 16 holds the orders database.",
    )
    add_conversation(services, message_id="lunch", user_input="Where shall we eat?", agent_response="Noodles.")
    found = conversations(services, "orders database PostgreSQL")
    assert ids(found)[0] == "db"
    scores = [entry["relevance_score"] for entry in found["conversations"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= score <= 1.0 for score in scores)

    for day, message_id in ((2, "older"), (5, "newer"), (4, "middle")):
        add_conversation(
            services,
            message_id=message_id,
            timestamp=at(day),
            user_input="Rotate the TLS cert",
            agent_response="Rotated the TLS certificate.",
        )
    tied = conversations(services, "rotate the TLS certificate")
    assert ids(tied)[:3] == ["newer", "middle", "older"]


def test_execution_strategies(services: Services) -> None:
    add_execution(
        services, "a", execution_summary="Queried the billing database", tools_used=["sql_runner"], timestamp=at(1)
    )
    add_execution(
        services, "b", execution_summary="Posted a message to Slack", tools_used=["slack_api"], timestamp=at(2)
    )
    assert ids(executions(services, "whatever", retrieval_strategy="recent"), "executions") == ["b", "a"]
    assert ids(executions(services, "sql_runner", retrieval_strategy="keyword"), "executions") == ["a"]
    assert ids(executions(services, "billing database query"), "executions")[0] == "a"


# ------------------------------------------------------------------ filters ---
@pytest.mark.parametrize("strategy", ["hybrid", "recent", "keyword"])
def test_time_range_filters_every_strategy(services: Services, strategy: str) -> None:
    for day in (1, 5, 10, 20):
        add_conversation(services, message_id=f"d{day}", timestamp=at(day), user_input=f"deploy on day {day}")
    window = {"start": "2024-12-04T00:00:00Z", "end": "2024-12-10T12:00:00Z"}
    found = conversations(services, "deploy", time_range=window, retrieval_strategy=strategy)
    assert sorted(ids(found)) == ["d10", "d5"]
    assert found["total_found"] == 2
    assert found["query_type"] == "time_filtered"
    assert found["time_range"] == window
    since = conversations(services, "deploy", time_range={"start": at(10)}, retrieval_strategy=strategy)
    assert sorted(ids(since)) == ["d10", "d20"]
    until = conversations(services, "deploy", time_range={"end": at(4)}, retrieval_strategy=strategy)
    assert ids(until) == ["d1"]
    other_month = {"start": "2025-01-01T00:00:00Z", "end": "2025-01-31T00:00:00Z"}
    assert conversations(services, "deploy", time_range=other_month, retrieval_strategy=strategy)["total_found"] == 0


def test_message_id_fetches_one_and_an_unknown_one_finds_nothing(services: Services) -> None:
    add_conversation(services, message_id="m1", timestamp=at(3))
    add_conversation(services, message_id="m2")
    found = conversations(services, "unrelated words", message_id="m1")
    assert ids(found) == ["m1"]
    assert found["query_type"] == "specific_message"
    assert found["requested_message_id"] == "m1"
    assert found["conversations"][0]["relevance_score"] == 1.0
    missing = conversations(services, message_id="nope")
    assert missing["conversations"] == []
    assert missing["total_found"] == 0
    outside = conversations(services, message_id="m1", time_range={"start": at(4)})
    assert outside["conversations"] == []
    assert executions(services, message_id="m1")["executions"] == []


@pytest.mark.parametrize("strategy", ["hybrid", "recent", "keyword"])
def test_execution_filters_by_tools_success_and_error_type(services: Services, strategy: str) -> None:
    timeout = [{"error_type": "Timeout", "error_message": "deploy took too long", "tool": "deploy_pipeline"}]
    add_execution(services, "ok", tools_used=["git", "deploy_pipeline"], timestamp=at(1))
    add_execution(services, "failed", tools_used=["deploy_pipeline"], errors=timeout, success=False, timestamp=at(2))
    add_execution(services, "other", execution_summary="deploy docs", tools_used=["wiki"], timestamp=at(3))

    def found(**filters: Any) -> list[str]:
        data = executions(services, "deploy", retrieval_strategy=strategy, **filters)
        assert data["query_type"] == "pattern_search"
        assert data["total_found"] == len(data["executions"])
        return sorted(ids(data, "executions"))

    assert found(tools=["DEPLOY_PIPELINE"]) == ["failed", "ok"]
    assert found(tools=["wiki", "git"]) == ["ok", "other"]
    assert found(success=False) == ["failed"]
    assert found(success=True) == ["ok", "other"]
    assert found(error_type="timeout") == ["failed"]
    assert found(error_type="OutOfMemory") == []
    assert found(tools=["deploy_pipeline"], success=True) == ["ok"]
    assert found(time_range={"start": at(2)}) == ["failed", "other"]
    specific = executions(services, message_id="failed", success=True)
    assert specific["executions"] == []
    assert specific["query_type"] == "specific_message"
    assert executions(services, retrieval_strategy=strategy)["query_type"] == "general"


def test_max_results_and_counts(services: Services) -> None:
    for number in range(12):
        add_conversation(services, message_id=f"m{number:02d}", timestamp=at(number + 1), user_input=f"deploy {number}")
    default = conversations(services, retrieval_strategy="recent")
    assert default["returned_count"] == 10 == len(default["conversations"])
    assert default["total_found"] == 12
    assert default["max_results_applied"] is True
    assert ids(default)[0] == "m11"
    three = conversations(services, "deploy", max_results=3)
    assert three["returned_count"] == 3
    assert three["total_found"] == 12
    assert three["max_results_applied"] is True
    everything = conversations(services, "deploy", max_results=50, retrieval_strategy="keyword")
    assert everything["returned_count"] == 12 == everything["total_found"]
    assert everything["max_results_applied"] is False
    for bad in (0, 51, "ten", 2.5, True):
        error = error_of(lambda bad=bad: conversations(services, max_results=bad))
        assert isinstance(error, InvalidInput)
        assert error.details["field"] == "max_results"


# ------------------------------------------------------------------ identity ---
def test_users_and_tenants_are_isolated(services: Services) -> None:
    add_conversation(services, message_id="m1", user_input="Alice's secret deploy plan")
    add_execution(services, "m1")
    for stranger in (ctx(user="bob"), ctx(tenant="globex")):
        for strategy in ("hybrid", "recent", "keyword"):
            assert (
                conversations(services, "secret deploy plan", stranger, retrieval_strategy=strategy)["conversations"]
                == []
            )
            assert executions(services, "deploy", stranger, retrieval_strategy=strategy)["executions"] == []
        assert conversations(services, context=stranger, message_id="m1")["conversations"] == []
        assert executions(services, context=stranger, message_id="m1")["executions"] == []
    # The same message_id is another user's own, not a conflict.
    bob = add_conversation(services, ctx(user="bob"), message_id="m1", user_input="Bob's note")
    assert bob["data"]["message_id"] == "m1"
    bobs = conversations(services, context=ctx(user="bob"), message_id="m1")["conversations"][0]
    assert bobs["user_input"] == "Bob's note"
    assert bobs["has_execution_memory"] is False
    assert conversations(services, message_id="m1")["conversations"][0]["user_input"] == "Alice's secret deploy plan"


def test_without_a_user_it_is_invalid_input_naming_the_id(services: Services) -> None:
    anonymous = ctx(user=None)
    for run in (
        lambda: add_conversation(services, anonymous),
        lambda: add_execution(services, "m1", anonymous),
        lambda: conversations(services, context=anonymous),
        lambda: executions(services, context=anonymous),
    ):
        error = error_of(run)
        assert isinstance(error, InvalidInput)
        assert error.details["field"] == "user_id"


def test_a_body_user_id_must_be_the_callers_own(services: Services) -> None:
    add_execution(services, "m1")
    mine = executions(services, user_id="alice", message_id="m1")
    assert ids(mine, "executions") == ["m1"]
    error = error_of(lambda: executions(services, user_id="bob", message_id="m1"))
    assert isinstance(error, Unauthorized)
    assert error.details["field"] == "user_id"
    error = error_of(lambda: add_conversation(services, user_id="mallory"))
    assert isinstance(error, Unauthorized)


# -------------------------------------------------------------- index outage ---
def test_an_index_outage_loses_nothing_and_the_drain_indexes(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("index unavailable")

    with monkeypatch.context() as patch:
        patch.setattr(services.index, "upsert", down)
        stored = add_conversation(services, message_id="m1", user_input="Where is the kubernetes runbook?")
        executed = add_execution(services, "m1", tools_used=["kubectl"])
    assert "queued for indexing" in stored["data"]["details"]["memory_processing"]
    assert "queued for indexing" in executed["data"]["details"]["memory_processing"]
    assert sorted(marker["family"] for marker in services.outbox.pending()) == ["conversations", "executions"]
    # The records are there at once; the lookup by time needs no index.
    assert ids(conversations(services, retrieval_strategy="recent")) == ["m1"]
    assert ids(conversations(services, "kubernetes runbook", retrieval_strategy="keyword")) == []
    # The outbox's drain (scheduled on AWS, in the background locally) indexes them.
    assert drained(services.outbox) == (2, 0)
    assert ids(conversations(services, "kubernetes runbook", retrieval_strategy="keyword")) == ["m1"]
    assert ids(executions(services, "kubectl", retrieval_strategy="keyword"), "executions") == ["m1"]
    assert services.outbox.pending() == []


def test_reindex_rebuilds_both_namespaces_from_the_records(services: Services) -> None:
    add_conversation(services, message_id="m1", user_input="Where is the kubernetes runbook?")
    add_execution(services, "m1", tools_used=["kubectl"])
    services.index.clear("conversations")
    services.index.clear("executions")
    assert conversations(services, "kubernetes", retrieval_strategy="keyword")["total_found"] == 0
    assert services.conversations.reindex() == 2
    assert ids(conversations(services, "kubernetes", retrieval_strategy="keyword")) == ["m1"]
    assert ids(executions(services, "kubectl", retrieval_strategy="keyword"), "executions") == ["m1"]


def test_the_mcp_stdio_user_comes_from_memory_user_id(services: Services) -> None:
    from mnemo.entry.identity import context_from_environment

    carol = context_from_environment({"MEMORY_USER_ID": "carol"})
    add_conversation(services, carol, message_id="m1")
    assert ids(conversations(services, context=ctx(user="carol", tenant="local"), message_id="m1")) == ["m1"]
    assert conversations(services, context=ctx(user="local", tenant="local"), message_id="m1")["total_found"] == 0


def test_an_embedder_outage_queues_the_add_and_ranks_by_words(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.errors import ProviderError

    def down(texts: Any) -> Any:
        raise ProviderError("embedder unavailable")

    with monkeypatch.context() as patch:
        patch.setattr(services.embedder, "embed", down)
        stored = add_conversation(services, message_id="m1", user_input="Where is the kubernetes runbook?")
        assert "queued for indexing" in stored["data"]["details"]["memory_processing"]
        assert ids(conversations(services, "kubernetes runbook", retrieval_strategy="recent")) == ["m1"]
    add_conversation(services, message_id="m2", user_input="Lunch plans?", agent_response="Noodles.")
    assert drained(services.outbox) == (1, 0)  # the embedder is back: the queued add is indexed
    with monkeypatch.context() as patch:
        patch.setattr(services.embedder, "embed", down)
        found = conversations(services, "kubernetes runbook")  # hybrid, on BM25 alone
    assert ids(found) == ["m1"]
    assert 0.0 < found["conversations"][0]["relevance_score"] <= 1.0


# ---------------------------------------------------------- recent and ranges ---
def test_recent_with_a_time_range_returns_every_entry_in_it_behind_a_thousand_newer(services: Services) -> None:
    for n in range(40):
        add_conversation(services, message_id=f"old-{n:02d}", timestamp=f"2023-03-{n % 28 + 1:02d}T10:{n:02d}:00Z")
    for n in range(1100):
        add_conversation(
            services, message_id=f"new-{n:04d}", timestamp=f"2024-06-01T{n // 60 % 24:02d}:{n % 60:02d}:00Z"
        )
    march = {"start": "2023-03-01T00:00:00Z", "end": "2024-05-31T23:59:59Z"}  # spans years
    found = conversations(services, retrieval_strategy="recent", time_range=march, max_results=5)
    assert found["total_found"] == 40
    assert found["returned_count"] == 5
    assert found["max_results_applied"] is True
    assert ids(found) == ["old-27", "old-26", "old-25", "old-24", "old-23"]  # newest in the range first
    everything = conversations(services, retrieval_strategy="recent", time_range=march, max_results=50)
    assert sorted(ids(everything)) == [f"old-{n:02d}" for n in range(40)]


def test_recent_walks_past_pages_of_entries_a_filter_rejects(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemo.conversations import store

    monkeypatch.setattr(store, "RECENT_PAGE", 7)  # many pages from a few entries
    for n in range(30):
        add_execution(services, f"m{n:02d}", success=n % 10 == 0, timestamp=f"2024-01-{n + 1:02d}T08:00:00Z")
    failed = executions(services, retrieval_strategy="recent", success=True, max_results=10)
    assert ids(failed, "executions") == ["m20", "m10", "m00"]
    assert failed["total_found"] == 3
    window = {"start": "2024-01-05T00:00:00Z", "end": "2024-01-25T00:00:00Z"}
    ranged = executions(services, retrieval_strategy="recent", time_range=window, max_results=50)
    assert ids(ranged, "executions") == [f"m{n:02d}" for n in range(23, 3, -1)]
    assert ranged["total_found"] == 20

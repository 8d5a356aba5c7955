"""Run in the OpenAI Agents SDK's virtual environment by test_client_openai_agents.py: the SDK's own test suite
of a session backend, adapted to ``MnemoSession`` on a real Mnemo server.

Source: tests/extensions/memory/test_sqlalchemy_session.py of openai/openai-agents-python (commit 7f7a44f8,
the SDK's tests as of v0.22; nothing in it changed for the Session protocol up to 0.24.0). Each case keeps its
name and what it asserts; the session is a ``MnemoSession`` (an ``AsyncMnemoClient`` acting for alice) instead
of ``SQLAlchemySession.from_url``, the model the scripted one of openai_agents_fake_model.py instead of the
SDK's ``ScriptedModel``.

Adapted:
- the corrupt-row cases put a line that is not JSON into the session's log file with the file tools, where
  the SDK inserts a row with SQL;
- the ordering cases (same timestamp, ties by id) assert insertion order for a reasoning item and messages:
  the log's order is the file's, there is no timestamp or row id to tie on;
- ``can_store_non_ascii_without_escaping`` reads the log file with file_read (the SDK selects the row);
- the concurrency cases run on one Mnemo server: 25 concurrent ``add_items`` on one session object and on
  25 objects of the same session (the SDK's "first access" and "after tables exist" cases), two concurrent
  ``pop_item`` on two objects;
- ``mutation_cancellation_waits_for_transaction_exit`` cancels a real add, pop and clear while they run and
  checks that the change was made whole (the SDK holds a fake transaction open).

Not applicable (SQLAlchemy or SQLite machinery MnemoSession has none of): the engine property cases, table
creation and its locks, SQLite write locks and busy timeouts, cross-loop engine sharing, the DELETE RETURNING
fallbacks and row counts, the configuration registry, ORDER BY clause inspection, the default escaped
(ensure_ascii) storage, and ``session_settings_resolve`` (it tests SessionSettings alone).

    python openai_agents_session_suite.py URL   ->  one JSON line: {case: "ok" or the failure's traceback}
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

from agents import Agent, RunConfig, Runner, TResponseInputItem, set_tracing_disabled
from agents.memory import SessionSettings
from openai_agents_fake_model import FakeModel, text

from mnemo.client import AsyncMnemoClient, LocalIdentity
from mnemo.client.openai_agents import MnemoSession

URL = sys.argv[1] if __name__ == "__main__" else ""
#: Each run's sessions are its own, whatever the server already holds.
RUN = uuid.uuid4().hex[:8]
CASES: list[tuple[str, Callable[[], Awaitable[None]]]] = []


def case(function: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    CASES.append((function.__name__, function))
    return function


def client() -> AsyncMnemoClient:
    return AsyncMnemoClient(URL, auth=LocalIdentity(user="alice", project="atlas"))


def new_session(session_id: str, **options: Any) -> MnemoSession:
    return MnemoSession(f"{RUN}-{session_id}", client(), **options)


def log_files(session: MnemoSession) -> AsyncMnemoClient:
    """Alice's own workspace, where the session keeps its log (no project: the personal workspace)."""
    return AsyncMnemoClient(URL, auth=LocalIdentity(user="alice", session=session.session_id))


async def append_corrupt_line(session: MnemoSession) -> None:
    files = log_files(session)
    read = await files.call("file_read", {"path": session.path})
    content = read["content"] + "not valid json {{{\n"
    await files.call("file_write", {"path": session.path, "content": content, "expectedVersion": read["version"]})


def agent(model: FakeModel) -> Agent:
    return Agent(name="test", model=model)


def _make_message_item(item_id: str, text_value: str) -> TResponseInputItem:
    content = {"type": "output_text", "text": text_value, "annotations": [], "logprobs": []}
    message = {"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [content]}
    return cast(TResponseInputItem, message)


def _make_reasoning_item(item_id: str, summary_text: str) -> TResponseInputItem:
    reasoning = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": summary_text}]}
    return cast(TResponseInputItem, reasoning)


def _item_ids(items: list[TResponseInputItem]) -> list[str]:
    return [cast(dict[str, Any], item)["id"] for item in items]


@case
async def test_sqlalchemy_session_direct_ops() -> None:
    session = new_session("direct_ops_test")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    retrieved = await session.get_items()
    assert len(retrieved) == 2
    assert retrieved[0].get("content") == "Hello"
    assert retrieved[1].get("content") == "Hi there!"
    popped = await session.pop_item()
    assert popped is not None
    assert popped.get("content") == "Hi there!"
    retrieved_after_pop = await session.get_items()
    assert len(retrieved_after_pop) == 1
    assert retrieved_after_pop[0].get("content") == "Hello"
    await session.clear_session()
    assert len(await session.get_items()) == 0


@case
async def test_sqlalchemy_session_can_store_non_ascii_without_escaping() -> None:
    session = new_session("non_ascii_storage")
    item: TResponseInputItem = {"role": "user", "content": "café"}
    await session.add_items([item])
    stored = (await log_files(session).call("file_read", {"path": session.path}))["content"]
    assert "café" in stored
    assert "\\u00e9" not in stored
    assert await session.get_items() == [item]


@case
async def test_runner_integration() -> None:
    session = new_session("runner_integration_test")
    model = FakeModel([[text("San Francisco")], [text("California")]])
    result1 = await Runner.run(agent(model), "What city is the Golden Gate Bridge in?", session=session)
    assert result1.final_output == "San Francisco"
    result2 = await Runner.run(agent(model), "What state is it in?", session=session)
    assert result2.final_output == "California"
    last_input = model.calls[-1]["input"]
    assert len(last_input) > 1
    assert any("Golden Gate Bridge" in str(item.get("content", "")) for item in last_input)


@case
async def test_session_isolation() -> None:
    session1 = new_session("session_1")
    session2 = new_session("session_2")
    model = FakeModel([[text("I like cats.")], [text("I like dogs.")], [text("You said you like cats.")]])
    await Runner.run(agent(model), "I like cats.", session=session1)
    await Runner.run(agent(model), "I like dogs.", session=session2)
    result = await Runner.run(agent(model), "What animal did I say I like?", session=session1)
    assert "cats" in result.final_output.lower()
    assert "dogs" not in result.final_output.lower()
    # What the scripted answer cannot show: session 1's history reached the model, and session 2's did not.
    seen = json.dumps(model.calls[-1]["input"])
    assert "I like cats." in seen
    assert "I like dogs." not in seen


@case
async def test_get_items_with_limit() -> None:
    session = new_session("limit_test")
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "1"},
        {"role": "assistant", "content": "2"},
        {"role": "user", "content": "3"},
        {"role": "assistant", "content": "4"},
    ]
    await session.add_items(items)
    latest_2 = await session.get_items(limit=2)
    assert len(latest_2) == 2
    assert latest_2[0].get("content") == "3"
    assert latest_2[1].get("content") == "4"
    assert len(await session.get_items()) == 4
    assert len(await session.get_items(limit=10)) == 4


@case
async def test_pop_from_empty_session() -> None:
    assert await new_session("empty_session").pop_item() is None


@case
async def test_concurrent_pop_item_returns_each_row_once() -> None:
    writer = new_session("concurrent_pop")
    other = new_session("concurrent_pop")
    await writer.add_items([{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}])
    popped = await asyncio.wait_for(asyncio.gather(writer.pop_item(), other.pop_item()), timeout=60)
    contents = {cast(dict[str, Any], item)["content"] for item in popped if item is not None}
    assert contents == {"first", "second"}


@case
async def test_pop_item_skips_corrupt_most_recent() -> None:
    session = new_session("pop_corrupt")
    valid_item: TResponseInputItem = {"role": "user", "content": "valid"}
    await session.add_items([valid_item])
    await append_corrupt_line(session)
    assert await session.pop_item() == valid_item
    assert await session.get_items() == []


@case
async def test_get_items_limit_skips_corrupt_newest_rows() -> None:
    session = new_session("limit_corrupt")
    await session.add_items(
        [
            {"role": "user", "content": "valid 0"},
            {"role": "assistant", "content": "valid 1"},
            {"role": "user", "content": "valid 2"},
        ]
    )
    await append_corrupt_line(session)
    limited = await session.get_items(limit=2)
    assert [item.get("content") for item in limited] == ["valid 1", "valid 2"]


@case
async def test_get_items_limit_returns_fewer_when_history_exhausted() -> None:
    session = new_session("limit_exhausted")
    await session.add_items([{"role": "user", "content": "only valid"}])
    retrieved = await session.get_items(limit=5)
    assert [item.get("content") for item in retrieved] == ["only valid"]


@case
async def test_pop_item_returns_none_after_dropping_only_corrupt_rows() -> None:
    session = new_session("pop_only_corrupt")
    await session.add_items([{"role": "user", "content": "gone"}])
    await session.pop_item()  # the log exists, and holds no item
    await append_corrupt_line(session)
    assert await session.pop_item() is None
    assert await session.get_items() == []
    stored = (await log_files(session).call("file_read", {"path": session.path}))["content"]
    assert "not valid json" not in stored


@case
async def test_add_empty_items_list() -> None:
    session = new_session("add_empty_test")
    assert len(await session.get_items()) == 0
    await session.add_items([])
    assert len(await session.get_items()) == 0


async def _add_concurrently(sessions: list[MnemoSession]) -> None:
    submitted = [f"msg-{i}" for i in range(len(sessions))]

    async def worker(session: MnemoSession, content: str) -> None:
        await session.add_items([{"role": "user", "content": content}])

    results = await asyncio.gather(
        *(worker(session, content) for session, content in zip(sessions, submitted, strict=True)),
        return_exceptions=True,
    )
    assert [result for result in results if isinstance(result, BaseException)] == []
    stored = await sessions[0].get_items()
    assert len(stored) == len(submitted)
    assert sorted(str(item.get("content")) for item in stored) == sorted(submitted)


@case
async def test_add_items_concurrent_first_access_with_create_tables() -> None:
    session = new_session("concurrent_first_access")
    await _add_concurrently([session] * 25)


@case
async def test_add_items_concurrent_first_write_after_tables_exist() -> None:
    setup_session = new_session("concurrent_first_write")
    await setup_session.get_items()
    await _add_concurrently([new_session("concurrent_first_write") for _ in range(25)])


@case
async def test_get_items_same_timestamp_consistent_order() -> None:
    session = new_session("same_timestamp_test")
    await session.add_items([_make_message_item("older_same_ts", "old")])
    await session.add_items([_make_reasoning_item("rs_same_ts", "..."), _make_message_item("msg_same_ts", "...")])
    assert _item_ids(await session.get_items()) == ["older_same_ts", "rs_same_ts", "msg_same_ts"]
    assert _item_ids(await session.get_items(limit=2)) == ["rs_same_ts", "msg_same_ts"]


@case
async def test_pop_item_same_timestamp_returns_latest() -> None:
    session = new_session("same_timestamp_pop_test")
    await session.add_items(
        [_make_reasoning_item("rs_pop_same_ts", "..."), _make_message_item("msg_pop_same_ts", "...")]
    )
    popped = await session.pop_item()
    assert popped is not None
    assert cast(dict[str, Any], popped)["id"] == "msg_pop_same_ts"
    assert _item_ids(await session.get_items()) == ["rs_pop_same_ts"]


@case
async def test_get_items_orders_by_id_for_ties() -> None:
    session = new_session("order_by_id_test")
    await session.add_items([_make_reasoning_item("rs_first", "..."), _make_message_item("msg_second", "...")])
    assert _item_ids(await session.get_items()) == ["rs_first", "msg_second"]
    assert _item_ids(await session.get_items(limit=2)) == ["rs_first", "msg_second"]


async def _cancelled_while_running(operation: str) -> None:
    session = new_session(f"transaction_cancellation_{operation}")
    await session.add_items([{"role": "user", "content": "kept"}, {"role": "user", "content": "claimed"}])
    if operation == "add":
        task: asyncio.Task[Any] = asyncio.create_task(session.add_items([{"role": "user", "content": "once"}]))
    elif operation == "pop":
        task = asyncio.create_task(session.pop_item())
    else:
        task = asyncio.create_task(session.clear_session())
    await asyncio.sleep(0)  # the change has started: its first call is on its way
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancelled change did not raise CancelledError")
    # The change was made whole before the cancellation was raised.
    expected = {"add": ["kept", "claimed", "once"], "pop": ["kept"], "clear": []}[operation]
    assert [item.get("content") for item in await session.get_items()] == expected


@case
async def test_mutation_cancellation_waits_for_transaction_exit_add() -> None:
    await _cancelled_while_running("add")


@case
async def test_mutation_cancellation_waits_for_transaction_exit_pop() -> None:
    await _cancelled_while_running("pop")


@case
async def test_mutation_cancellation_waits_for_transaction_exit_clear() -> None:
    await _cancelled_while_running("clear")


@case
async def test_session_settings_default() -> None:
    session = new_session("default_settings_test")
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None


@case
async def test_session_settings_from_url_class() -> None:
    session = new_session("from_url_settings_test", session_settings=SessionSettings(limit=5))
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 5


@case
async def test_session_settings_from_url_dictionary() -> None:
    session = new_session("from_url_settings_test", session_settings={"limit": 5})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 5


@case
async def test_get_items_uses_session_settings_limit() -> None:
    session = new_session("uses_settings_limit_test", session_settings=SessionSettings(limit=3))
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)])
    retrieved = await session.get_items()
    assert [item.get("content") for item in retrieved] == ["Message 2", "Message 3", "Message 4"]


@case
async def test_get_items_explicit_limit_overrides_session_settings() -> None:
    session = new_session("explicit_override_test", session_settings=SessionSettings(limit=5))
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
    retrieved = await session.get_items(limit=2)
    assert [item.get("content") for item in retrieved] == ["Message 8", "Message 9"]


@case
async def test_runner_with_session_settings_override() -> None:
    session = new_session("runner_override_test", session_settings=SessionSettings(limit=100))
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model = FakeModel([[text("Got it")]])
    await Runner.run(
        agent(model), "New question", session=session, run_config=RunConfig(session_settings=SessionSettings(limit=2))
    )
    history_items = [item for item in model.calls[-1]["input"] if item.get("content") != "New question"]
    assert [item.get("content") for item in history_items] == ["Turn 8", "Turn 9"]


async def main() -> dict[str, str]:
    results = {}
    for name, run in CASES:
        try:
            await run()
            results[name] = "ok"
        except BaseException:  # a case's failure, reported with its traceback (CancelledError included)
            results[name] = traceback.format_exc()
    return results


if __name__ == "__main__":
    set_tracing_disabled(True)  # nothing leaves the machine
    print(json.dumps(asyncio.run(main())))

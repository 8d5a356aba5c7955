"""The file tools under concurrent callers, on both adapter sets (SQLite and a local directory; DynamoDB
and S3 on a serial moto server, which, as DynamoDB does, checks and writes one item atomically).

Every writer races on real threads released together by a barrier. What must hold: exactly one writer
wins each version, the others get CONFLICT, nothing a winner wrote is lost, and no pin set's recorded
total ever differs from the real sum of its pinned files' tokens.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, shared_moto_server

from helpers import ctx, race
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.files.pins import PIN_SET, PINS_PREFIX
from mnemo.files.scopes import pinner_key
from mnemo.files.store import ASSET_PREFIX, HEAD, PINNERS
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings
from mnemo.tools.registry import get_tool

BOT = ctx(agent="bot")
WRITER = ctx(agent="bot", project="p1", roles=("writer",))
THREADS = 6
_names = itertools.count()


@pytest.fixture(params=["embedded", "aws"])
def services(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    number = next(_names)
    table = None
    if request.param == "embedded":
        built = Services(Settings(data_dir=tmp_path, embedder="hashing", block_budget_tokens=10_000))
    else:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
            monkeypatch.setenv(name, value)
        server = shared_moto_server()
        table, bucket = f"files-race-{number}", f"files-race-{number}"
        create_records_table(server.client("dynamodb"), table, stream=False)
        assert ensure_bucket(server.client("s3"), bucket, REGION) is True
        built = Services(
            dynamodb_settings(server, table, tmp_path, blobs="s3", blob_bucket=bucket, block_budget_tokens=10_000)
        )
    set_services(built)
    try:
        yield built
    finally:
        set_services(None)
        if table is not None:
            shared_moto_server().client("dynamodb").delete_table(TableName=table)


def call(services: Services, context: RequestContext, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, context, payload)


def words(n: int) -> str:
    return " ".join(["word"] * n)


def wins(results: list[Any]) -> list[dict[str, Any]]:
    return [result for result in results if isinstance(result, dict)]


def pin_totals(services: Services, context: RequestContext) -> tuple[int, int, list[tuple[str, str]]]:
    """(the pin set's recorded total, the real sum of its files' tokens, the pinned (pk, name) pairs)."""
    record = services.records.get(PINS_PREFIX + pinner_key(context), PIN_SET)
    if record is None:
        return 0, 0, []
    real, keys = 0, []
    for entry in record.data["pins"]:
        keys.append((entry["pk"], entry["name"]))
        head = services.records.get(entry["pk"], HEAD + entry["name"])
        if head is not None and not head.data.get("deleted"):
            real += int(head.data["tokens"])
    return int(record.data["total"]), real, keys


def assert_pins_consistent(services: Services, *contexts: RequestContext) -> None:
    for context in contexts:
        recorded, real, keys = pin_totals(services, context)
        assert recorded == real, (context.agent, recorded, real)
        assert call(services, context, "pinned_context", {})["totalTokens"] == real
        for pk, name in keys:  # each pinned file lists its pinner
            listed = services.records.get(pk, PINNERS + name)
            assert listed is not None, name
            assert pinner_key(context) in listed.data["pinnedBy"], name


# --------------------------------------------------------------- writes ---
@pytest.mark.parametrize("path", ["mnemo:///blocks/race.md", "src/race.py"])
def test_exactly_one_writer_wins_each_version(services: Services, path: str) -> None:
    call(services, WRITER, "file_write", {"path": path, "content": "start"})
    for round_ in range(3):
        version = round_ + 1

        def writer(n: int, version: int = version, round_: int = round_) -> Callable[[], Any]:
            payload = {"path": path, "content": f"round {round_} by {n}", "expectedVersion": version}
            return lambda: call(services, WRITER, "file_write", payload)

        results = race(*(writer(n) for n in range(THREADS)))
        won = wins(results)
        assert len(won) == 1, results
        assert won[0]["version"] == version + 1, results
        loser_fields = {r.details.get("field") for r in results if isinstance(r, MnemoError)}
        assert loser_fields <= {"expectedVersion", "path"}
        answer = call(services, WRITER, "file_read", {"path": path})
        assert answer["version"] == version + 1
        assert answer["content"] == f"round {round_} by {results.index(won[0])}"


@pytest.mark.parametrize("path", ["mnemo:///blocks/race.md", "docs/race.md"])
def test_unconditional_writes_each_get_their_own_version_and_the_last_stays(services: Services, path: str) -> None:
    call(services, WRITER, "file_write", {"path": path, "content": "start"})
    results = race(
        *(
            (lambda n=n: call(services, WRITER, "file_write", {"path": path, "content": f"by {n}"}))
            for n in range(THREADS)
        )
    )
    won = wins(results)
    versions = sorted(result["version"] for result in won)
    assert won
    assert versions == list(range(2, 2 + len(won)))
    last = max(won, key=lambda result: result["version"])
    answer = call(services, WRITER, "file_read", {"path": path})
    assert answer["version"] == last["version"]
    assert answer["content"] == f"by {results.index(last)}"
    for result in won:  # every winner's version reads back as it wrote it
        n = results.index(result)
        assert call(services, WRITER, "file_read", {"path": path, "version": result["version"]})["content"] == f"by {n}"


@pytest.mark.parametrize("path", ["mnemo:///blocks/log.md", "src/log.txt"])
def test_concurrent_appends_lose_no_update(services: Services, path: str) -> None:
    call(services, WRITER, "file_write", {"path": path, "content": "# Log\n[END]\n"})
    succeeded: set[int] = set()
    for round_ in range(3):
        results = race(
            *(
                (
                    lambda n=n: call(
                        services, WRITER, "file_edit", {"path": path, "old": "[END]", "new": f"entry {n}\n[END]"}
                    )
                )
                for n in range(round_ * THREADS, (round_ + 1) * THREADS)
            )
        )
        succeeded |= {round_ * THREADS + n for n, result in enumerate(results) if isinstance(result, dict)}
        assert wins(results)
    answer = call(services, WRITER, "file_read", {"path": path})
    lines = answer["content"].splitlines()
    assert lines[0] == "# Log"
    assert lines[-1] == "[END]"
    assert {int(line.split()[1]) for line in lines[1:-1]} == succeeded
    assert len(lines) == len(succeeded) + 2
    assert answer["version"] == 1 + len(succeeded)


# ------------------------------------------------------------------- pins ---
def test_concurrent_pins_and_growing_writes_keep_every_pin_total_true(services: Services) -> None:
    other = ctx(user="bob", agent="b", project="p1")
    for round_ in range(4):
        path = f"mnemo://project/blocks/r{round_}.md"
        call(services, WRITER, "file_write", {"path": path, "content": words(10)})
        results = race(
            partial(call, services, WRITER, "block_pin", {"path": path}),
            partial(call, services, other, "block_pin", {"path": path}),
            partial(call, services, WRITER, "file_write", {"path": path, "content": words(20 + round_)}),
            partial(
                call,
                services,
                WRITER,
                "file_edit",
                {"path": path, "old": "word", "new": "word word", "replaceAll": True},
            ),
        )
        assert wins(results)
        assert_pins_consistent(services, WRITER, other)
    # and whatever won, a later growing write still updates every pinner's total
    for round_ in range(4):
        path = f"mnemo://project/blocks/r{round_}.md"
        call(services, WRITER, "file_write", {"path": path, "content": words(50 + round_)})
    assert_pins_consistent(services, WRITER, other)


def test_one_agent_pinning_two_blocks_at_once_keeps_its_set_whole(services: Services) -> None:
    for round_ in range(3):
        paths = [f"mnemo:///blocks/p{round_}-{n}.md" for n in range(THREADS)]
        for n, path in enumerate(paths):
            call(services, BOT, "file_write", {"path": path, "content": words(n + 1)})
        results = race(*(partial(call, services, BOT, "block_pin", {"path": path}) for path in paths))
        assert wins(results)
        recorded, real, keys = pin_totals(services, BOT)
        assert recorded == real
        for path, result in zip(paths, results, strict=True):
            name = path.removeprefix("mnemo:///")
            pinned = (ASSET_PREFIX + BOT.scope_key("agent"), name) in keys
            assert pinned == isinstance(result, dict), path
        assert_pins_consistent(services, BOT)


def _pin_then_delete_before_commit(services: Services, path: str) -> Any:
    """block_pin, with a file_delete landing between the pin's reads and its write."""
    store = services.file_store
    real_head = store.head
    armed = [True]

    def head(where: Any, name: str) -> Any:
        found = real_head(where, name)
        if armed[0]:
            armed[0] = False
            call(services, BOT, "file_delete", {"path": path})
        return found

    setattr(store, "head", head)  # noqa: B010 (an instance attribute over the method, removed after)
    try:
        return call(services, BOT, "block_pin", {"path": path})
    except MnemoError as error:
        return error
    finally:
        delattr(store, "head")


def test_a_pin_racing_a_delete_never_leaves_a_ghost_pin(services: Services) -> None:
    path = "mnemo:///blocks/ghost.md"
    call(services, BOT, "file_write", {"path": path, "content": words(40)})
    outcome = _pin_then_delete_before_commit(services, path)
    assert isinstance(outcome, MnemoError), outcome
    assert outcome.code in {"CONFLICT", "NOT_FOUND"}, outcome
    assert_pins_consistent(services, BOT)
    recorded, _, keys = pin_totals(services, BOT)
    assert recorded == 0
    assert keys == []


def test_a_delete_racing_pins_and_writes_leaves_no_pinner_behind(services: Services) -> None:
    other = ctx(user="bob", agent="b", project="p1")
    for round_ in range(3):
        path = f"mnemo://project/blocks/d{round_}.md"
        call(services, WRITER, "file_write", {"path": path, "content": words(10)})
        call(services, other, "block_pin", {"path": path})
        race(
            partial(call, services, WRITER, "file_delete", {"path": path}),
            partial(call, services, WRITER, "file_write", {"path": path, "content": words(12)}),
            partial(call, services, WRITER, "block_unpin", {"path": path}),
        )
        assert_pins_consistent(services, WRITER, other)

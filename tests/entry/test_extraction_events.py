"""The extraction Lambda (mnemo.entry.extraction_events) on SQS events shaped as AWS documents them.

The records are those of Powertools' ``tests/events/sqsEvent.json`` (tests/fixtures/sqs/, copied unchanged),
with the body and queue of each test; a FIFO queue's records also carry ``MessageGroupId``,
``MessageDeduplicationId`` and ``SequenceNumber`` in ``attributes``, as the Lambda developer guide's FIFO
example shows. The learning service is a recording stand-in on the embedded stack (the ``services`` of
each test): this door's job is to route, order, drop and report, not to extract.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

from aws_events import FakeLambdaContext
from helpers import make_services
from mnemo.adapters.aws.sqs_extraction_queue import deduplication_id, encode_notice, group_id
from mnemo.adapters.local.extraction_queue import LocalExtractionQueue
from mnemo.entry.extraction_events import RESERVE_SECONDS, LocalWorker, handler
from mnemo.errors import ProviderError
from mnemo.ports import StreamNotice
from mnemo.runtime import Services, set_services
from mnemo.settings import Settings

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "sqs" / "sqsEvent.json").read_text())
REGION = "us-east-2"  # the fixture's
ACCOUNT = "123456789012"
FIFO = "mnemo-dev-extraction.fifo"
WAKE = "mnemo-dev-extraction-wake"


def queue_url(name: str) -> str:
    return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"


def notice(session: str = "s-1", token: str = "t1", reason: str = "turns") -> StreamNotice:
    identity = {"tenant": "acme", "user": "alice", "session": session}
    return StreamNotice(stream=f"acme|alice|{session}", identity=identity, reason=reason, token=token)  # type: ignore[arg-type]


def record(queue: str, body: str, number: int, fifo_of: StreamNotice | None = None) -> dict[str, Any]:
    """A record of the fixture's shape, from ``queue``; a FIFO one carries the group and deduplication ids."""
    made = copy.deepcopy(FIXTURE["Records"][0])
    made.update(
        messageId=f"0000000{number}-87a3-44ab-83d2-661975830a7d",
        body=body,
        eventSourceARN=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        messageAttributes={},
    )
    if fifo_of is not None:
        made["attributes"].update(
            MessageGroupId=group_id(fifo_of),
            MessageDeduplicationId=deduplication_id(fifo_of),
            SequenceNumber=str(18849496460467696128 + number),
        )
    return made


def fifo_event(*notices: StreamNotice) -> dict[str, Any]:
    return {"Records": [record(FIFO, encode_notice(n), i, fifo_of=n) for i, n in enumerate(notices)]}


def wake_event(*notices: StreamNotice) -> dict[str, Any]:
    return {"Records": [record(WAKE, encode_notice(n), i) for i, n in enumerate(notices)]}


def failed_ids(response: dict[str, Any]) -> list[str]:
    return [failure["itemIdentifier"] for failure in response["batchItemFailures"]]


class Context(FakeLambdaContext):
    function_name = "mnemo-dev-extraction"
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:mnemo-dev-extraction"
    remaining_millis = 300_000


class FakeLearning:
    """Records each notice; raises for the tokens in ``failing``."""

    def __init__(self) -> None:
        self.seen: list[StreamNotice] = []
        self.failing: set[str] = set()

    def on_notice(self, notice: StreamNotice) -> str:
        if notice.token in self.failing:
            raise ProviderError("DynamoDB is unreachable", {"service": "DynamoDB"})
        self.seen.append(notice)
        return "counted"


@pytest.fixture
def learning(tmp_path: Path) -> Iterator[FakeLearning]:
    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        extraction_queue_url=queue_url(FIFO),
        extraction_wake_queue_url=queue_url(WAKE),
    )
    services = Services(settings)
    fake = FakeLearning()
    services.__dict__["learning"] = fake  # the door depends on on_notice only
    services.__dict__["extraction_queue"] = LocalExtractionQueue()  # the wake-ups' forwarding, seen in process
    set_services(services)
    yield fake
    set_services(None)


def forwarded() -> list[StreamNotice]:
    from mnemo.runtime import get_services

    queue = get_services().extraction_queue
    assert isinstance(queue, LocalExtractionQueue)
    found = []
    while (taken := queue.take(timeout=0)) is not None:
        found.append(taken)
    return found


# ------------------------------------------------------------------- FIFO ---
def test_fifo_notices_reach_the_learning_service_in_order(learning: FakeLearning) -> None:
    sent = [notice("s-1", "a"), notice("s-2", "b"), notice("s-1", "c")]
    response = handler(fifo_event(*sent), Context())
    assert response == {"batchItemFailures": []}
    assert learning.seen == sent
    assert forwarded() == []


def test_a_failed_notice_holds_back_the_rest_of_its_session_only(learning: FakeLearning) -> None:
    """FIFO: once a session's notice fails, its later ones in the batch are handed back unprocessed (to be
    retried after it, in order); another session's go on."""
    learning.failing = {"a2"}
    sent = [notice("s-1", "a1"), notice("s-1", "a2"), notice("s-2", "b1"), notice("s-1", "a3"), notice("s-2", "b2")]
    event = fifo_event(*sent)
    response = handler(event, Context())
    ids = [r["messageId"] for r in event["Records"]]
    assert failed_ids(response) == [ids[1], ids[3]]
    assert [n.token for n in learning.seen] == ["a1", "b1", "b2"]


def test_a_batch_that_fails_entirely_fails_the_invocation(learning: FakeLearning) -> None:
    """Every message back to the queue, and Lambda's Errors metric (ExtractionErrorsAlarm) sees it."""
    learning.failing = {"a1"}
    with pytest.raises(BatchProcessingError):
        handler(fifo_event(notice("s-1", "a1"), notice("s-1", "a2")), Context())
    assert learning.seen == []


def test_bodies_that_are_not_notices_are_dropped_not_retried(
    learning: FakeLearning, capsys: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The fixture's own bodies ("Test message.", a JSON object of another shape) moved to the FIFO queue."""
    event = copy.deepcopy(FIXTURE)
    for number, each in enumerate(event["Records"]):
        each["eventSourceARN"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{FIFO}"
        each["attributes"].update(MessageGroupId="g", MessageDeduplicationId=str(number), SequenceNumber=str(number))
    event["Records"].append(record(FIFO, encode_notice(notice(token="ok")), 9, fifo_of=notice(token="ok")))
    assert handler(event, Context()) == {"batchItemFailures": []}
    assert [n.token for n in learning.seen] == ["ok"]
    dropped = [r for r in caplog.records if r.getMessage() == "dropped a message that is not an extraction notice"]
    assert [r.levelname for r in dropped] == ["WARNING", "WARNING"]
    printed = capsys.readouterr().out
    metrics = [json.loads(line) for line in printed.splitlines() if line.startswith('{"_aws"')]
    assert [(m.get("ExtractionDroppedNotices"), m.get("ExtractionNotices")) for m in metrics] == [([1.0, 1.0], [1.0])]


def test_a_notice_is_not_started_without_time_for_a_run(learning: FakeLearning) -> None:
    """Near the timeout the rest of the batch is handed back, rather than cut off mid-run by it (which would
    send the whole batch, done notices too, round again)."""

    class Ending(Context):
        def __init__(self) -> None:
            self.left = [300_000, int(RESERVE_SECONDS * 1000) - 1]

        def get_remaining_time_in_millis(self) -> int:
            return self.left.pop(0) if len(self.left) > 1 else self.left[0]

    sent = [notice("s-1", "a1"), notice("s-2", "b1"), notice("s-1", "a2")]
    event = fifo_event(*sent)
    response = handler(event, Ending())
    assert failed_ids(response) == [r["messageId"] for r in event["Records"][1:]]
    assert [n.token for n in learning.seen] == ["a1"]


# ------------------------------------------------------------------- wake ---
def test_wake_ups_are_forwarded_into_the_fifo_queue_not_run(learning: FakeLearning) -> None:
    idle = [notice("s-1", "idle-1", "idle"), notice("s-2", "idle-2", "idle")]
    assert handler(wake_event(*idle), Context()) == {"batchItemFailures": []}
    assert learning.seen == []
    assert forwarded() == idle


def test_a_wake_up_that_cannot_be_forwarded_is_retried(learning: FakeLearning) -> None:
    from mnemo.runtime import get_services

    class Refusing:
        def notify(self, notice: StreamNotice) -> None:
            if notice.token == "idle-1":
                raise ProviderError("SQS failed", {"service": "SQS"})

        def wake_later(self, notice: StreamNotice, delay_seconds: int) -> None:
            raise AssertionError("a forwarded wake-up is not delayed again")

    get_services().__dict__["extraction_queue"] = Refusing()
    event = wake_event(notice("s-1", "idle-1", "idle"), notice("s-2", "idle-2", "idle"))
    assert failed_ids(handler(event, Context())) == [event["Records"][0]["messageId"]]


# --------------------------------------------------------------- routing ---
def test_a_batch_from_another_queue_is_refused(learning: FakeLearning) -> None:
    event = {"Records": [record("someone-elses-queue", encode_notice(notice()), 0)]}
    with pytest.raises(ValueError, match="someone-elses-queue"):
        handler(event, Context())
    assert learning.seen == []


def test_an_empty_batch_is_answered(learning: FakeLearning) -> None:
    assert handler({"Records": []}, Context()) == {"batchItemFailures": []}


def test_the_lambda_entry_is_this_handler() -> None:
    entry = Path(__file__).resolve().parents[2] / "functions" / "extraction" / "app.py"
    assert "from mnemo.entry.extraction_events import handler" in entry.read_text()


# ----------------------------------------------------- the real service ---
def test_the_real_learning_service_arms_an_idle_wake_up_for_a_notice_a_tool_sent(tmp_path: Path) -> None:
    """The whole door on the embedded stack: add_conversation marks its turn waiting and notifies; that notice,
    delivered from the FIFO queue, reaches LearningService.on_notice, which (one turn, fewer than every_turns)
    arms an idle wake-up, due once the session has been quiet long enough. No model is called."""
    from helpers import ctx
    from mnemo.tools.registry import load_catalog

    settings = Settings(
        data_dir=tmp_path,
        embedder="hashing",
        extraction_strategies=("facts",),
        extraction_every_turns=6,
        extractor="openai",
        openai_base_url="http://127.0.0.1:9/v1",  # a model is configured; none is reached below
        extraction_queue_url=queue_url(FIFO),
        extraction_wake_queue_url=queue_url(WAKE),
    )
    services = Services(settings)
    now = [1_000.0]
    queue = LocalExtractionQueue(clock=lambda: now[0])
    services.__dict__["extraction_queue"] = queue  # SQS stands in process: what was sent, and when it is due
    set_services(services)
    try:
        caller = ctx(session="s-42", roles=("writer",))
        load_catalog()["add_conversation"].invoke(
            services,
            caller,
            {"message_id": "msg_1", "explanation": "remember", "user_input": "I moved to Lyon last year",
             "agent_response": "Noted.", "timestamp": "2026-01-06T15:00:00Z"},
        )  # fmt: skip
        (sent,) = [n for n in iter(lambda: queue.take(timeout=0), None)]
        assert sent.reason == "turns" and sent.identity["session"] == "s-42"
        assert handler(fifo_event(sent), Context()) == {"batchItemFailures": []}
        assert queue.take(timeout=0) is None  # the wake-up waits for the idle time
        now[0] += 15 * 60
        # In process the due wake-up joins the line itself (on AWS the wake queue's delivery is forwarded).
        (wake,) = [n for n in iter(lambda: queue.take(timeout=0), None)]
        assert (wake.stream, wake.identity, wake.reason) == (sent.stream, sent.identity, "idle")
    finally:
        set_services(None)


# ----------------------------------------------------------------- local ---
def test_the_local_worker_hands_each_notice_over_and_outlives_a_failure(tmp_path: Path) -> None:
    import threading

    queue = LocalExtractionQueue()
    seen: list[str] = []
    done = threading.Event()

    def handle(notice: StreamNotice) -> None:
        if notice.token == "bad":
            raise RuntimeError("a bad run")
        seen.append(notice.token)
        if notice.token == "last":
            done.set()

    worker = LocalWorker(queue, handle, poll_seconds=0.05)
    worker.start()
    for token in ("first", "bad", "last"):
        queue.notify(notice(token=token))
    assert done.wait(5)
    worker.stop(timeout=5)
    assert seen == ["first", "last"]
    queue.notify(notice(token="after"))  # closed: nothing more is handed over
    assert queue.take(timeout=0) is None


def test_the_local_worker_uses_the_learning_service_by_default(tmp_path: Path) -> None:
    import threading

    services = make_services(tmp_path)
    done = threading.Event()

    class Learning:
        def on_notice(self, notice: StreamNotice) -> None:
            done.set()

    services.__dict__["learning"] = Learning()
    set_services(services)
    try:
        queue = LocalExtractionQueue()
        worker = LocalWorker(queue, poll_seconds=0.05)
        worker.start()
        queue.notify(notice())
        assert done.wait(5)
        worker.stop(timeout=5)
    finally:
        set_services(None)

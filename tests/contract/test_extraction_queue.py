"""The ExtractionQueue port on both adapters: SQS (a FIFO queue and a standard wake queue, on moto) and the
embedded server's in-process queue.

The same suite runs on each: a notice is delivered as sent, a stream's notices in order, the same notice
twice within the deduplication window once, a wake-up only once its delay has passed, and a delay outside
0..900 is refused before anything is sent. Then what only SQS has: the message's body, group id and
deduplication id as designed (mnemo.adapters.aws.sqs_extraction_queue), and its failures as envelopes.
"""

from __future__ import annotations

import json
import time
import typing
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import boto3
import pytest
from aws_fixtures import REGION, shared_moto_server
from botocore.stub import Stubber

from mnemo.adapters.aws.sqs_extraction_queue import (
    REASONS,
    SqsExtractionQueue,
    decode_notice,
    deduplication_id,
    encode_notice,
    group_id,
)
from mnemo.adapters.local.extraction_queue import LocalExtractionQueue
from mnemo.errors import ProviderError, RateLimited
from mnemo.ports import ExtractionQueue, StreamNotice

ALICE = {"tenant": "acme", "user": "alice", "session": "s-1", "agent": "helper"}


def notice(stream: str = "acme|alice|s-1", reason: str = "turns", token: str = "t1") -> StreamNotice:
    return StreamNotice(stream=stream, identity=dict(ALICE), reason=reason, token=token)  # type: ignore[arg-type]


class Backend(Protocol):
    queue: ExtractionQueue

    def received(self) -> list[StreamNotice]:
        """Every notice due now, in delivery order (each once)."""
        ...

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        ...


@dataclass
class LocalBackend:
    now: list[float] = field(default_factory=lambda: [1000.0])

    def __post_init__(self) -> None:
        self.queue = LocalExtractionQueue(clock=lambda: self.now[0])

    def received(self) -> list[StreamNotice]:
        found = []
        while (taken := self.queue.take(timeout=0)) is not None:
            found.append(taken)
        return found

    def advance(self, seconds: float) -> None:
        self.now[0] += seconds


@dataclass
class SqsBackend:
    """A fresh FIFO queue and wake queue on the shared moto server; the wake queue forwarded as its consumer
    (the extraction function) does."""

    sqs: Any
    fifo_url: str
    wake_url: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queue = SqsExtractionQueue(self.fifo_url, self.wake_url, lambda: shared_moto_server().client("sqs"))

    def _drain(self, url: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            batch = self.sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"], VisibilityTimeout=30
            ).get("Messages", [])
            if not batch:
                return found
            for message in batch:
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            found += batch

    def received(self) -> list[StreamNotice]:
        for message in self._drain(self.wake_url):  # the consumer's forwarding
            self.queue.notify(decode_notice(message["Body"]))
        fifo = self._drain(self.fifo_url)
        self.messages += fifo
        return [decode_notice(message["Body"]) for message in fifo]

    def advance(self, seconds: float) -> None:
        time.sleep(seconds)


def sqs_queues() -> tuple[Any, str, str]:
    sqs = shared_moto_server().client("sqs")
    name = f"mnemo-extraction-{uuid.uuid4().hex[:8]}"
    fifo = sqs.create_queue(
        QueueName=f"{name}.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "false", "VisibilityTimeout": "30"},
    )["QueueUrl"]
    wake = sqs.create_queue(QueueName=f"{name}-wake")["QueueUrl"]
    return sqs, fifo, wake


@pytest.fixture(params=["local", "sqs"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "local":
        yield LocalBackend()
    else:
        yield SqsBackend(*sqs_queues())


# ------------------------------------------------------------------ both ---
def test_a_notice_is_delivered_as_sent(backend: Backend) -> None:
    sent = notice(reason="demand", token="run-1")
    backend.queue.notify(sent)
    assert backend.received() == [sent]
    assert backend.received() == []


def test_a_streams_notices_arrive_in_order(backend: Backend) -> None:
    sent = [notice(stream=stream, token=f"t{i}") for i in range(4) for stream in ("acme|alice|s-1", "acme|bob|s-9")]
    for each in sent:
        backend.queue.notify(each)
    got = backend.received()
    assert sorted(got, key=lambda n: (n.stream, n.token)) == sorted(sent, key=lambda n: (n.stream, n.token))
    for stream in ("acme|alice|s-1", "acme|bob|s-9"):
        assert [n.token for n in got if n.stream == stream] == ["t0", "t1", "t2", "t3"]


def test_the_same_notice_twice_is_delivered_once(backend: Backend) -> None:
    backend.queue.notify(notice(token="t1"))
    backend.queue.notify(notice(token="t1"))  # a retried request
    backend.queue.notify(notice(token="t2"))
    backend.queue.notify(notice(token="t1", reason="demand"))  # another reason is another notice
    assert [(n.reason, n.token) for n in backend.received()] == [("turns", "t1"), ("turns", "t2"), ("demand", "t1")]
    if isinstance(backend, LocalBackend):
        # Still inside the window, even once delivered and deleted: as SQS keeps "tracking the deduplication ID
        # even after the message has been received and deleted" (SQS developer guide, FIFO key terms); moto
        # forgets it at the delete, so only the local queue can show it here.
        backend.queue.notify(notice(token="t1"))
        assert backend.received() == []


def test_a_wake_up_comes_once_its_delay_has_passed(backend: Backend) -> None:
    idle = notice(reason="idle", token="idle-1")
    backend.queue.wake_later(idle, 1)
    backend.queue.notify(notice(token="now"))
    assert [n.token for n in backend.received()] == ["now"]
    backend.advance(1.5)
    assert backend.received() == [idle]
    backend.queue.wake_later(notice(reason="idle", token="idle-2"), 0)
    assert [n.token for n in backend.received()] == ["idle-2"]


def test_a_wake_up_delivered_twice_runs_once(backend: Backend) -> None:
    """SQS standard queues deliver at least once: the forwarded copies meet the FIFO deduplication."""
    idle = notice(reason="idle", token="idle-x")
    backend.queue.wake_later(idle, 0)
    backend.queue.wake_later(idle, 0)
    assert backend.received() == [idle]


@pytest.mark.parametrize("delay", [-1, 901, 3600, 1.5, True, "60"])
def test_a_delay_outside_0_to_900_seconds_is_refused(backend: Backend, delay: Any) -> None:
    with pytest.raises(ValueError):
        backend.queue.wake_later(notice(reason="idle"), delay)
    backend.advance(0)
    assert backend.received() == []


# ------------------------------------------------------------------- SQS ---
def test_sqs_sends_the_body_group_and_deduplication_id_as_designed() -> None:
    sqs, fifo, wake = sqs_queues()
    backend = SqsBackend(sqs, fifo, wake)
    sent = notice(stream="acme|alice|" + "s" * 500, token="m-42")
    backend.queue.notify(sent)
    assert backend.received() == [sent]
    (message,) = backend.messages
    assert json.loads(message["Body"]) == {
        "stream": sent.stream,
        "identity": ALICE,
        "reason": "turns",
        "token": "m-42",
    }
    attributes = message["Attributes"]
    assert attributes["MessageGroupId"] == group_id(sent) == group_id(notice(stream=sent.stream, token="other"))
    assert attributes["MessageDeduplicationId"] == deduplication_id(sent)
    # Hashes: within SQS's 128 characters whatever the stream, and apart for different streams and notices.
    assert len(attributes["MessageGroupId"]) == len(attributes["MessageDeduplicationId"]) == 64
    assert group_id(notice(stream="acme|bob|s-1")) != group_id(sent)
    assert deduplication_id(notice(stream="a|b", token="")) != deduplication_id(notice(stream="a", token="b|"))


def test_sqs_wake_ups_go_to_the_wake_queue_with_their_delay() -> None:
    client = boto3.client("sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    queue = SqsExtractionQueue("https://sqs/q.fifo", "https://sqs/wake", lambda: client)
    idle = notice(reason="idle", token="w")
    with Stubber(client) as stub:
        stub.add_response(
            "send_message",
            {"MessageId": "1", "MD5OfMessageBody": "x"},
            {"QueueUrl": "https://sqs/wake", "MessageBody": encode_notice(idle), "DelaySeconds": 600},
        )
        queue.wake_later(idle, 600)
        stub.assert_no_pending_responses()


def test_sqs_without_a_wake_queue_says_which_setting_is_missing() -> None:
    queue = SqsExtractionQueue("https://sqs/q.fifo", None, lambda: pytest.fail("no request may be sent"))
    with pytest.raises(ProviderError) as raised:
        queue.wake_later(notice(reason="idle"), 60)
    assert raised.value.details["setting"] == "MNEMO_EXTRACTION_WAKE_QUEUE_URL"


def test_sqs_failures_are_envelopes() -> None:
    missing = SqsExtractionQueue(
        f"{shared_moto_server().url}/123456789012/no-such-queue.fifo", None, lambda: shared_moto_server().client("sqs")
    )
    with pytest.raises(ProviderError) as raised:
        missing.notify(notice())
    assert raised.value.details["service"] == "SQS" and raised.value.details["awsCode"]
    client = boto3.client("sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    queue = SqsExtractionQueue("https://sqs/q.fifo", "https://sqs/wake", lambda: client)
    with Stubber(client) as stub:
        stub.add_client_error("send_message", service_error_code="RequestThrottled", http_status_code=403)
        stub.add_client_error("send_message", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(ProviderError):
            queue.notify(notice())
        with pytest.raises(RateLimited):
            queue.wake_later(notice(reason="idle"), 5)


def test_the_body_is_read_back_strictly() -> None:
    sent = notice(reason="idle", token="")
    assert decode_notice(encode_notice(sent)) == sent
    good = json.loads(encode_notice(sent))
    for bad in (
        "not json",
        "[]",
        json.dumps({**good, "extra": 1}),
        json.dumps({k: v for k, v in good.items() if k != "token"}),
        json.dumps({**good, "stream": ""}),
        json.dumps({**good, "stream": "x" * 513}),
        json.dumps({**good, "identity": {"tenant": 1}}),
        json.dumps({**good, "reason": "later"}),
        json.dumps({**good, "token": None}),
    ):
        with pytest.raises(ValueError):
            decode_notice(bad)


def test_the_reasons_are_the_ports() -> None:
    hints = typing.get_type_hints(StreamNotice)
    assert typing.get_args(hints["reason"]) == REASONS


# ----------------------------------------------------------------- local ---
def test_the_local_worker_side_waits_for_a_notice_and_stops_when_closed() -> None:
    import threading

    queue = LocalExtractionQueue()
    got: list[StreamNotice | None] = []
    taker = threading.Thread(target=lambda: got.append(queue.take(timeout=10)))
    taker.start()
    time.sleep(0.05)
    queue.notify(notice())
    taker.join(5)
    assert got == [notice()]
    closer = threading.Thread(target=lambda: got.append(queue.take()))
    closer.start()
    time.sleep(0.05)
    queue.close()
    closer.join(5)
    assert not closer.is_alive() and got[-1] is None
    queue.notify(notice(token="after"))
    assert queue.take(timeout=0) is None


def test_the_local_window_forgets_old_notices() -> None:
    backend = LocalBackend()
    backend.queue.notify(notice())
    backend.advance(301)
    backend.queue.notify(notice())  # past the five minutes: a new notice
    assert backend.received() == [notice(), notice()]

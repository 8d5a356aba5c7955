"""Titan through botocore's Stubber (Bedrock cannot run here) and the event publishers on moto."""

from __future__ import annotations

import io
import json
import uuid

import boto3
import pytest
from aws_fixtures import REGION, shared_moto_server
from botocore.response import StreamingBody
from botocore.stub import Stubber

from mnemo.adapters.aws.eventbridge import EventBridgePublisher
from mnemo.adapters.aws.titan import TitanEmbedder
from mnemo.adapters.local.events import LocalEventBus
from mnemo.errors import ProviderError, RateLimited
from mnemo.ports import Event


def _body(payload: dict[str, object]) -> StreamingBody:
    raw = json.dumps(payload).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


@pytest.fixture
def bedrock() -> boto3.client:
    return boto3.client("bedrock-runtime", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")


@pytest.mark.parametrize("dimensions", [256, 512, 1024])
def test_titan_sends_the_documented_request_and_reads_the_embedding(bedrock: boto3.client, dimensions: int) -> None:
    embedder = TitanEmbedder(lambda: bedrock, dimensions=dimensions)
    vector = [1.0 / dimensions**0.5] * dimensions
    with Stubber(bedrock) as stub:
        stub.add_response(
            "invoke_model",
            {"body": _body({"embedding": vector, "inputTextTokenCount": 7}), "contentType": "application/json"},
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "body": json.dumps({"inputText": "User prefers tabs", "dimensions": dimensions, "normalize": True}),
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
        assert embedder.embed(["User prefers tabs"]) == [vector]
        stub.assert_no_pending_responses()
    assert embedder.name == f"titan-embed-text-v2:{dimensions}"
    assert embedder.tokens_used == 7


def test_titan_rejects_a_size_it_does_not_offer(bedrock: boto3.client) -> None:
    with pytest.raises(ValueError):
        TitanEmbedder(lambda: bedrock, dimensions=384)


def test_titan_failures_become_envelope_errors(bedrock: boto3.client) -> None:
    embedder = TitanEmbedder(lambda: bedrock, dimensions=256)
    with Stubber(bedrock) as stub:
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        stub.add_client_error("invoke_model", service_error_code="ModelNotReadyException", http_status_code=503)
        stub.add_response("invoke_model", {"body": _body({"embedding": [0.1]}), "contentType": "application/json"})
        with pytest.raises(RateLimited):
            embedder.embed(["x"])
        with pytest.raises(ProviderError):
            embedder.embed(["x"])
        with pytest.raises(ProviderError):  # an embedding of the wrong size is never passed on
            embedder.embed(["x"])


def test_titan_client_is_created_once_and_lazily(bedrock: boto3.client) -> None:
    made: list[object] = []

    def factory() -> boto3.client:
        made.append(bedrock)
        return bedrock

    embedder = TitanEmbedder(factory, dimensions=256)
    assert made == []
    with Stubber(bedrock) as stub:
        for _ in range(2):
            stub.add_response(
                "invoke_model", {"body": _body({"embedding": [0.0625] * 256}), "contentType": "application/json"}
            )
        embedder.embed(["a", "b"])
    assert len(made) == 1


def test_eventbridge_delivers_to_an_sqs_target() -> None:
    server = shared_moto_server()
    events, sqs = server.client("events"), server.client("sqs")
    bus = f"mnemo-{uuid.uuid4().hex[:8]}"
    events.create_event_bus(Name=bus)
    queue_url = sqs.create_queue(QueueName=bus)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all-mnemo", EventBusName=bus, EventPattern=json.dumps({"source": ["mnemo"]}))
    events.put_targets(Rule="all-mnemo", EventBusName=bus, Targets=[{"Id": "q", "Arn": queue_arn}])

    publisher = EventBridgePublisher(bus, lambda: server.client("events"))
    publisher.publish([Event("MemoryAdded", {"memoryId": f"mem_{i}"}) for i in range(12)])  # two PutEvents calls

    received = []
    for _ in range(10):
        batch = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        received += [json.loads(m["Body"]) for m in batch]
        if len(received) >= 12:
            break
    assert sorted(m["detail"]["memoryId"] for m in received) == sorted(f"mem_{i}" for i in range(12))
    assert {m["detail-type"] for m in received} == {"MemoryAdded"}


def test_eventbridge_failure_is_a_provider_error() -> None:
    client = boto3.client("events", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    publisher = EventBridgePublisher("default", lambda: client)
    with Stubber(client) as stub:
        stub.add_response(
            "put_events", {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "x"}]}
        )
        with pytest.raises(ProviderError) as raised:
            publisher.publish([Event("MemoryAdded", {})])
    assert raised.value.details["errorCodes"] == ["InternalFailure"]


def test_local_bus_delivers_in_order_to_matching_subscribers() -> None:
    bus = LocalEventBus()
    seen: list[tuple[str, str]] = []
    bus.subscribe(lambda e: seen.append(("all", e.detail_type)))
    bus.subscribe(lambda e: seen.append(("sync", e.detail_type)), detail_type="KnowledgeChanged")
    bus.publish([Event("MemoryAdded", {}), Event("KnowledgeChanged", {})])
    assert seen == [("all", "MemoryAdded"), ("all", "KnowledgeChanged"), ("sync", "KnowledgeChanged")]

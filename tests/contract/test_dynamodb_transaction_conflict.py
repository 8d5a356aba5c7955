"""A transaction DynamoDB cancels because another one was writing the same item reads as a lost condition.

moto does not produce TransactionConflict, so the documented error (TransactionCanceledException with a
CancellationReasons entry per operation) is answered by botocore's Stubber, which checks the request
against the service model.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import ANY, Stubber

from mnemo.adapters.aws.dynamodb_records import DynamoDbRecordStore
from mnemo.errors import MnemoError
from mnemo.ports import ConditionFailed, Item, Put


def _store_answering(reasons: list[str]) -> tuple[DynamoDbRecordStore, Stubber]:
    client = boto3.client("dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        service_message="Transaction cancelled",
        http_status_code=400,
        response_meta={},
        modeled_fields={"CancellationReasons": [{"Code": code} for code in reasons]},
        expected_params={"TransactItems": ANY, "ClientRequestToken": ANY},
    )
    return DynamoDbRecordStore("records", lambda: client), stub


WRITE = [Put(Item("MEM|s", "MEM#a", {"x": 1}), expect="absent"), Put(Item("MEM|s", "LAST", {"memoryId": "a"}))]


@pytest.mark.parametrize("reasons", [["None", "TransactionConflict"], ["ConditionalCheckFailed", "None"]])
def test_a_conflicting_or_failed_condition_is_condition_failed(reasons: list[str]) -> None:
    store, stub = _store_answering(reasons)
    with stub, pytest.raises(ConditionFailed):
        store.write(WRITE)


def test_other_cancellations_stay_provider_errors() -> None:
    store, stub = _store_answering(["None", "ThrottlingError"])
    with stub, pytest.raises(MnemoError) as raised:
        store.write(WRITE)
    assert not isinstance(raised.value, ConditionFailed)
    assert raised.value.code == "PROVIDER_ERROR"

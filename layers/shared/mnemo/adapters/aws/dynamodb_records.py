"""RecordStore on DynamoDB: the production source of truth.

Item layout: ``pk`` (S, hash), ``sk`` (S, range), ``version`` (N), ``data``
(S: the record as JSON, so floats and nesting round-trip exactly) and
``expires_at`` (N, the table's TTL attribute) and, on the writes that carry one,
``stream`` (S, ``Item.stream``: what the stream indexer's event filter matches). DynamoDB deletes expired
items lazily, so reads treat an item past ``expires_at`` as absent, and so do
the "absent" write conditions.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.ports import MAX_WRITE_OPERATIONS, ConditionFailed, Delete, Item, Put

_MAX_BATCH_GET = 100


def item_of(attributes: dict[str, Any]) -> Item:
    """An item's DynamoDB attributes (as a read or a stream record's ``OldImage``/``NewImage`` holds them, in
    DynamoDB JSON) as an Item, expired or not: the stream indexer reads a TTL removal's old image with it."""
    return Item(
        pk=attributes["pk"]["S"],
        sk=attributes["sk"]["S"],
        data=json.loads(attributes["data"]["S"]),
        version=int(attributes["version"]["N"]),
        expires_at=int(attributes["expires_at"]["N"]) if "expires_at" in attributes else None,
    )


class DynamoDbRecordStore(LazyClient):
    """The RecordStore port on one DynamoDB table (the layout: the module docstring).

    ``consistent`` maps to ``ConsistentRead``. A lost condition, or a transaction cancelled by a lost
    condition or a conflicting transaction, raises ConditionFailed; every other failure an envelope
    (``errors.provider_error``).
    """

    def __init__(self, table: str, client_factory: Callable[[], Any]) -> None:
        self._table = table
        super().__init__(client_factory)

    # ------------------------------------------------------------ mapping
    @staticmethod
    def _to_item(item: Item) -> dict[str, Any]:
        """An Item as DynamoDB attributes."""
        attributes: dict[str, Any] = {
            "pk": {"S": item.pk},
            "sk": {"S": item.sk},
            "version": {"N": str(item.version)},
            "data": {"S": json.dumps(item.data, separators=(",", ":"))},
        }
        if item.expires_at is not None:
            attributes["expires_at"] = {"N": str(item.expires_at)}
        if item.stream is not None:  # for the stream indexer's event filter only: never read back
            attributes["stream"] = {"S": item.stream}
        return attributes

    @staticmethod
    def _from_item(attributes: dict[str, Any]) -> Item | None:
        """DynamoDB attributes as an Item; None once it has expired (DynamoDB removes it later)."""
        item = item_of(attributes)
        if item.expires_at is not None and item.expires_at <= int(time.time()):
            return None
        return item

    def _call(self, operation: str, **kwargs: Any) -> Any:
        """Call one client operation; lost conditions as ConditionFailed, other failures as envelopes."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(**kwargs)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed(str(error)) from None
            if code == "TransactionCanceledException":
                reasons = [r.get("Code") for r in error.response.get("CancellationReasons", [])]
                # TransactionConflict: another transaction was writing one of the items; like a lost
                # condition, the caller re-reads and decides again (CONFLICT, or a retry).
                if "ConditionalCheckFailed" in reasons or "TransactionConflict" in reasons:
                    raise ConditionFailed(f"transaction cancelled: {reasons}") from None
            raise provider_error("DynamoDB", error) from error
        except BotoCoreError as error:
            raise provider_error("DynamoDB", error) from error

    # -------------------------------------------------------------- reads
    # ConsistentRead=False costs half the read units; the port says which reads may take it.
    def get(self, pk: str, sk: str, *, consistent: bool = True, expired: bool = False) -> Item | None:
        """One GetItem (``expired``: an item past its TTL that DynamoDB still holds is answered too)."""
        response = self._call(
            "get_item", TableName=self._table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=consistent
        )
        if "Item" not in response:
            return None
        return item_of(response["Item"]) if expired else self._from_item(response["Item"])

    def batch_get(self, keys: Sequence[tuple[str, str]], *, consistent: bool = True) -> list[Item]:
        """BatchGetItem, 100 keys a call; unprocessed keys are asked again with backoff, then ProviderError."""
        unique = list(dict.fromkeys(keys))
        found: list[Item] = []
        for start in range(0, len(unique), _MAX_BATCH_GET):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": [{"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in unique[start : start + _MAX_BATCH_GET]],
                    "ConsistentRead": consistent,
                }
            }
            for attempt in range(8):
                response = self._call("batch_get_item", RequestItems=request)
                found += [i for i in map(self._from_item, response["Responses"].get(self._table, [])) if i]
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(0.05 * 2**attempt, 1.0))
            if request:
                raise provider_error("DynamoDB", RuntimeError("batch read left keys unprocessed"))
        return found

    def query(
        self,
        pk: str,
        sk_prefix: str = "",
        *,
        limit: int = 100,
        descending: bool = False,
        between: tuple[str, str] | None = None,
        consistent: bool = True,
    ) -> list[Item]:
        """Query, following pages until ``limit`` items or the end of the partition."""
        items: list[Item] = []
        values: dict[str, Any] = {":pk": {"S": pk}}
        condition = "pk = :pk"
        if between is not None:
            if sk_prefix:
                raise ValueError("query takes a sort key prefix or a range, not both")
            condition += " AND sk BETWEEN :low AND :high"
            values[":low"], values[":high"] = {"S": between[0]}, {"S": between[1]}
        elif sk_prefix:  # DynamoDB rejects an empty key value, even in begins_with
            condition += " AND begins_with(sk, :prefix)"
            values[":prefix"] = {"S": sk_prefix}
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not descending,
            "ConsistentRead": consistent,
        }
        while len(items) < limit:
            response = self._call("query", Limit=limit - len(items), **kwargs)
            items += [i for i in map(self._from_item, response.get("Items", [])) if i]
            if "LastEvaluatedKey" not in response:
                break
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return items[:limit]

    def scan(self, pk_prefix: str = "") -> Iterator[Item]:
        """Scan the whole table page by page, filtering on the partition key (maintenance only)."""
        kwargs: dict[str, Any] = {"TableName": self._table}
        if pk_prefix:
            kwargs["FilterExpression"] = "begins_with(pk, :prefix)"
            kwargs["ExpressionAttributeValues"] = {":prefix": {"S": pk_prefix}}
        while True:
            response = self._call("scan", **kwargs)
            for attributes in response.get("Items", []):
                item = self._from_item(attributes)
                if item is not None:
                    yield item
            if "LastEvaluatedKey" not in response:
                return
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def expired(self, pk_prefix: str = "") -> Iterator[Item]:
        """Scan for items past ``expires_at`` that TTL has not removed yet (the local sweeper's, rarely needed)."""
        now = int(time.time())
        condition = "expires_at <= :now" + (" AND begins_with(pk, :prefix)" if pk_prefix else "")
        values: dict[str, Any] = {":now": {"N": str(now)}, **({":prefix": {"S": pk_prefix}} if pk_prefix else {})}
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": condition,
            "ExpressionAttributeValues": values,
        }
        while True:
            response = self._call("scan", **kwargs)
            for attributes in response.get("Items", []):
                item = item_of(attributes)
                if item.expires_at is not None and item.expires_at <= now:
                    yield item
            if "LastEvaluatedKey" not in response:
                return
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    # ------------------------------------------------------------- writes
    @staticmethod
    def _condition(expect: object) -> dict[str, Any]:
        """The condition expression for an ``expect`` (an expired item counts as absent, but for "new")."""
        now = {":now": {"N": str(int(time.time()))}}
        live = "(attribute_not_exists(expires_at) OR expires_at > :now)"
        if expect == "absent":
            # An item past its TTL that DynamoDB has not yet removed counts as absent.
            return {
                "ConditionExpression": f"attribute_not_exists(pk) OR NOT {live}",
                "ExpressionAttributeValues": now,
            }
        if expect == "new":  # no item at all, not even an expired one TTL has not removed yet (mnemo.ports.Put)
            return {"ConditionExpression": "attribute_not_exists(pk)"}
        if expect == "expired":  # the expiry sweeper's delete: only an item TTL has not removed yet
            return {
                "ConditionExpression": "attribute_exists(pk) AND expires_at <= :now",
                "ExpressionAttributeValues": now,
            }
        if expect == "present":
            return {
                "ConditionExpression": f"attribute_exists(pk) AND {live}",
                "ExpressionAttributeValues": now,
            }
        if isinstance(expect, int):
            return {
                "ConditionExpression": f"version = :expected AND {live}",
                "ExpressionAttributeValues": {":expected": {"N": str(expect)}, **now},
            }
        return {}

    def _operation(self, op: Put | Delete) -> dict[str, Any]:
        """One Put or Delete as a TransactWriteItems entry."""
        if isinstance(op, Put):
            return {"Put": {"TableName": self._table, "Item": self._to_item(op.item), **self._condition(op.expect)}}
        key = {"pk": {"S": op.pk}, "sk": {"S": op.sk}}
        return {"Delete": {"TableName": self._table, "Key": key, **self._condition(op.expect)}}

    def write(self, operations: Sequence[Put | Delete]) -> None:
        """PutItem or DeleteItem for one operation, TransactWriteItems (with an idempotency token) for more."""
        if not operations:
            return
        if len(operations) > MAX_WRITE_OPERATIONS:
            raise ValueError(f"at most {MAX_WRITE_OPERATIONS} operations change together (got {len(operations)})")
        if len(operations) == 1:
            single = self._operation(operations[0])
            if "Put" in single:
                self._call("put_item", **single["Put"])
            else:
                self._call("delete_item", **single["Delete"])
            return
        # One token per logical write: when an answer is lost and botocore retries the same call, DynamoDB
        # recognises the token and answers success instead of failing the conditions the first attempt met.
        self._call(
            "transact_write_items",
            TransactItems=[self._operation(op) for op in operations],
            ClientRequestToken=uuid.uuid4().hex,
        )

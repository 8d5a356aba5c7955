"""The deployment rehearsal's moto server: its own process, so its IAM enforcement stays its own.

S3 Vectors' QueryVectors, which moto lacks, comes from tests/support/s3vectors_fake.py.

Run as ``python rehearsal_moto.py``: prints ``{"url": ...}`` once serving, and exits
when its stdin closes (the test ended). Requests are served one at a time, as
tests/support/aws_fixtures.SerialMotoServer does. IAM is enforced once the test posts ``0``
to ``/moto-api/reset-auth`` (moto's INITIAL_NO_AUTH_ACTION_COUNT mechanism): from
then on every request is signed by an IAM user or an assumed role whose policies
must allow it. Enforcement is process-wide in moto, hence a process of its own.

moto checks the action of every service but the resource only for S3; for the
others it asks for resource ``*``, which a statement scoped to a table or bus never
matches. Two narrow corrections bring DynamoDB, EventBridge, SQS and S3 Vectors closer to real IAM:

- the resource is the one AWS authorises: the table named in the request
  (``arn:aws:dynamodb:<region>:<account>:table/<name>``, or its index or stream),
  each bus an event goes to for ``events:PutEvents``, the queue a ``QueueUrl`` names for SQS
  (``arn:aws:sqs:<region>:<account>:<name>``), the vector index an S3 Vectors request names
  (``arn:aws:s3vectors:<region>:<account>:bucket/<bucket>/index/<index>``, the bucket for CreateIndex);
- moto asks for ``dynamodb:TransactWriteItems`` / ``TransactGetItems``, which no
  policy grants: AWS authorises each item of a transaction by its own action
  (PutItem, UpdateItem, DeleteItem, ConditionCheckItem, GetItem) on its table
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html),
  and so does this check. Likewise BatchGetItem and BatchWriteItem are checked per table.

moto maps every HEAD of an object to ``s3:GetObject``; a HEAD of a given version needs the
version's read right, ``s3:GetObjectVersion``, as a GET of it does
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html, "the relevant read
object (or version) permission"; API_GetObject.html: with a versionId, s3:GetObject is not
required), so that is what is checked.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def dynamodb_authorisations(action: str, body: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    """(action, resource) pairs AWS authorises for one DynamoDB request."""

    def table(name: str, index: str | None = None) -> str:
        if name.startswith("arn:"):
            return name
        arn = f"arn:aws:dynamodb:{region}:{account}:table/{name}"
        return f"{arn}/index/{index}" if index else arn

    operation = action.split(":", 1)[1]
    if operation in ("TransactWriteItems", "TransactGetItems"):
        pairs = []
        for item in body.get("TransactItems", []):
            for kind, request in item.items():
                pairs.append((f"dynamodb:{TRANSACTION_ACTIONS[kind]}", table(request["TableName"])))
        return pairs
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(action, table(name)) for name in body.get("RequestItems", {})]
    if "StreamArn" in body:
        return [(action, body["StreamArn"])]
    if "TableName" in body:
        return [(action, table(body["TableName"], body.get("IndexName")))]
    return [(action, "*")]


def events_authorisations(action: str, body: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    if action != "events:PutEvents":
        return [(action, "*")]
    buses = {entry.get("EventBusName") or "default" for entry in body.get("Entries", [])}
    return [
        (action, bus if bus.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{bus}")
        for bus in sorted(buses)
    ]


def sqs_authorisations(action: str, queue_url: str | None, region: str, account: str) -> list[tuple[str, str]]:
    """(action, resource) AWS authorises for one SQS request: the queue its ``QueueUrl`` names
    (``https://sqs.<region>.amazonaws.com/<account>/<name>`` -> ``arn:aws:sqs:<region>:<account>:<name>``)."""
    if not queue_url:
        return [(action, "*")]  # ListQueues, CreateQueue...: no queue of ours is named
    owner, name = queue_url.rstrip("/").split("/")[-2:]
    return [(action, f"arn:aws:sqs:{region}:{owner if owner.isdigit() else account}:{name}")]


def s3vectors_authorisations(action: str, body: dict[str, Any], region: str, account: str) -> list[tuple[str, str]]:
    """(action, resource) AWS authorises for one S3 Vectors request: the index it names
    (``arn:aws:s3vectors:<region>:<account>:bucket/<bucket>/index/<index>``), else the vector bucket."""
    if body.get("indexArn"):
        return [(action, body["indexArn"])]
    name = body.get("vectorBucketName")
    bucket = body.get("vectorBucketArn") or (f"arn:aws:s3vectors:{region}:{account}:bucket/{name}" if name else None)
    if bucket is None:
        return [(action, "*")]
    if body.get("indexName") and not action.endswith(":CreateIndex"):
        return [(action, f"{bucket}/index/{body['indexName']}")]
    return [(action, bucket)]


def _patch_authorisation() -> None:
    """Checks per (action, resource) as above; each refusal is also written to stderr as a JSON line."""
    from moto.iam.access_control import IAMRequestBase

    original = IAMRequestBase.check_action_permitted

    def checked(self: Any, resource: str) -> None:
        try:
            original(self, resource)
        except Exception:
            denial = {"denied": self._action, "resource": resource, "principal": self._access_key.arn}
            print(json.dumps(denial), file=sys.stderr, flush=True)
            raise

    def check_action_permitted(self: Any, resource: str) -> None:
        service = self._service
        if self._method == "HEAD" and self._action == "s3:GetObject" and "versionId=" in self._path:
            self._action = "s3:GetObjectVersion"
        if resource != "*" or service not in ("dynamodb", "events", "sqs", "s3vectors"):
            checked(self, resource)
            return
        if service == "sqs":
            # botocore speaks SQS's JSON protocol; a query-protocol client sends the same name as a form field.
            try:
                queue_url = json.loads(self._body or b"{}").get("QueueUrl")
            except ValueError:
                queue_url = (self._data or {}).get("QueueUrl")
            for action, arn in sqs_authorisations(self._action, queue_url, self._region, self.account_id):
                self._action = action
                checked(self, arn)
            return
        body = json.loads(self._body or b"{}")
        split = {"dynamodb": dynamodb_authorisations, "s3vectors": s3vectors_authorisations}.get(
            service, events_authorisations
        )
        for action, arn in split(self._action, body, self._region, self.account_id):
            self._action = action  # AccessDenied names the action that was refused
            checked(self, arn)

    IAMRequestBase.check_action_permitted = check_action_permitted  # type: ignore[method-assign]


def main() -> int:
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, make_server

    _patch_authorisation()
    # S3 Vectors' QueryVectors, which moto lacks (VectorStore s3vectors).
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    from s3vectors_fake import install

    install()

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"url": f"http://127.0.0.1:{server.server_port}"}), flush=True)
    sys.stdin.read()  # until the test closes it, or ends
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

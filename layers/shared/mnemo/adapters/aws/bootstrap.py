"""Create the records table and the blob bucket when they are missing (local runs against moto).

On AWS the SAM template creates them; these definitions mirror it, and a test
compares the two so they cannot drift.
"""

from __future__ import annotations

from typing import Any

RECORDS_KEY_SCHEMA = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
RECORDS_ATTRIBUTES = [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}]
RECORDS_TTL_ATTRIBUTE = "expires_at"


def ensure_records_table(client: Any, name: str) -> bool:
    """Returns True when the table was created."""
    existing = client.list_tables().get("TableNames", [])
    if name in existing:
        return False
    client.create_table(
        TableName=name,
        KeySchema=RECORDS_KEY_SCHEMA,
        AttributeDefinitions=RECORDS_ATTRIBUTES,
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    client.get_waiter("table_exists").wait(TableName=name)
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"AttributeName": RECORDS_TTL_ATTRIBUTE, "Enabled": True}
    )
    return True


def ensure_bucket(client: Any, name: str, region: str) -> bool:
    """Returns True when the bucket was created; versioning is always switched on."""
    existing = {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}
    created = name not in existing
    if created:
        extra = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        client.create_bucket(Bucket=name, **extra)
    client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return created

"""The knowledge bucket's lifecycle rules in template.yaml: earlier workspace versions expire, knowledge/
history stays, and no rule can take the object version a workspace file's head names.

The rules are read from the template, put on a versioned bucket of a moto server in the S3 API's shape
(moto parses and validates the lifecycle XML), and applied, as S3 documents them, to the versions the
file tools leave behind after a lost write race.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_fixtures import REGION, create_records_table, dynamodb_settings, load_template, shared_moto_server

from helpers import ctx
from mnemo.adapters.aws.bootstrap import ensure_bucket
from mnemo.errors import MnemoError
from mnemo.runtime import Services, set_services
from mnemo.tools.registry import get_tool

WRITER = ctx(tenant="acme", agent="bot", project="checkout", roles=("writer",))
_names = itertools.count()


def bucket_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = load_template()["Resources"]["KnowledgeBucket"]["Properties"][
        "LifecycleConfiguration"
    ]["Rules"]
    return rules


def workspace_rule() -> dict[str, Any]:
    (rule,) = [rule for rule in bucket_rules() if rule.get("Prefix") == "workspace/"]
    return rule


def s3_rule(rule: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """A CloudFormation lifecycle rule in the shape of S3's PutBucketLifecycleConfiguration."""

    def value(node: Any) -> Any:
        return parameters[node["Ref"]] if isinstance(node, dict) and "Ref" in node else node

    shaped: dict[str, Any] = {"ID": rule["Id"], "Status": rule["Status"], "Filter": {"Prefix": rule.get("Prefix", "")}}
    if "NoncurrentVersionExpiration" in rule:
        shaped["NoncurrentVersionExpiration"] = {
            key: int(value(node)) for key, node in rule["NoncurrentVersionExpiration"].items()
        }
    if "ExpiredObjectDeleteMarker" in rule:
        shaped["Expiration"] = {"ExpiredObjectDeleteMarker": rule["ExpiredObjectDeleteMarker"]}
    if "AbortIncompleteMultipartUpload" in rule:
        shaped["AbortIncompleteMultipartUpload"] = rule["AbortIncompleteMultipartUpload"]
    return shaped


def defaults() -> dict[str, Any]:
    return {name: spec.get("Default") for name, spec in load_template()["Parameters"].items()}


# ---------------------------------------------------------------- template
def test_earlier_workspace_versions_expire_after_a_parameterised_number_of_days() -> None:
    parameter = load_template()["Parameters"]["WorkspaceVersionRetentionDays"]
    assert (parameter["Type"], parameter["Default"], parameter["MinValue"]) == ("Number", 30, 1)
    rule = workspace_rule()
    assert rule["Status"] == "Enabled"
    expiry = rule["NoncurrentVersionExpiration"]
    assert expiry["NoncurrentDays"] == {"Ref": "WorkspaceVersionRetentionDays"}
    assert 1 <= expiry["NewerNoncurrentVersions"] <= 100  # S3's bound
    assert rule["ExpiredObjectDeleteMarker"] is True  # a deleted file's marker goes once its versions have


def test_no_rule_expires_a_current_version_or_knowledge_history() -> None:
    for rule in bucket_rules():
        assert "ExpirationInDays" not in rule and "ExpirationDate" not in rule  # current versions never expire
        assert "Transitions" not in rule and "Transition" not in rule
        if "NoncurrentVersionExpiration" in rule or rule.get("ExpiredObjectDeleteMarker"):
            assert rule["Prefix"].startswith("workspace/")  # knowledge_show reads every knowledge/ version


# -------------------------------------------------------------------- moto
@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Services, Any, str]]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    server = shared_moto_server()
    table = bucket = f"lifecycle-{next(_names)}"
    create_records_table(server.client("dynamodb"), table, stream=False)
    assert ensure_bucket(server.client("s3"), bucket, REGION) is True
    services = Services(dynamodb_settings(server, table, tmp_path, blobs="s3", blob_bucket=bucket))
    set_services(services)
    try:
        yield services, server.client("s3"), bucket
    finally:
        set_services(None)


def test_s3_accepts_the_templates_lifecycle_configuration(stack: tuple[Services, Any, str]) -> None:
    _, s3, bucket = stack
    rules = [s3_rule(rule, defaults()) for rule in bucket_rules()]
    s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    stored = {rule["ID"]: rule for rule in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]}
    workspace = stored["expire-earlier-workspace-versions"]
    assert workspace["Filter"] == {"Prefix": "workspace/"}
    assert workspace["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30
    assert workspace["Expiration"] == {"ExpiredObjectDeleteMarker": True}


def expirable(s3: Any, bucket: str, key: str, rule: dict[str, Any]) -> set[str]:
    """The versions of ``key`` the rule may remove once old enough: noncurrent ones with more than
    NewerNoncurrentVersions noncurrent versions newer than them. S3 lists a key's versions newest first;
    a noncurrent delete marker is counted as newer than every version, to be safe."""
    listed = s3.list_object_versions(Bucket=bucket, Prefix=key)
    noncurrent = [e["VersionId"] for e in listed.get("Versions", []) if e["Key"] == key and not e["IsLatest"]]
    markers = [e for e in listed.get("DeleteMarkers", []) if e["Key"] == key and not e["IsLatest"]]
    kept = int(rule["NoncurrentVersionExpiration"]["NewerNoncurrentVersions"]) - len(markers)
    return set(noncurrent[max(kept, 0) :])


def call(services: Services, tool: str, payload: dict[str, Any]) -> dict[str, Any]:
    return get_tool(tool).invoke(services, WRITER, payload)


def head_version(services: Services, path: str) -> str:
    item = services.records.get("WS|t=acme|project|p=checkout", f"F#{path}")
    assert item is not None
    return str(item.data["blobVersion"])


def test_the_version_a_head_names_outlives_the_rule_after_lost_races(stack: tuple[Services, Any, str]) -> None:
    """Racing writers that lose put their blob after the winner's: S3's latest is theirs, the head names the
    winner's, now noncurrent. The rule keeps the newest noncurrent versions whatever their age, so the
    head's version stays while fewer writers than that raced it; older versions do expire."""
    services, s3, bucket = stack
    rule = workspace_rule()
    path, key = "src/race.py", "workspace/acme/project/checkout/src/race.py"
    for n in range(8):
        call(services, "file_write", {"path": path, "content": f"v{n}\n"})
    blobs = services.blobs
    real_put = blobs.put
    losers = int(rule["NoncurrentVersionExpiration"]["NewerNoncurrentVersions"])
    started, conflicts = [1], []

    def put(blob_key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        # Each loser reads the head (version 8) and, at its blob put, lets the next one start; the last lets
        # the winner write in full. Then the losers' puts land, newest loser first, and their head writes fail.
        if started[0] < losers:
            started[0] += 1
            with pytest.raises(MnemoError) as lost:
                call(services, "file_write", {"path": path, "content": f"loser {started[0]}\n"})
            conflicts.append(lost.value.code)
        elif started[0] == losers:
            started[0] += 1
            call(services, "file_write", {"path": path, "content": "winner\n"})
        return real_put(blob_key, content, metadata)

    setattr(blobs, "put", put)  # noqa: B010 (an instance attribute over the method, removed after)
    try:
        with pytest.raises(MnemoError) as first:
            call(services, "file_write", {"path": path, "content": "loser 1\n"})
        conflicts.append(first.value.code)
    finally:
        delattr(blobs, "put")
    assert conflicts == ["CONFLICT"] * losers
    named = head_version(services, path)
    assert s3.get_object(Bucket=bucket, Key=key)["VersionId"] != named  # the head names a noncurrent version
    gone = expirable(s3, bucket, key, rule)
    assert named not in gone
    assert len(gone) == 8  # the eight first writes' versions do expire
    assert call(services, "file_read", {"path": path})["content"] == "winner\n"


def test_a_deleted_files_versions_and_marker_expire(stack: tuple[Services, Any, str]) -> None:
    services, s3, bucket = stack
    path, key = "notes/old.md", "workspace/acme/project/checkout/notes/old.md"
    for n in range(7):
        call(services, "file_write", {"path": path, "content": f"v{n}\n"})
    call(services, "file_delete", {"path": path})
    listed = s3.list_object_versions(Bucket=bucket, Prefix=key)
    assert [marker["IsLatest"] for marker in listed["DeleteMarkers"]] == [True]  # file_delete's marker
    assert len(expirable(s3, bucket, key, workspace_rule())) == 7 - 5  # the rest after the retention days
    assert json.dumps(workspace_rule()["ExpiredObjectDeleteMarker"]) == "true"  # then the marker goes too

"""Contract suite for the BlobStore port: a directory, and versioned S3 on moto."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest
from aws_fixtures import shared_moto_server

from mnemo.adapters.aws.s3_blobs import S3BlobStore
from mnemo.adapters.local.blobs import LocalBlobStore
from mnemo.errors import InvalidInput
from mnemo.ports import BlobStore

_buckets = itertools.count()


def _local(tmp_path: Path) -> BlobStore:
    return LocalBlobStore(tmp_path / "blobs")


def _s3(tmp_path: Path) -> BlobStore:
    server = shared_moto_server()
    client = server.client("s3")
    bucket = f"knowledge-{next(_buckets)}"
    client.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return S3BlobStore(bucket, lambda: server.client("s3"))


BACKENDS: dict[str, Callable[[Path], BlobStore]] = {"local": _local, "s3": _s3}


@pytest.fixture(params=list(BACKENDS))
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    return BACKENDS[request.param](tmp_path)


def test_put_get_round_trip_with_metadata(blobs: BlobStore) -> None:
    version = blobs.put("company/adr-042.md", b"# ADR 42", {"author": "ana", "message": "first"})
    blob = blobs.get("company/adr-042.md")
    assert blob is not None
    assert (blob.content, blob.version, blob.metadata) == (b"# ADR 42", version, {"author": "ana", "message": "first"})
    assert blob.modified_at


def test_missing_key_is_none(blobs: BlobStore) -> None:
    assert blobs.get("company/nothing.md") is None
    assert blobs.versions("company/nothing.md") == []


def test_every_version_is_kept_and_readable(blobs: BlobStore) -> None:
    first = blobs.put("orgs/o1/policy.md", b"v1", {"message": "one"})
    second = blobs.put("orgs/o1/policy.md", b"v2", {"message": "two"})
    assert first != second
    assert blobs.get("orgs/o1/policy.md").content == b"v2"  # type: ignore[union-attr]
    assert blobs.get("orgs/o1/policy.md", first).content == b"v1"  # type: ignore[union-attr]
    history = blobs.versions("orgs/o1/policy.md")
    assert [v.version for v in history] == [second, first]
    assert [v.metadata.get("message") for v in history] == ["two", "one"]


def test_delete_hides_the_key_but_keeps_history(blobs: BlobStore) -> None:
    blobs.put("teams/t1/pattern.md", b"p")
    blobs.delete("teams/t1/pattern.md")
    assert blobs.get("teams/t1/pattern.md") is None
    assert "teams/t1/pattern.md" not in blobs.list_keys()
    history = blobs.versions("teams/t1/pattern.md")
    assert history[0].deleted
    assert not history[-1].deleted
    assert len(history) == 2


def test_list_etags_gives_each_current_blob_the_tag_its_get_carries(blobs: BlobStore) -> None:
    blobs.put("company/a.md", b"first")
    blobs.put("company/b.md", b"other")
    blobs.put("company/gone.md", b"soon gone")
    blobs.delete("company/gone.md")
    blobs.put("orgs/o1/c.md", b"first")
    tags = blobs.list_etags("company/")
    assert sorted(tags) == blobs.list_keys("company/") == ["company/a.md", "company/b.md"]
    assert all(tags[key] == blobs.get(key).etag for key in tags)  # type: ignore[union-attr]
    assert tags["company/a.md"] and tags["company/a.md"] != tags["company/b.md"]
    # Equal bytes, equal tags, whatever the key or version; new bytes, a new tag.
    assert blobs.list_etags("orgs/")["orgs/o1/c.md"] == tags["company/a.md"]
    blobs.put("company/a.md", b"first")
    assert blobs.list_etags("company/")["company/a.md"] == tags["company/a.md"]
    blobs.put("company/a.md", b"second")
    changed = blobs.list_etags("company/")["company/a.md"]
    assert changed not in {tags["company/a.md"], ""}
    assert blobs.get("company/a.md", blobs.versions("company/a.md")[-1].version).etag == tags["company/a.md"]  # type: ignore[union-attr]


def test_list_by_prefix_is_sorted(blobs: BlobStore) -> None:
    for key in ("projects/p1/b.md", "projects/p1/a.md", "projects/p2/c.md", "company/d.md"):
        blobs.put(key, b"x")
    assert blobs.list_keys("projects/p1/") == ["projects/p1/a.md", "projects/p1/b.md"]
    assert blobs.list_keys() == ["company/d.md", "projects/p1/a.md", "projects/p1/b.md", "projects/p2/c.md"]


@pytest.mark.parametrize("key", ["../escape.md", "/absolute.md", "a//b.md", "company/../x.md", "", "a/./b.md"])
def test_keys_cannot_escape(blobs: BlobStore, key: str) -> None:
    with pytest.raises(InvalidInput):
        blobs.put(key, b"x")


def test_a_segment_longer_than_a_file_name_once_quoted_is_stored_and_listed(blobs: BlobStore) -> None:
    # 63 four-byte characters: 252 bytes, within a segment's 255, but 756 once percent-quoted (a file name
    # may take 255): the directory store shortens the name on disk and still lists the key as given.
    name = quote("\U0001d413" * 63, safe="")
    key = f"workspace/acme/project/p/{name}/{name}"
    version = blobs.put(key, b"long names", {"author": "a"})
    found = blobs.get(key)
    assert found is not None
    assert found.content == b"long names"
    assert found.version == version
    assert key in blobs.list_keys("workspace/acme/")
    other = f"workspace/acme/project/p/{name}/{name[:-3]}"
    blobs.put(other, b"a sibling whose name shares the start")
    sibling = blobs.get(other)
    assert sibling is not None
    assert sibling.content == b"a sibling whose name shares the start"
    assert sorted(blobs.list_keys("workspace/acme/")) == sorted([key, other])


def test_purge_removes_every_version_and_leaves_other_keys(blobs: BlobStore) -> None:
    """Erasure's purge: the key's versions and delete markers all go, a neighbour sharing its prefix stays,
    and purging again (or a key never put) is no error."""
    blobs.put("workspace/acme/user/alice/notes.md", b"one")
    blobs.put("workspace/acme/user/alice/notes.md", b"two")
    blobs.delete("workspace/acme/user/alice/notes.md")
    blobs.put("workspace/acme/user/alice/notes.md.bak", b"keep")
    blobs.put("workspace/acme/user/alice/notes.md", b"three")
    assert len(blobs.versions("workspace/acme/user/alice/notes.md")) == 4
    blobs.purge("workspace/acme/user/alice/notes.md")
    assert blobs.versions("workspace/acme/user/alice/notes.md") == []
    assert blobs.get("workspace/acme/user/alice/notes.md") is None
    assert blobs.list_keys("workspace/acme/user/alice/") == ["workspace/acme/user/alice/notes.md.bak"]
    assert blobs.get("workspace/acme/user/alice/notes.md.bak").content == b"keep"  # type: ignore[union-attr]
    blobs.purge("workspace/acme/user/alice/notes.md")
    blobs.purge("workspace/acme/user/nobody/never.md")
    with pytest.raises(InvalidInput):
        blobs.purge("../escape.md")


def test_a_local_version_written_before_sidecars_held_tags_gets_its_tag_from_its_bytes(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    blobs.put("company/a.md", b"old")
    tagged = blobs.list_etags()["company/a.md"]
    sidecar = tmp_path / "blobs" / "company" / "a.md.versions" / "00000001.json"
    meta = json.loads(sidecar.read_text())
    del meta["etag"]
    sidecar.write_text(json.dumps(meta))
    assert blobs.list_etags() == {"company/a.md": tagged}
    assert blobs.get("company/a.md").etag == tagged  # type: ignore[union-attr]

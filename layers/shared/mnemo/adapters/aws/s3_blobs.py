"""BlobStore on a versioned S3 bucket: history is S3's object versions, metadata is object metadata."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mnemo.adapters.aws.clients import LazyClient
from mnemo.adapters.aws.errors import provider_error
from mnemo.blob_keys import check_blob_key
from mnemo.errors import ProviderError
from mnemo.ports import Blob, BlobVersion


class S3BlobStore(LazyClient):
    """The BlobStore port on a versioned S3 bucket, under an optional key ``prefix``.

    Version ids are S3's ("null" for an object written before versioning was on).
    """

    def __init__(self, bucket: str, client_factory: Callable[[], Any], prefix: str = "") -> None:
        self._bucket = bucket
        self._prefix = prefix
        super().__init__(client_factory)

    def _call(self, operation: str, **kwargs: Any) -> Any:
        """Call one client operation on the bucket; None when the key or version does not exist."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, operation)(Bucket=self._bucket, **kwargs)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"NoSuchKey", "NoSuchVersion", "404", "InvalidArgument"}:
                return None
            raise provider_error("S3", error) from error
        except BotoCoreError as error:
            raise provider_error("S3", error) from error

    def _key(self, key: str) -> str:
        """The object key of a blob key; InvalidInput for a key that could escape its place."""
        check_blob_key(key)
        return self._prefix + key

    def put(self, key: str, content: bytes, metadata: dict[str, str] | None = None) -> str:
        """PutObject; the new version id."""
        response = self._call("put_object", Key=self._key(key), Body=content, Metadata=dict(metadata or {}))
        return str(response.get("VersionId") or "null")

    def get(self, key: str, version: str | None = None) -> Blob | None:
        """GetObject, of a version when one is named."""
        extra = {"VersionId": version} if version else {}
        response = self._call("get_object", Key=self._key(key), **extra)
        if response is None:
            return None
        return Blob(
            key=key,
            content=response["Body"].read(),
            version=str(response.get("VersionId") or "null"),
            metadata=dict(response.get("Metadata") or {}),
            modified_at=response["LastModified"].isoformat(),
            etag=str(response.get("ETag") or ""),
        )

    def list_keys(self, prefix: str = "") -> list[str]:
        """ListObjectsV2 under the prefix, every page."""
        return sorted(self.list_etags(prefix))

    def list_etags(self, prefix: str = "") -> dict[str, str]:
        """ListObjectsV2 under the prefix, every page: each object's ETag, as GetObject gives it."""
        tags: dict[str, str] = {}
        kwargs: dict[str, Any] = {"Prefix": self._prefix + prefix}
        while True:
            response = self._call("list_objects_v2", **kwargs)
            for obj in response.get("Contents", []):
                tags[obj["Key"].removeprefix(self._prefix)] = str(obj.get("ETag") or "")
            if not response.get("IsTruncated"):
                return tags
            kwargs["ContinuationToken"] = response["NextContinuationToken"]

    def versions(self, key: str) -> list[BlobVersion]:
        """ListObjectVersions of the key (and a HeadObject per version, for its metadata), newest first."""
        full = self._key(key)
        found: list[tuple[Any, bool, BlobVersion]] = []
        kwargs: dict[str, Any] = {"Prefix": full}
        while True:
            response = self._call("list_object_versions", **kwargs)
            for entry in response.get("Versions", []):
                if entry["Key"] == full:
                    head = self._call("head_object", Key=full, VersionId=entry["VersionId"]) or {}
                    version = BlobVersion(
                        entry["VersionId"], entry["LastModified"].isoformat(), dict(head.get("Metadata") or {})
                    )
                    found.append((entry["LastModified"], bool(entry.get("IsLatest")), version))
            for marker in response.get("DeleteMarkers", []):
                if marker["Key"] == full:
                    version = BlobVersion(marker["VersionId"], marker["LastModified"].isoformat(), {}, deleted=True)
                    found.append((marker["LastModified"], bool(marker.get("IsLatest")), version))
            if not response.get("IsTruncated"):
                break
            kwargs.update(KeyMarker=response["NextKeyMarker"], VersionIdMarker=response["NextVersionIdMarker"])
        # Newest first; LastModified has one-second resolution, so the latest one breaks ties.
        found.sort(key=lambda entry: (entry[0], entry[1]), reverse=True)
        return [version for _, _, version in found]

    def delete(self, key: str) -> None:
        """DeleteObject: S3 adds a delete marker and keeps the versions."""
        self._call("delete_object", Key=self._key(key))

    def purge(self, key: str) -> None:
        """ListObjectVersions of the key, then DeleteObjects of every version and delete marker (1000 a call):
        deleting by version id removes the version for good. Needs s3:ListBucketVersions and
        s3:DeleteObjectVersion."""
        full = self._key(key)
        kwargs: dict[str, Any] = {"Prefix": full}
        found: list[dict[str, str]] = []
        while True:
            response = self._call("list_object_versions", **kwargs) or {}
            for entry in [*response.get("Versions", []), *response.get("DeleteMarkers", [])]:
                if entry["Key"] == full:
                    found.append({"Key": full, "VersionId": entry["VersionId"]})
            if not response.get("IsTruncated"):
                break
            kwargs.update(KeyMarker=response["NextKeyMarker"], VersionIdMarker=response["NextVersionIdMarker"])
        for start in range(0, len(found), 1000):
            answer = self._call("delete_objects", Delete={"Objects": found[start : start + 1000], "Quiet": True}) or {}
            if answer.get("Errors"):
                error = answer["Errors"][0]
                raise ProviderError("S3 failed", {"service": "S3", "awsCode": str(error.get("Code", "Unknown"))})

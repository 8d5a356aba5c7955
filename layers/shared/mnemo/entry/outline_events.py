"""The EventBridge front door of the outline index (experimental): S3 object events of the workspace.

``Object Created`` / ``Object Deleted`` for a key under ``workspace/`` (the file
tools' blobs: ``workspace/{tenant}/{layer}/{owner}/{path}``, each part quoted)
re-outlines that one file when it is code in an outline language; anything else
is ignored. The tools refresh the index themselves before answering, so an event
that arrives before the file's head is committed (the blob is written first) or
one that is lost costs at most a parse at the next call, never a stale answer.
Deployed only with the template's ``ExperimentalTools`` parameter.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, unquote_plus

from mnemo import observability
from mnemo.context import RequestContext
from mnemo.errors import MnemoError
from mnemo.files.scopes import WORKSPACE_ROOT, workspace_location
from mnemo.files.store import Location
from mnemo.observability import logger
from mnemo.outline.languages import LanguageSpec, language_of
from mnemo.runtime import get_services

S3_DETAIL_TYPES = {"Object Created", "Object Deleted"}


def workspace_file(key: str) -> tuple[Location, str] | None:
    """The workspace and the file path an object key names, or None for a key outside any workspace."""
    parts = key.split("/")
    if len(parts) < 5 or parts[0] + "/" != WORKSPACE_ROOT:
        return None
    tenant, layer, owner = (unquote(part) for part in parts[1:4])
    if layer not in ("project", "user"):
        return None
    try:
        context = RequestContext(tenant=tenant, **{layer: owner})
        return workspace_location(context), "/".join(unquote(part) for part in parts[4:])
    except (ValueError, MnemoError):  # an empty or malformed id: no workspace has this key
        return None


def _code_files(key: str) -> list[tuple[Location, str, LanguageSpec]]:
    """The code files a key may name: as sent and URL-decoded (see sync_events: S3 may '+'-encode keys)."""
    found = []
    for candidate in dict.fromkeys([key, unquote_plus(key)]):
        named = workspace_file(candidate)
        spec = language_of(named[1]) if named is not None else None
        if named is not None and spec is not None:
            found.append((named[0], named[1], spec))
    return found


@observability.door(observability.EVENTBRIDGE)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("source") != "aws.s3" or event.get("detail-type") not in S3_DETAIL_TYPES:
        raise ValueError(f"unexpected event: source={event.get('source')!r} detail-type={event.get('detail-type')!r}")
    try:
        key = str(event["detail"]["object"]["key"])
    except (KeyError, TypeError):
        raise ValueError("an S3 event without detail.object.key") from None
    files = _code_files(key)
    if not files:
        logger.info("ignored object: not code in a workspace", extra={"key": key})
        return {"ignored": key}
    index = get_services().outline.index
    results = {path: index.refresh_path(where, spec, path) for where, path, spec in files}
    logger.info("outlined", extra={"key": key, "results": results})
    return {"key": key, "results": results}
